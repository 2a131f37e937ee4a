// Compiling generated C into a shared object and loading its entry points (POSIX: gcc, dlopen).
#pragma once

#include "tempo/core/error.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tempo::lab {

// The flags of the lab's host-only builds (correctness references, tests); measured programs
// use their target's flags instead (target.hpp, compile_flags).
inline std::string default_c_flags() {
    return "-std=c11 -O3 -march=native -fopenmp -fPIC";
}

using EntryPoint = void (*)(float* const*);

class SharedLibrary {
public:
    explicit SharedLibrary(const std::string& path)
        : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
        if (!handle_) throw Error(path, std::string("dlopen failed: ") + dlerror());
    }
    SharedLibrary(const SharedLibrary&) = delete;
    SharedLibrary& operator=(const SharedLibrary&) = delete;
    ~SharedLibrary() { dlclose(handle_); }

    EntryPoint entry(const std::string& symbol) const {
        void* f = dlsym(handle_, symbol.c_str());
        if (!f) throw Error(symbol, "entry point not found in shared object");
        return reinterpret_cast<EntryPoint>(f);
    }

private:
    void* handle_;
};

// Writes `source` to `stem`.c and builds `stem`.so; throws with gcc's output on failure.
// dlopen caches by path: a process must not rebuild a stem it has already loaded.
inline std::string compile_shared(const std::string& source, const std::string& stem,
                                  const std::string& extra_flags = "") {
    const std::string c_path = stem + ".c", so_path = stem + ".so", log_path = stem + ".log";
    {
        std::ofstream out(c_path);
        out << source;
        if (!out) throw Error(c_path, "cannot write generated source");
    }
    const std::string cmd = "gcc " + default_c_flags() + " " + extra_flags + " -shared -o " +
                            so_path + " " + c_path + " -lm > " + log_path + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        std::ifstream log(log_path);
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        throw Error(c_path, "gcc failed: " + text.substr(0, 4000));
    }
    return so_path;
}

} // namespace tempo::lab
