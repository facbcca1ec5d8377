#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue #25's programs on the NVIDIA device, in one call of the device tool: the XOR example, the
# Fashion-MNIST CNN for 3 epochs (a recorded step; its weights saved and loaded back; evaluated
# with the weights' moving average, --ema 0.999, the default), and the same CNN in PyTorch eager
# (TF32 off) in the same call, per epoch; both again for seeds 2 and 3, and with --ema 0 (the
# trained weights); then the GRU world model at its defaults, the same ensemble in PyTorch eager on
# its data, and its feature encoding in NumPy. Needs the dataset's .deb in .gpu (apt-get download
# dataset-fashion-mnist zlib1g-dev, into .gpu/).
#   device run:  carry [".gpu"], command: bash scripts/gpu/train.sh
# Optional: KP_TRAIN_EPOCHS (default 3), KP_TRAIN_COMPILE=1 adds torch.compile's runs (the CNN's
# and the world model's peers),
# KP_TRAIN_PARTS (default "xor cnn seeds gru"; also "recipes": bench/peers/fashion-mnist-recipes.py
# over seeds 1-5, constant lr with and without the average, and the cosine schedule).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin train /tmp/kp-train-out results
kp_setup
kp_build_here "$res/build.log"
epochs=${KP_TRAIN_EPOCHS:-3}

parts=${KP_TRAIN_PARTS:-xor cnn seeds gru}
want() { [[ " $parts " == *" $1 "* ]]; }

if want xor; then
step "nvidia: xor"
timeout "$(cap 60)" build-gpu/bin/xor --device nvidia --csv "$res/xor.csv" | tail -3
fi

if want cnn; then
step "nvidia: fashion-mnist, $epochs epochs"
timeout "$(cap 300)" build-gpu/bin/fashion-mnist --device nvidia --epochs "$epochs" \
  --csv "$res/fashion-mnist.csv" --save "$res/cnn.kpw"
timeout "$(cap 60)" build-gpu/bin/fashion-mnist --device nvidia --load "$res/cnn.kpw" | tail -2

step "PyTorch eager, the same CNN"
PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-fashion-mnist.py \
  --epochs "$epochs" --json "$res/peer-fashion-mnist.json" || echo "peer failed"
if [[ ${KP_TRAIN_COMPILE:-0} == 1 ]]; then
  PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-fashion-mnist.py --compile \
    --epochs "$epochs" --json "$res/peer-fashion-mnist-compiled.json" || echo "peer failed"
fi
fi

if want seeds; then
for seed in 2 3; do
  step "nvidia: fashion-mnist, $epochs epochs, seed $seed; PyTorch eager, the same"
  timeout "$(cap 300)" build-gpu/bin/fashion-mnist --device nvidia --epochs "$epochs" \
    --seed "$seed" | grep '^epoch'
  PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-fashion-mnist.py \
    --epochs "$epochs" --seed "$seed" || echo "peer failed"
done
step "nvidia: fashion-mnist, $epochs epochs, --ema 0 (the trained weights); PyTorch eager, the same"
timeout "$(cap 300)" build-gpu/bin/fashion-mnist --device nvidia --epochs "$epochs" --ema 0 |
  grep '^epoch'
PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-fashion-mnist.py \
  --epochs "$epochs" --ema 0 || echo "peer failed"
fi

if want recipes; then
step "PyTorch eager: training recipes over seeds 1-5 (bench/peers/fashion-mnist-recipes.py)"
PYTHONUNBUFFERED=1 timeout "$(cap 400)" python3 bench/peers/fashion-mnist-recipes.py \
  --seeds 1-5 --recipes constant,ema,cosine,cosine+ema --jsonl "$res/recipes.jsonl" ||
  echo "recipes failed"
fi

if want gru; then
step "nvidia: gru-world-model (defaults)"
timeout "$(cap 300)" build-gpu/bin/gru-world-model --device nvidia --csv "$res/gru-world-model.csv" \
  --save-data /tmp/kp-wm.bin

step "PyTorch eager, the same GRU world model; NumPy, the same features"
PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-gru-world-model.py /tmp/kp-wm.bin \
  --json "$res/peer-gru-world-model.json" || echo "peer failed"
if [[ ${KP_TRAIN_COMPILE:-0} == 1 ]]; then
  PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-gru-world-model.py \
    /tmp/kp-wm.bin --compile --json "$res/peer-gru-world-model-compiled.json" || echo "peer failed"
fi
timeout "$(cap 60)" python3 bench/peers/peer-wm-features.py /tmp/kp-wm.bin \
  --json "$res/peer-wm-features.json" || echo "peer failed"
fi
kp_pack
