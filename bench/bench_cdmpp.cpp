// CDMPP prediction latency of tempo, for the backend this executable was compiled with
// (bench_cdmpp: TEMPO_BACKEND, xsimd by default; bench_cdmpp_eigen: Eigen), at batch 1, 16
// and 512 on the files of bench/make_bench_models.py. One JSON object per line on stdout:
//   {"kind":"meta", …}  machine, measured peak (--peak: given instead), (--bandwidth)
//                       streaming read bandwidth; --machine: only this line, the peak then
//                       the best of 3 measurements
//   {"kind":"result","engine":"tempo-xsimd","model":"paper","batch":16,
//    "us":…,            µs per prediction, CdmppModel::predict from CompactAst (validation,
//                       normalisation + tree PE, model, output transform)
//    "us_model":…,      µs per prediction of the model alone on preprocessed rows (the part
//                       PyTorch and TorchScript are timed on)
//    "flops":…, "gflops":…, "pct_peak":…}
//   bench_cdmpp --models DIR [--only paper|compact] [--batches 1,16,512] [--bandwidth]
//               [--repeats N] [--peak GFLOPS]
//   bench_cdmpp --machine [--bandwidth]
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench_cdmpp_common.hpp"
#include "tempo/tempo.hpp"

using namespace tempo;

namespace {

std::vector<CompactAst> read_programs(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(path, "cannot open");
    std::vector<CompactAst> out;
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number)
        if (!line.empty())
            out.push_back(parse_compact_ast(line, path + ":" + std::to_string(number)));
    return out;
}

std::vector<std::size_t> parse_list(const char* text) {
    std::vector<std::size_t> out;
    for (const char* p = text; *p;) {
        char* end;
        out.push_back(std::strtoul(p, &end, 10));
        p = *end ? end + 1 : end;
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    std::string dir, only;
    std::vector<std::size_t> batches = bench::cdmpp_batches();
    bool bandwidth = false, machine = false;
    int repeats = 7;
    double peak_gflops = 0;
    for (int i = 1; i < argc; ++i) {
        auto arg = [&](const char* name) { return !std::strcmp(argv[i], name) && i + 1 < argc; };
        if (arg("--models"))
            dir = argv[++i];
        else if (arg("--only"))
            only = argv[++i];
        else if (arg("--batches"))
            batches = parse_list(argv[++i]);
        else if (arg("--repeats"))
            repeats = std::atoi(argv[++i]);
        else if (arg("--peak"))
            peak_gflops = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--bandwidth"))
            bandwidth = true;
        else if (!std::strcmp(argv[i], "--machine"))
            machine = true;
        else {
            std::cerr
                << "usage: bench_cdmpp --models DIR [--only paper|compact] [--batches 1,16,512]"
                   " [--bandwidth] [--repeats N] [--peak GFLOPS]\n"
                   "       bench_cdmpp --machine [--bandwidth]\n";
            return 2;
        }
    }
    if (dir.empty() && !machine) {
        std::cerr
            << "bench_cdmpp: --models DIR is required (bench/make_bench_models.py --out DIR)\n";
        return 2;
    }
    const std::string engine = std::string("tempo-") + kBackendName;
    try {
        // The peak is a ceiling: on a shared machine the best of a few measurements is closest.
        if (machine)
            for (int k = 0; k < 3; ++k)
                peak_gflops = std::max(peak_gflops, bench::measured_peak_flops() * 1e-9);
        else if (peak_gflops <= 0)
            peak_gflops = bench::measured_peak_flops() * 1e-9;
        std::cout << "{\"kind\":\"meta\",\"engine\":\"" << engine
                  << "\",\"cpu\":" << json::quote(bench::cpu_model())
                  << ",\"peak_gflops\":" << bench::num(peak_gflops)
                  << ",\"simd_bits\":" << kernels::simd::kLanes * 32;
        if (bandwidth)
            std::cout << ",\"read_bandwidth_gbs\":"
                      << bench::num(bench::measured_read_bandwidth() * 1e-9);
        std::cout << "}" << std::endl;
        if (machine) return 0;

        for (const char* name : {"compact", "paper"}) {
            if (!only.empty() && only != name) continue;
            const std::string base = dir + "/" + name;
            const io::SafeTensors file = io::SafeTensors::load(base + ".safetensors");
            const CdmppModel model(file);
            const CdmppConfig& c = model.config();
            const std::vector<CompactAst> programs = read_programs(base + ".programs.jsonl");
            const io::SafeTensors inputs = io::SafeTensors::load(base + ".inputs.safetensors");
            const io::Tensor& x_all = inputs.tensor("x");
            const std::size_t L = x_all.shape()[1], F = c.feature_dim;
            const double flops = bench::cdmpp_flops(c, L);
            std::cout << "{\"kind\":\"model\",\"engine\":\"" << engine << "\",\"model\":\"" << name
                      << "\",\"leaves\":" << L << ",\"flops\":" << bench::num(flops)
                      << ",\"weight_bytes\":" << bench::num(bench::cdmpp_weight_bytes(file)) << "}"
                      << std::endl;

            for (std::size_t B : batches) {
                if (B > programs.size())
                    throw Error(base, "fewer programs than batch " + std::to_string(B));
                std::vector<const CompactAst*> ptrs;
                for (std::size_t b = 0; b < B; ++b) ptrs.push_back(&programs[b]);
                std::vector<double> seconds(B);
                Workspace ws;
                const double t_full = bench::median_seconds(
                                          [&] {
                                              model.predict(ptrs.data(), B, seconds.data(), ws);
                                              bench::keep(seconds[0]);
                                          },
                                          repeats) /
                                      double(B);

                // The model alone on the preprocessed rows (it overwrites them: copy in).
                AlignedBuffer<float> x(B * L * F), z(B);
                std::vector<std::size_t> leaves(B, L);
                const float* device = c.device ? inputs.tensor("device").data() : nullptr;
                Workspace wm;
                const double t_model =
                    bench::median_seconds(
                        [&] {
                            std::copy(x_all.data(), x_all.data() + B * L * F, x.data());
                            model.predict_preprocessed(x.data(), B, L, leaves.data(), device,
                                                       z.data(), wm);
                            bench::keep(z[0]);
                        },
                        repeats) /
                    double(B);
                const double gflops = flops / t_model * 1e-9;
                std::cout << "{\"kind\":\"result\",\"engine\":\"" << engine << "\",\"model\":\""
                          << name << "\",\"batch\":" << B << ",\"us\":" << bench::num(t_full * 1e6)
                          << ",\"us_model\":" << bench::num(t_model * 1e6)
                          << ",\"flops\":" << bench::num(flops)
                          << ",\"gflops\":" << bench::num(gflops)
                          << ",\"gflops_full\":" << bench::num(flops / t_full * 1e-9)
                          << ",\"pct_peak\":" << bench::num(100 * gflops / peak_gflops)
                          << ",\"z0\":" << bench::num(z[0]) << "}" << std::endl;
            }
        }
    } catch (const Error& e) {
        std::cerr << "bench_cdmpp: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
