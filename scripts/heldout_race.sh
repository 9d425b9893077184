#!/usr/bin/env bash
# The race on the 20 held-out cases (issue 59.3), one case at a time (each resumable from its
# folder):
#   scripts/heldout_race.sh SECONDS SEED OUTDIR
# The held-out programs are the bundled workloads the generalist never trained on and every
# program file in bench-workloads/heldout/ (as scripts/generalist_table.py), each on
# tpu-v4i-like at 8 MiB and 16 MiB. Writes OUTDIR/<program>-<capacity>.json (`race --json`)
# and keeps every run folder under RUNS (default runs/heldout-race). SOLVERS="a b" names the
# solvers (each a `--solver`; default: muzero and guided-uniform, the guide's ablation);
# CAPACITIES="8MiB" races one capacity only (default: both).
set -euo pipefail
seconds=$1 seed=$2 out=$3
bin=${MMZ_BIN:-target/release/mallocmuzero}
here=$(cd "$(dirname "$0")" && pwd)
programs=(resnet101 mobilenet-v2 bert-base-s384 gpt2-small-s128)
for f in "$here"/../bench-workloads/heldout/*.json; do
  programs+=("$f")
done
flags=()
for s in ${SOLVERS:-muzero guided-uniform}; do
  flags+=(--solver "$s")
done
mkdir -p "$out"
for w in "${programs[@]}"; do
  name=$(basename "$w" .json)
  for c in ${CAPACITIES:-8MiB 16MiB}; do
    "$bin" race --workload "$w" --hw tpu-v4i-like --fast-capacity "$c" --seconds "$seconds" \
      --seed "$seed" --threads 2 "${flags[@]}" \
      --out "${RUNS:-runs/heldout-race}/$seconds-s$seed/$name-$c" --json > "$out/$name-$c.json.tmp"
    mv "$out/$name-$c.json.tmp" "$out/$name-$c.json"
  done
done
