// Reading the lab's network workload files (tools/lab/workloads/*.json, schema in its README)
// into deduplicated tasks: identity = (op, params, epilogue), weight = Σ count over networks.
#pragma once

#include "tempo/io/json.hpp"
#include "tempo/loopnest/task.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tempo::lab {

struct WorkloadTask {
    loopnest::Task task;                          // weight = Σ count
    std::map<std::string, std::int64_t> networks; // workload file stem → count
};

struct Workloads {
    std::vector<WorkloadTask> tasks; // in order of first appearance over sorted files
    std::vector<std::string> files;  // stems, sorted
    std::size_t networks() const;    // distinct "network" names
    std::vector<std::string> network_names;
};

inline std::size_t Workloads::networks() const {
    return network_names.size();
}

inline loopnest::Task task_from_json(const json::Value& t, const std::string& where) {
    loopnest::Task task;
    const json::Value* op = t.find("op");
    const json::Value* params = t.find("params");
    if (!op || !params) throw Error(where, "a task needs \"op\" and \"params\"");
    task.op = op->as_string(where + ".op");
    const auto& ops = loopnest::supported_ops();
    if (std::find(ops.begin(), ops.end(), task.op) == ops.end())
        throw Error(where + ".op", "unsupported op '" + task.op + "'");
    for (const json::Member& m : params->as_object(where + ".params")) {
        const std::string w = where + ".params." + m.key;
        std::vector<std::int64_t> v;
        if (m.value.is_bool())
            v.push_back(m.value.as_bool() ? 1 : 0);
        else if (m.value.is_array())
            for (std::size_t i = 0; i < m.value.as_array().size(); ++i)
                v.push_back(m.value.as_array()[i].as_int64(w + "[" + std::to_string(i) + "]"));
        else
            v.push_back(m.value.as_int64(w));
        task.set(m.key, std::move(v));
    }
    if (const json::Value* ep = t.find("epilogue"))
        for (std::size_t i = 0; i < ep->as_array(where + ".epilogue").size(); ++i) {
            const std::string& e = ep->as_array()[i].as_string(where + ".epilogue");
            if (!loopnest::is_epilogue(e))
                throw Error(where + ".epilogue", "unknown epilogue '" + e + "'");
            task.epilogue.push_back(e);
        }
    return task;
}

inline Workloads load_workloads(const std::string& dir) {
    namespace fs = std::filesystem;
    Workloads w;
    std::vector<fs::path> paths;
    if (!fs::is_directory(dir)) throw Error(dir, "not a workloads directory");
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".json") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    std::map<std::string, std::size_t> index;
    for (const auto& path : paths) {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string name = path.filename().string();
        const json::Value doc = json::parse(ss.str(), name);
        const json::Value* tasks = doc.find("tasks");
        const json::Value* network = doc.find("network");
        if (!tasks || !network) throw Error(name, "needs \"network\" and \"tasks\"");
        const std::string stem = path.stem().string();
        w.files.push_back(stem);
        const std::string& net = network->as_string(name + ".network");
        if (std::find(w.network_names.begin(), w.network_names.end(), net) == w.network_names.end())
            w.network_names.push_back(net);
        for (std::size_t i = 0; i < tasks->as_array(name + ".tasks").size(); ++i) {
            const std::string where = name + ".tasks[" + std::to_string(i) + "]";
            const json::Value& t = tasks->as_array()[i];
            loopnest::Task task = task_from_json(t, where);
            const json::Value* count = t.find("count");
            const std::int64_t n = count ? count->as_int64(where + ".count") : 1;
            const std::string key = task.key();
            auto it = index.find(key);
            if (it == index.end()) {
                task.weight = 0;
                it = index.emplace(key, w.tasks.size()).first;
                w.tasks.push_back(WorkloadTask{task, {}});
            }
            w.tasks[it->second].task.weight += static_cast<double>(n);
            w.tasks[it->second].networks[stem] += n;
        }
    }
    return w;
}

} // namespace tempo::lab
