// tempo lab — the tensor-program lab (implementation in tools/lab/).
#include "commands.hpp"

#include "../lab/lab_cli.hpp"

namespace tempo::cli {

int lab_main(int argc, char** argv) {
    return tempo::lab::lab_main(std::vector<std::string>(argv + 1, argv + argc),
                                TEMPO_LAB_WORKLOADS_DIR);
}

} // namespace tempo::cli
