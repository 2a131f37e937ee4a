#!/usr/bin/env bash
# tempo's main job on the shipped model and example programs: builds the `tempo` tool (once)
# and predicts the latency of every program in data/examples/programs.jsonl, next to the
# latency measured on the machine the model was trained for.
#   tools/quickstart.sh [MODEL] [PROGRAMS.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

model=${1:-weights/cdmpp-compact-epyc-zen5.avx512.t1.safetensors}
programs=${2:-data/examples/programs.jsonl}

cmake -S . -B build/release -DTEMPO_BUILD_TESTS=OFF -DTEMPO_BUILD_TOOLS=ON >/dev/null
cmake --build build/release --target tempo_cli -j "$(nproc)" >/dev/null
build/release/tools/tempo predict "$model" "$programs" --verify --table
