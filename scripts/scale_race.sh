#!/usr/bin/env bash
# The race on the scale tier, one case at a time (each resumable from its folder):
#   scripts/scale_race.sh SECONDS SEED HW OUTDIR [WORKLOAD ...]
# writes OUTDIR/<workload>-<hw>.json (`race --json`) and keeps every run folder under
# runs/scale-race/. With no workload, every program of the tier. The solvers: the XLA-style
# heuristics, beam, the local search, EGRL, the exact solver and mallocMuZero; SOLVERS="a b"
# races those instead (each a `--solver`), RUNS names the run folders' parent.
set -euo pipefail
seconds=$1 seed=$2 hw=$3 out=$4
shift 4
bin=${MMZ_BIN:-target/release/mallocmuzero}
workloads=("$@")
if [ ${#workloads[@]} -eq 0 ]; then
  mapfile -t workloads < <("$bin" suite scale --json | python3 -c '
import json, sys
seen = []
for c in json.load(sys.stdin)["suite"]:
    if c["workload"] not in seen:
        seen.append(c["workload"])
print("\n".join(seen))')
fi
flags=()
for s in ${SOLVERS:-xla xla-repack greedy-size beam local-search egrl exact muzero}; do
  flags+=(--solver "$s")
done
mkdir -p "$out"
for w in "${workloads[@]}"; do
  "$bin" race --workload "$w" --hw "$hw" --fast-capacity scale-rule --seconds "$seconds" \
    --seed "$seed" --threads 2 "${flags[@]}" \
    --out "${RUNS:-runs/scale-race}/$seconds-s$seed/$w-$hw" --json > "$out/$w-$hw.json.tmp"
  mv "$out/$w-$hw.json.tmp" "$out/$w-$hw.json"
done
