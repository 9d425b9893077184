#!/usr/bin/env bash
# The small-case table of docs/results.md "The exact solver": every small case
# (bench_workloads::small) with xla, greedy-size, beam:64 and exact from `evaluate`, local
# search and EGRL from a 30-second race each, and the agent from a 2-minute race (2
# threads each). Writes one folder per case under OUT (default races/exact-small); then
# `python3 scripts/exact_table.py OUT` prints the table.
set -euo pipefail
out="${1:-races/exact-small}"
bin="${MMZ_BIN:-target/release/mallocmuzero}"
cargo run --release -q -p exact --example small_cases -- list > "${TMPDIR:-/tmp}/small-cases.txt"
while read -r workload hw capacity; do
  dir="$out/$workload-$hw"
  mkdir -p "$dir"
  [ -s "$dir/evaluate.json" ] || "$bin" evaluate --workload "$workload" --hw "$hw" --fast-capacity "$capacity" \
    --solver xla --solver greedy-size --solver beam:64 --solver exact --json > "$dir/evaluate.json"
  "$bin" race --workload "$workload" --hw "$hw" --fast-capacity "$capacity" --seconds 30 --threads 2 \
    --solver local-search --solver egrl --solver exact --out "$dir/race30" --json > /dev/null
  "$bin" race --workload "$workload" --hw "$hw" --fast-capacity "$capacity" --seconds 120 --threads 2 \
    --solver muzero --solver exact --out "$dir/race120" --json > /dev/null
done < "${TMPDIR:-/tmp}/small-cases.txt"
