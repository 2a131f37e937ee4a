// The subcommands of the `tempo` tool; each returns the process exit status.
#pragma once

namespace tempo::cli {

int predict_main(int argc, char** argv); // tempo predict MODEL [INPUT.jsonl | -]
int lab_main(int argc, char** argv);     // tempo lab tasks|sample|emit …

} // namespace tempo::cli
