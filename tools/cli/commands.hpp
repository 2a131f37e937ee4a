// The subcommands of the `tempo` tool; each returns the process exit status.
#pragma once

namespace tempo::cli {

int predict_main(int argc, char** argv); // tempo predict MODEL [INPUT.jsonl | -]
int lab_main(int argc, char** argv);     // tempo lab tasks|sample|emit …
// tempo lab target|measure|stats|remeasure|featurize (the measured dataset)
bool is_lab_data_command(const char* name);
int lab_data_main(int argc, char** argv);

} // namespace tempo::cli
