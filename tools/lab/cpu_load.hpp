// How busy each CPU is, from /proc/stat: the lab's quiet guard and the benches use it to know
// whether other work shared the machine (on SMT siblings it slows the timed core).
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tempo::lab {

// Per CPU: (busy, total) ticks since boot; idle and iowait are not busy.
inline std::vector<std::pair<double, double>> cpu_jiffies() {
    std::vector<std::pair<double, double>> out;
    std::ifstream in("/proc/stat");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9')
            continue;
        std::istringstream f(line.substr(line.find(' ')));
        double v[8] = {0};
        for (double& x : v) f >> x;
        double total = 0;
        for (double x : v) total += x;
        out.emplace_back(total - v[3] - v[4], total);
    }
    return out;
}

// Busy fraction of the CPUs outside `cores` between two cpu_jiffies() readings; -1 when no
// time passed on them (or there are none).
inline double others_busy(const std::vector<std::pair<double, double>>& a,
                          const std::vector<std::pair<double, double>>& b,
                          const std::vector<int>& cores) {
    double busy = 0, total = 0;
    for (std::size_t c = 0; c < std::min(a.size(), b.size()); ++c) {
        if (std::find(cores.begin(), cores.end(), static_cast<int>(c)) != cores.end()) continue;
        busy += b[c].first - a[c].first;
        total += b[c].second - a[c].second;
    }
    return total > 0 ? busy / total : -1;
}

} // namespace tempo::lab
