// `tempo lab measure` and friends: time real tensor programs on a target and keep the records.
//
//  - Schedules are drawn per task as Tenset drew them (random init population + one-step
//    mutations of kept states, deduplicated by the printed loop structure), as a prefix-stable
//    stream: asking for more programs per task later continues the same stream.
//  - A batch of programs of one task is emitted into one C file and compiled with the target's
//    -march, under a build timeout (a failing batch is bisected down to single programs).
//  - A child process (`tempo lab run-batch`), pinned to the target's cores, runs each program
//    once on seeded random inputs and compares its output with the lab's reference interpreter
//    (the checker's tolerance rule) — on the very binary that is timed — then times it with
//    Tenset's protocol. The parent watches it with a run timeout.
//  - Each finished record is appended with one write() to an open chunk
//    `records-<shard>-<NNNN>.jsonl`; chunks are gzip'd when they are full or old, and a run
//    finalizes what a killed run left behind. Failures go to failures.jsonl.
#pragma once

#include "compiler.hpp"
#include "cpu_load.hpp"
#include "speed_probe.hpp"
#include "target.hpp"
#include "workloads.hpp"

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/core/error.hpp"
#include "tempo/io/json.hpp"
#include "tempo/loopnest/analysis.hpp"
#include "tempo/loopnest/codegen_c.hpp"
#include "tempo/loopnest/featurize.hpp"
#include "tempo/loopnest/lower.hpp"
#include "tempo/loopnest/print.hpp"
#include "tempo/loopnest/reference.hpp"
#include "tempo/loopnest/sampler.hpp"
#include "tempo/loopnest/serialize.hpp"

#include <dlfcn.h>
#include <emmintrin.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tempo::lab {

// ------------------------------------------------------------------------------------------
// Small helpers

inline std::uint64_t fnv1a64(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

inline std::string hex64(std::uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

// A program's identity within its task: the hash of its printed loop structure (the
// canonical string Tenset dedupes by).
inline std::string program_id(const loopnest::LoweredProgram& p) {
    return hex64(fnv1a64(loopnest::to_string(p)));
}

// The hash of a program's C function (fixed symbol): a replay check for `emit`/`featurize`.
inline std::string c_hash(const loopnest::LoweredProgram& p) {
    return hex64(fnv1a64(loopnest::CEmitter(p, "tempo_program").function()));
}

inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline std::string format_duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    char buf[32];
    const long t = static_cast<long>(s);
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", t);
    return buf;
}

// Network name of a workload file stem: "resnet_50_b1_224" → "resnet_50".
inline std::string network_of_stem(const std::string& stem) {
    static const std::regex re("^(.*)_b[0-9]+_[0-9]+$");
    std::smatch m;
    return std::regex_match(stem, m, re) ? m[1].str() : stem;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// ------------------------------------------------------------------------------------------
// Tenset's timing protocol (workloads_and_schedules.md §3)

// Repeats by the task's FLOPs.
inline int tenset_repeats(double flops) {
    if (flops >= 2416443392.0) return 4;
    if (flops >= 834928640.0) return 6;
    if (flops <= 2097152.0) return 10;
    return 8;
}

struct CostStats {
    double mean = 0, std = 0, min = 0, median = 0;
    double cv() const { return mean > 0 ? std / mean : 0; }
};

// Population standard deviation (numpy's default, as Tenset's scripts compute it).
inline CostStats cost_stats(std::vector<double> c) {
    CostStats s;
    if (c.empty()) return s;
    s.mean = std::accumulate(c.begin(), c.end(), 0.0) / static_cast<double>(c.size());
    double v = 0;
    for (double x : c) v += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(v / static_cast<double>(c.size()));
    std::sort(c.begin(), c.end());
    s.min = c.front();
    s.median = c.size() % 2 ? c[c.size() / 2] : 0.5 * (c[c.size() / 2 - 1] + c[c.size() / 2]);
    return s;
}

struct TimingResult {
    std::vector<double> costs; // seconds, the last try's repeats
    int tries = 0;
    int planned_repeats = 0;
    int redone = 0; // tries repeated because the guard saw them disturbed (not counted in tries)
};

// A guard that never waits and never sees a disturbance (tests, targets using every CPU).
struct NoGuard {
    void wait() {}
    bool disturbed() { return false; }
};

inline constexpr int kMinRepeats = 3;
inline constexpr int kMaxTries = 4;
inline constexpr double kRetryCv = 0.1;
inline constexpr int kMaxRedone = 8;

// The warm-up call has been made by the caller (the correctness check). Each repeat: flush,
// then time one call. A try whose std/mean exceeds 0.1 is redone with 1.5× repeats, up to 4
// tries, unless the next try would not fit in `budget_s`; the last try's costs are kept.
// `guard.wait()` runs before each try; a try after which `guard.disturbed()` is true is
// repeated as it was (up to kMaxRedone times) and does not count as one of the 4.
template <typename Call, typename Flush, typename Clock, typename Guard = NoGuard>
TimingResult time_program(Call&& call, Flush&& flush, Clock&& clock, double flops, double budget_s,
                          Guard&& guard = Guard{}) {
    TimingResult r;
    int repeats = std::max(kMinRepeats, tenset_repeats(flops));
    r.planned_repeats = repeats;
    for (r.tries = 1;; ++r.tries) {
        guard.wait();
        r.costs.clear();
        for (int i = 0; i < repeats; ++i) {
            flush();
            const double t0 = clock();
            call();
            r.costs.push_back(clock() - t0);
        }
        if (guard.disturbed() && r.redone < kMaxRedone) {
            ++r.redone;
            --r.tries; // the loop's increment restores it
            continue;
        }
        const CostStats s = cost_stats(r.costs);
        if (s.cv() <= kRetryCv || r.tries >= kMaxTries) break;
        const int next = std::max(repeats + 1, static_cast<int>(repeats * 1.5));
        if (s.mean * next > budget_s) break;
        repeats = next;
    }
    return r;
}

// Evicts a buffer from every cache level, line by line.
inline void flush_buffer(const void* p, std::size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (std::size_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
    _mm_mfence();
}

// ------------------------------------------------------------------------------------------
// Inputs and the reference output of a task

// Seeded uniform(-1, 1) inputs in dag.inputs order (the checker's distribution).
inline std::vector<std::vector<float>> make_inputs(const std::vector<std::int64_t>& sizes,
                                                   std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<std::vector<float>> inputs;
    for (auto n : sizes) {
        inputs.emplace_back(static_cast<std::size_t>(n));
        for (auto& x : inputs.back()) x = u(rng);
    }
    return inputs;
}

inline std::vector<std::int64_t> input_sizes(const loopnest::ComputeDag& dag) {
    std::vector<std::int64_t> s;
    for (int t : dag.inputs) s.push_back(dag.tensors[t].elements());
    return s;
}

// Where a task's reference output comes from. The interpreter evaluates the DAG's compute
// definitions directly, independent of lowering and code generation, at ~3 MFLOP/s here: a
// few seconds up to kInterpretedFlops, but ten minutes and more for VGG's convolutions. Above
// it, the reference is the naive loop nest (every stage at root, no transformation) compiled
// with gcc -ffp-contract=off; the suites check that path against the interpreter.
inline constexpr double kInterpretedFlops = 2e7;

inline const char* reference_kind(double task_flops) {
    return task_flops <= kInterpretedFlops ? "interpreter" : "naive_c";
}

// The naive loop nest's output on `inputs`, built as `stem`.so in this process.
inline std::vector<float> naive_c_output(const loopnest::ComputeDag& dag,
                                         const std::vector<std::vector<float>>& inputs,
                                         const std::string& stem) {
    loopnest::Schedule naive;
    naive.stages.resize(dag.stages.size());
    const loopnest::LoweredProgram program = loopnest::Lowerer(dag, naive).run();
    SharedLibrary lib(
        compile_shared(loopnest::emit_c({{"tempo_naive", &program}}), stem, "-ffp-contract=off"));
    std::vector<AlignedBuffer<float>> buffers; // generated code assumes 64-byte alignment
    for (const auto& in : inputs) {
        buffers.emplace_back(in.size());
        std::copy(in.begin(), in.end(), buffers.back().data());
    }
    const std::size_t n = static_cast<std::size_t>(dag.tensors[dag.output()].elements());
    buffers.emplace_back(n);
    std::vector<float*> args;
    for (auto& b : buffers) args.push_back(b.data());
    lib.entry("tempo_naive")(args.data());
    return std::vector<float>(buffers.back().data(), buffers.back().data() + n);
}

// The reference output, cached in `scratch` by task key and seed (the output never changes).
inline std::vector<float> reference_output(const loopnest::ComputeDag& dag,
                                           const std::string& task_key, std::uint64_t seed,
                                           const std::string& scratch) {
    namespace fs = std::filesystem;
    const std::size_t n = static_cast<std::size_t>(dag.tensors[dag.output()].elements());
    const std::string path =
        scratch + "/ref-" + hex64(fnv1a64(task_key)) + "-" + std::to_string(seed) + ".bin";
    std::vector<float> out(n);
    {
        std::ifstream in(path, std::ios::binary);
        if (in &&
            in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n * 4)) &&
            in.peek() == std::char_traits<char>::eof())
            return out;
    }
    fs::create_directories(scratch);
    const auto inputs = make_inputs(input_sizes(dag), seed);
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    if (loopnest::flop_count(dag) <= kInterpretedFlops) {
        out = loopnest::ReferenceEvaluator(dag).run(inputs)[dag.output()];
    } else {
        out = naive_c_output(dag, inputs, tmp);
        for (const char* ext : {".c", ".so", ".log"}) fs::remove(tmp + ext);
    }
    {
        std::ofstream o(tmp, std::ios::binary);
        o.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(n * 4));
    }
    fs::rename(tmp, path);
    return out;
}

// ------------------------------------------------------------------------------------------
// Record files

// Appends one complete line with a single write() (O_APPEND), retrying short writes.
inline void append_line(int fd, const std::string& line, const std::string& path) {
    std::string s = line;
    s += '\n';
    std::size_t off = 0;
    while (off < s.size()) {
        const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error(path, std::string("write failed: ") + std::strerror(errno));
        }
        off += static_cast<std::size_t>(n);
    }
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The text of a record file: .jsonl.gz through `gzip -dc`, .jsonl as it is. A trailing line
// without its newline (a write cut short) is not a record and is dropped.
inline std::string read_record_file(const std::string& path) {
    std::string text;
    if (ends_with(path, ".gz")) {
        text = command_output("gzip -dc < '" + path + "'");
    } else {
        text = read_text(path);
    }
    const auto last = text.rfind('\n');
    text.resize(last == std::string::npos ? 0 : last + 1);
    return text;
}

// Record chunk files of a target directory, sorted; an uncompressed chunk whose .gz exists
// (a compression that finished but was not cleaned up) is skipped.
inline std::vector<std::string> record_files(const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    if (!fs::is_directory(dir)) return files;
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    for (const auto& n : names) {
        if (n.rfind("records-", 0) != 0) continue;
        if (ends_with(n, ".jsonl.gz") || (ends_with(n, ".jsonl") && !names.count(n + ".gz")))
            files.push_back(dir + "/" + n);
    }
    return files;
}

// Calls f(record, file) for every record of a target directory (and failures.jsonl when
// `failures`). Unparseable lines are errors naming file and line.
inline std::size_t for_each_record(const std::string& dir,
                                   const std::function<void(const json::Value&)>& f,
                                   bool failures = false) {
    std::vector<std::string> files = record_files(dir);
    if (failures && std::filesystem::exists(dir + "/failures.jsonl"))
        files = {dir + "/failures.jsonl"};
    else if (failures)
        files.clear();
    std::size_t count = 0;
    for (const auto& path : files) {
        const std::string text = read_record_file(path);
        std::size_t pos = 0, line_no = 0;
        while (pos < text.size()) {
            const auto nl = text.find('\n', pos);
            const std::string_view line(text.data() + pos, nl - pos);
            pos = nl + 1;
            ++line_no;
            if (line.empty()) continue;
            const std::string where =
                std::filesystem::path(path).filename().string() + ":" + std::to_string(line_no);
            f(json::parse(line, where));
            ++count;
        }
    }
    return count;
}

// A program's identity within a target: its task and schedule id.
inline std::string record_key(const std::string& task, const std::string& sid) {
    return task + "|" + sid;
}

// Like for_each_record, but a program timed more than once (`measure --retime-before`) is
// visited once, with its latest timing (the largest measured_at; the later line on a tie).
// Returns the number of programs.
inline std::size_t for_each_latest_record(const std::string& dir,
                                          const std::function<void(const json::Value&)>& f) {
    std::map<std::string, std::pair<std::string, std::size_t>> latest; // key -> (time, line)
    std::size_t line = 0;
    for_each_record(dir, [&](const json::Value& r) {
        const std::string key = record_key(r.find("task")->as_string(), r.find("sid")->as_string());
        const json::Value* at = r.find("measured_at");
        const std::string t = at ? at->as_string() : std::string();
        auto [it, fresh] = latest.try_emplace(key, t, line);
        if (!fresh && t >= it->second.first) it->second = {t, line};
        ++line;
    });
    line = 0;
    for_each_record(dir, [&](const json::Value& r) {
        const auto it =
            latest.find(record_key(r.find("task")->as_string(), r.find("sid")->as_string()));
        // A record appended between the passes (a measurement running) waits for the next read.
        if (it != latest.end() && it->second.second == line) f(r);
        ++line;
    });
    return latest.size();
}

inline bool gzip_file(const std::string& path) {
    const std::string gz = path + ".gz", tmp = path + ".gz.tmp";
    if (std::system(("gzip -n -9 -c '" + path + "' > '" + tmp + "'").c_str()) != 0) return false;
    if (std::system(("gzip -dc < '" + tmp + "' > /dev/null").c_str()) != 0) return false;
    const int fd = ::open(tmp.c_str(), O_RDONLY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
    std::filesystem::rename(tmp, gz);
    std::filesystem::remove(path);
    return true;
}

// Appends records of one shard of one target to rotating chunk files; one writer per shard
// (an flock on .lock-<shard> keeps a second process out).
class RecordWriter {
public:
    RecordWriter(std::string dir, std::string shard, std::size_t rotate_records = 1000,
                 double rotate_seconds = 600)
        : dir_(std::move(dir)), shard_(std::move(shard)), rotate_records_(rotate_records),
          rotate_seconds_(rotate_seconds) {
        namespace fs = std::filesystem;
        fs::create_directories(dir_);
        lock_path_ = dir_ + "/.lock-" + shard_;
        lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
            if (lock_fd_ >= 0) ::close(lock_fd_);
            throw Error(dir_, "another process is writing shard " + shard_);
        }
        finalize_leftovers();
    }
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;
    ~RecordWriter() {
        try {
            close();
        } catch (...) {
        }
        if (lock_fd_ >= 0) ::close(lock_fd_);
    }

    void append(const std::string& line) {
        if (fd_ < 0) open_chunk();
        append_line(fd_, line, path_);
        ++count_;
        if (count_ >= rotate_records_ || now_s() - opened_ >= rotate_seconds_) rotate();
    }
    void sync() {
        if (fd_ >= 0) ::fdatasync(fd_);
    }
    // Closes and compresses the open chunk.
    void rotate() {
        if (fd_ < 0) return;
        ::fdatasync(fd_);
        ::close(fd_);
        fd_ = -1;
        if (count_ > 0)
            gzip_file(path_);
        else
            std::filesystem::remove(path_);
        count_ = 0;
    }
    void close() { rotate(); }
    const std::string& path() const { return path_; }

private:
    std::string prefix() const { return "records-" + shard_ + "-"; }

    // Chunks of this shard that a killed run left open: drop a cut-off last line, compress.
    void finalize_leftovers() {
        namespace fs = std::filesystem;
        std::set<std::string> names;
        for (const auto& e : fs::directory_iterator(dir_))
            names.insert(e.path().filename().string());
        for (const auto& n : names) {
            if (n.rfind(prefix(), 0) != 0) continue;
            const int index = std::atoi(n.c_str() + prefix().size());
            next_index_ = std::max(next_index_, index + 1);
            const std::string path = dir_ + "/" + n;
            if (ends_with(n, ".gz.tmp")) {
                fs::remove(path);
                continue;
            }
            if (!ends_with(n, ".jsonl")) continue;
            if (names.count(n + ".gz")) { // compressed before the crash; the original is a copy
                fs::remove(path);
                continue;
            }
            const std::string text = read_text(path);
            const auto last = text.rfind('\n');
            const std::size_t keep = last == std::string::npos ? 0 : last + 1;
            if (keep != text.size()) {
                std::cerr << "tempo lab measure: " << n << ": dropped an incomplete last line ("
                          << text.size() - keep << " bytes) left by an interrupted run\n";
                fs::resize_file(path, keep);
            }
            if (keep == 0)
                fs::remove(path);
            else
                gzip_file(path);
        }
    }

    void open_chunk() {
        char num[16];
        std::snprintf(num, sizeof num, "%04d", next_index_++);
        path_ = dir_ + "/" + prefix() + num + ".jsonl";
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error(path_, "cannot open for appending");
        opened_ = now_s();
        count_ = 0;
    }

    std::string dir_, shard_, lock_path_, path_;
    std::size_t rotate_records_;
    double rotate_seconds_;
    int lock_fd_ = -1, fd_ = -1, next_index_ = 1;
    std::size_t count_ = 0;
    double opened_ = 0;
};

// failures.jsonl: one line per program that did not give a trustworthy time.
class FailureLog {
public:
    explicit FailureLog(std::string path) : path_(std::move(path)) {}
    void append(const json::Value& v) {
        const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) throw Error(path_, "cannot open for appending");
        append_line(fd, json::dump(v), path_);
        ::fdatasync(fd);
        ::close(fd);
        ++count_;
    }
    std::size_t count() const { return count_; }

private:
    std::string path_;
    std::size_t count_ = 0;
};

// ------------------------------------------------------------------------------------------
// Tasks and schedules

struct PlannedTask {
    const WorkloadTask* wt = nullptr;
    std::string key;
    std::vector<std::string> networks; // network names, in first-appearance order
};

inline const std::vector<std::string>& holdout_networks() {
    static const std::vector<std::string> n = {"resnet_50", "mobilenet_v2", "resnext_50",
                                               "bert_base", "bert_tiny"};
    return n;
}

// Tasks of the selected workload files (stems containing one of `files`, all when empty)
// whose key contains `filter`, in shard i of n (by key hash), ordered: tasks of the `first`
// networks round-robin over those networks, then the rest round-robin over networks.
inline std::vector<PlannedTask> plan_tasks(const Workloads& w,
                                           const std::vector<std::string>& files,
                                           const std::string& filter, int shard, int shards,
                                           const std::vector<std::string>& first) {
    std::map<std::string, std::deque<PlannedTask>> by_net;
    std::vector<std::string> net_order;
    for (const auto& wt : w.tasks) {
        PlannedTask p;
        p.wt = &wt;
        p.key = wt.task.key();
        if (!filter.empty() && p.key.find(filter) == std::string::npos) continue;
        if (static_cast<int>(fnv1a64(p.key) % static_cast<std::uint64_t>(shards)) != shard - 1)
            continue;
        bool selected = files.empty();
        for (const auto& [stem, count] : wt.networks) {
            (void)count;
            bool match = files.empty();
            for (const auto& f : files) match |= stem.find(f) != std::string::npos;
            if (!match) continue;
            selected = true;
            const std::string net = network_of_stem(stem);
            if (std::find(p.networks.begin(), p.networks.end(), net) == p.networks.end())
                p.networks.push_back(net);
        }
        if (!selected) continue;
        // The task's queue: the earliest `first` network it belongs to, else its first network.
        std::string home = p.networks.empty() ? "" : p.networks.front();
        for (const auto& f : first)
            if (std::find(p.networks.begin(), p.networks.end(), f) != p.networks.end()) {
                home = f;
                break;
            }
        if (!by_net.count(home)) net_order.push_back(home);
        by_net[home].push_back(std::move(p));
    }
    std::vector<std::string> front, back;
    for (const auto& f : first)
        if (by_net.count(f)) front.push_back(f);
    for (const auto& n : net_order)
        if (std::find(first.begin(), first.end(), n) == first.end()) back.push_back(n);
    std::vector<PlannedTask> out;
    for (auto* group : {&front, &back}) {
        for (bool any = true; any;) {
            any = false;
            for (const auto& n : *group) {
                auto& q = by_net[n];
                if (q.empty()) continue;
                out.push_back(std::move(q.front()));
                q.pop_front();
                any = true;
            }
        }
    }
    return out;
}

struct DrawnProgram {
    loopnest::Schedule schedule;
    loopnest::LoweredProgram program;
    std::string sid;
    int index = 0;         // position in the task's candidate stream
    bool mutation = false; // a one-step mutation of a kept state (else a fresh random sample)
};

// Tenset's draw (§2.6) as a prefix-stable stream: candidate k is a mutation of a uniformly
// chosen kept state when k mod 8 ∈ {2, 5, 7} (37.5%, close to Tenset's 1440 mutated of 4000),
// else a fresh sample of the init population (random sketch + random fill). Deduplicated by the
// printed loop structure. Returns the first `n` distinct programs.
inline std::vector<DrawnProgram>
draw_programs(const loopnest::ComputeDag& dag, const std::string& task_key, std::uint64_t seed,
              int n, std::vector<std::string>* lowering_errors = nullptr) {
    using namespace loopnest;
    ScheduleSpace space(dag);
    std::mt19937_64 rng(fnv1a64(task_key) ^ (seed * 0x9E3779B97F4A7C15ull));
    std::set<std::string> seen;
    std::vector<DrawnProgram> kept;
    const int max_attempts = 40 * n + 200;
    int misses = 0;
    for (int k = 0; k < max_attempts && static_cast<int>(kept.size()) < n; ++k) {
        const int m8 = k % 8;
        DrawnProgram d;
        d.index = k;
        d.mutation = !kept.empty() && (m8 == 2 || m8 == 5 || m8 == 7);
        if (d.mutation) {
            d.schedule = kept[rng() % kept.size()].schedule;
            if (!space.mutate(d.schedule, rng)) continue;
        } else {
            d.schedule = space.sample(rng);
        }
        try {
            d.program = Lowerer(dag, d.schedule).run();
        } catch (const Error& e) {
            if (lowering_errors) lowering_errors->push_back(e.what());
            continue;
        }
        const std::string text = to_string(d.program);
        if (!seen.insert(text).second) {
            if (++misses > 20 * n + 100) break; // the space is exhausted
            continue;
        }
        d.sid = hex64(fnv1a64(text));
        kept.push_back(std::move(d));
    }
    return kept;
}

inline loopnest::Task task_from_record(const json::Value& r, const std::string& where) {
    json::Value::Object t{{"op", *r.find("op")}, {"params", *r.find("shape")}};
    if (const json::Value* e = r.find("epilogue")) t.push_back({"epilogue", *e});
    loopnest::Task task = task_from_json(json::Value(t), where);
    const json::Value* key = r.find("task");
    if (key && key->as_string(where + ".task") != task.key())
        throw Error(where, "task key does not match op/shape/epilogue");
    return task;
}

// ------------------------------------------------------------------------------------------
// Compiling

struct BuildResult {
    bool ok = false;
    bool timed_out = false;
    std::string log;
    double seconds = 0;
};

// gcc under `timeout`; the command's output goes to stem.log.
// `compiler`: the command and its flags, e.g. "gcc -O3 …". The build timeout is a CPU-time
// limit per compiler process (ulimit -t), so a loaded machine does not turn slow builds into
// timeouts; a wall-clock limit of 4× that (+30 s) guards against anything else.
inline BuildResult compile_c(const std::string& source, const std::string& stem,
                             const std::string& compiler, double timeout_s) {
    BuildResult r;
    {
        std::ofstream out(stem + ".c");
        out << source;
        if (!out) throw Error(stem + ".c", "cannot write generated source");
    }
    const long cpu = std::max(1L, static_cast<long>(std::ceil(timeout_s)));
    const std::string cmd = "( ulimit -t " + std::to_string(cpu) + "; exec timeout -k 5 " +
                            std::to_string(4 * cpu + 30) + " " + compiler + " -o '" + stem +
                            ".so' '" + stem + ".c' -lm ) > '" + stem + ".log' 2>&1";
    const double t0 = now_s();
    const int status = std::system(cmd.c_str());
    r.seconds = now_s() - t0;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.ok = code == 0;
    if (!r.ok) {
        r.log = read_text(stem + ".log").substr(0, 2000);
        r.timed_out = code == 124 || code == 137 ||
                      r.log.find("CPU time limit") != std::string::npos ||
                      r.log.find("Killed signal") != std::string::npos;
    }
    return r;
}

// ------------------------------------------------------------------------------------------
// The runner child: `tempo lab run-batch SPEC`

// The gates on the speed probe (speed_probe.hpp), each off at 0: the memory gate's band of
// its streaming read, GB/s, and the core gate's floor on its multiply rate, GFLOP/s.
struct SpeedGate {
    double read_lo = 0, read_hi = 0, mul_lo = 0;
    bool memory_on() const { return read_lo > 0; }
    bool core_on() const { return mul_lo > 0; }
    bool on() const { return memory_on() || core_on(); }
    bool memory_holds(double read_gbs) const {
        return !memory_on() || (read_gbs >= read_lo && read_gbs <= read_hi);
    }
    bool core_holds(double mul_gflops) const { return !core_on() || mul_gflops >= mul_lo; }
};

struct RunnerSpec {
    std::vector<std::string> sos; // per symbol: the shared object holding it
    std::vector<std::string> symbols;
    std::vector<std::int64_t> input_sizes;
    std::int64_t output_size = 0;
    std::uint64_t seed = 1;
    std::string expected; // float32 file
    double tolerance = 1e-3;
    double flops = 0;
    double budget_s = 5;
    std::vector<int> cores;
    std::size_t start = 0;
    double quiet_max_busy = -1; // < 0: no quiet guard
    double quiet_wait_s = 0;
    SpeedGate gate; // the memory and core gates (off by default)
};

inline json::Value runner_spec_json(const RunnerSpec& s) {
    json::Value::Array sym, sizes, cores, sos;
    for (const auto& x : s.symbols) sym.emplace_back(x);
    for (const auto& x : s.sos) sos.emplace_back(x);
    for (auto x : s.input_sizes) sizes.emplace_back(x);
    for (auto x : s.cores) cores.emplace_back(x);
    return json::Value::Object{
        {"sos", sos},
        {"symbols", sym},
        {"input_sizes", sizes},
        {"output_size", s.output_size},
        {"seed", s.seed},
        {"expected", s.expected},
        {"tolerance", s.tolerance},
        {"flops", s.flops},
        {"budget_s", s.budget_s},
        {"cores", cores},
        {"start", static_cast<std::int64_t>(s.start)},
        {"quiet_max_busy", s.quiet_max_busy},
        {"quiet_wait_s", s.quiet_wait_s},
        {"read_band_gbs", json::Value::Array{s.gate.read_lo, s.gate.read_hi}},
        {"mul_floor_gflops", s.gate.mul_lo}};
}

inline RunnerSpec runner_spec_from_json(const json::Value& v) {
    RunnerSpec s;
    for (const auto& x : v.find("sos")->as_array()) s.sos.push_back(x.as_string());
    for (const auto& x : v.find("symbols")->as_array()) s.symbols.push_back(x.as_string());
    for (const auto& x : v.find("input_sizes")->as_array()) s.input_sizes.push_back(x.as_int64());
    s.output_size = v.find("output_size")->as_int64();
    s.seed = v.find("seed")->as_uint64();
    s.expected = v.find("expected")->as_string();
    s.tolerance = v.find("tolerance")->as_double();
    s.flops = v.find("flops")->as_double();
    s.budget_s = v.find("budget_s")->as_double();
    for (const auto& x : v.find("cores")->as_array())
        s.cores.push_back(static_cast<int>(x.as_int64()));
    s.start = static_cast<std::size_t>(v.find("start")->as_int64());
    s.quiet_max_busy = v.find("quiet_max_busy")->as_double();
    s.quiet_wait_s = v.find("quiet_wait_s")->as_double();
    const json::Value::Array& band = v.find("read_band_gbs")->as_array();
    s.gate = {band.at(0).as_double(), band.at(1).as_double(),
              v.find("mul_floor_gflops")->as_double()};
    return s;
}

inline void emit_event(const json::Value& v) {
    const std::string s = json::dump(v) + "\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

// Keeps other work off the measuring core's SMT siblings (on this kind of VM the other vCPU
// shares the physical core: its load slows the measured program by up to ~2×). Before a try
// it waits, up to `max_wait_s`, for a 100 ms window in which the CPUs outside `cores` were at
// most `max_busy` busy; after the try it reports whether they were busier than that during
// it. /proc/stat counts in 10 ms ticks, so a short try reads as 0 or 1 (busy): strict.
// With `max_busy` < 0 it never waits nor redoes a try, and only reports how busy they were.
//
// The memory gate does the same for what /proc/stat cannot see: the state of the host's
// memory system, which its other tenants load and unload (the speed probe's streaming read
// ranges from half to 1.6× its median over hours, and memory-bound programs run up to 1.6×
// slower or faster with it). With the memory gate on, a try waits for the probe to read within
// its band, and a try after which it reads outside it is redone. The core gate makes a try wait
// for the probe's multiply rate to reach its floor: hosts of one CPU model, and one host over
// minutes, run the core a few percent slower or faster, and every timing with it. It does not
// judge a try afterwards: right after a long AVX-512 program the probe reads 1–4 GFLOP/s lower
// (the core's clock after the load, it seems), and redoing such tries only slowed long
// programs down.
// still_waiting(why) is called every 5 s of a wait, why saying what holds the try back.
class QuietGuard {
public:
    QuietGuard(std::vector<int> cores, double max_busy, double max_wait_s,
               std::function<void(const std::string&)> still_waiting,
               const SpeedProbe* probe = nullptr, SpeedGate gate = {})
        : cores_(std::move(cores)), max_busy_(max_busy), max_wait_s_(max_wait_s),
          still_waiting_(std::move(still_waiting)), probe_(probe),
          gate_(probe ? gate : SpeedGate{}) {}

    void wait() {
        if (max_busy_ < 0 && !gate_.on()) {
            start_ = cpu_jiffies();
            return;
        }
        const double t0 = now_s();
        double noted = t0;
        for (;;) {
            const auto a = cpu_jiffies();
            ::usleep(100000);
            const double busy = others_busy(a, cpu_jiffies(), cores_); // < 0: no others
            last_hold_ = hold_reason(busy);
            if (last_hold_.empty() || now_s() - t0 > max_wait_s_) break;
            if (now_s() - noted > 5) {
                still_waiting_(last_hold_);
                noted = now_s();
            }
        }
        waited_s_ += now_s() - t0;
        start_ = cpu_jiffies();
    }
    bool disturbed() {
        last_busy_ = others_busy(start_, cpu_jiffies(), cores_);
        const bool busy = max_busy_ >= 0 && last_busy_ > max_busy_;
        const bool off_band = gate_.memory_on() && !gate_.memory_holds(probe_->sample().read_gbs);
        memory_redone_ += off_band;
        return busy || off_band;
    }
    double last_busy() const { return last_busy_; }
    double waited_s() const { return waited_s_; }
    int memory_redone() const { return memory_redone_; } // tries the memory gate saw disturbed
    // What held the last wait's last check back; empty when the try started unhindered.
    const std::string& last_hold() const { return last_hold_; }

private:
    // Empty when a try may start; else why not. Probes (once) only when the cores are quiet.
    std::string hold_reason(double busy) const {
        char why[160];
        if (max_busy_ >= 0 && busy > max_busy_) {
            std::snprintf(why, sizeof why, "other CPUs %.0f%% busy (limit %.0f%%)", 100 * busy,
                          100 * max_busy_);
            return why;
        }
        if (!gate_.on()) return {};
        const SpeedSample s = probe_->sample();
        if (!gate_.memory_holds(s.read_gbs)) {
            std::snprintf(why, sizeof why, "memory gate: read %.1f GB/s, band %.1f-%.1f",
                          s.read_gbs, gate_.read_lo, gate_.read_hi);
            return why;
        }
        if (!gate_.core_holds(s.mul_gflops)) {
            std::snprintf(why, sizeof why, "core gate: multiply %.1f GFLOP/s, floor %.1f",
                          s.mul_gflops, gate_.mul_lo);
            return why;
        }
        return {};
    }

    std::vector<int> cores_;
    double max_busy_, max_wait_s_;
    std::function<void(const std::string&)> still_waiting_;
    const SpeedProbe* probe_;
    SpeedGate gate_;
    std::vector<std::pair<double, double>> start_;
    double last_busy_ = -1, waited_s_ = 0;
    int memory_redone_ = 0;
    std::string last_hold_;
};

// Runs in the child: check, then time, each program from spec.start on; one JSON line per event.
inline int run_batch_main(const std::string& spec_path) {
    const RunnerSpec spec = runner_spec_from_json(json::parse(read_text(spec_path), spec_path));
    if (!spec.cores.empty()) pin_to_cores(spec.cores);
    // Highest CFS priority (when allowed): other processes that land on the measuring core get
    // a sliver of it, and the load balancer moves them away.
    (void)setpriority(PRIO_PROCESS, 0, -20);
    std::vector<float> expected(static_cast<std::size_t>(spec.output_size));
    {
        std::ifstream in(spec.expected, std::ios::binary);
        if (!in.read(reinterpret_cast<char*>(expected.data()),
                     static_cast<std::streamsize>(expected.size() * 4)))
            throw Error(spec.expected, "cannot read the reference output");
    }
    std::vector<AlignedBuffer<float>> buffers;
    {
        const auto inputs = make_inputs(spec.input_sizes, spec.seed);
        for (const auto& in : inputs) {
            buffers.emplace_back(in.size());
            std::copy(in.begin(), in.end(), buffers.back().data());
        }
    }
    buffers.emplace_back(expected.size());
    std::vector<float*> args;
    for (auto& b : buffers) args.push_back(b.data());
    std::map<std::string, void*> handles;
    const SpeedProbe probe;
    using Entry = void (*)(float* const*);
    auto clock = [] { return now_s(); };
    auto flush = [&] { // every buffer but the first input
        for (std::size_t i = 1; i < buffers.size(); ++i)
            flush_buffer(buffers[i].data(), buffers[i].size() * 4);
    };
    for (std::size_t i = spec.start; i < spec.symbols.size(); ++i) {
        const std::int64_t idx = static_cast<std::int64_t>(i);
        void*& h = handles[spec.sos[i]];
        if (!h) h = dlopen(spec.sos[i].c_str(), RTLD_NOW | RTLD_LOCAL);
        auto f = h ? reinterpret_cast<Entry>(dlsym(h, spec.symbols[i].c_str())) : nullptr;
        if (!f) {
            emit_event(json::Value::Object{
                {"i", idx},
                {"event", "error"},
                {"message", h ? "symbol not found" : std::string("dlopen failed: ") + dlerror()}});
            continue;
        }
        emit_event(json::Value::Object{{"i", idx}, {"event", "start"}});
        float* out = buffers.back().data();
        std::fill(out, out + expected.size(), NAN);
        flush();
        const double t0 = clock();
        f(args.data()); // correctness check; also the protocol's discarded warm-up call
        const double call_s = clock() - t0;
        double max_err = 0;
        bool ok = true;
        std::string message;
        for (std::size_t k = 0; k < expected.size(); ++k) {
            const double err = std::fabs(static_cast<double>(out[k]) - expected[k]);
            const bool bad = !(err <= spec.tolerance * (1.0 + std::fabs(expected[k])));
            if (!(err <= max_err)) max_err = err;
            if (bad && ok) {
                ok = false;
                message = "element " + std::to_string(k) + ": got " + std::to_string(out[k]) +
                          ", expected " + std::to_string(expected[k]);
            }
        }
        emit_event(json::Value::Object{{"i", idx},
                                       {"event", "checked"},
                                       {"passed", ok},
                                       {"max_abs_error", std::isfinite(max_err) ? max_err : 1e308},
                                       {"message", message},
                                       {"call_s", call_s}});
        if (!ok) continue;
        const int repeats = std::max(kMinRepeats, tenset_repeats(spec.flops));
        if (call_s * repeats > spec.budget_s) {
            emit_event(json::Value::Object{{"i", idx}, {"event", "timeout"}, {"call_s", call_s}});
            continue;
        }
        json::Value::Object timed{{"i", idx}, {"event", "timed"}};
        QuietGuard guard(
            spec.cores, spec.quiet_max_busy, spec.quiet_wait_s,
            [&](const std::string& why) {
                emit_event(json::Value::Object{{"i", idx}, {"event", "waiting"}, {"why", why}});
            },
            &probe, spec.gate);
        const TimingResult r =
            time_program([&] { f(args.data()); }, flush, clock, spec.flops, spec.budget_s, guard);
        const SpeedSample speed = probe.sample();
        timed.push_back({"others_busy", guard.last_busy()});
        timed.push_back({"waited_s", guard.waited_s()});
        timed.push_back({"memory_redone", guard.memory_redone()});
        timed.push_back({"probe", json::Value::Object{{"mul_gflops", speed.mul_gflops},
                                                      {"read_gbs", speed.read_gbs}}});
        json::Value::Array costs;
        for (double c : r.costs) costs.emplace_back(c);
        timed.push_back({"costs", costs});
        timed.push_back({"tries", r.tries});
        timed.push_back({"redone", r.redone});
        emit_event(timed);
    }
    return 0;
}

// Parent side: results of one batch, in program order.
struct ProgramResult {
    enum class Kind { None, Timed, CheckFailed, Timeout, Crash, Build, Error } kind = Kind::None;
    std::vector<double> costs;
    int tries = 0, redone = 0, memory_redone = 0;
    bool passed = false;
    double max_abs_error = 0, call_s = 0, others_busy = -1, waited_s = 0;
    SpeedSample probe; // the core's speed just after the timing (zeros: not taken)
    std::string message;
};

inline const char* kind_name(ProgramResult::Kind k) {
    switch (k) {
    case ProgramResult::Kind::Timed:
        return "timed";
    case ProgramResult::Kind::CheckFailed:
        return "check";
    case ProgramResult::Kind::Timeout:
        return "timeout";
    case ProgramResult::Kind::Crash:
        return "crash";
    case ProgramResult::Kind::Build:
        return "build";
    case ProgramResult::Kind::Error:
        return "error";
    default:
        return "none";
    }
}

inline std::atomic<bool>& stop_requested() {
    static std::atomic<bool> flag{false};
    return flag;
}

// The program the runner child executes as `<it> lab run-batch SPEC`; empty: the child calls
// run_batch_main directly after fork() (tests; only safe while the parent has one thread).
inline std::string& runner_executable() {
    static std::string path = "/proc/self/exe"; // not its target: a rebuild may replace the file
    return path;
}

// Runs `tempo lab run-batch` children over spec.symbols, restarting after a timeout or a crash
// (that program gets the failure); `done(i, result)` is called as each program finishes, and
// `waiting(why)` (optional) every few seconds while the quiet guard holds a try back.
// Returns false if a stop was requested before the batch ended.
inline bool run_batch(RunnerSpec spec, const std::string& scratch_stem, int threads,
                      const std::function<void(std::size_t, const ProgramResult&)>& done,
                      const std::function<void(const std::string&)>& waiting = {}) {
    const std::string self = runner_executable();
    while (spec.start < spec.symbols.size()) {
        const std::string spec_path = scratch_stem + ".spec.json";
        {
            std::ofstream o(spec_path);
            o << json::dump(runner_spec_json(spec));
        }
        int pipefd[2];
        if (pipe(pipefd) != 0) throw Error("run_batch", "pipe failed");
        const std::string threads_s = std::to_string(threads);
        std::fflush(nullptr); // else the child's first flush repeats what stdio still holds
        const pid_t pid = fork();
        if (pid < 0) throw Error("run_batch", "fork failed");
        if (pid == 0) {
            ::dup2(pipefd[1], 1);
            for (int fd = 3; fd < 1024; ++fd) ::close(fd); // record files, locks: not the child's
            setenv("OMP_NUM_THREADS", threads_s.c_str(), 1);
            setenv("OMP_PROC_BIND", "close", 1);
            setenv("OMP_PLACES", "cores", 1);
            if (self.empty()) {
                int rc = 1;
                try {
                    rc = run_batch_main(spec_path);
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "run-batch: %s\n", e.what());
                }
                std::fflush(stdout);
                _exit(rc);
            }
            execl(self.c_str(), "tempo", "lab", "run-batch", spec_path.c_str(),
                  static_cast<char*>(nullptr));
            _exit(127);
        }
        ::close(pipefd[1]);
        std::string buf;
        std::optional<std::size_t> current;
        ProgramResult cur;
        double deadline = now_s() + spec.budget_s + 30; // dlopen + input generation
        bool killed = false, stopped = false;
        auto kill_child = [&] {
            ::kill(pid, SIGKILL);
            killed = true;
        };
        for (;;) {
            pollfd p{pipefd[0], POLLIN, 0};
            const int rc = ::poll(&p, 1, 200);
            if (stop_requested().load()) {
                kill_child();
                stopped = true;
                break;
            }
            if (rc < 0 && errno != EINTR) break;
            if (rc > 0) {
                char tmp[4096];
                const ssize_t n = ::read(pipefd[0], tmp, sizeof tmp);
                if (n <= 0) break; // child exited
                buf.append(tmp, static_cast<std::size_t>(n));
                for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
                    const json::Value ev =
                        json::parse(std::string_view(buf.data(), nl), "run-batch");
                    buf.erase(0, nl + 1);
                    const std::size_t i = static_cast<std::size_t>(ev.find("i")->as_int64());
                    const std::string& e = ev.find("event")->as_string();
                    if (e == "start") {
                        current = i;
                        cur = ProgramResult{};
                        deadline = now_s() + spec.budget_s + 5;
                    } else if (e == "checked") {
                        cur.passed = ev.find("passed")->as_bool();
                        cur.max_abs_error = ev.find("max_abs_error")->as_double();
                        cur.message = ev.find("message")->as_string();
                        cur.call_s = ev.find("call_s")->as_double();
                        if (!cur.passed) {
                            cur.kind = ProgramResult::Kind::CheckFailed;
                            done(i, cur);
                            current.reset();
                            spec.start = i + 1;
                        }
                        // Worst case of the timing: 4 tries within the budget each, plus flushes
                        // (and as many redone tries when the quiet guard or a speed gate is on).
                        const bool guarded = spec.quiet_max_busy >= 0 || spec.gate.on();
                        deadline = now_s() + (guarded ? 14 : 6) * spec.budget_s + 30;
                    } else if (e == "waiting") { // the quiet guard waits: not a hang
                        deadline = std::max(deadline, now_s() + 14 * spec.budget_s + 30);
                        if (waiting) waiting(ev.find("why")->as_string());
                    } else if (e == "timeout") {
                        cur.kind = ProgramResult::Kind::Timeout;
                        cur.call_s = ev.find("call_s")->as_double();
                        cur.message = "one call took " + std::to_string(cur.call_s) +
                                      " s: repeats exceed the run budget";
                        done(i, cur);
                        current.reset();
                        spec.start = i + 1;
                    } else if (e == "timed") {
                        cur.kind = ProgramResult::Kind::Timed;
                        for (const auto& c : ev.find("costs")->as_array())
                            cur.costs.push_back(c.as_double());
                        cur.tries = static_cast<int>(ev.find("tries")->as_int64());
                        cur.others_busy = ev.find("others_busy")->as_double();
                        cur.redone = static_cast<int>(ev.find("redone")->as_int64());
                        cur.waited_s = ev.find("waited_s")->as_double();
                        cur.memory_redone = static_cast<int>(ev.find("memory_redone")->as_int64());
                        const json::Value& probe = *ev.find("probe");
                        cur.probe = {probe.find("mul_gflops")->as_double(),
                                     probe.find("read_gbs")->as_double()};
                        done(i, cur);
                        current.reset();
                        spec.start = i + 1;
                    } else if (e == "error") {
                        ProgramResult r;
                        r.kind = ProgramResult::Kind::Error;
                        r.message = ev.find("message")->as_string();
                        done(i, r);
                        spec.start = i + 1;
                    }
                }
            }
            if (now_s() > deadline) {
                kill_child();
                break;
            }
        }
        ::close(pipefd[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (stopped) return false;
        if (spec.start >= spec.symbols.size()) break;
        // The child died or was killed while on program `current` (or before starting one).
        const std::size_t i = current ? *current : spec.start;
        ProgramResult r = cur;
        if (killed) {
            r.kind = ProgramResult::Kind::Timeout;
            r.message =
                "killed by the run timeout (" + std::to_string(spec.budget_s) + " s budget)";
        } else {
            r.kind = ProgramResult::Kind::Crash;
            r.message = WIFSIGNALED(status)
                            ? "child killed by signal " + std::to_string(WTERMSIG(status))
                            : "child exited with status " + std::to_string(WEXITSTATUS(status));
        }
        done(i, r);
        spec.start = i + 1;
    }
    return true;
}

// ------------------------------------------------------------------------------------------
// Target description (data/targets/<id>.json) as measure needs it

struct TargetInfo {
    std::string id, path, march, cc, flags;
    int threads = 1;
    std::vector<double> device;
    std::string cpu_vendor, cpu_family, cpu_model; // the CPU the target was probed on
};

inline TargetInfo load_target(const std::string& data_dir, const std::string& id) {
    const std::string path = data_dir + "/targets/" + id + ".json";
    const std::string text = read_text(path);
    if (text.empty()) throw Error(path, "no such target: run `tempo lab target` first");
    const json::Value v = json::parse(text, path);
    TargetInfo t;
    t.path = path;
    t.id = v.find("id")->as_string(path + ".id");
    t.march = v.find("isa")->find("march")->as_string(path + ".isa.march");
    t.threads = static_cast<int>(v.find("threads")->as_int64(path + ".threads"));
    t.cc = v.find("compiler")->find("cc")->as_string();
    t.flags = v.find("compiler")->find("flags")->as_string();
    for (const auto& d : v.find("cdmpp_device_features")->as_array())
        t.device.push_back(d.as_double());
    const json::Value* cpu = v.find("cpu");
    if (!cpu || !cpu->is_object()) throw Error(path + ".cpu", "missing: probe the target again");
    auto field = [&](const char* name) {
        const json::Value* f = cpu->find(name);
        if (!f || !f->is_string()) throw Error(path + ".cpu." + name, "missing or not a string");
        return f->as_string();
    };
    t.cpu_vendor = field("vendor");
    t.cpu_family = field("family");
    t.cpu_model = field("model");
    return t;
}

inline std::string cpu_identity(const std::string& vendor, const std::string& family,
                                const std::string& model) {
    return vendor + " family " + family + " model " + model;
}

// Timing a target on a CPU other than the one it was probed on would file another device's
// latencies under this target's id and device features: refuse, and name the target to use.
inline void require_target_cpu(const TargetInfo& t, const CpuProbe& here) {
    if (here.vendor == t.cpu_vendor && here.family == t.cpu_family && here.model == t.cpu_model)
        return;
    std::string isa = "v1";
    for (const char* level : {"v2", "v3", "v4"})
        if (isa_level(level).march == t.march) isa = level;
    throw Error(t.path,
                "target " + t.id + " was probed on " +
                    cpu_identity(t.cpu_vendor, t.cpu_family, t.cpu_model) + ", this machine is " +
                    cpu_identity(here.vendor, here.family, here.model) + " (" + here.microarch +
                    "): its timings belong to another device. Probe it "
                    "with `tempo lab target --isa " +
                    isa + " --threads " + std::to_string(t.threads) +
                    (t.flags.find("-fno-tree-vectorize") != std::string::npos
                         ? " --vectorize schedule"
                         : "") +
                    "` and measure that target");
}

// ------------------------------------------------------------------------------------------
// Measuring a batch of programs of one task

struct TaskContext {
    const WorkloadTask* wt = nullptr;
    std::string key;
    loopnest::ComputeDag dag;
    double flops = 0;
    std::string expected_path; // reference output file
    std::uint64_t input_seed = 1;
};

struct BatchProgram {
    DrawnProgram drawn;
    std::string symbol, chash;
};

struct CompiledBatch {
    std::shared_ptr<TaskContext> task;
    std::vector<BatchProgram> programs;
    std::vector<std::string> so_of; // per program: the shared object holding it ("" = build failed)
    std::vector<std::string> build_error;
    double build_s = 0;
    std::vector<std::string> files; // to remove when done
};

inline std::string stage_path_safe(const std::string& s) {
    return loopnest::c_identifier(s);
}

// Emits and compiles one batch, one shared object per program (so each has its own build
// timeout, Tenset's 15 s), `jobs` gcc processes at a time, prefixed by `gcc_prefix`.
inline CompiledBatch compile_batch(std::shared_ptr<TaskContext> task,
                                   std::vector<DrawnProgram> drawn, const std::string& flags,
                                   double build_timeout_per_program, const std::string& stem,
                                   int jobs = 1, const std::string& gcc_prefix = "",
                                   loopnest::CodegenOptions codegen = {}) {
    CompiledBatch b;
    b.task = std::move(task);
    for (auto& d : drawn) {
        BatchProgram p;
        p.symbol = "tempo_p_" + d.sid;
        p.chash = c_hash(d.program);
        p.drawn = std::move(d);
        b.programs.push_back(std::move(p));
    }
    const std::size_t n = b.programs.size();
    b.so_of.assign(n, "");
    b.build_error.assign(n, "");
    for (std::size_t i = 0; i < n; ++i)
        for (const char* ext : {".c", ".log", ".so"})
            b.files.push_back(stem + "_" + std::to_string(i) + ext);
    b.files.push_back(stem + ".spec.json");
    std::atomic<std::size_t> next{0};
    const double t0 = now_s();
    auto worker = [&] {
        for (std::size_t i = next++; i < n; i = next++) {
            const std::string s = stem + "_" + std::to_string(i);
            const std::string src =
                loopnest::emit_c({{b.programs[i].symbol, &b.programs[i].drawn.program}}, codegen);
            const BuildResult r =
                compile_c(src, s, gcc_prefix + "gcc " + flags, build_timeout_per_program);
            if (r.ok)
                b.so_of[i] = s + ".so";
            else
                b.build_error[i] = r.timed_out ? "build timeout" : "gcc failed: " + r.log;
        }
    };
    std::vector<std::thread> threads;
    for (int j = 0; j < std::max(1, std::min(jobs, static_cast<int>(n))); ++j)
        threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    b.build_s = now_s() - t0;
    return b;
}

inline json::Value base_record(const TaskContext& t, const BatchProgram& p,
                               const TargetInfo& target, std::uint64_t draw_seed) {
    json::Value::Object networks;
    for (const auto& [k, v] : t.wt->networks) networks.push_back({k, v});
    json::Value::Array epilogue;
    for (const auto& e : t.wt->task.epilogue) epilogue.emplace_back(e);
    return json::Value::Object{
        {"task", t.key},
        {"op", t.wt->task.op},
        {"shape", loopnest::task_params_to_json(t.wt->task)},
        {"epilogue", epilogue},
        {"networks", networks},
        {"weight", t.wt->task.weight},
        {"target", target.id},
        {"sid", p.drawn.sid},
        {"schedule", loopnest::schedule_to_json(p.drawn.schedule,
                                                loopnest::scheduled_dag(t.dag, p.drawn.schedule))},
        {"c_hash", p.chash},
        {"flops", t.flops},
        {"sample", json::Value::Object{{"seed", draw_seed},
                                       {"index", p.drawn.index},
                                       {"origin", p.drawn.mutation ? "mutation" : "init"}}}};
}

inline void add_member(json::Value& obj, const std::string& k, json::Value v) {
    obj.as_object().push_back(json::Member{k, std::move(v)});
}

} // namespace tempo::lab
