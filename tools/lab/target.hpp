// `tempo lab target`: describe a measurement target — this machine's CPU (model, caches, clock,
// cores, memory) probed from /proc and /sys, plus an ISA level (`-march=x86-64-vN`) and a thread
// count — and measure what the CDMPP device features need: peak FP32 FLOP/s (an FMA/mul-add
// loop compiled for that ISA level, run on the target's cores) and streaming-read memory
// bandwidth (a buffer 16× the last-level cache). Writes data/targets/<id>.json.
#pragma once

#include "tempo/core/error.hpp"
#include "tempo/io/json.hpp"

#include <cpuid.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tempo::lab {

// ISA levels: the -march value, the short name used in target ids, SIMD width in bytes.
struct IsaLevel {
    std::string level, march, name;
    int vector_bytes;
};

inline IsaLevel isa_level(const std::string& v) {
    if (v == "v4") return {"v4", "x86-64-v4", "avx512", 64};
    if (v == "v3") return {"v3", "x86-64-v3", "avx2", 32};
    if (v == "v2") return {"v2", "x86-64-v2", "sse42", 16};
    if (v == "v1") return {"v1", "x86-64", "sse2", 16};
    throw Error("--isa", "expected v1, v2, v3 or v4, got '" + v + "'");
}

// Who chooses the loops that become vector code. `compiler`: gcc's auto-vectoriser, on top of
// the loops the schedule marks `omp simd` (the default). `schedule`: the schedule alone
// (-fno-tree-vectorize), so a program's latency follows its schedule's choices and not gcc's
// cost model, which the features cannot see; such targets' ids carry an `nv` suffix on the ISA.
enum class Vectorize { compiler, schedule };

inline Vectorize vectorize_mode(const std::string& v) {
    if (v == "compiler") return Vectorize::compiler;
    if (v == "schedule") return Vectorize::schedule;
    throw Error("--vectorize", "expected compiler or schedule, got '" + v + "'");
}

inline const char* vectorize_name(Vectorize v) {
    return v == Vectorize::schedule ? "schedule" : "compiler";
}

// The flags `tempo lab measure` builds a target's programs with.
inline std::string compile_flags(const IsaLevel& isa, Vectorize v) {
    return std::string("-std=c11 -O3 ") + (v == Vectorize::schedule ? "-fno-tree-vectorize " : "") +
           "-march=" + isa.march + " -ffp-contract=fast -fopenmp -fPIC -shared";
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

// Output of a shell command (stdout), or "" when it fails.
inline std::string command_output(const std::string& cmd) {
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    return out;
}

inline std::string gcc_version() {
    std::string v = command_output("gcc -dumpfullversion 2>/dev/null");
    return "gcc " + trim(v);
}

struct CacheLevel {
    int level = 0;
    std::string type;
    double kb = 0;
    int shared_cpus = 1;
};

struct CpuProbe {
    std::string vendor, model_name, family, model, stepping, microarch;
    std::vector<std::string> flags; // the ISA-relevant subset
    int cpus = 1;
    double mhz = 0, max_mhz = 0;
    double mem_gb = 0;
    std::vector<CacheLevel> caches;
    std::string kernel, hypervisor;
    std::string caches_source; // sysfs, or the CPUID leaves they came from

    double cache_kb(int level, const std::string& type_prefix) const {
        for (const auto& c : caches)
            if (c.level == level && c.type.rfind(type_prefix, 0) == 0) return c.kb;
        return 0;
    }
};

// Short micro-architecture name from vendor and family/model (AMD Zen generations), else a
// cleaned model name; used in target ids. A model name without a digit (a hypervisor's
// "Intel(R) Xeon(R) Processor") names no CPU, so family and model stand in for it.
inline std::string microarch_name(const CpuProbe& p) {
    const int fam = std::atoi(p.family.c_str()), mod = std::atoi(p.model.c_str());
    std::string base = p.vendor == "AuthenticAMD" && p.model_name.find("EPYC") != std::string::npos
                           ? "epyc"
                       : p.vendor == "AuthenticAMD" ? "amd"
                       : p.vendor == "GenuineIntel"
                           ? (p.model_name.find("Xeon") != std::string::npos ? "xeon" : "intel")
                           : "cpu";
    if (p.vendor == "AuthenticAMD") {
        if (fam == 23) return base + (mod < 0x30 ? "-zen" : "-zen2");
        if (fam == 25)
            return base +
                   ((mod >= 0x10 && mod < 0x20) || (mod >= 0x60 && mod < 0x80) ? "-zen4" : "-zen3");
        if (fam == 26) return base + "-zen5";
        return base + "-f" + p.family + "m" + p.model;
    }
    if (std::none_of(p.model_name.begin(), p.model_name.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return base + "-f" + p.family + "m" + p.model;
    std::string s;
    for (char c : p.model_name) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            s += static_cast<char>(std::tolower(c));
        else if (!s.empty() && s.back() != '-')
            s += '-';
    }
    while (!s.empty() && s.back() == '-') s.pop_back();
    return s.empty() ? base : s;
}

// The cache hierarchy from CPUID, for virtual machines that expose no /sys/.../cache: the
// deterministic cache parameters (Intel leaf 4, AMD leaf 0x8000001D: same layout), else AMD's
// legacy leaves 0x80000005/6 (sizes only). Sets `source` to the leaves used. shared_cpus is the
// host's count of logical CPUs sharing a cache (1 where the leaves do not say).
inline std::vector<CacheLevel> caches_from_cpuid(const std::string& vendor, std::string& source) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    const unsigned max_ext = __get_cpuid(0x80000000u, &a, &b, &c, &d) ? a : 0;
    const bool amd = vendor == "AuthenticAMD";
    const unsigned leaf = amd ? 0x8000001Du : 4u;
    std::vector<CacheLevel> out;
    for (unsigned i = 0; i < 16 && (!amd || max_ext >= leaf); ++i) {
        if (!__get_cpuid_count(leaf, i, &a, &b, &c, &d)) break;
        const unsigned type = a & 0x1f;
        if (type == 0) break; // no more caches
        CacheLevel lv;
        lv.level = static_cast<int>((a >> 5) & 0x7);
        lv.type = type == 1 ? "Data" : type == 2 ? "Instruction" : "Unified";
        const double ways = ((b >> 22) & 0x3ff) + 1, partitions = ((b >> 12) & 0x3ff) + 1,
                     line = (b & 0xfff) + 1, sets = static_cast<double>(c) + 1;
        lv.kb = ways * partitions * line * sets / 1024.0;
        lv.shared_cpus = static_cast<int>((a >> 14) & 0xfff) + 1;
        out.push_back(lv);
    }
    if (!out.empty()) {
        source = amd ? "cpuid 0x8000001D" : "cpuid 4";
        return out;
    }
    if (!amd || max_ext < 0x80000006u) return out;
    auto add = [&](int level, const char* type, double kb) {
        if (kb > 0) out.push_back(CacheLevel{level, type, kb, 1});
    };
    if (__get_cpuid(0x80000005u, &a, &b, &c, &d)) {
        add(1, "Data", c >> 24);        // ECX[31:24]: L1 data KB
        add(1, "Instruction", d >> 24); // EDX[31:24]: L1 instruction KB
    }
    if (__get_cpuid(0x80000006u, &a, &b, &c, &d)) {
        add(2, "Unified", c >> 16);           // ECX[31:16]: L2 KB
        add(3, "Unified", (d >> 18) * 512.0); // EDX[31:18]: L3 in 512 KB units
    }
    source = "cpuid 0x80000005/0x80000006";
    return out;
}

inline CpuProbe probe_cpu() {
    CpuProbe p;
    std::istringstream info(read_text("/proc/cpuinfo"));
    std::string line;
    int processors = 0;
    while (std::getline(info, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
        if (key == "processor") ++processors;
        if (processors > 1) continue; // the first processor describes them all
        if (key == "vendor_id")
            p.vendor = value;
        else if (key == "model name")
            p.model_name = value;
        else if (key == "cpu family")
            p.family = value;
        else if (key == "model")
            p.model = value;
        else if (key == "stepping")
            p.stepping = value;
        else if (key == "cpu MHz")
            p.mhz = std::atof(value.c_str());
        else if (key == "flags") {
            std::istringstream fs(value);
            std::string f;
            static const char* wanted[] = {"sse2",        "sse4_2",    "avx",      "avx2",
                                           "fma",         "avx512f",   "avx512bw", "avx512vl",
                                           "avx512_vnni", "hypervisor"};
            while (fs >> f)
                for (const char* w : wanted)
                    if (f == w) p.flags.push_back(f);
        }
    }
    p.cpus = processors > 0 ? processors : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    const std::string maxf =
        trim(read_text("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"));
    p.max_mhz = maxf.empty() ? p.mhz : std::atof(maxf.c_str()) / 1000.0;
    std::istringstream mem(read_text("/proc/meminfo"));
    while (std::getline(mem, line))
        if (line.rfind("MemTotal:", 0) == 0)
            p.mem_gb = std::atof(line.substr(9).c_str()) / (1024.0 * 1024.0);
    for (int i = 0; i < 8; ++i) {
        const std::string dir =
            "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        const std::string level = trim(read_text(dir + "level"));
        if (level.empty()) break;
        CacheLevel c;
        c.level = std::atoi(level.c_str());
        c.type = trim(read_text(dir + "type"));
        std::string size = trim(read_text(dir + "size"));
        c.kb = std::atof(size.c_str()) * (size.find('M') != std::string::npos ? 1024.0 : 1.0);
        const std::string shared = trim(read_text(dir + "shared_cpu_list"));
        c.shared_cpus = 0;
        std::istringstream parts(shared);
        std::string part;
        while (std::getline(parts, part, ',')) { // "0-1", "0,2", "0-3,8-11"
            const auto dash = part.find('-');
            c.shared_cpus += dash == std::string::npos
                                 ? 1
                                 : std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1;
        }
        if (c.shared_cpus < 1) c.shared_cpus = 1;
        p.caches.push_back(c);
    }
    if (!p.caches.empty())
        p.caches_source = "sysfs";
    else
        p.caches = caches_from_cpuid(p.vendor, p.caches_source);
    struct utsname u;
    if (uname(&u) == 0) p.kernel = std::string(u.sysname) + " " + u.release;
    const std::string lscpu = command_output("lscpu 2>/dev/null");
    const auto h = lscpu.find("Hypervisor vendor:");
    if (h != std::string::npos)
        p.hypervisor = trim(lscpu.substr(h + 18, lscpu.find('\n', h) - h - 18));
    p.microarch = microarch_name(p);
    return p;
}

inline bool isa_supported(const CpuProbe& p, const IsaLevel& isa) {
    auto has = [&](const char* f) {
        return std::find(p.flags.begin(), p.flags.end(), f) != p.flags.end();
    };
    if (isa.level == "v4") return has("avx512f") && has("avx512bw") && has("avx512vl");
    if (isa.level == "v3") return has("avx2") && has("fma");
    if (isa.level == "v2") return has("sse4_2");
    return true;
}

// Pins the calling thread (and what it forks or starts afterwards) to `cores`.
inline void pin_to_cores(const std::vector<int>& cores) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cores) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        throw Error("sched_setaffinity", "cannot pin to the requested cores");
}

// The cores a target with `threads` threads runs on: the last `threads` cores of the machine
// (or the given --core for 1 thread).
inline std::vector<int> target_cores(int threads, int core, int cpus) {
    std::vector<int> cores;
    if (threads == 1) return {core >= 0 ? core : cpus - 1};
    for (int c = std::max(0, cpus - threads); c < cpus; ++c) cores.push_back(c);
    return cores;
}

inline std::string iso_time_utc() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// The micro-benchmarks, in C, compiled with the target's -march (own code).
inline std::string microbench_c(int vector_bytes) {
    std::ostringstream s;
    s << "#include <stddef.h>\n#include <omp.h>\n"
      << "typedef float vf __attribute__((vector_size(" << vector_bytes << ")));\n"
      << "#define L " << vector_bytes / 4 << "\n"
      << "double tempo_peak(long iters, int threads) {\n"
         "  double total = 0;\n"
         "  #pragma omp parallel num_threads(threads) reduction(+:total)\n"
         "  {\n"
         "    vf b, c, a[12];\n"
         "    for (int l = 0; l < L; ++l) { b[l] = 0.999999f; c[l] = 1e-7f; }\n"
         "    for (int k = 0; k < 12; ++k) for (int l = 0; l < L; ++l) a[k][l] = 1.0f + 0.01f * k "
         "+ 0.001f * l + omp_get_thread_num();\n"
         "    vf "
         "a0=a[0],a1=a[1],a2=a[2],a3=a[3],a4=a[4],a5=a[5],a6=a[6],a7=a[7],a8=a[8],a9=a[9],a10=a[10]"
         ",a11=a[11];\n"
         "    for (long i = 0; i < iters; ++i) {\n"
         "      a0=a0*b+c; a1=a1*b+c; a2=a2*b+c; a3=a3*b+c; a4=a4*b+c; a5=a5*b+c;\n"
         "      a6=a6*b+c; a7=a7*b+c; a8=a8*b+c; a9=a9*b+c; a10=a10*b+c; a11=a11*b+c;\n"
         "      __asm__ volatile(\"\" : \"+x\"(a0), \"+x\"(a1), \"+x\"(a2), \"+x\"(a3), "
         "\"+x\"(a4), \"+x\"(a5));\n"
         "    }\n"
         "    vf s = a0+a1+a2+a3+a4+a5+a6+a7+a8+a9+a10+a11;\n"
         "    for (int l = 0; l < L; ++l) total += s[l];\n"
         "  }\n"
         "  return total;\n"
         "}\n"
         "int tempo_peak_flops_per_iter(void) { return 12 * L * 2; }\n"
         "double tempo_stream_read(const float* x, long n, int threads) {\n"
         "  double total = 0;\n"
         "  #pragma omp parallel for num_threads(threads) reduction(+:total) schedule(static)\n"
         "  for (long blk = 0; blk < n / 4096; ++blk) {\n"
         "    const vf* p = (const vf*)(x + blk * 4096);\n"
         "    vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};\n"
         "    for (int i = 0; i < 4096 / L; i += 4) { s0 += p[i]; s1 += p[i+1]; s2 += p[i+2]; s3 "
         "+= p[i+3]; }\n"
         "    vf s = s0 + s1 + s2 + s3;\n"
         "    for (int l = 0; l < L; ++l) total += s[l];\n"
         "  }\n"
         "  return total;\n"
         "}\n";
    return s.str();
}

struct TargetMeasurement {
    double peak_flops = 0; // FLOP/s, best of several runs
    double bandwidth = 0;  // bytes/s, streaming read, best of several runs
    double stream_bytes = 0;
};

inline TargetMeasurement measure_target(const IsaLevel& isa, int threads,
                                        const std::string& scratch, double llc_kb) {
    namespace fs = std::filesystem;
    fs::create_directories(scratch);
    const std::string stem = scratch + "/microbench_" + isa.level + "_t" + std::to_string(threads) +
                             "_" + std::to_string(getpid());
    {
        std::ofstream out(stem + ".c");
        out << microbench_c(isa.vector_bytes);
    }
    const std::string cmd = "gcc -std=gnu11 -O3 -march=" + isa.march +
                            " -ffp-contract=fast -fopenmp -fPIC -shared -o " + stem + ".so " +
                            stem + ".c > " + stem + ".log 2>&1";
    if (std::system(cmd.c_str()) != 0)
        throw Error(stem + ".c", "microbenchmark build failed: " + read_text(stem + ".log"));
    // RTLD_NODELETE, as SharedLibrary: libgomp's worker threads of a 2-thread run outlive the
    // parallel region (a 2-thread probe whose JSON then failed died with SIGSEGV).
    void* h = dlopen((stem + ".so").c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) throw Error(stem + ".so", dlerror());
    auto peak = reinterpret_cast<double (*)(long, int)>(dlsym(h, "tempo_peak"));
    auto per_iter = reinterpret_cast<int (*)()>(dlsym(h, "tempo_peak_flops_per_iter"));
    auto stream =
        reinterpret_cast<double (*)(const float*, long, int)>(dlsym(h, "tempo_stream_read"));
    if (!peak || !per_iter || !stream) throw Error(stem + ".so", "microbenchmark symbols missing");
    using clock = std::chrono::steady_clock;
    TargetMeasurement m;
    volatile double sink = 0;
    long iters = 1 << 20;
    for (;;) { // calibrate to ≥ 0.2 s per run
        const auto t0 = clock::now();
        sink = sink + peak(iters, threads);
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        if (s > 0.2) break;
        iters *= 2;
    }
    for (int r = 0; r < 7; ++r) {
        const auto t0 = clock::now();
        sink = sink + peak(iters, threads);
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        m.peak_flops =
            std::max(m.peak_flops, static_cast<double>(iters) * per_iter() * threads / s);
    }
    // Streaming read over 16× the last-level cache, at least 256 MiB and at most 2 GiB (a
    // virtual machine may report the whole socket's L3).
    const double bytes =
        std::clamp(16.0 * llc_kb * 1024, 256.0 * 1024 * 1024, 2048.0 * 1024 * 1024);
    const long n = static_cast<long>(bytes / 4) / 4096 * 4096;
    float* x = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(n) * 4));
    if (!x) throw Error("tempo lab target", "cannot allocate the bandwidth buffer");
    for (long i = 0; i < n; ++i) x[i] = 1.0f;
    for (int r = 0; r < 7; ++r) {
        const auto t0 = clock::now();
        sink = sink + stream(x, n, threads);
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        m.bandwidth = std::max(m.bandwidth, n * 4.0 / s);
    }
    m.stream_bytes = n * 4.0;
    std::free(x);
    dlclose(h);
    for (const char* ext : {".c", ".so", ".log"}) fs::remove(stem + ext);
    return m;
}

// CDMPP's 8 device features (cdmpp.md): 1, clock_MHz/2000, log2(mem_GB)/log2(64),
// log2(L3_KB)/log2(256), log2(L2_MB)/log2(64), log2(L1_KB)/log2(256), log2(BW_GBps)/log2(2048),
// fp32_TFLOPS/12. Caches are those the target's cores can use: L1 (data + instruction) and L2
// times the thread count, the shared L3 as it is.
inline std::vector<double> cdmpp_device_features(double mhz, double mem_gb, double l3_kb,
                                                 double l2_mb, double l1_kb, double bw_gbps,
                                                 double tflops) {
    return {1.0,
            mhz / 2000.0,
            std::log2(mem_gb) / std::log2(64.0),
            std::log2(l3_kb) / std::log2(256.0),
            std::log2(l2_mb) / std::log2(64.0),
            std::log2(l1_kb) / std::log2(256.0),
            std::log2(bw_gbps) / std::log2(2048.0),
            tflops / 12.0};
}

inline std::string target_id(const CpuProbe& p, const IsaLevel& isa, int threads, Vectorize v) {
    return p.microarch + "." + isa.name + (v == Vectorize::schedule ? "nv" : "") + ".t" +
           std::to_string(threads);
}

inline json::Value target_json(const CpuProbe& p, const IsaLevel& isa, int threads,
                               Vectorize vectorize, const std::vector<int>& cores,
                               const TargetMeasurement& m, const std::string& id) {
    json::Value::Array flags, core_list, device, caches;
    for (const auto& f : p.flags) flags.emplace_back(f);
    for (int c : cores) core_list.emplace_back(c);
    for (const auto& c : p.caches)
        caches.emplace_back(json::Value::Object{
            {"level", c.level}, {"type", c.type}, {"kb", c.kb}, {"shared_cpus", c.shared_cpus}});
    const double l1_kb = (p.cache_kb(1, "Data") + p.cache_kb(1, "Instruction")) * threads;
    const double l2_mb = p.cache_kb(2, "Unified") / 1024.0 * threads;
    double l3_kb = p.cache_kb(3, "Unified");
    if (l3_kb <= 0) l3_kb = p.cache_kb(2, "Unified") * threads;
    const double mhz = p.max_mhz > 0 ? p.max_mhz : p.mhz;
    const std::pair<const char*, double> inputs[] = {
        {"clock (MHz)", mhz},         {"memory (GB)", p.mem_gb}, {"L3 (KB)", l3_kb},
        {"L2 (MB)", l2_mb},           {"L1 (KB)", l1_kb},        {"bandwidth", m.bandwidth},
        {"peak FLOP/s", m.peak_flops}};
    for (const auto& [name, value] : inputs)
        if (!(value > 0) || !std::isfinite(value))
            throw Error("CPU probe", std::string("could not determine the ") + name +
                                         " (neither /proc, /sys nor CPUID gave it): the CDMPP "
                                         "device features need it");
    for (double f : cdmpp_device_features(mhz, p.mem_gb, l3_kb, l2_mb, l1_kb, m.bandwidth / 1e9,
                                          m.peak_flops / 1e12))
        device.emplace_back(f);
    return json::Value::Object{
        {"id", id},
        {"device", id.substr(0, id.find('.'))},
        {"cpu", json::Value::Object{{"vendor", p.vendor},
                                    {"model_name", p.model_name},
                                    {"family", p.family},
                                    {"model", p.model},
                                    {"stepping", p.stepping},
                                    {"cpus", p.cpus},
                                    {"mhz", p.mhz},
                                    {"max_mhz", mhz},
                                    {"flags", flags},
                                    {"hypervisor", p.hypervisor},
                                    {"kernel", p.kernel}}},
        {"caches", caches},
        {"caches_source", p.caches_source},
        {"memory_gb", p.mem_gb},
        {"isa", json::Value::Object{{"level", isa.level},
                                    {"march", isa.march},
                                    {"name", isa.name},
                                    {"vector_bits", isa.vector_bytes * 8}}},
        {"threads", threads},
        {"cores", core_list},
        {"compiler",
         json::Value::Object{{"cc", gcc_version()}, {"flags", compile_flags(isa, vectorize)}}},
        {"measured",
         json::Value::Object{
             {"peak_fp32_flops", m.peak_flops},
             {"peak_method", "12 independent vector multiply-add chains, " +
                                 std::to_string(isa.vector_bytes * 8) +
                                 "-bit vectors, -ffp-contract=fast, best of 7 runs of ≥0.2 s"},
             {"memory_bandwidth_Bps", m.bandwidth},
             {"bandwidth_method",
              "streaming read (sum) of " +
                  std::to_string(static_cast<long>(m.stream_bytes / (1 << 20))) +
                  " MiB, best of 7"},
             {"at", iso_time_utc()}}},
        {"cdmpp_device_features", device},
        {"cdmpp_device_inputs", json::Value::Object{{"clock_mhz", mhz},
                                                    {"mem_gb", p.mem_gb},
                                                    {"l3_kb", l3_kb},
                                                    {"l2_mb", l2_mb},
                                                    {"l1_kb", l1_kb},
                                                    {"bw_gbps", m.bandwidth / 1e9},
                                                    {"fp32_tflops", m.peak_flops / 1e12}}}};
}

} // namespace tempo::lab
