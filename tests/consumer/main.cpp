// A program outside the tempo tree, built against the installed package: loads a model and
// predicts the first program of a JSON Lines file.
#include <fstream>
#include <iostream>
#include <string>

#include <tempo/tempo.hpp>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: tempo_consumer MODEL PROGRAMS.jsonl\n";
        return 2;
    }
    const auto model = tempo::CdmppModel::load(argv[1], {true});
    std::ifstream in(argv[2]);
    std::string line;
    std::getline(in, line);
    tempo::Workspace ws;
    const double seconds = model.predict(tempo::parse_compact_ast(line, "programs:1"), ws);
    std::cout << "predicted " << seconds << " s with the " << tempo::kBackendName << " backend\n";
    return seconds > 0 ? 0 : 1;
}
