#!/usr/bin/env bash
# CDMPP prediction latency, all engines side by side in one run:
#   tempo (xsimd and Eigen backends), PyTorch eager on OpenBLAS, libtorch TorchScript from C++.
# Writes bench/results/cdmpp.md, cdmpp.png and cdmpp.json (raw JSON lines).
#
#   bench/run_cdmpp_bench.sh [--models DIR] [--rounds N] [--build DIR] [--jobs N] [--quick]
#
#   --models DIR   reuse bench/make_bench_models.py's files (default: make them in a temp dir,
#                  ~2 min; the paper model is 55 MB)
#   --rounds N     interleaved rounds (default 3); a cell is the best of its rounds, each round
#                  the median of 7 timed blocks
#   --quick        1 round, 3 blocks: a smoke test, not a measurement
#
# BLAS for PyTorch: Debian's torch calls libblas.so.3 (update-alternatives; reference BLAS
# unless libopenblas0-pthread took the link). The torch commands alone get OpenBLAS through
# LD_LIBRARY_PATH, OPENBLAS_NUM_THREADS=1 and the OPENBLAS_CORETYPE measured fastest here
# (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from the environment are unset for them, together);
# nothing else -- tests, CI, the system link -- is changed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
models="" rounds=3 build="build-bench-cdmpp" jobs=2 repeats=7
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --quick) rounds=1; repeats=3; shift ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3
log() { echo "[cdmpp-bench $(date -u +%H:%M:%S)] $*" >&2; }

log "dependencies"
tools/install-deps.sh --bench

log "build ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTEMPO_BUILD_BENCH=ON \
  -DTEMPO_BUILD_TESTS=OFF -DTEMPO_BUILD_TOOLS=OFF >/dev/null
targets=(bench_cdmpp bench_cdmpp_eigen)
have_libtorch=0
target_list=$(cmake --build "$build" --target help 2>/dev/null || true)
if [[ $target_list == *bench_cdmpp_libtorch* ]]; then
  targets+=(bench_cdmpp_libtorch); have_libtorch=1
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -z "$models" ]]; then
  models="$work/models"
  log "models -> temp dir"
  $py bench/make_bench_models.py --out "$models"
fi
out="$work/results.jsonl"
: >"$out"

# OpenBLAS for the torch commands only.
openblas_dir=$(dpkg -L libopenblas0-pthread 2>/dev/null | grep '/openblas-pthread/libblas.so.3$' | head -1 || true)
openblas_dir=${openblas_dir%/libblas.so.3}
torch_env() { # torch_env CORETYPE -- the environment of one torch command
  local e=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1)
  [[ -n "$1" ]] && e+=("OPENBLAS_CORETYPE=$1")
  [[ -n "$openblas_dir" ]] && e+=("LD_LIBRARY_PATH=$openblas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  echo "${e[@]}"
}
coretype=""
if [[ -n "$openblas_dir" ]]; then
  log "OPENBLAS_CORETYPE probe (sgemm on the paper model's shapes; a crash = not supported)"
  best=-1
  for round in 1 2; do
    for ct in auto Zen Haswell Sandybridge SkylakeX; do
      c=$ct; [[ $ct == auto ]] && c=""
      if line=$($(torch_env "$c") $py bench/bench_cdmpp_torch.py --probe 2>/dev/null); then
        echo "{\"kind\":\"coretype\",\"coretype\":\"$ct\",\"round\":$round,\"probe\":$line}" >>"$out"
        score=$($py -c 'import json,sys,math; d=json.loads(sys.argv[1]); g=[v for k,v in d.items() if k.startswith("gflops_")]; print(math.exp(sum(map(math.log,g))/len(g)))' "$line")
        log "  $ct: geometric mean $score GFLOP/s"
        if $py -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$score" "$best"; then
          best=$score; coretype=$c
        fi
      else
        echo "{\"kind\":\"coretype\",\"coretype\":\"$ct\",\"round\":$round,\"failed\":true}" >>"$out"
        log "  $ct: not supported on this CPU (the probe failed)"
      fi
    done
  done
  log "OPENBLAS_CORETYPE=${coretype:-<autodetect>}"
else
  log "libopenblas0-pthread not installed: PyTorch runs on the system libblas.so.3"
fi

# Every timed command runs on the last CPU; the others must stay idle (on SMT siblings their
# load slows it): their busy share over the timed part is recorded, and above 5% the report
# is marked a trial.
pin_cpu=$(($(nproc) - 1))
pin() { taskset -c "$pin_cpu" "$@"; }
grep -E '^cpu[0-9]+ ' /proc/stat >"$work/stat_before"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "machine: peak and bandwidth (load $load_before); timing on CPU $pin_cpu"
pin "$build/bench/bench_cdmpp" --machine --bandwidth >>"$out"
peak=$($py -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "\"meta\"" in l][-1]["peak_gflops"])' "$out")

for round in $(seq 1 "$rounds"); do
  for model in compact paper; do
    log "round $round/$rounds: $model"
    pin "$build/bench/bench_cdmpp" --models "$models" --only "$model" --peak "$peak" --repeats "$repeats" >>"$out"
    pin "$build/bench/bench_cdmpp_eigen" --models "$models" --only "$model" --peak "$peak" --repeats "$repeats" >>"$out"
    pin $(torch_env "$coretype") $py bench/bench_cdmpp_torch.py --models "$models" --only "$model" --repeats "$repeats" >>"$out"
    if [[ $have_libtorch == 1 ]]; then
      pin $(torch_env "$coretype") "$build/bench/bench_cdmpp_libtorch" --models "$models" --only "$model" --peak "$peak" --repeats "$repeats" >>"$out"
    elif [[ $round == 1 && $model == compact ]]; then
      log "libtorch not found by CMake (Debian: libtorch-dev): TorchScript skipped"
      echo '{"kind":"skipped","engine":"torchscript","reason":"libtorch not found by CMake (Debian: libtorch-dev)"}' >>"$out"
    fi
  done
done
pin "$build/bench/bench_cdmpp" --machine --bandwidth >>"$out"
grep -E '^cpu[0-9]+ ' /proc/stat >"$work/stat_after"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
log "done (load $load_after)"

$py - "$out" "$load_before" "$load_after" "${coretype:-auto}" "$rounds" "$repeats" "$models/manifest.json" \
  "$work/stat_before" "$work/stat_after" "$pin_cpu" <<'EOF' >>"$out"
import json, os, sys, datetime
out, before, after, coretype, rounds, repeats, manifest, stat0, stat1, pinned = sys.argv[1:]
m = json.load(open(manifest)) if os.path.exists(manifest) else {}


def ticks(path):  # cpu -> (busy, total); idle and iowait are not busy
    out = {}
    for line in open(path):
        f = line.split()
        v = [float(x) for x in f[1:9]]
        out[f[0]] = (sum(v) - v[3] - v[4], sum(v))
    return out


a, b = ticks(stat0), ticks(stat1)
others = [c for c in a if c != f"cpu{pinned}" and c in b]
total = sum(b[c][1] - a[c][1] for c in others)
busy = sum(b[c][0] - a[c][0] for c in others) / total if total > 0 else 0.0
print(json.dumps({"kind": "run", "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                  "load_before": before, "load_after": after, "cpus": os.cpu_count(),
                  "pinned_cpu": int(pinned), "others_busy": busy,
                  "coretype": coretype, "rounds": int(rounds), "repeats": int(repeats),
                  "models": m.get("models", {})}))
EOF
cp "$out" bench/results/cdmpp.json
$py bench/plot_cdmpp.py bench/results/cdmpp.json --md bench/results/cdmpp.md --png bench/results/cdmpp.png
log "wrote bench/results/cdmpp.md, cdmpp.png, cdmpp.json"
