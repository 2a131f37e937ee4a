// tempo lab measure: Tenset's repeats rule, crash-safe record chunks, the record schema, and a
// resumable measurement of a tiny task that survives SIGKILL without a partial record.
#include <doctest/doctest.h>

#include "../tools/lab/measure_cli.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace tempo;
using namespace tempo::lab;

namespace {

std::string fresh_dir(const std::string& name) {
    const std::string d =
        std::string(TEMPO_TEST_TMP_DIR) + "/lab_measure_" + name + "_" + std::to_string(getpid());
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

void write_file(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
}

// A hand-written target probed on the given CPU (vendor, family, model).
std::string target_text(const std::string& id, const std::string& vendor, const std::string& family,
                        const std::string& model) {
    return R"({"id":")" + id + R"(","isa":{"march":"x86-64-v2"},"threads":1,)" +
           R"("cpu":{"vendor":")" + vendor + R"(","family":")" + family + R"(","model":")" + model +
           R"("},)" +
           R"("compiler":{"cc":"gcc","flags":"-std=c11 -O1 -march=x86-64-v2 -fopenmp -fPIC -shared"},)"
           R"("cdmpp_device_features":[1,1,1,1,1,1,1,1]})";
}

// A data dir with one hand-written target of this machine's CPU and a workloads dir with one
// tiny task.
struct TinySetup {
    std::string root, data, workloads;
    explicit TinySetup(const std::string& name) {
        root = fresh_dir(name);
        data = root + "/data";
        workloads = root + "/workloads";
        const CpuProbe here = probe_cpu();
        write_file(data + "/targets/test.t1.json",
                   target_text("test.t1", here.vendor, here.family, here.model));
        write_file(workloads + "/tiny_b1_1.json",
                   R"({"network":"tiny","batch":1,"input_shape":[1,16],"source":"test",)"
                   R"("tasks":[{"name":"fc","op":"dense","params":{"M":4,"N":8,"K":16},)"
                   R"("epilogue":["bias_add"],"count":2}]})");
    }
    // The quiet guard is off unless `quiet` is given: ctest runs other suites beside this one.
    DataOptions options(int per_task, const std::string& quiet = "off",
                        std::vector<std::string> extra = {}) const {
        std::vector<std::string> args = {
            "measure", "--target", "test.t1", "--per-task", std::to_string(per_task), "--data",
            data, "--scratch", root + "/scratch", "--batch", "2",
            // off the last core, where real measurements run
            "--core", "0", "--compile-cores", "0", "--quiet", quiet, "--quiet-wait", "0.2"};
        args.insert(args.end(), extra.begin(), extra.end());
        return parse_data_options(args, workloads);
    }
};

std::vector<json::Value> all_records(const std::string& dir) {
    std::vector<json::Value> v;
    for_each_record(dir, [&](const json::Value& r) { v.push_back(r); });
    return v;
}

} // namespace

TEST_CASE("Tenset repeats by FLOPs and the retry rule") {
    CHECK(tenset_repeats(3e9) == 4);
    CHECK(tenset_repeats(2416443392.0) == 4);
    CHECK(tenset_repeats(1e9) == 6);
    CHECK(tenset_repeats(1e8) == 8);
    CHECK(tenset_repeats(2097152.0) == 10);
    CHECK(tenset_repeats(1000) == 10);

    double t = 0;
    auto clock = [&] { return t; };
    int flushes = 0;
    // Steady costs: one try with the table's repeats, a flush before each.
    auto steady = time_program([&] { t += 1e-3; }, [&] { ++flushes; }, clock, 1e8, 5.0);
    CHECK(steady.tries == 1);
    CHECK(steady.costs.size() == 8);
    CHECK(flushes == 8);
    // Alternating 1 ms / 3 ms (std/mean 0.5): retried with 1.5x repeats, 4 tries at most.
    int k = 0;
    auto noisy = time_program([&] { t += (k++ % 2) ? 3e-3 : 1e-3; }, [] {}, clock, 1e8, 5.0);
    CHECK(noisy.tries == 4);
    CHECK(noisy.costs.size() == 27); // 8 → 12 → 18 → 27
    // A retry that would not fit in the budget is not started.
    auto capped = time_program([&] { t += (k++ % 2) ? 0.3 : 0.1; }, [] {}, clock, 3e9, 1.0);
    CHECK(capped.tries == 1);
    CHECK(capped.costs.size() >= static_cast<std::size_t>(kMinRepeats));

    // A guard that saw the first two tries disturbed: they are redone as they were (not
    // counted, costs of the third kept); a guard that always sees disturbance stops after
    // kMaxRedone redos.
    struct CountingGuard {
        int waits = 0, disturbances;
        void wait() { ++waits; }
        bool disturbed() { return disturbances-- > 0; }
    };
    CountingGuard twice{0, 2};
    int calls = 0;
    auto guarded =
        time_program([&] { t += 1e-3 * (1 + calls++ / 8); }, [] {}, clock, 1e8, 5.0, twice);
    CHECK(guarded.tries == 1);
    CHECK(guarded.redone == 2);
    CHECK(twice.waits == 3);
    CHECK(guarded.costs.size() == 8);
    CHECK(guarded.costs.front() == doctest::Approx(3e-3)); // the third try's calls
    CountingGuard always{0, 1000};
    auto stubborn = time_program([&] { t += 1e-3; }, [] {}, clock, 1e8, 5.0, always);
    CHECK(stubborn.redone == kMaxRedone);
    CHECK(stubborn.tries == 1);

    const CostStats s = cost_stats({1, 2, 3, 4});
    CHECK(s.mean == doctest::Approx(2.5));
    CHECK(s.std == doctest::Approx(std::sqrt(1.25))); // population std
    CHECK(s.min == 1);
    CHECK(s.median == doctest::Approx(2.5));
}

TEST_CASE(
    "record chunks: a cut-off line is dropped, finished lines survive, one writer per shard") {
    const std::string dir = fresh_dir("chunks");
    {
        RecordWriter w(dir, "s1of1", 3, 1e9);
        for (int i = 0; i < 4; ++i) w.append("{\"i\":" + std::to_string(i) + "}");
        CHECK_THROWS_AS(RecordWriter(dir, "s1of1"), Error); // locked
        // Simulate a crash mid-write: a partial line in the open chunk, the writer never closed.
        const int fd = ::open(w.path().c_str(), O_WRONLY | O_APPEND);
        REQUIRE(fd >= 0);
        CHECK(::write(fd, "{\"i\":4", 6) == 6);
        ::close(fd);
        std::vector<json::Value> seen = all_records(dir);
        CHECK(seen.size() == 4); // readers skip the partial line
        w.sync();
        // Leak the writer's state: emulate SIGKILL by not running close() (release the lock only).
        fs::copy_file(w.path(), w.path() + ".bak");
    }
    // The destructor compressed the chunk; put the crashed state back as a leftover.
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string p = e.path().string();
        if (ends_with(p, ".bak")) {
            const std::string orig = p.substr(0, p.size() - 4);
            fs::remove(orig + ".gz");
            fs::rename(p, orig);
        }
    }
    {
        RecordWriter w(dir, "s1of1");
        w.append("{\"i\":5}");
    }
    std::vector<json::Value> seen = all_records(dir);
    REQUIRE(seen.size() == 5);
    std::set<std::int64_t> ids;
    for (const auto& r : seen) ids.insert(r.find("i")->as_int64());
    CHECK(ids == std::set<std::int64_t>{0, 1, 2, 3, 5});
    for (const auto& f : record_files(dir)) CHECK(ends_with(f, ".jsonl.gz"));
}

TEST_CASE("the memory and core gates: from the target's records, waits and redone tries") {
    const std::string dir = fresh_dir("gate");
    auto options = [&](const std::string& band, const std::string& floor = "off") {
        return parse_data_options(
            {"measure", "--target", "t", "--memory-band", band, "--core-floor", floor}, "");
    };
    {
        RecordWriter w(dir, "s1of1");
        for (int i = 1; i <= 99; ++i) // read_gbs 1..99
            w.append(R"({"task":"t","sid":"s)" + std::to_string(i) +
                     R"(","run":{"probe":{"mul_gflops":)" + std::to_string(i % 2 ? 10 : 20) +
                     R"(,"read_gbs":)" + std::to_string(i) + "}}}");
        w.append(R"({"task":"t","sid":"old","run":{}})"); // before records had a probe
    }
    CHECK(records_probe(dir).n == 99);
    CHECK_FALSE(speed_gate(options("0.8", "0.9"), records_probe(dir), dir).on()); // too few
    {
        RecordWriter w(dir, "s1of1");
        w.append(R"({"task":"t","sid":"s100","run":{"probe":{"mul_gflops":30,"read_gbs":100}}})");
    }
    const RecordsProbe then = records_probe(dir);
    CHECK(then.n == 100);
    CHECK(then.mul_gflops == 15); // 50 records at 10, 49 at 20, one at 30
    const SpeedGate band = speed_gate(options("0.8"), then, dir); // median of 1..100: 50.5
    CHECK(band.read_lo == doctest::Approx(0.8 * 50.5));
    CHECK(band.read_hi == doctest::Approx(50.5 / 0.8));
    CHECK(band.memory_holds(50.5));
    CHECK_FALSE(band.memory_holds(0.79 * 50.5));
    CHECK_FALSE(band.memory_holds(50.5 / 0.79));
    CHECK_FALSE(band.core_on());
    CHECK(band.core_holds(0));
    const SpeedGate floor = speed_gate(options("off", "0.9"), then, dir);
    CHECK_FALSE(floor.memory_on());
    CHECK(floor.memory_holds(1e-9));
    CHECK(floor.mul_lo == doctest::Approx(0.9 * 15));
    CHECK(floor.core_holds(13.5));
    CHECK_FALSE(floor.core_holds(13.4));
    CHECK_FALSE(speed_gate(options("off"), then, dir).on());
    CHECK(parse_data_options({"measure", "--target", "t"}, "").core_floor == 0.98); // default
    CHECK_THROWS_WITH_AS(options("1.25"),
                         "tempo lab measure --memory-band: expected a number in [0.01, 1] or off, "
                         "got '1.25'",
                         Error);
    CHECK_THROWS_WITH_AS(options("0.8", "0"),
                         "tempo lab measure --core-floor: expected a number in [0.01, 1] or off, "
                         "got '0'",
                         Error);

    // A band no memory system reads in: the guard waits its longest, times anyway, and sees
    // every try disturbed; a band every memory system reads in never holds a try back. The
    // core gate only waits: a floor no core multiplies at holds the try back as long, and does
    // not judge it afterwards.
    const SpeedProbe probe;
    QuietGuard unreachable(
        {0}, -1, 0.3, [](const std::string&) {}, &probe, SpeedGate{1e9, 2e9, 0});
    const double t0 = now_s();
    unreachable.wait();
    CHECK(now_s() - t0 >= 0.3);
    CHECK(unreachable.waited_s() >= 0.3);
    CHECK(unreachable.disturbed());
    CHECK(unreachable.disturbed());
    CHECK(unreachable.memory_redone() == 2);
    CHECK(unreachable.last_hold().rfind("memory gate: read ", 0) == 0);
    CHECK(unreachable.last_hold().find(", band 1000000000.0-2000000000.0") != std::string::npos);
    QuietGuard slow_core(
        {0}, -1, 0.3, [](const std::string&) {}, &probe, SpeedGate{1e-3, 1e9, 1e9});
    slow_core.wait();
    CHECK(slow_core.waited_s() >= 0.3);
    CHECK_FALSE(slow_core.disturbed());
    CHECK(slow_core.memory_redone() == 0);
    CHECK(slow_core.last_hold().rfind("core gate: multiply ", 0) == 0);
    CHECK(slow_core.last_hold().find(", floor 1000000000.0") != std::string::npos);
    QuietGuard reachable(
        {0}, -1, 60, [](const std::string&) {}, &probe, SpeedGate{1e-3, 1e9, 1e-3});
    reachable.wait();
    CHECK(reachable.waited_s() < 30);
    CHECK_FALSE(reachable.disturbed());
    CHECK(reachable.memory_redone() == 0);
    CHECK(reachable.last_hold().empty());
}

TEST_CASE("--gate-from: the gates from a sibling target's records, never silently off") {
    const std::string data = fresh_dir("gate_from");
    const std::string own = data + "/zen.v2.t1";
    auto options = [&](const std::string& from) {
        std::vector<std::string> args{"measure", "--data", data, "--target", "zen.v2.t1"};
        if (!from.empty()) args.insert(args.end(), {"--gate-from", from});
        return parse_data_options(args, "");
    };
    fs::create_directories(data + "/zen.v4.t1");
    {
        RecordWriter w(data + "/zen.v4.t1", "s1of1");
        for (int i = 1; i <= 100; ++i) // read_gbs 1..100
            w.append(R"({"task":"t","sid":"s)" + std::to_string(i) +
                     R"(","run":{"probe":{"mul_gflops":20,"read_gbs":)" + std::to_string(i) +
                     "}}}");
    }
    const GateRecords mine = gate_records(options(""), own); // default: the target's own
    CHECK(mine.dir == own);
    CHECK(mine.probe.n == 0);
    const GateRecords sibling = gate_records(options("zen.v4.t1"), own);
    CHECK(sibling.dir == data + "/zen.v4.t1");
    CHECK(sibling.probe.n == 100);
    CHECK(sibling.probe.read_gbs == doctest::Approx(50.5));
    CHECK(speed_gate(options("zen.v4.t1"), sibling.probe, sibling.dir).read_lo ==
          doctest::Approx(0.8 * 50.5));
    CHECK_THROWS_WITH_AS(gate_records(options("xeon.v4.t1"), own),
                         "--gate-from xeon.v4.t1: a target of another device "
                         "than zen.v2.t1; the gates compare this host with records of the same "
                         "CPU",
                         Error);
    // Named but without the records to set them: an error, not gates quietly off.
    CHECK_THROWS_WITH_AS(gate_records(options("zen.v3.t1"), own),
                         ("--gate-from zen.v3.t1: 0 records with a speed probe "
                          "in " +
                          data + "/zen.v3.t1, 100 needed")
                             .c_str(),
                         Error);
}

TEST_CASE("the host check: this host's probes against the records'") {
    const RecordsProbe then{29.0, 33.0, 500};
    const SpeedGate band{26.4, 41.25, 0};
    auto samples = [](double mul, double read) {
        std::vector<SpeedSample> v;
        for (int i = 0; i < 20; ++i) // spread ±1 % around (mul, read)
            v.push_back({mul * (0.99 + 0.001 * i), read * (0.99 + 0.001 * i)});
        return v;
    };
    const HostComparison same = compare_host(then, samples(29.2, 34.0), band);
    CHECK(same.warnings.empty());
    CHECK(same.in_band == 20);
    CHECK(same.mul_ratio == doctest::Approx(29.2 * 0.9995 / 29.0));

    const HostComparison slow = compare_host(then, samples(28.0, 34.0), band);
    REQUIRE(slow.warnings.size() == 1);
    CHECK(slow.warnings[0].find("3.5 % slower than the 29.0") != std::string::npos);
    CHECK(compare_host(then, samples(30.0, 34.0), band).warnings.at(0).find("faster") !=
          std::string::npos);

    // Memory reading 1.3× the records': the gate (0.8 … 1.25×) would starve the run.
    const HostComparison fast_memory = compare_host(then, samples(29.0, 42.5), band);
    REQUIRE(fast_memory.warnings.size() == 1);
    CHECK(fast_memory.in_band < 10);
    CHECK(fast_memory.warnings[0].find("probes read inside the memory gate's band 26.4") !=
          std::string::npos);
    CHECK(compare_host(then, samples(29.0, 42.5), SpeedGate{}).warnings.empty()); // gate off

    // A core 3.5 % slower under the core gate's floor at 0.98 × 29.0: it would starve the run.
    const HostComparison floored = compare_host(then, samples(28.0, 34.0), {26.4, 41.25, 28.42});
    REQUIRE(floored.warnings.size() == 2);
    CHECK(floored.above_floor == 0);
    CHECK(floored.warnings[1].find("only 0 of 20 probes multiply at or above the core gate's "
                                   "floor 28.4 GFLOP/s") != std::string::npos);
    CHECK(compare_host(then, samples(29.2, 34.0), {26.4, 41.25, 28.42}).above_floor == 20);
    CHECK_THROWS_AS(compare_host(then, {}, band), Error);
}

TEST_CASE("schedules are drawn as a deduplicated, prefix-stable stream") {
    const loopnest::Task task =
        task_from_json(json::parse(R"({"op":"dense","params":{"M":4,"N":8,"K":16}})", "t"), "t");
    const loopnest::ComputeDag dag = loopnest::build_dag(task);
    const auto a = draw_programs(dag, task.key(), 7, 6);
    const auto b = draw_programs(dag, task.key(), 7, 10);
    REQUIRE(a.size() == 6);
    REQUIRE(b.size() >= 6);
    std::set<std::string> sids;
    for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].sid == b[i].sid);
        sids.insert(a[i].sid);
    }
    CHECK(sids.size() == a.size());
}

TEST_CASE("device names: Zen generations, a named model, a hypervisor's nameless model") {
    const auto name = [](const char* vendor, const char* model_name, const char* family,
                         const char* model) {
        CpuProbe p;
        p.vendor = vendor;
        p.model_name = model_name;
        p.family = family;
        p.model = model;
        return microarch_name(p);
    };
    CHECK(name("AuthenticAMD", "AMD EPYC", "25", "1") == "epyc-zen3");
    CHECK(name("AuthenticAMD", "AMD EPYC 9B45", "26", "2") == "epyc-zen5");
    CHECK(name("AuthenticAMD", "AMD Ryzen 9 7950X", "25", "97") == "amd-zen4");
    CHECK(name("GenuineIntel", "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "6", "143") ==
          "intel-r-xeon-r-platinum-8481c-cpu-2-70ghz");
    CHECK(name("GenuineIntel", "Intel(R) Xeon(R) Processor", "6", "167") == "xeon-f6m167");
    CHECK(name("GenuineIntel", "Intel(R) Core(TM) Processor", "6", "183") == "intel-f6m183");
}

TEST_CASE("a target's compile mode sets its build flags and its id") {
    CpuProbe p;
    p.microarch = "xeon-f6m167";
    const IsaLevel v4 = isa_level("v4");
    CHECK(compile_flags(v4, vectorize_mode("compiler")) ==
          "-std=c11 -O3 -march=x86-64-v4 -ffp-contract=fast -fopenmp -fPIC -shared");
    CHECK(compile_flags(v4, vectorize_mode("schedule")) ==
          "-std=c11 -O3 -fno-tree-vectorize -march=x86-64-v4 -ffp-contract=fast -fopenmp -fPIC "
          "-shared");
    CHECK(target_id(p, v4, 1, Vectorize::compiler) == "xeon-f6m167.avx512.t1");
    CHECK(target_id(p, isa_level("v2"), 2, Vectorize::schedule) == "xeon-f6m167.sse42nv.t2");
    CHECK_THROWS_WITH_AS(vectorize_mode("gcc"),
                         "--vectorize: expected compiler or schedule, got 'gcc'", Error);
    const DataOptions o =
        parse_data_options({"target", "--isa", "v4", "--vectorize", "schedule"}, "");
    CHECK(o.vectorize == "schedule");
    CHECK(o.isa == "v4");
}

TEST_CASE("a target is measured only on the CPU it was probed on") {
    TinySetup s("cpu");
    const CpuProbe here = probe_cpu();
    const std::string other_family = here.family == "26" ? "25" : "26";
    write_file(s.data + "/targets/test.t1.json",
               target_text("test.t1", here.vendor, other_family, here.model));
    const std::string expected =
        s.data + "/targets/test.t1.json: target test.t1 was probed on " + here.vendor + " family " +
        other_family + " model " + here.model + ", this machine is " + here.vendor + " family " +
        here.family + " model " + here.model + " (" + here.microarch +
        "): its timings belong to another device. Probe it with `tempo lab target --isa v2 "
        "--threads 1` and measure that target";
    std::ostringstream log;
    CHECK_THROWS_WITH_AS(lab_measure(s.options(2), log), expected.c_str(), Error);
    DataOptions re = s.options(2);
    re.command = "remeasure";
    CHECK_THROWS_WITH_AS(lab_remeasure(re, log), expected.c_str(), Error);
    CHECK_FALSE(fs::exists(s.data + "/test.t1"));

    // A target built with schedule-only vectorisation names that option in the fix.
    std::string nv = target_text("test.t1", here.vendor, other_family, here.model);
    nv.replace(nv.find("-O1"), 3, "-O3 -fno-tree-vectorize");
    write_file(s.data + "/targets/test.t1.json", nv);
    const std::string expected_nv = expected.substr(0, expected.find("--threads 1`")) +
                                    "--threads 1 --vectorize schedule` and measure that target";
    CHECK_THROWS_WITH_AS(lab_measure(s.options(2), log), expected_nv.c_str(), Error);

    write_file(
        s.data + "/targets/test.t1.json",
        R"({"id":"test.t1","isa":{"march":"x86-64-v2"},"threads":1,)"
        R"("compiler":{"cc":"gcc","flags":"-O1"},"cdmpp_device_features":[1,1,1,1,1,1,1,1]})");
    CHECK_THROWS_WITH_AS(
        lab_measure(s.options(2), log),
        (s.data + "/targets/test.t1.json.cpu: missing: probe the target again").c_str(), Error);
}

TEST_CASE("measure a tiny task: schema, checks, repeats; killed run leaves complete records; rerun "
          "resumes") {
    runner_executable() = ""; // the runner is this process, forked
    TinySetup s("e2e");
    const std::string dir = s.data + "/test.t1";
    std::ostringstream log;

    // Kill a run with SIGKILL as soon as it has written a record.
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::ostringstream quiet;
        try {
            lab_measure(s.options(6), quiet);
        } catch (...) {
        }
        _exit(0);
    }
    bool saw = false;
    for (int i = 0; i < 3000 && !saw; ++i) {
        ::usleep(10000);
        if (fs::is_directory(dir))
            for (const auto& e : fs::directory_iterator(dir))
                if (ends_with(e.path().string(), ".jsonl") && fs::file_size(e.path()) > 0)
                    saw = true;
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(saw);
    // Every newline-terminated line of every chunk is a complete record.
    std::size_t after_kill = 0;
    for (const auto& f : record_files(dir)) {
        std::istringstream in(read_record_file(f));
        std::string line;
        while (std::getline(in, line)) {
            CHECK_NOTHROW(json::parse(line, f));
            ++after_kill;
        }
    }
    CHECK(after_kill >= 1);

    // Resume: only the missing programs are measured.
    const int first = lab_measure(s.options(6), log);
    std::vector<json::Value> recs = all_records(dir);
    std::size_t failures = 0;
    for_each_record(
        dir, [&](const json::Value&) { ++failures; }, true);
    CHECK(recs.size() + failures == 6);
    CHECK(static_cast<std::size_t>(first) == 6 - after_kill);
    CHECK(failures == 0);
    std::set<std::string> sids;
    for (const auto& r : recs) {
        sids.insert(r.find("sid")->as_string());
        for (const char* k :
             {"task", "op", "shape", "epilogue", "networks", "weight", "target", "sid", "schedule",
              "c_hash", "flops", "sample", "latency_s", "check", "compiler", "run", "measured_at"})
            CHECK_MESSAGE(r.find(k) != nullptr, k);
        CHECK(r.find("target")->as_string() == "test.t1");
        CHECK(r.find("task")->as_string() == "dense(K=16,M=4,N=8)+bias_add");
        CHECK(r.find("networks")->find("tiny_b1_1")->as_int64() == 2);
        const json::Value& lat = *r.find("latency_s");
        CHECK(lat.find("repeats")->as_int64() >= 3);
        CHECK(lat.find("costs")->as_array().size() ==
              static_cast<std::size_t>(lat.find("repeats")->as_int64()));
        CHECK(lat.find("mean")->as_double() > 0);
        CHECK(lat.find("min")->as_double() <= lat.find("mean")->as_double());
        CHECK(r.find("check")->find("passed")->as_bool());
        const CpuProbe here = probe_cpu();
        CHECK(r.find("run")->find("cpu")->as_string() ==
              here.vendor + " family " + here.family + " model " + here.model);
        // The core's speed when it was timed: plausible rates, not placeholders.
        const json::Value& probe = *r.find("run")->find("probe");
        CHECK(probe.find("mul_gflops")->as_double() > 0.1);
        CHECK(probe.find("mul_gflops")->as_double() < 1e4);
        CHECK(probe.find("read_gbs")->as_double() > 0.1);
        CHECK(probe.find("read_gbs")->as_double() < 1e4);
        // Replayable: the stored schedule lowers to the same program.
        const loopnest::Task task = task_from_record(r, "record");
        const loopnest::ComputeDag dag = loopnest::build_dag(task);
        const loopnest::Schedule sch = loopnest::schedule_from_json(*r.find("schedule"), "record");
        const loopnest::LoweredProgram prog = loopnest::Lowerer(dag, sch).run();
        CHECK(program_id(prog) == r.find("sid")->as_string());
        CHECK(c_hash(prog) == r.find("c_hash")->as_string());
    }
    CHECK(sids.size() == recs.size());

    // A second run has nothing left to do; asking for more continues the same stream.
    CHECK(lab_measure(s.options(6), log) == 0);
    // ...here with the quiet guard on (waiting at most 0.2 s per try), which the records say.
    CHECK(lab_measure(s.options(8, "0.5"), log) == 2);
    recs = all_records(dir);
    CHECK(recs.size() == 8);
    int guarded = 0;
    for (const auto& r : recs) {
        const json::Value& quiet = *r.find("run")->find("quiet");
        if (quiet.find("max_busy")->is_null()) continue;
        ++guarded;
        CHECK(quiet.find("max_busy")->as_double() == 0.5);
        CHECK(quiet.find("waited_s")->as_double() >= 0);
        CHECK(quiet.find("redone")->as_int64() >= 0);
        CHECK(quiet.find("memory_redone")->as_int64() == 0);
        CHECK(quiet.find("read_band_gbs")->is_null()); // too few records for the gates
        CHECK(quiet.find("mul_floor_gflops")->is_null());
    }
    CHECK(guarded == 2);

    // Re-timing: programs last timed before the cutoff get a new record; the old ones stay,
    // and readers see each program once, with its latest timing.
    CHECK_THROWS_WITH_AS(s.options(8, "off", {"--retime-before", "yesterday"}),
                         "tempo lab measure --retime-before: 'yesterday' is not a UTC time like "
                         "2026-12-02T18:00:00Z",
                         Error);
    CHECK(lab_measure(s.options(8, "off", {"--retime-before", "2000-01-01T00:00:00Z"}), log) == 0);
    // Every program older than the cutoff, from its stored schedule, whatever --per-task says.
    CHECK(lab_measure(s.options(3, "off", {"--retime-before", "2999-01-01T00:00:00Z"}), log) == 8);
    const std::vector<json::Value> timings = all_records(dir);
    REQUIRE(timings.size() == 16);
    std::map<std::string, std::string> retimed; // sid -> the appended record
    for (std::size_t i = 8; i < timings.size(); ++i)
        retimed[timings[i].find("sid")->as_string()] = json::dump(timings[i]);
    CHECK(retimed.size() == 8);
    std::map<std::string, int> seen;
    const std::size_t programs = for_each_latest_record(dir, [&](const json::Value& r) {
        const std::string& sid = r.find("sid")->as_string();
        ++seen[sid];
        if (retimed.count(sid)) CHECK(json::dump(r) == retimed[sid]);
    });
    CHECK(programs == 8);
    CHECK(seen.size() == 8);
    std::ostringstream stats;
    lab_stats(parse_data_options({"stats", "--data", s.data}, s.workloads), stats);
    CHECK(stats.str().find("test.t1: 8 records") != std::string::npos);
    CHECK(stats.str().find("8 earlier timings superseded by re-timing") != std::string::npos);
    CHECK(stats.str().find("speed probe (8 records): multiply p10 ") != std::string::npos);
    CHECK_THROWS_WITH_AS(
        lab_stats(parse_data_options({"stats", "--data", s.data, "--target", "test.t9"}, ""),
                  stats),
        ("tempo lab stats --target: no records of target test.t9 in " + s.data + "/test.t9")
            .c_str(),
        Error);

    // Re-timing a sample reports the agreement and the host's speed now against then.
    auto remeasure = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {
            "remeasure", "--target",          "test.t1", "--data", s.data,
            "--scratch", s.root + "/scratch", "-n",      "4",      "--core",
            "0",         "--quiet",           "off"};
        args.insert(args.end(), extra.begin(), extra.end());
        return parse_data_options(args, s.workloads);
    };
    std::ostringstream agreement;
    CHECK(lab_remeasure(remeasure({}), agreement) == 0);
    CHECK(agreement.str().find("remeasure test.t1: 4 programs re-timed (0 failed, 0 replay "
                               "mismatches)") != std::string::npos);
    CHECK(agreement.str().find("speed probe now/then (4 records that have one)") !=
          std::string::npos);
    CHECK_THROWS_WITH_AS(lab_remeasure(remeasure({"--since", "2999-01-01T00:00:00Z"}), agreement),
                         doctest::Contains("no records measured since 2999-01-01T00:00:00Z"),
                         Error);

    // A second target times the first one's programs from their stored schedules (they count
    // toward --per-task), then draws fresh ones: the cross-device pairs. Another seed, so the
    // fresh draws could not have produced the copied programs.
    std::ostringstream t2_text;
    t2_text << std::ifstream(s.data + "/targets/test.t1.json").rdbuf();
    std::string t2 = t2_text.str();
    t2.replace(t2.find("test.t1"), 7, "test.t2");
    write_file(s.data + "/targets/test.t2.json", t2);
    auto on_t2 = [&](int per_task, std::vector<std::string> extra) {
        DataOptions o = s.options(per_task, "off", extra);
        o.target = "test.t2";
        o.seed = 7;
        return o;
    };
    CHECK_THROWS_WITH_AS(lab_measure(on_t2(10, {"--programs-from", "test.t2"}), log),
                         "tempo lab measure --programs-from: names the measured target itself",
                         Error);
    CHECK_THROWS_WITH_AS(lab_measure(on_t2(10, {"--programs-from", "test.t9"}), log),
                         doctest::Contains("test.t9"), Error);
    CHECK(lab_measure(on_t2(10, {"--programs-from", "test.t1"}), log) == 10);
    std::set<std::string> t1_sids, t2_sids;
    for_each_latest_record(
        dir, [&](const json::Value& r) { t1_sids.insert(r.find("sid")->as_string()); });
    for_each_record(s.data + "/test.t2", [&](const json::Value& r) {
        CHECK(r.find("target")->as_string() == "test.t2");
        t2_sids.insert(r.find("sid")->as_string());
    });
    CHECK(t2_sids.size() == 10);
    CHECK(std::includes(t2_sids.begin(), t2_sids.end(), t1_sids.begin(), t1_sids.end()));
    CHECK(lab_measure(on_t2(10, {"--programs-from", "test.t1"}), log) == 0);
}

TEST_CASE("the compiled naive loop nest, the reference of large tasks, matches the interpreter") {
    const std::string dir = fresh_dir("naive");
    const std::vector<loopnest::Task> tasks = {
        loopnest::Task::make("conv2d_nhwc",
                             {{"N", {1}},
                              {"H", {9}},
                              {"W", {9}},
                              {"C", {6}},
                              {"K", {8}},
                              {"R", {3}},
                              {"S", {3}},
                              {"stride", {2, 2}},
                              {"padding", {1, 1}},
                              {"dilation", {1, 1}},
                              {"groups", {2}}},
                             {"bias_add", "relu"}),
        loopnest::Task::make("conv2d_transpose_nhwc", {{"N", {1}},
                                                       {"H", {4}},
                                                       {"W", {4}},
                                                       {"C", {8}},
                                                       {"K", {4}},
                                                       {"R", {4}},
                                                       {"S", {4}},
                                                       {"stride", {2, 2}},
                                                       {"padding", {1, 1}}}),
        loopnest::Task::make(
            "batch_matmul", {{"B", {3}}, {"M", {5}}, {"N", {7}}, {"K", {9}}, {"transpose_b", {1}}}),
        loopnest::Task::make("softmax", {{"rows", {6}}, {"cols", {37}}}),
        loopnest::Task::make("layer_norm", {{"rows", {5}}, {"cols", {48}}}),
        loopnest::Task::make("max_pool2d_nhwc", {{"N", {1}},
                                                 {"H", {10}},
                                                 {"W", {10}},
                                                 {"C", {4}},
                                                 {"kernel", {3, 3}},
                                                 {"stride", {2, 2}},
                                                 {"padding", {1, 1}}})};
    int i = 0;
    for (const auto& task : tasks) {
        const loopnest::ComputeDag dag = loopnest::build_dag(task);
        CHECK(std::string(reference_kind(loopnest::flop_count(dag))) ==
              "interpreter"); // small: both paths are cheap
        const auto inputs = make_inputs(input_sizes(dag), 7);
        const auto want = loopnest::ReferenceEvaluator(dag).run(inputs)[dag.output()];
        const auto got = naive_c_output(dag, inputs, dir + "/naive" + std::to_string(i++));
        REQUIRE(got.size() == want.size());
        double worst = 0;
        for (std::size_t k = 0; k < got.size(); ++k)
            worst =
                std::max(worst, std::fabs(double(got[k]) - want[k]) / (1.0 + std::fabs(want[k])));
        CHECK_MESSAGE(worst <= 1e-5, task.key());
    }
}
