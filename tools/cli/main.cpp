// tempo — command-line front end: dispatches to one function per subcommand.
#include <cstring>
#include <iostream>

#include "commands.hpp"

namespace {
constexpr const char* kUsage =
    "usage: tempo <command> [options]\n"
    "\n"
    "commands:\n"
    "  predict MODEL [INPUT.jsonl | -]   predict the latency of compact ASTs (JSON Lines)\n"
    "  lab tasks|sample|emit …           the tensor-program lab (tasks, schedules, C code)\n"
    "  lab target|measure|stats|remeasure|featurize …  the measured dataset (data/)\n"
    "\n"
    "Run `tempo <command> --help` for a command's options.\n";
}

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::cout << kUsage;
        return argc < 2 ? 2 : 0;
    }
    const char* command = argv[1];
    if (!std::strcmp(command, "predict")) return tempo::cli::predict_main(argc - 1, argv + 1);
    if (!std::strcmp(command, "lab") && argc > 2 && tempo::cli::is_lab_data_command(argv[2]))
        return tempo::cli::lab_data_main(argc - 1, argv + 1);
    if (!std::strcmp(command, "lab")) return tempo::cli::lab_main(argc - 1, argv + 1);
    std::cerr << "tempo: unknown command '" << command << "'\n" << kUsage;
    return 2;
}
