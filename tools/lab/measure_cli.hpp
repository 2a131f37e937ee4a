// `tempo lab target|measure|stats|remeasure|featurize` (and the internal `run-batch`): the
// measured-dataset half of the tensor-program lab. See data/README.md for the record format.
#pragma once

#include "cli_args.hpp"
#include "measure.hpp"

#include <csignal>
#include <cstdio>
#include <iostream>

namespace tempo::lab {

inline constexpr const char* kDataUsage =
    "usage: tempo lab <command> [options]   (dataset commands)\n"
    "\n"
    "  target [--isa v1|v2|v3|v4] [--threads N] [--core C] [--vectorize compiler|schedule]\n"
    "         [--id ID] [--data DIR]\n"
    "      probe this CPU, measure peak FP32 FLOP/s and memory bandwidth for that ISA level and\n"
    "      thread count, write DIR/targets/<id>.json (id like epyc-zen3.avx2.t1)\n"
    "      --vectorize schedule: build the programs with -fno-tree-vectorize, so only the loops\n"
    "      the schedule vectorises become vector code (id like xeon-f6m167.avx512nv.t1);\n"
    "      default compiler: gcc may vectorise other loops too\n"
    "  measure --target ID [--tasks FILTER] [--files LIST] [--per-task N] [--shard i/n]\n"
    "          [--seed S] [--limit-s T] [--max-tasks K] [--core C] [--batch B]\n"
    "          [--run-timeout S] [--build-timeout S] [--first NETS] [--scratch DIR]\n"
    "          [--pipeline] [--compile-cores LIST] [--quiet B|off] [--quiet-wait S]\n"
    "          [--memory-band F|off] [--core-floor F|off] [--retime-before UTC-TIME]\n"
    "          [--programs-from ID] [--gate-from ID]\n"
    "      draw N schedules per task (Tenset's init population + mutations, deduplicated),\n"
    "      compile, check against the reference, time (Tenset's protocol), append records to\n"
    "      DIR/<target>/records-<shard>-NNNN.jsonl(.gz); resumable; failures to failures.jsonl\n"
    "      --retime-before T: programs whose records were all measured before T (e.g.\n"
    "      2026-12-02T18:00:00Z) are timed again; the new record is appended, the old one kept,\n"
    "      and readers (stats, remeasure, training) use each program's latest timing\n"
    "      --programs-from ID: first time the stored schedules of target ID's programs that\n"
    "      this target lacks (they count toward N), so both targets hold the same programs\n"
    "      (the pairs cross-device training needs); then draw fresh ones up to N\n"
    "      --gate-from ID (measure, remeasure): the memory and core gates and the host check\n"
    "      take their medians from target ID's records (same device) instead of this\n"
    "      target's: re-time or grow a target in the host state its sibling was timed in\n"
    "  stats [--target ID]...                     records per target, network, operator;\n"
    "                                             latency range, noise, failures\n"
    "  remeasure --target ID [-n N] [--seed S] [-o FILE] [--max-busy B] [--since UTC-TIME]\n"
    "      re-time N random records (only those whose others_busy ≤ B and those measured\n"
    "      since the time, if given), report agreement\n"
    "  featurize --target ID [-o FILE] [--with-latency] [--features ansor|ansor+loops]\n"
    "      rebuild every record's compact AST (+ device features) as JSON Lines, timed;\n"
    "      ansor+loops appends tempo's 10 loop-extension columns to Ansor's 164\n"
    "\n"
    "common: --data DIR (default: data), --workloads DIR (default: the lab's own)\n"
    "  --files LIST: comma-separated substrings of workload file stems (e.g. _b1_)\n"
    "  --first NETS: networks whose tasks go first (default: the hold-out networks\n"
    "                resnet_50,mobilenet_v2,resnext_50,bert_base,bert_tiny)\n"
    "  --quiet B: time only while the CPUs outside the target's are ≤ B busy (default 0.1):\n"
    "             wait for them before each try, redo a try they disturbed; off: never wait\n"
    "  --quiet-wait S: longest wait before one try (default 900 s), then time anyway\n"
    "  --memory-band F: memory gate (measure, remeasure): time only while the speed probe's\n"
    "             streaming read is within F … 1/F × its median over the target's records\n"
    "             (default 0.8; needs 100 such records): wait for it, redo a try it leaves\n"
    "             the band during; off: never wait\n"
    "  --core-floor F: core gate (measure, remeasure): wait before each try until the\n"
    "             probe's multiply rate is ≥ F × its median over the target's records\n"
    "             (default 0.98); off: never wait\n"
    "  measure and remeasure first compare a few speed probes with the target's records and\n"
    "  warn when this host's core or memory differs from the one they were timed on\n";

inline bool is_data_command(const std::string& c) {
    return c == "target" || c == "measure" || c == "stats" || c == "remeasure" ||
           c == "featurize" || c == "run-batch";
}

struct DataOptions {
    std::string command, data = "data", workloads, target, isa = "v3", vectorize = "compiler", id,
                         tasks_filter, scratch, out, retime_before,
                         since, // UTC times, YYYY-MM-DDTHH:MM:SSZ
        programs_from, gate_from;
    std::vector<std::string> files, targets, first = holdout_networks();
    std::vector<int> compile_cores;
    int threads = 1, core = -1, per_task = 16, shard = 1, shards = 1, batch = 16, n = 200,
        max_tasks = 0;
    std::uint64_t seed = 1, input_seed = 1;
    double limit_s = 0, run_timeout = 5, build_timeout = 15, rotate_s = 600;
    double quiet = 0.1, quiet_wait_s = 900, max_busy = -1; // quiet < 0: off; max_busy < 0: any
    double memory_band = 0.8; // memory gate: F … 1/F × the target's median probe read; < 0: off
    double core_floor = 0.98; // core gate: ≥ F × the target's median probe multiply; < 0: off
    std::size_t rotate_records = 1000;
    bool with_latency = false, pipeline = false;
    FeatureSet features = FeatureSet::ansor;
    std::vector<std::string> positional;
};

inline DataOptions parse_data_options(const std::vector<std::string>& args,
                                      const std::string& workloads) {
    DataOptions o;
    o.workloads = workloads;
    o.command = args.at(0);
    for (std::size_t i = 1; i < args.size(); ++i) {
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size())
                throw Error("tempo lab " + o.command, args[i] + " needs a value");
            return args[++i];
        };
        const std::string& a = args[i];
        const std::string where = "tempo lab " + o.command + " " + a;
        auto integer = [&](int lo, int hi) { return parse_int<int>(value(), where, lo, hi); };
        auto real = [&](double lo, double hi) { return parse_real(value(), where, lo, hi); };
        auto fraction_or_off = [&](double lo) { // "off" → -1
            const std::string& v = value();
            return v == "off" ? -1.0 : parse_real(v, where, lo, 1, "off");
        };
        constexpr double kNoLimit = std::numeric_limits<double>::max();
        if (a == "--data")
            o.data = value();
        else if (a == "--workloads")
            o.workloads = value();
        else if (a == "--target") {
            o.target = value();
            o.targets.push_back(o.target);
        } else if (a == "--isa")
            o.isa = value();
        else if (a == "--vectorize")
            o.vectorize = value();
        else if (a == "--threads")
            o.threads = integer(1, 1024);
        else if (a == "--core")
            o.core = integer(0, 4095);
        else if (a == "--id")
            o.id = value();
        else if (a == "--tasks")
            o.tasks_filter = value();
        else if (a == "--files")
            o.files = split(value(), ',');
        else if (a == "--first")
            o.first = split(value(), ',');
        else if (a == "--per-task")
            o.per_task = integer(0, 1000000);
        else if (a == "--shard") {
            const std::string& s = value();
            const auto slash = s.find('/');
            if (slash == std::string::npos) throw Error(where, "expected i/n, got '" + s + "'");
            o.shards = parse_int<int>(s.substr(slash + 1), where + " n", 1, 1 << 20);
            o.shard = parse_int<int>(s.substr(0, slash), where + " i", 1, o.shards);
        } else if (a == "--seed")
            o.seed = parse_int<std::uint64_t>(value(), where);
        else if (a == "--limit-s")
            o.limit_s = real(0, kNoLimit);
        else if (a == "--max-tasks")
            o.max_tasks = integer(0, 1 << 30);
        else if (a == "--batch")
            o.batch = integer(1, 1 << 16);
        else if (a == "--run-timeout")
            o.run_timeout = real(1e-3, kNoLimit);
        else if (a == "--build-timeout")
            o.build_timeout = real(1e-3, kNoLimit);
        else if (a == "--rotate-records")
            o.rotate_records = parse_int<std::size_t>(value(), where, 1, 1 << 30);
        else if (a == "--rotate-s")
            o.rotate_s = real(1, kNoLimit);
        else if (a == "--scratch")
            o.scratch = value();
        else if (a == "-n")
            o.n = integer(1, 1 << 30);
        else if (a == "-o")
            o.out = value();
        else if (a == "--with-latency")
            o.with_latency = true;
        else if (a == "--features")
            o.features = feature_set_from_name(value(), "--features");
        else if (a == "--pipeline")
            o.pipeline = true;
        else if (a == "--quiet")
            o.quiet = fraction_or_off(0);
        else if (a == "--memory-band")
            o.memory_band = fraction_or_off(0.01);
        else if (a == "--core-floor")
            o.core_floor = fraction_or_off(0.01);
        else if (a == "--quiet-wait")
            o.quiet_wait_s = real(0, kNoLimit);
        else if (a == "--retime-before" || a == "--since") {
            // Compared as text with records' measured_at, so exactly that format.
            const std::string& t = value();
            const bool shape = t.size() == 20 && t[4] == '-' && t[7] == '-' && t[10] == 'T' &&
                               t[13] == ':' && t[16] == ':' && t[19] == 'Z';
            if (!shape)
                throw Error(where, "'" + t + "' is not a UTC time like 2026-12-02T18:00:00Z");
            (a == "--since" ? o.since : o.retime_before) = t;
        } else if (a == "--programs-from")
            o.programs_from = value();
        else if (a == "--gate-from")
            o.gate_from = value();
        else if (a == "--max-busy")
            o.max_busy = real(0, 1);
        else if (a == "--compile-cores")
            for (const auto& c : split(value(), ','))
                o.compile_cores.push_back(parse_int<int>(c, where, 0, 4095));
        else if (!a.empty() && a[0] != '-')
            o.positional.push_back(a);
        else
            throw Error("tempo lab " + o.command, "unknown option '" + a + "'");
    }
    if (o.scratch.empty())
        o.scratch =
            (std::filesystem::temp_directory_path() / ("tempo-lab-" + std::to_string(getuid())))
                .string();
    return o;
}

// The quiet guard's part of a record's run object: its settings (the memory gate's band and
// the core gate's floor, null when off), how long it waited, how many tries it had redone and
// how many of those for the memory gate.
inline json::Value quiet_json(const DataOptions& o, SpeedGate gate, const ProgramResult& r) {
    const json::Value band = gate.memory_on()
                                 ? json::Value(json::Value::Array{gate.read_lo, gate.read_hi})
                                 : json::Value();
    const json::Value floor = gate.core_on() ? json::Value(gate.mul_lo) : json::Value();
    if (o.quiet < 0 && !gate.on())
        return json::Value::Object{
            {"max_busy", nullptr}, {"read_band_gbs", nullptr}, {"mul_floor_gflops", nullptr}};
    return json::Value::Object{{"max_busy", o.quiet < 0 ? json::Value() : json::Value(o.quiet)},
                               {"read_band_gbs", band},
                               {"mul_floor_gflops", floor},
                               {"waited_s", r.waited_s},
                               {"redone", r.redone},
                               {"memory_redone", r.memory_redone}};
}

// The speed probe taken with a timing (speed_probe.hpp), as records and remeasure store it.
inline json::Value probe_json(const SpeedSample& s) {
    return json::Value::Object{{"mul_gflops", s.mul_gflops}, {"read_gbs", s.read_gbs}};
}

inline double quantile(std::vector<double> v, double q) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const std::size_t i = static_cast<std::size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

// The speed probe over a target's records: the state of the host they were timed on.
struct RecordsProbe {
    double mul_gflops = 0, read_gbs = 0;        // medians
    std::size_t n = 0;                          // records that carry a probe
    static constexpr std::size_t kEnough = 100; // fewer: no gate, no host check
};

inline RecordsProbe records_probe(const std::string& dir) {
    std::vector<double> muls, reads;
    for_each_record(dir, [&](const json::Value& r) {
        const json::Value* run = r.find("run");
        const json::Value* probe = run ? run->find("probe") : nullptr;
        const json::Value* mul = probe ? probe->find("mul_gflops") : nullptr;
        const json::Value* read = probe ? probe->find("read_gbs") : nullptr;
        if (!mul || !read || !(mul->as_double() > 0) || !(read->as_double() > 0)) return;
        muls.push_back(mul->as_double());
        reads.push_back(read->as_double());
    });
    return {quantile(muls, 0.5), quantile(reads, 0.5), muls.size()};
}

// The speed gates for a target, from the speed probe over its records (the host state its
// data was taken in), so that new timings are taken in that state too: the memory gate's band
// --memory-band F … 1/F × their median streaming read, the core gate's floor --core-floor F ×
// their median multiply rate. Each is off with `off`, both with fewer than 100 probed records.
inline SpeedGate speed_gate(const DataOptions& o, const RecordsProbe& then,
                            const std::string& dir) {
    if (o.memory_band < 0 && o.core_floor < 0) return {};
    if (then.n < RecordsProbe::kEnough) {
        std::fprintf(stderr,
                     "memory and core gates: off (%zu records with a speed probe in %s, %zu "
                     "needed)\n",
                     then.n, dir.c_str(), RecordsProbe::kEnough);
        return {};
    }
    SpeedGate gate;
    if (o.memory_band >= 0) {
        gate.read_lo = o.memory_band * then.read_gbs;
        gate.read_hi = then.read_gbs / o.memory_band;
        std::fprintf(stderr,
                     "memory gate: time while the probe reads %.1f … %.1f GB/s (%.2f … %.2f × "
                     "the median %.1f of %zu records)\n",
                     gate.read_lo, gate.read_hi, o.memory_band, 1 / o.memory_band, then.read_gbs,
                     then.n);
    }
    if (o.core_floor >= 0) {
        gate.mul_lo = o.core_floor * then.mul_gflops;
        std::fprintf(stderr,
                     "core gate: time while the probe multiplies at ≥ %.1f GFLOP/s (%.2f × the "
                     "median %.1f of %zu records)\n",
                     gate.mul_lo, o.core_floor, then.mul_gflops, then.n);
    }
    return gate;
}

// How this host compares with the one a target's records were timed on. Hosts of one CPU model
// differ (a core 5 % slower, memory reading 1.5× faster): timings taken on another one
// disagree with the records by that much, and a memory gate whose band it rarely reads in
// holds nearly every try back. Better said before the run than found in `remeasure`.
struct HostComparison {
    double mul_gflops = 0, read_gbs = 0;  // medians of this host's probes
    double mul_ratio = 0, read_ratio = 0; // now / the records'
    int in_band = 0, above_floor = 0;     // probes the memory gate / core gate would pass
    int samples = 0;
    std::vector<std::string> warnings;
};

inline HostComparison compare_host(const RecordsProbe& then, const std::vector<SpeedSample>& now,
                                   SpeedGate gate, double mul_tolerance = 0.02) {
    if (now.empty()) throw Error("compare_host", "no probe samples");
    HostComparison c;
    std::vector<double> muls, reads;
    for (const SpeedSample& s : now) {
        muls.push_back(s.mul_gflops);
        reads.push_back(s.read_gbs);
        c.in_band += gate.memory_holds(s.read_gbs);
        c.above_floor += gate.core_holds(s.mul_gflops);
    }
    c.samples = static_cast<int>(now.size());
    c.mul_gflops = quantile(muls, 0.5);
    c.read_gbs = quantile(reads, 0.5);
    c.mul_ratio = c.mul_gflops / then.mul_gflops;
    c.read_ratio = c.read_gbs / then.read_gbs;
    auto warn = [&c](const char* format, auto... values) {
        char buf[400];
        std::snprintf(buf, sizeof buf, format, values...);
        c.warnings.emplace_back(buf);
    };
    if (std::abs(c.mul_ratio - 1) > mul_tolerance) {
        const char* way = c.mul_ratio < 1 ? "slower" : "faster";
        warn("this core's multiply probe reads %.1f GFLOP/s, %.1f %% %s than the %.1f of the "
             "target's records: new timings will be about that much %s than theirs (`tempo lab "
             "remeasure` shows how far they agree)",
             c.mul_gflops, 100 * std::abs(c.mul_ratio - 1), way, then.mul_gflops, way);
    }
    if (2 * c.in_band < c.samples)
        warn("only %d of %d probes read inside the memory gate's band %.1f … %.1f GB/s (this "
             "host: median %.1f): the gate will hold most tries back; the records were timed on "
             "a host whose memory reads differently",
             c.in_band, c.samples, gate.read_lo, gate.read_hi, c.read_gbs);
    if (2 * c.above_floor < c.samples)
        warn("only %d of %d probes multiply at or above the core gate's floor %.1f GFLOP/s: the "
             "gate will hold most tries back (--core-floor lowers it, and with it how well new "
             "timings agree with the records)",
             c.above_floor, c.samples, gate.mul_lo);
    return c;
}

// `n` speed probes on the measuring cores, 200 ms apart: spread over seconds, so that a
// moment's disturbance (seen right after a build) does not decide the comparison. The calling
// thread's CPUs are restored.
inline std::vector<SpeedSample> probe_host(const std::vector<int>& cores, int n = 25) {
    cpu_set_t before;
    if (sched_getaffinity(0, sizeof before, &before) != 0)
        throw Error("sched_getaffinity", "cannot read this process's CPUs");
    pin_to_cores(cores);
    const SpeedProbe probe;
    std::vector<SpeedSample> samples;
    for (int i = 0; i < n; ++i) {
        samples.push_back(probe.sample());
        ::usleep(200000);
    }
    if (sched_setaffinity(0, sizeof before, &before) != 0)
        throw Error("sched_setaffinity", "cannot restore this process's CPUs");
    return samples;
}

// The records that set the speed gates and the host check: the target's own, or with
// --gate-from another target's of the same device (the id's part before the first '.'),
// which must then have enough probed records: asked for by name, it may not silently turn the
// gates off.
struct GateRecords {
    std::string dir;
    RecordsProbe probe;
};

inline GateRecords gate_records(const DataOptions& o, const std::string& dir) {
    if (o.gate_from.empty()) return {dir, records_probe(dir)};
    const std::string flag = "--gate-from " + o.gate_from;
    const auto device = [](const std::string& id) { return id.substr(0, id.find('.')); };
    if (device(o.gate_from) != device(o.target))
        throw Error(flag, "a target of another device than " + o.target +
                              "; the gates compare this host with records of the same CPU");
    GateRecords from{o.data + "/" + o.gate_from, {}};
    from.probe = records_probe(from.dir);
    if (from.probe.n < RecordsProbe::kEnough)
        throw Error(flag, std::to_string(from.probe.n) + " records with a speed probe in " +
                              from.dir + ", " + std::to_string(RecordsProbe::kEnough) + " needed");
    std::fprintf(stderr, "gates and host check: from the records of %s\n", o.gate_from.c_str());
    return from;
}

// The speed gates, after comparing this host with the records' (printed, with warnings).
inline SpeedGate check_host(const DataOptions& o, const std::string& dir,
                            const std::vector<int>& cores) {
    const GateRecords from = gate_records(o, dir);
    const RecordsProbe& then = from.probe;
    const SpeedGate gate = speed_gate(o, then, from.dir);
    if (then.n < RecordsProbe::kEnough) return gate;
    const HostComparison c = compare_host(then, probe_host(cores), gate);
    std::fprintf(stderr,
                 "host check: multiply %.1f GFLOP/s (%.3f × the records' %.1f), read %.1f GB/s "
                 "(%.3f × their %.1f)",
                 c.mul_gflops, c.mul_ratio, then.mul_gflops, c.read_gbs, c.read_ratio,
                 then.read_gbs);
    if (gate.memory_on())
        std::fprintf(stderr, "; %d of %d probes inside the memory gate's band", c.in_band,
                     c.samples);
    if (gate.core_on())
        std::fprintf(stderr, "; %d of %d at or above the core gate's floor", c.above_floor,
                     c.samples);
    std::fprintf(stderr, "\n");
    for (const std::string& w : c.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    return gate;
}

// ------------------------------------------------------------------------------------------
// target

inline int lab_target(const DataOptions& o) {
    const IsaLevel isa = isa_level(o.isa);
    const Vectorize vectorize = vectorize_mode(o.vectorize);
    const CpuProbe p = probe_cpu();
    if (!isa_supported(p, isa))
        throw Error("tempo lab target",
                    "this CPU (" + p.model_name + ") cannot run -march=" + isa.march);
    if (o.threads < 1 || o.threads > p.cpus)
        throw Error("--threads", "between 1 and " + std::to_string(p.cpus));
    const std::vector<int> cores = target_cores(o.threads, o.core, p.cpus);
    pin_to_cores(cores);
    const std::string id = o.id.empty() ? target_id(p, isa, o.threads, vectorize) : o.id;
    std::cerr << "tempo lab target: " << id << " (" << p.model_name << ", family " << p.family
              << " model " << p.model << ", -march=" << isa.march << ", vectorised by the "
              << vectorize_name(vectorize) << ", " << o.threads << " thread(s) on core(s)";
    for (int c : cores) std::cerr << " " << c;
    std::cerr << ")\n";
    double llc = p.cache_kb(3, "Unified");
    if (llc <= 0) llc = p.cache_kb(2, "Unified");
    const TargetMeasurement m = measure_target(isa, o.threads, o.scratch, llc);
    const json::Value v = target_json(p, isa, o.threads, vectorize, cores, m, id);
    std::filesystem::create_directories(o.data + "/targets");
    const std::string path = o.data + "/targets/" + id + ".json";
    { // whole or not at all: a reader never sees a half-written target
        const std::string text = json::dump(v) + "\n";
        std::ofstream out(path + ".tmp");
        out << text;
        out.close();
        if (!out) throw Error(path + ".tmp", "cannot write");
        std::filesystem::rename(path + ".tmp", path);
    }
    std::fprintf(stderr, "  peak FP32 %.1f GFLOP/s, memory bandwidth %.2f GB/s -> %s\n",
                 m.peak_flops / 1e9, m.bandwidth / 1e9, path.c_str());
    std::cout << json::dump(v) << "\n";
    return 0;
}

// ------------------------------------------------------------------------------------------
// measure

struct Progress {
    double start = now_s(), last_print = 0;
    std::size_t done = 0, timed = 0, failed = 0, total = 0, tasks_done = 0, tasks_total = 0;
    std::string task;
    std::string waiting; // what holds the current try back, while it waits
    bool tty = isatty(2);

    void print(bool force = false) {
        const double t = now_s();
        if (!force && t - last_print < (tty ? 0.5 : 60)) return;
        last_print = t;
        const double rate = done / std::max(1e-9, t - start);
        const double eta = total > done ? (total - done) / std::max(1e-9, rate) : 0;
        const int width = 24;
        const double frac = total ? std::min(1.0, static_cast<double>(done) / total) : 1.0;
        std::string bar(static_cast<std::size_t>(frac * width), '#');
        bar.resize(width, '.');
        char line[640];
        std::snprintf(
            line, sizeof line,
            "[%s] %zu/%zu programs (%zu timed, %zu failed) %.2f/s ETA %s  task %zu/%zu %.60s%s%s",
            bar.c_str(), done, total, timed, failed, rate, format_duration(eta).c_str(), tasks_done,
            tasks_total, task.c_str(), waiting.empty() ? "" : "  waiting: ", waiting.c_str());
        if (tty)
            std::fprintf(stderr, "\r%s\033[K", line);
        else
            std::fprintf(stderr, "%s %s\n", iso_time_utc().c_str(), line);
        std::fflush(stderr);
    }
};

template <typename T>
class BoundedQueue {
public:
    explicit BoundedQueue(std::size_t cap) : cap_(cap) {}
    bool push(T v) {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return q_.size() < cap_ || closed_; });
        if (closed_) return false;
        q_.push_back(std::move(v));
        cv_.notify_all();
        return true;
    }
    std::optional<T> pop() {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return !q_.empty() || closed_; });
        if (q_.empty()) return std::nullopt;
        T v = std::move(q_.front());
        q_.pop_front();
        cv_.notify_all();
        return v;
    }
    void close() {
        std::lock_guard<std::mutex> l(m_);
        closed_ = true;
        cv_.notify_all();
    }

private:
    std::size_t cap_;
    std::deque<T> q_;
    bool closed_ = false;
    std::mutex m_;
    std::condition_variable cv_;
};

inline void on_stop_signal(int) {
    stop_requested().store(true);
}

inline std::string schedule_text(const json::Value& record) {
    const json::Value* s = record.find("schedule");
    return s ? json::dump(*s) : "";
}

// The CPUs a target does not run on: where the parent process, builds and checks go.
inline std::vector<int> spare_cores(const std::vector<int>& cores, int cpus) {
    std::vector<int> spare;
    for (int c = 0; c < cpus; ++c)
        if (std::find(cores.begin(), cores.end(), c) == cores.end()) spare.push_back(c);
    return spare;
}

// Measures; returns the number of records written (timed + failed).
inline int lab_measure(const DataOptions& o, std::ostream& log = std::cerr) {
    namespace fs = std::filesystem;
    if (o.target.empty()) throw Error("tempo lab measure", "--target is required");
    const TargetInfo target = load_target(o.data, o.target);
    const CpuProbe here = probe_cpu();
    require_target_cpu(target, here);
    const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    const std::vector<int> cores = target_cores(target.threads, o.core, cpus);
    const std::vector<int> spare = spare_cores(cores, cpus);
    // Building the next batch while this one is timed doubles the rate, but on a machine whose
    // cores are SMT siblings the build slows the timed core: off unless asked for.
    const bool pipeline = o.pipeline && !spare.empty();
    if (!spare.empty()) pin_to_cores(spare); // sampling, reference: off the measuring core(s)
    // Pipelined: gcc on the spare cores only. Otherwise the build runs between timings and may
    // use every core: one gcc per core.
    int build_jobs = pipeline ? static_cast<int>(spare.size()) : cpus;
    std::string gcc_prefix;
    if (!pipeline) gcc_prefix = "taskset -c 0-" + std::to_string(cpus - 1) + " ";
    if (!o.compile_cores.empty()) { // sampling, reference and gcc on these cores
        pin_to_cores(o.compile_cores);
        build_jobs = static_cast<int>(o.compile_cores.size());
        gcc_prefix = "taskset -c ";
        for (std::size_t i = 0; i < o.compile_cores.size(); ++i)
            gcc_prefix += (i ? "," : "") + std::to_string(o.compile_cores[i]);
        gcc_prefix += " ";
    }
    const std::string dir = o.data + "/" + target.id;
    fs::create_directories(dir);
    const SpeedGate gate = check_host(o, dir, cores);
    const std::string scratch = o.scratch + "/" + target.id + "-s" + std::to_string(o.shard) +
                                "of" + std::to_string(o.shards) + "-" + std::to_string(getpid());
    fs::create_directories(scratch);
    const std::string ref_cache = o.scratch + "/references";

    const Workloads w = load_workloads(o.workloads);
    std::vector<PlannedTask> plan =
        plan_tasks(w, o.files, o.tasks_filter, o.shard, o.shards, o.first);
    if (o.max_tasks > 0 && static_cast<int>(plan.size()) > o.max_tasks)
        plan.resize(static_cast<std::size_t>(o.max_tasks));

    std::set<std::string> done;
    std::map<std::string, int> done_per_task;
    auto note_done = [&](const json::Value& r) {
        const std::string k = record_key(r.find("task")->as_string(), r.find("sid")->as_string());
        if (done.insert(k).second) ++done_per_task[r.find("task")->as_string()];
    };
    // --retime-before: programs whose latest timing is older, by task, timed again from their
    // stored schedules (they still count toward --per-task: no fresh program replaces them).
    std::map<std::string, std::vector<json::Value>> retime;
    std::size_t to_retime = 0;
    const std::size_t existing = for_each_latest_record(dir, [&](const json::Value& r) {
        note_done(r);
        const json::Value* at = r.find("measured_at");
        if (o.retime_before.empty() || (at && at->as_string() >= o.retime_before)) return;
        const std::string& task = r.find("task")->as_string();
        done.erase(record_key(task, r.find("sid")->as_string()));
        retime[task].push_back(r);
        ++to_retime;
    });
    const std::size_t existing_failures = for_each_record(dir, note_done, true);
    // --programs-from: the other target's programs this one has neither timed nor failed, timed
    // from their stored schedules like re-timings.
    std::size_t to_copy = 0;
    if (!o.programs_from.empty()) {
        if (o.programs_from == target.id)
            throw Error("tempo lab measure --programs-from", "names the measured target itself");
        load_target(o.data, o.programs_from); // a clear error for an unknown target
        const std::string from_dir = o.data + "/" + o.programs_from;
        if (!fs::is_directory(from_dir))
            throw Error("tempo lab measure --programs-from",
                        "no records of target " + o.programs_from + " in " + from_dir);
        for_each_latest_record(from_dir, [&](const json::Value& r) {
            const std::string& task = r.find("task")->as_string();
            if (done.count(record_key(task, r.find("sid")->as_string()))) return;
            retime[task].push_back(r);
            ++done_per_task[task];
            ++to_copy;
        });
    }

    Progress progress;
    progress.tasks_total = plan.size();
    for (const auto& t : plan)
        progress.total += static_cast<std::size_t>(std::max(0, o.per_task - done_per_task[t.key])) +
                          (retime.count(t.key) ? retime[t.key].size() : 0);
    log << "tempo lab measure: target " << target.id << " (-march=" << target.march << ", "
        << target.threads << " thread(s) on core(s)";
    for (int c : cores) log << " " << c;
    log << "), " << plan.size() << " tasks in shard " << o.shard << "/" << o.shards << ", "
        << o.per_task << " programs per task; " << existing << " records and " << existing_failures
        << " failures already in " << dir << "; up to " << progress.total << " programs to measure";
    if (!o.retime_before.empty())
        log << " (" << to_retime << " programs last timed before " << o.retime_before
            << " are timed again; their old records stay)";
    if (!o.programs_from.empty())
        log << " (" << to_copy << " of them the stored schedules of " << o.programs_from << ")";
    log << "\n";

    RecordWriter writer(dir, "s" + std::to_string(o.shard) + "of" + std::to_string(o.shards),
                        o.rotate_records, o.rotate_s);
    FailureLog failures(dir + "/failures.jsonl");
    stop_requested().store(false);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
    const double t_start = now_s();
    auto time_up = [&] {
        return stop_requested().load() || (o.limit_s > 0 && now_s() - t_start > o.limit_s);
    };
    const std::string flags = target.flags;

    // Producer: sampling, reference outputs, C code and gcc, one batch ahead.
    BoundedQueue<CompiledBatch> queue(pipeline ? 2 : 1);
    std::atomic<int> batch_no{0};
    std::mutex log_mutex;
    auto produce = [&](const std::function<bool(CompiledBatch)>& sink) {
        for (std::size_t ti = 0; ti < plan.size() && !time_up(); ++ti) {
            const PlannedTask& pt = plan[ti];
            const auto again = retime.find(pt.key);
            if (done_per_task[pt.key] >= o.per_task && again == retime.end()) continue;
            auto task = std::make_shared<TaskContext>();
            task->wt = pt.wt;
            task->key = pt.key;
            std::vector<std::string> lowering_errors;
            std::vector<DrawnProgram> drawn;
            try {
                task->dag = loopnest::build_dag(pt.wt->task);
                task->flops = loopnest::flop_count(task->dag);
                drawn = draw_programs(task->dag, pt.key, o.seed, o.per_task, &lowering_errors);
            } catch (const Error& e) {
                std::lock_guard<std::mutex> l(log_mutex);
                log << "\ntempo lab measure: task " << pt.key << ": " << e.what() << " (skipped)\n";
                continue;
            }
            for (const auto& e : lowering_errors) {
                std::lock_guard<std::mutex> l(log_mutex);
                log << "\ntempo lab measure: LOWERING ERROR in task " << pt.key << ": " << e
                    << "\n";
                failures.append(json::Value::Object{
                    {"task", pt.key},
                    {"target", target.id},
                    {"error", json::Value::Object{{"kind", "lower"}, {"message", e}}},
                    {"measured_at", iso_time_utc()}});
            }
            std::vector<DrawnProgram> todo;
            std::set<std::string> in_todo;
            if (again != retime.end())
                for (const json::Value& r : again->second) {
                    DrawnProgram d;
                    d.schedule = loopnest::schedule_from_json(*r.find("schedule"), pt.key);
                    loopnest::validate_schedule(task->dag, d.schedule, pt.key);
                    d.program = loopnest::Lowerer(task->dag, d.schedule).run();
                    d.sid = program_id(d.program);
                    if (d.sid != r.find("sid")->as_string())
                        throw Error(pt.key + " " + r.find("sid")->as_string(),
                                    "the stored schedule lowers to " + d.sid +
                                        " now (the lab's lowering changed): cannot time it again");
                    const json::Value* sample = r.find("sample");
                    d.index = sample ? static_cast<int>(sample->find("index")->as_int64()) : 0;
                    d.mutation = sample && sample->find("origin")->as_string() == "mutation";
                    in_todo.insert(d.sid);
                    todo.push_back(std::move(d));
                }
            int fresh = std::max(0, o.per_task - done_per_task[pt.key]);
            for (auto& d : drawn)
                if (fresh > 0 && !done.count(record_key(pt.key, d.sid)) && !in_todo.count(d.sid)) {
                    todo.push_back(std::move(d));
                    --fresh;
                }
            if (todo.empty()) continue;
            task->input_seed = o.input_seed;
            try {
                reference_output(task->dag, pt.key, task->input_seed, ref_cache);
            } catch (const Error& e) {
                std::lock_guard<std::mutex> l(log_mutex);
                log << "\ntempo lab measure: reference of " << pt.key << " failed: " << e.what()
                    << " (skipped)\n";
                continue;
            }
            task->expected_path = ref_cache + "/ref-" + hex64(fnv1a64(pt.key)) + "-" +
                                  std::to_string(task->input_seed) + ".bin";
            for (std::size_t lo = 0; lo < todo.size() && !time_up();
                 lo += static_cast<std::size_t>(o.batch)) {
                const std::size_t hi =
                    std::min(todo.size(), lo + static_cast<std::size_t>(o.batch));
                std::vector<DrawnProgram> part(
                    std::make_move_iterator(todo.begin() + static_cast<long>(lo)),
                    std::make_move_iterator(todo.begin() + static_cast<long>(hi)));
                const std::string stem = scratch + "/b" + std::to_string(batch_no++);
                if (!sink(compile_batch(task, std::move(part), flags, o.build_timeout, stem,
                                        build_jobs, gcc_prefix)))
                    return;
            }
        }
    };

    std::size_t written = 0;
    std::string current_task;
    auto consume = [&](CompiledBatch b) {
        const TaskContext& t = *b.task;
        if (t.key != current_task) {
            if (!current_task.empty()) ++progress.tasks_done;
            current_task = t.key;
            progress.task = t.key;
        }
        auto fail = [&](const BatchProgram& p, const std::string& kind, const std::string& message,
                        const ProgramResult* r) {
            json::Value rec = base_record(t, p, target, o.seed);
            json::Value::Object err{{"kind", kind}, {"message", message}};
            if (r && r->call_s > 0) err.push_back({"call_s", r->call_s});
            add_member(rec, "error", err);
            if (r && kind == "check")
                add_member(rec, "check",
                           json::Value::Object{{"passed", false},
                                               {"max_abs_error", r->max_abs_error},
                                               {"tolerance", 1e-3},
                                               {"reference", reference_kind(t.flops)}});
            add_member(rec, "compiler", json::Value::Object{{"cc", target.cc}, {"flags", flags}});
            add_member(rec, "measured_at", iso_time_utc());
            failures.append(rec);
            done.insert(record_key(t.key, p.drawn.sid));
            ++progress.failed;
            ++progress.done;
            ++written;
            if (kind == "check" || kind == "crash" || kind == "error") {
                std::lock_guard<std::mutex> l(log_mutex);
                log << "\ntempo lab measure: *** " << (kind == "check" ? "WRONG RESULT" : kind)
                    << " *** task " << t.key << " sid " << p.drawn.sid << ": " << message
                    << "\n  schedule: " << schedule_text(rec) << "\n  (logged to " << dir
                    << "/failures.jsonl)\n";
            }
        };
        std::vector<std::size_t> idx;
        for (std::size_t i = 0; i < b.programs.size(); ++i) {
            if (b.so_of[i].empty())
                fail(b.programs[i], b.build_error[i] == "build timeout" ? "build_timeout" : "build",
                     b.build_error[i], nullptr);
            else
                idx.push_back(i);
        }
        if (!idx.empty() && !time_up()) {
            RunnerSpec spec;
            for (std::size_t i : idx) {
                spec.symbols.push_back(b.programs[i].symbol);
                spec.sos.push_back(b.so_of[i]);
            }
            spec.input_sizes = input_sizes(t.dag);
            spec.output_size = t.dag.tensors[t.dag.output()].elements();
            spec.seed = t.input_seed;
            spec.expected = t.expected_path;
            spec.flops = t.flops;
            spec.budget_s = o.run_timeout;
            spec.cores = cores;
            spec.quiet_max_busy = o.quiet;
            spec.quiet_wait_s = o.quiet_wait_s;
            spec.gate = gate;
            run_batch(
                spec, b.files.back().substr(0, b.files.back().size() - 10), target.threads,
                [&](std::size_t k, const ProgramResult& r) {
                    const BatchProgram& p = b.programs[idx[k]];
                    if (r.kind != ProgramResult::Kind::Timed) {
                        fail(p, kind_name(r.kind), r.message, &r);
                    } else {
                        json::Value rec = base_record(t, p, target, o.seed);
                        const CostStats s = cost_stats(r.costs);
                        json::Value::Array costs;
                        for (double c : r.costs) costs.emplace_back(c);
                        add_member(rec, "latency_s",
                                   json::Value::Object{
                                       {"mean", s.mean},
                                       {"std", s.std},
                                       {"min", s.min},
                                       {"median", s.median},
                                       {"repeats", static_cast<std::int64_t>(r.costs.size())},
                                       {"tries", r.tries},
                                       {"costs", costs}});
                        add_member(rec, "check",
                                   json::Value::Object{{"passed", true},
                                                       {"max_abs_error", r.max_abs_error},
                                                       {"tolerance", 1e-3},
                                                       {"reference", reference_kind(t.flops)}});
                        add_member(rec, "compiler",
                                   json::Value::Object{{"cc", target.cc}, {"flags", flags}});
                        json::Value::Array core_list;
                        for (int c : cores) core_list.emplace_back(c);
                        add_member(
                            rec, "run",
                            json::Value::Object{
                                {"threads", target.threads},
                                {"cores", core_list},
                                {"cpu", cpu_identity(here.vendor, here.family, here.model)},
                                {"first_call_s", r.call_s},
                                {"others_busy", r.others_busy},
                                {"quiet", quiet_json(o, gate, r)},
                                {"probe", probe_json(r.probe)},
                                {"nice", -20},
                                {"pipelined_build", pipeline},
                                {"build_s", b.build_s / static_cast<double>(b.programs.size())}});
                        add_member(rec, "measured_at", iso_time_utc());
                        writer.append(json::dump(rec));
                        done.insert(record_key(t.key, p.drawn.sid));
                        ++progress.timed;
                        ++progress.done;
                        ++written;
                    }
                    progress.waiting.clear();
                    progress.print();
                },
                [&](const std::string& why) {
                    progress.waiting = why;
                    progress.print();
                });
        }
        writer.sync();
        for (const auto& f : b.files) fs::remove(f);
    };

    if (pipeline) {
        std::thread producer([&] {
            try {
                produce([&](CompiledBatch b) { return queue.push(std::move(b)); });
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> l(log_mutex);
                log << "\ntempo lab measure: producer failed: " << e.what() << "\n";
                stop_requested().store(true);
            }
            queue.close();
        });
        while (auto b = queue.pop()) {
            if (time_up()) continue; // drain
            consume(std::move(*b));
        }
        queue.close();
        producer.join();
    } else {
        produce([&](CompiledBatch b) {
            consume(std::move(b));
            return !time_up();
        });
    }
    writer.close();
    progress.print(true);
    if (progress.tty) std::fputc('\n', stderr);
    log << "tempo lab measure: " << progress.timed << " programs timed, " << progress.failed
        << " failed (" << dir << "/failures.jsonl) in " << format_duration(now_s() - t_start)
        << (stop_requested().load() ? " (stopped)" : "") << "\n";
    fs::remove_all(scratch);
    return static_cast<int>(written);
}

// ------------------------------------------------------------------------------------------
// stats

inline int lab_stats(const DataOptions& o, std::ostream& out) {
    namespace fs = std::filesystem;
    std::vector<std::string> targets = o.targets;
    if (targets.empty() && fs::is_directory(o.data))
        for (const auto& e : fs::directory_iterator(o.data))
            if (e.is_directory() && e.path().filename() != "targets")
                targets.push_back(e.path().filename().string());
    std::sort(targets.begin(), targets.end());
    std::size_t grand = 0, shown = 0;
    for (const auto& t : targets) {
        const std::string dir = o.data + "/" + t;
        if (!fs::is_directory(dir)) // a mistyped --target would otherwise show as 0 records
            throw Error("tempo lab stats --target", "no records of target " + t + " in " + dir);
        std::map<std::string, std::size_t> per_op, per_net_records;
        std::map<std::string, std::set<std::string>> per_net_tasks;
        std::map<std::string, std::vector<double>> per_task;
        std::vector<double> means, cvs, busy, probe_mul, probe_read;
        int min_repeats = 1 << 30;
        std::size_t not_passed = 0;
        const std::size_t timings = for_each_record(dir, [](const json::Value&) {});
        const std::size_t n = for_each_latest_record(dir, [&](const json::Value& r) {
            const std::string& task = r.find("task")->as_string();
            ++per_op[r.find("op")->as_string()];
            std::set<std::string> nets;
            for (const auto& m : r.find("networks")->as_object())
                nets.insert(network_of_stem(m.key));
            for (const auto& net : nets) {
                ++per_net_records[net];
                per_net_tasks[net].insert(task);
            }
            const json::Value* lat = r.find("latency_s");
            const double mean = lat->find("mean")->as_double(),
                         std_ = lat->find("std")->as_double();
            means.push_back(mean);
            cvs.push_back(mean > 0 ? std_ / mean : 0);
            per_task[task].push_back(mean);
            min_repeats = std::min(min_repeats, static_cast<int>(lat->find("repeats")->as_int64()));
            if (const json::Value* run = r.find("run")) {
                if (const json::Value* b = run->find("others_busy")) busy.push_back(b->as_double());
                if (const json::Value* p = run->find("probe")) {
                    probe_mul.push_back(p->find("mul_gflops")->as_double());
                    probe_read.push_back(p->find("read_gbs")->as_double());
                }
            }
            const json::Value* check = r.find("check");
            if (!check || !check->find("passed")->as_bool()) ++not_passed;
        });
        std::map<std::string, std::size_t> fail_kinds;
        const std::size_t nf = for_each_record(
            dir,
            [&](const json::Value& r) {
                const json::Value* e = r.find("error");
                ++fail_kinds[e ? e->find("kind")->as_string() : "?"];
            },
            true);
        if (n == 0 && nf == 0) continue;
        grand += n;
        ++shown;
        out << "== target " << t << ": " << n << " records, " << per_task.size() << " tasks, "
            << per_net_records.size() << " networks; " << nf << " failures";
        for (const auto& [k, c] : fail_kinds) out << " " << k << "=" << c;
        if (timings > n) out << "; " << timings - n << " earlier timings superseded by re-timing";
        out << "\n";
        if (n == 0) continue;
        const double lo = *std::min_element(means.begin(), means.end()),
                     hi = *std::max_element(means.begin(), means.end());
        char buf[512];
        std::snprintf(
            buf, sizeof buf,
            "latency (mean): %.3g s .. %.3g s (%.2f orders of magnitude); median %.3g s\n"
            "noise std/mean: p50 %.4f  p90 %.4f  p99 %.4f  max %.4f; <0.01: %.1f%%  <0.05: %.1f%%  "
            ">0.1: %.1f%%\n"
            "repeats: min %d; check passed: %zu/%zu\n",
            lo, hi, std::log10(hi / lo), quantile(means, 0.5), quantile(cvs, 0.5),
            quantile(cvs, 0.9), quantile(cvs, 0.99), quantile(cvs, 1.0),
            100.0 * std::count_if(cvs.begin(), cvs.end(), [](double c) { return c < 0.01; }) / n,
            100.0 * std::count_if(cvs.begin(), cvs.end(), [](double c) { return c < 0.05; }) / n,
            100.0 * std::count_if(cvs.begin(), cvs.end(), [](double c) { return c > 0.1; }) / n,
            min_repeats, n - not_passed, n);
        out << buf;
        std::vector<double> ratios;
        std::vector<double> sizes;
        for (const auto& [k, v] : per_task) {
            sizes.push_back(static_cast<double>(v.size()));
            if (v.size() < 4) continue;
            ratios.push_back(quantile(v, 0.5) / *std::min_element(v.begin(), v.end()));
        }
        std::snprintf(buf, sizeof buf,
                      "per task: records min %.0f median %.0f max %.0f; median/best latency over "
                      "%zu tasks with >= 4 "
                      "records: mean %.2fx, median %.2fx\n",
                      quantile(sizes, 0), quantile(sizes, 0.5), quantile(sizes, 1), ratios.size(),
                      ratios.empty()
                          ? NAN
                          : std::accumulate(ratios.begin(), ratios.end(), 0.0) / ratios.size(),
                      quantile(ratios, 0.5));
        out << buf;
        if (!busy.empty()) {
            std::snprintf(buf, sizeof buf,
                          "other CPUs busy while timing: p10 %.2f  p50 %.2f  p90 %.2f\n",
                          quantile(busy, 0.1), quantile(busy, 0.5), quantile(busy, 0.9));
            out << buf;
        }
        if (!probe_mul.empty()) {
            std::snprintf(buf, sizeof buf,
                          "speed probe (%zu records): multiply p10 %.1f  p50 %.1f  p90 %.1f "
                          "GFLOP/s; streaming read p10 %.1f  p50 %.1f  p90 %.1f GB/s\n",
                          probe_mul.size(), quantile(probe_mul, 0.1), quantile(probe_mul, 0.5),
                          quantile(probe_mul, 0.9), quantile(probe_read, 0.1),
                          quantile(probe_read, 0.5), quantile(probe_read, 0.9));
            out << buf;
        }
        out << "per network (records / tasks):";
        for (const auto& [k, c] : per_net_records)
            out << "  " << k << " " << c << "/" << per_net_tasks[k].size();
        out << "\nper operator:";
        for (const auto& [k, c] : per_op) out << "  " << k << " " << c;
        out << "\n";
    }
    out << "total: " << grand << " records over " << shown << " targets\n";
    return 0;
}

// ------------------------------------------------------------------------------------------
// remeasure

inline int lab_remeasure(const DataOptions& o, std::ostream& out) {
    namespace fs = std::filesystem;
    if (o.target.empty()) throw Error("tempo lab remeasure", "--target is required");
    const TargetInfo target = load_target(o.data, o.target);
    require_target_cpu(target, probe_cpu());
    const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    const std::vector<int> cores = target_cores(target.threads, o.core, cpus);
    const std::vector<int> spare = spare_cores(cores, cpus);
    if (!spare.empty()) pin_to_cores(spare);
    const std::string dir = o.data + "/" + target.id;
    const SpeedGate gate = check_host(o, dir, cores);
    std::vector<json::Value> records;
    std::size_t busier = 0, older = 0;
    for_each_latest_record(dir, [&](const json::Value& r) {
        const json::Value* run = r.find("run");
        const json::Value* busy = run ? run->find("others_busy") : nullptr;
        const json::Value* at = r.find("measured_at");
        if (o.max_busy >= 0 && (!busy || busy->as_double() > o.max_busy))
            ++busier;
        else if (!o.since.empty() && (!at || at->as_string() < o.since))
            ++older;
        else
            records.push_back(r);
    });
    if (records.empty())
        throw Error(dir, "no records" +
                             std::string(busier ? " with others_busy ≤ --max-busy" : "") +
                             std::string(older ? " measured since " + o.since : ""));
    if (busier)
        std::fprintf(stderr, "remeasure: %zu records skipped (others_busy > %g)\n", busier,
                     o.max_busy);
    if (older)
        std::fprintf(stderr, "remeasure: %zu records skipped (measured before %s)\n", older,
                     o.since.c_str());
    std::mt19937_64 rng(o.seed);
    std::shuffle(records.begin(), records.end(), rng);
    if (static_cast<int>(records.size()) > o.n) records.resize(static_cast<std::size_t>(o.n));
    std::map<std::string, std::vector<const json::Value*>> by_task;
    for (const auto& r : records) by_task[r.find("task")->as_string()].push_back(&r);
    const std::string scratch = o.scratch + "/remeasure-" + std::to_string(getpid());
    const std::string ref_cache = o.scratch + "/references";
    fs::create_directories(scratch);
    std::vector<double> rel, ratio, rel_median, rel_min;
    std::vector<double> mul_ratio, read_ratio; // speed probe now / then, records that have one
    std::size_t failed = 0, replay_mismatch = 0, seen = 0;
    std::ofstream detail;
    if (!o.out.empty()) detail.open(o.out);
    std::vector<WorkloadTask> keep_alive;
    keep_alive.reserve(by_task.size());
    for (const auto& [key, recs] : by_task) {
        keep_alive.push_back(WorkloadTask{task_from_record(*recs.front(), key), {}});
        auto task = std::make_shared<TaskContext>();
        task->wt = &keep_alive.back();
        task->key = key;
        task->dag = loopnest::build_dag(keep_alive.back().task);
        task->flops = loopnest::flop_count(task->dag);
        reference_output(task->dag, key, task->input_seed, ref_cache);
        task->expected_path = ref_cache + "/ref-" + hex64(fnv1a64(key)) + "-" +
                              std::to_string(task->input_seed) + ".bin";
        std::vector<DrawnProgram> drawn;
        std::vector<double> old, old_median, old_min;
        std::vector<const json::Value*> old_probe; // null: measured before records had one
        for (const json::Value* r : recs) {
            DrawnProgram d;
            d.schedule = loopnest::schedule_from_json(*r->find("schedule"), key);
            loopnest::validate_schedule(task->dag, d.schedule, key);
            d.program = loopnest::Lowerer(task->dag, d.schedule).run();
            d.sid = program_id(d.program);
            if (d.sid != r->find("sid")->as_string()) ++replay_mismatch;
            drawn.push_back(std::move(d));
            old.push_back(r->find("latency_s")->find("mean")->as_double());
            old_median.push_back(r->find("latency_s")->find("median")->as_double());
            old_min.push_back(r->find("latency_s")->find("min")->as_double());
            old_probe.push_back(r->find("run")->find("probe"));
        }
        CompiledBatch b = compile_batch(task, std::move(drawn), target.flags, o.build_timeout,
                                        scratch + "/r" + std::to_string(seen), cpus,
                                        "taskset -c 0-" + std::to_string(cpus - 1) + " ");
        std::vector<std::size_t> idx;
        for (std::size_t i = 0; i < b.programs.size(); ++i) {
            if (!b.so_of[i].empty()) {
                idx.push_back(i);
                continue;
            }
            ++failed;
            std::cerr << "remeasure: " << key << " " << b.programs[i].drawn.sid
                      << ": build failed: " << b.build_error[i] << "\n";
        }
        if (!idx.empty()) {
            RunnerSpec spec;
            for (std::size_t i : idx) {
                spec.symbols.push_back(b.programs[i].symbol);
                spec.sos.push_back(b.so_of[i]);
            }
            spec.input_sizes = input_sizes(task->dag);
            spec.output_size = task->dag.tensors[task->dag.output()].elements();
            spec.seed = task->input_seed;
            spec.expected = task->expected_path;
            spec.flops = task->flops;
            spec.budget_s = o.run_timeout;
            spec.cores = cores;
            spec.quiet_max_busy = o.quiet;
            spec.quiet_wait_s = o.quiet_wait_s;
            spec.gate = gate;
            run_batch(spec, scratch + "/r" + std::to_string(seen), target.threads,
                      [&](std::size_t k, const ProgramResult& r) {
                          if (r.kind != ProgramResult::Kind::Timed) {
                              ++failed;
                              std::cerr << "remeasure: " << key << " "
                                        << b.programs[idx[k]].drawn.sid << ": " << kind_name(r.kind)
                                        << " " << r.message << "\n";
                              return;
                          }
                          const CostStats st = cost_stats(r.costs);
                          const double now = st.mean, before = old[idx[k]];
                          rel.push_back(std::fabs(now - before) / before);
                          ratio.push_back(now / before);
                          rel_median.push_back(std::fabs(st.median - old_median[idx[k]]) /
                                               old_median[idx[k]]);
                          rel_min.push_back(std::fabs(st.min - old_min[idx[k]]) / old_min[idx[k]]);
                          const json::Value* then = old_probe[idx[k]];
                          if (then) {
                              mul_ratio.push_back(r.probe.mul_gflops /
                                                  then->find("mul_gflops")->as_double());
                              read_ratio.push_back(r.probe.read_gbs /
                                                   then->find("read_gbs")->as_double());
                          }
                          if (detail)
                              detail
                                  << json::dump(json::Value::Object{
                                         {"task", key},
                                         {"sid", b.programs[idx[k]].drawn.sid},
                                         {"old", json::Value::Object{{"mean", before},
                                                                     {"median", old_median[idx[k]]},
                                                                     {"min", old_min[idx[k]]}}},
                                         {"new", json::Value::Object{{"mean", st.mean},
                                                                     {"median", st.median},
                                                                     {"min", st.min},
                                                                     {"std", st.std}}},
                                         {"others_busy", r.others_busy},
                                         {"quiet", quiet_json(o, gate, r)},
                                         {"probe",
                                          json::Value::Object{{"old", then ? *then : json::Value()},
                                                              {"new", probe_json(r.probe)}}}})
                                  << "\n";
                      });
        }
        seen += recs.size();
        std::fprintf(stderr, "\rremeasure: %zu/%zu programs", seen, records.size());
        for (const auto& f : b.files) fs::remove(f);
    }
    std::fputc('\n', stderr);
    fs::remove_all(scratch);
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "remeasure %s: %zu programs re-timed (%zu failed, %zu replay mismatches)\n"
        "|dt|/t: median %.4f  mean %.4f  p90 %.4f  max %.4f; within 5%%: %.1f%%  within 10%%: "
        "%.1f%%\n"
        "new/old: median %.4f  p10 %.4f  p90 %.4f\n"
        "same with the median of the costs: |dt|/t median %.4f p90 %.4f; with the min: median %.4f "
        "p90 %.4f\n",
        target.id.c_str(), rel.size(), failed, replay_mismatch, quantile(rel, 0.5),
        rel.empty() ? NAN : std::accumulate(rel.begin(), rel.end(), 0.0) / rel.size(),
        quantile(rel, 0.9), quantile(rel, 1.0),
        100.0 * std::count_if(rel.begin(), rel.end(), [](double x) { return x <= 0.05; }) /
            std::max<std::size_t>(1, rel.size()),
        100.0 * std::count_if(rel.begin(), rel.end(), [](double x) { return x <= 0.10; }) /
            std::max<std::size_t>(1, rel.size()),
        quantile(ratio, 0.5), quantile(ratio, 0.1), quantile(ratio, 0.9), quantile(rel_median, 0.5),
        quantile(rel_median, 0.9), quantile(rel_min, 0.5), quantile(rel_min, 0.9));
    out << buf;
    if (!mul_ratio.empty()) {
        std::snprintf(buf, sizeof buf,
                      "speed probe now/then (%zu records that have one): multiply median %.4f, "
                      "streaming read median %.4f\n",
                      mul_ratio.size(), quantile(mul_ratio, 0.5), quantile(read_ratio, 0.5));
        out << buf;
    }
    return 0;
}

// ------------------------------------------------------------------------------------------
// featurize

inline int lab_featurize(const DataOptions& o) {
    if (o.target.empty()) throw Error("tempo lab featurize", "--target is required");
    const TargetInfo target = load_target(o.data, o.target);
    const std::string dir = o.data + "/" + target.id;
    std::ofstream file;
    std::ostream* out = nullptr;
    if (o.out == "-")
        out = &std::cout;
    else if (!o.out.empty()) {
        file.open(o.out);
        if (!file) throw Error(o.out, "cannot write");
        out = &file;
    }
    std::map<std::string, loopnest::ComputeDag> dags;
    json::Value::Array device;
    for (double d : target.device) device.emplace_back(d);
    std::size_t n = 0, mismatches = 0;
    const double t0 = now_s();
    std::string line;
    for_each_record(dir, [&](const json::Value& r) {
        const std::string& key = r.find("task")->as_string();
        auto it = dags.find(key);
        if (it == dags.end())
            it = dags.emplace(key, loopnest::build_dag(task_from_record(r, key))).first;
        const loopnest::Schedule sch = loopnest::schedule_from_json(*r.find("schedule"), key);
        loopnest::validate_schedule(it->second, sch, key);
        const loopnest::LoweredProgram prog = loopnest::Lowerer(it->second, sch).run();
        const std::string sid = program_id(prog);
        if (sid != r.find("sid")->as_string() || c_hash(prog) != r.find("c_hash")->as_string()) {
            if (++mismatches <= 5)
                std::cerr << "featurize: replay mismatch for " << key << " "
                          << r.find("sid")->as_string()
                          << " (the lab's lowering or codegen changed since it was measured)\n";
        }
        CompactAst ast = loopnest::featurize(prog, o.features);
        ast.flops = r.find("flops")->as_double();
        ast.id = key + "#" + sid;
        json::Value v = loopnest::compact_ast_to_json(ast);
        add_member(v, "device", device);
        if (o.with_latency)
            add_member(v, "latency_s", r.find("latency_s")->find("mean")->as_double());
        if (out) *out << json::dump(v) << "\n";
        ++n;
        if (n % 1000 == 0) std::fprintf(stderr, "\rfeaturize: %zu records", n);
    });
    const double s = now_s() - t0;
    std::fprintf(stderr,
                 "\rfeaturize %s: %zu compact ASTs in %.1f s (%.0f/s), %zu replay mismatches\n",
                 target.id.c_str(), n, s, n / std::max(1e-9, s), mismatches);
    return mismatches ? 1 : 0;
}

inline int data_main(const std::vector<std::string>& args, const std::string& workloads) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << kDataUsage;
        return args.empty() ? 2 : 0;
    }
    try {
        if (args.size() > 1 && (args[1] == "--help" || args[1] == "-h")) {
            std::cout << kDataUsage;
            return 0;
        }
        if (args[0] == "run-batch") {
            if (args.size() != 2) throw Error("tempo lab run-batch", "expects one spec file");
            return run_batch_main(args[1]);
        }
        const DataOptions o = parse_data_options(args, workloads);
        if (o.command == "target") return lab_target(o);
        if (o.command == "measure") {
            lab_measure(o);
            return stop_requested().load() ? 130 : 0;
        }
        if (o.command == "stats") return lab_stats(o, std::cout);
        if (o.command == "remeasure") return lab_remeasure(o, std::cout);
        if (o.command == "featurize") return lab_featurize(o);
        std::cerr << kDataUsage;
        return 2;
    } catch (const std::exception& e) {
        std::cerr << lab_error_line("tempo lab " + args[0], e) << "\n";
        return 1;
    }
}

} // namespace tempo::lab
