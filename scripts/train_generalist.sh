#!/bin/sh
# Trains the bundled generalist and installs it into malloc-muzero/generalist/
# (weights.safetensors and run.json), as malloc-muzero/generalist/README.md describes.
#
#   sh scripts/train_generalist.sh            # the bundled network's own run, to its steps
#   STEPS=2000 OUT=/tmp/g sh scripts/train_generalist.sh   # a shorter one elsewhere
#
# The schedule is deterministic (every draw from the seed and the iteration; the learner
# trains to a fixed ratio of steps per position), so the same seed, threads and steps give
# the same network on any machine of the same float behaviour; only the wall time differs.
set -eu
cd "$(dirname "$0")/.."
STEPS=${STEPS:-$(python3 -c "import json; print(json.load(open('malloc-muzero/generalist/provenance.json'))['train_steps'])")}
OUT=${OUT:-runs/generalist}
INSTALL=${INSTALL:-malloc-muzero/generalist}
cargo build --release -p mallocmuzero
target/release/mallocmuzero train --suite --config malloc-muzero/generalist/config.json \
    --threads 2 --seed 0 --steps "$STEPS" --out "$OUT"
latest=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['dir'])" "$OUT/checkpoints/latest.json")
cp "$OUT/checkpoints/$latest/weights.safetensors" "$INSTALL/weights.safetensors"
cp "$OUT/run.json" "$INSTALL/run.json"
echo "installed $OUT/checkpoints/$latest into $INSTALL (rebuild to embed it)"
