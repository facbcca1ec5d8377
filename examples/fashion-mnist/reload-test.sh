#!/bin/sh
# example-fashion-mnist's test: train briefly and save, then load into a fresh model; the two runs'
# test predictions (their digests) must be the same. Usage: reload-test.sh PROGRAM STATE_DIR
set -eu
prog=$1
dir=$2
mkdir -p "$dir"
"$prog" --train-limit 512 --test-limit 256 --epochs 1 --batch 64 --save "$dir/w.kpw" \
  --csv "$dir/curves.csv" | tee "$dir/train.txt"
"$prog" --load "$dir/w.kpw" --test-limit 256 --batch 64 | tee "$dir/load.txt"
a=$(grep 'digest' "$dir/train.txt")
b=$(grep 'digest' "$dir/load.txt")
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "predictions differ after reload: $a / $b"; exit 1; }
