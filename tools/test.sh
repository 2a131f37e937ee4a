#!/usr/bin/env bash
# Builds and runs every test suite (ctest) in one or more configurations.
#   tools/test.sh                  native build (-march=native, xsimd backend)
#   tools/test.sh portable scalar  x86-64-v2 build; scalar backend build
#   tools/test.sh asan             AddressSanitizer + UndefinedBehaviorSanitizer build
# Build trees live in build/test-<config>; installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

configs=("$@")
[[ ${#configs[@]} -eq 0 ]] && configs=(native)
jobs=$(nproc)

for config in "${configs[@]}"; do
  case "$config" in
    native)   flags=() ;;
    # Other ISA levels and backends change the engine, not the lab, whose suites compile C
    # with gcc: they run once, in the native and sanitizer builds.
    portable) flags=(-DTEMPO_NATIVE=OFF -DTEMPO_TEST_LAB=OFF) ;;
    scalar)   flags=(-DTEMPO_BACKEND=scalar -DTEMPO_TEST_LAB=OFF) ;;
    eigen)    flags=(-DTEMPO_BACKEND=eigen -DTEMPO_TEST_LAB=OFF) ;;
    asan)     flags=(-DTEMPO_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
    *) echo "unknown configuration '$config' (native|portable|scalar|eigen|asan)" >&2; exit 2 ;;
  esac
  dir="build/test-$config"
  echo "== $config: configure, build, test ($dir)"
  cmake -S . -B "$dir" -DTEMPO_BUILD_TESTS=ON "${flags[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
