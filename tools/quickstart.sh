#!/usr/bin/env bash
# tempo's main job on the shipped model and example programs: builds the `tempo` tool (once)
# and predicts the latency of every program in data/examples/programs.jsonl.
#   tools/quickstart.sh [MODEL] [PROGRAMS.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

model=${1:-weights/default.safetensors}
programs=${2:-data/examples/programs.jsonl}
if [[ ! -f "$model" && $# -eq 0 ]]; then
  # No trained model ships yet: use the untrained parity fixture so the path runs end to end.
  model=tests/fixtures/cdmpp/compact.safetensors
  echo "note: no trained model in weights/ yet; using the untrained fixture $model" >&2
fi

cmake -S . -B build/release -DTEMPO_BUILD_TESTS=OFF -DTEMPO_BUILD_TOOLS=ON >/dev/null
cmake --build build/release --target tempo_cli -j "$(nproc)" >/dev/null
build/release/tools/tempo predict "$model" "$programs" --verify
