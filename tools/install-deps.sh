#!/usr/bin/env bash
# Installs the Debian packages tempo needs, only those missing. Usage:
#   tools/install-deps.sh            build + tests (compiler, Eigen, xsimd, doctest, numpy, torch,
#                                    and sklearn, xgboost, matplotlib for training/)
#   tools/install-deps.sh --bench    also what the benchmarks compare against
set -euo pipefail

packages=(cmake make g++ libeigen3-dev libxsimd-dev doctest-dev python3 python3-numpy python3-torch
          python3-sklearn python3-xgboost python3-matplotlib)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libtorch-dev libbenchmark-dev libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing: ${missing[*]}" >&2
run_as_root=()
[[ $(id -u) -ne 0 ]] && run_as_root=(sudo)
"${run_as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${run_as_root[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
