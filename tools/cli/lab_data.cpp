// tempo lab target|measure|stats|remeasure|featurize — the measured dataset
// (tools/lab/measure*.hpp).
#include "commands.hpp"

#include "../lab/measure_cli.hpp"

namespace tempo::cli {

bool is_lab_data_command(const char* name) {
    return tempo::lab::is_data_command(name);
}

int lab_data_main(int argc, char** argv) {
    return tempo::lab::data_main(std::vector<std::string>(argv + 1, argv + argc),
                                 TEMPO_LAB_WORKLOADS_DIR);
}

} // namespace tempo::cli
