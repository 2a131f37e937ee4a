// CDMPP prediction latency of libtorch running the TorchScript model of
// bench/make_bench_models.py from C++ (one intra-op and one inter-op thread, InferenceMode),
// on the same preprocessed inputs PyTorch eager is timed on, at batch 1, 16 and 512.
// One JSON object per line on stdout, like bench_cdmpp:
//   {"kind":"result","engine":"torchscript","model":…,"batch":…,"us":…,"flops":…,"gflops":…}
//   bench_cdmpp_libtorch --models DIR [--only paper|compact] [--repeats N] [--peak GFLOPS]
#include <torch/script.h>
#include <torch/torch.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench_cdmpp_common.hpp"

using namespace tempo;

int main(int argc, char** argv) {
    std::string dir, only;
    int repeats = 7;
    double peak_gflops = 0;
    for (int i = 1; i < argc; ++i) {
        auto arg = [&](const char* name) { return !std::strcmp(argv[i], name) && i + 1 < argc; };
        if (arg("--models"))
            dir = argv[++i];
        else if (arg("--only"))
            only = argv[++i];
        else if (arg("--repeats"))
            repeats = std::atoi(argv[++i]);
        else if (arg("--peak"))
            peak_gflops = std::atof(argv[++i]);
        else {
            std::cerr
                << "usage: bench_cdmpp_libtorch --models DIR [--only paper|compact] [--repeats N]"
                   " [--peak GFLOPS]\n";
            return 2;
        }
    }
    if (dir.empty()) {
        std::cerr << "bench_cdmpp_libtorch: --models DIR is required\n";
        return 2;
    }
    at::set_num_threads(1);
    at::set_num_interop_threads(1);
    try {
        if (peak_gflops <= 0) peak_gflops = bench::measured_peak_flops() * 1e-9;
        std::cout << "{\"kind\":\"meta\",\"engine\":\"torchscript\",\"torch\":\"" << TORCH_VERSION
                  << "\",\"threads\":" << at::get_num_threads() << "}" << std::endl;
        for (const char* name : {"compact", "paper"}) {
            if (!only.empty() && only != name) continue;
            const std::string base = dir + "/" + name;
            const CdmppConfig c =
                bench::cdmpp_config_of(io::SafeTensors::load(base + ".safetensors"));
            const io::SafeTensors inputs = io::SafeTensors::load(base + ".inputs.safetensors");
            const io::Tensor& x_t = inputs.tensor("x");
            const auto N = int64_t(x_t.shape()[0]), L = int64_t(x_t.shape()[1]),
                       F = int64_t(x_t.shape()[2]);
            // Copies, so the tensors own their memory.
            torch::Tensor x = torch::from_blob(const_cast<float*>(x_t.data()), {N, L, F}).clone();
            torch::Tensor mask =
                torch::from_blob(const_cast<float*>(inputs.tensor("mask").data()), {N, L})
                    .clone()
                    .to(torch::kBool);
            torch::Tensor device;
            if (c.device)
                device =
                    torch::from_blob(const_cast<float*>(inputs.tensor("device").data()), {N, 8})
                        .clone();
            torch::jit::script::Module module = torch::jit::load(base + ".torchscript.pt");
            module.eval();
            const double flops = bench::cdmpp_flops(c, std::size_t(L));
            for (std::size_t B : bench::cdmpp_batches()) {
                std::vector<torch::jit::IValue> args{x.narrow(0, 0, int64_t(B)).contiguous(),
                                                     mask.narrow(0, 0, int64_t(B)).contiguous()};
                if (c.device) args.emplace_back(device.narrow(0, 0, int64_t(B)).contiguous());
                c10::InferenceMode guard;
                float z0 = 0;
                const double t = bench::median_seconds(
                                     [&] {
                                         torch::Tensor z = module.forward(args).toTensor();
                                         z0 = z.data_ptr<float>()[0];
                                         bench::keep(z0);
                                     },
                                     repeats) /
                                 double(B);
                const double gflops = flops / t * 1e-9;
                std::cout << "{\"kind\":\"result\",\"engine\":\"torchscript\",\"model\":\"" << name
                          << "\",\"batch\":" << B << ",\"us\":" << bench::num(t * 1e6)
                          << ",\"flops\":" << bench::num(flops)
                          << ",\"gflops\":" << bench::num(gflops)
                          << ",\"pct_peak\":" << bench::num(100 * gflops / peak_gflops)
                          << ",\"z0\":" << bench::num(z0) << "}" << std::endl;
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "bench_cdmpp_libtorch: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
