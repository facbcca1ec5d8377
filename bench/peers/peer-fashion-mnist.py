#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""examples/fashion-mnist's peer: the same CNN, data order and optimizer in PyTorch.

    python3 bench/peers/peer-fashion-mnist.py --epochs 3 --json results/peer-fashion-mnist.json
    python3 bench/peers/peer-fashion-mnist.py --cpu --train-limit 10000 --epochs 1
    python3 bench/peers/peer-fashion-mnist.py --lr-schedule cosine      # the example's option
    torchrun --nproc_per_node 2 bench/peers/peer-fashion-mnist.py --batch 64    # DDP, 2 GPUs

The model is examples/fashion-mnist/cnn-model.c's: conv(1->32, 3x3, pad 1) + ReLU + max-pool 2 +
conv(32->64, 3x3, pad 1) + ReLU + max-pool 2 + linear(3136->128) + ReLU + linear(128->10), softmax
cross-entropy, AdamW(lr 1e-3, betas (0.9, 0.95) as the example's --beta2, weight_decay 0.01 as its
--weight-decay), batch 128, the example's shuffle (splitmix64 seeded with seed * 1000003 + epoch, Fisher-Yates), its
normalisation, the last partial batch
skipped; with --lr-schedule cosine, the example's cosine decay (lr x (1 + cos(pi k / K)) / 2 at
step k of K: a LambdaLR stepped per batch); the test accuracy of the weights' moving average as
the example's --ema (default 0.999; 0: the trained weights): after step t (1 on the first) the
average is a copy of the weights at t = 1, else it moves by 1 - min(decay, (1 + t) / (10 + t)) of
the way to them (torch._foreach_lerp_, AveragedModel's EMA with TensorFlow's warm-up). The
example's initialisation: He uniform for ReLU
(kaiming_uniform_, bound sqrt(6 / fan_in)) and zero biases (the example draws its weights from
Philox with the same bounds). Eager on CUDA with TF32 off (default) or the CPU
(--cpu); --compile adds torch.compile.
Prints and writes per epoch: seconds of training (synchronised), train loss, test accuracy.
Started by torchrun with several processes, it trains with DistributedDataParallel (NCCL), one GPU
per process, as the example does under mpirun: --batch per rank, rank r training on the r-th slice
of each global batch of world x batch images of the same shuffle; rank 0 prints and writes."""
import argparse
import gzip
import json
import math
import os
import sys
import time

M64 = (1 << 64) - 1


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def shuffle(n, seed):
    order = list(range(n))
    s = seed
    for i in range(n, 1, -1):
        s, r = splitmix(s)
        j = r % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(dims)]
    return data[4 + 4 * dims:], shape


def load_data(np, torch, data, train_limit, dev):
    """The training set's first train_limit images (0: all) and the test set, normalised as the
    example does, on dev: (x_train, y_train, x_test, y_test)."""
    tr_x, sh = read_idx(os.path.join(data, "train-images-idx3-ubyte.gz"))
    tr_y, _ = read_idx(os.path.join(data, "train-labels-idx1-ubyte.gz"))
    te_x, te_sh = read_idx(os.path.join(data, "t10k-images-idx3-ubyte.gz"))
    te_y, _ = read_idx(os.path.join(data, "t10k-labels-idx1-ubyte.gz"))

    def images(raw, n):
        x = np.frombuffer(raw, dtype=np.uint8)[:n * 784].astype(np.float32).reshape(n, 1, 28, 28)
        return torch.from_numpy((x / 255.0 - 0.2860) / 0.3530).to(dev)

    def labels(raw, n):
        return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8)[:n].astype(np.int64)).to(dev)

    n_train = min(train_limit or sh[0], sh[0])
    return images(tr_x, n_train), labels(tr_y, n_train), images(te_x, te_sh[0]), \
        labels(te_y, te_sh[0])


def make_model(torch, seed, dev):
    """The example's CNN with its initialisation (He uniform for ReLU, zero biases) for seed."""
    torch.manual_seed(seed)
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to(dev)
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_uniform_(layer.weight, nonlinearity="relu")
                layer.bias.zero_()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--weight-decay", type=float, default=0.01, help="AdamW's (the example's)")
    ap.add_argument("--lr-schedule", choices=["constant", "cosine"], default="constant")
    ap.add_argument("--ema", type=float, default=0.999,
                    help="the evaluated weights' moving average (the example's; 0: none)")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("peer-fashion-mnist: skipped: %s" % e)
        return 0
    if not a.cpu and not torch.cuda.is_available():
        print("peer-fashion-mnist: skipped: no CUDA device (--cpu for the CPU)")
        return 0
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl")
        if rank != 0:
            sys.stdout = open(os.devnull, "w")
    dev = torch.device("cpu" if a.cpu else "cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sync = (lambda: None) if a.cpu else torch.cuda.synchronize
    xtr, ytr, xte, yte = load_data(np, torch, a.data, a.train_limit, dev)
    n_train = len(ytr)
    nn = torch.nn
    model = make_model(torch, a.seed, dev)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, a.beta2),
                            weight_decay=a.weight_decay)
    step_model = torch.compile(model) if a.compile else model
    loss_fn = nn.CrossEntropyLoss()
    global_batch = world * a.batch
    steps = n_train // global_batch
    total_steps = a.epochs * steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 0.5 * (1 + math.cos(math.pi * k / total_steps))) \
        if a.lr_schedule == "cosine" else None
    params = list(model.parameters())
    ema = [q.detach().clone() for q in params] if a.ema > 0 else None
    t = 0
    rows = []
    for epoch in range(1, a.epochs + 1):
        order = torch.tensor(shuffle(n_train, a.seed * 1000003 + epoch), device=dev)
        sync()
        t0 = time.perf_counter()
        total = torch.zeros((), device=dev)
        for s in range(steps):
            at = s * global_batch + rank * a.batch
            idx = order[at:at + a.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(step_model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            if sched:
                sched.step()
            t += 1
            if ema is not None:
                with torch.no_grad():
                    if t == 1:
                        torch._foreach_copy_(ema, params)
                    else:
                        torch._foreach_lerp_(ema, params, 1 - min(a.ema, (1 + t) / (10 + t)))
            total += loss.detach()
        sync()
        seconds = time.perf_counter() - t0
        with torch.no_grad():
            if ema is not None:
                trained = [q.detach().clone() for q in params]
                torch._foreach_copy_(params, ema)
            right = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum())
                        for i in range(0, len(yte), 1000))
            if ema is not None:
                torch._foreach_copy_(params, trained)
        acc = right / len(yte)
        row = {"epoch": epoch, "seconds": seconds, "train_loss": float(total) / steps,
               "test_accuracy": acc, "samples_per_s": steps * global_batch / seconds}
        rows.append(row)
        print("torch %s%s%s epoch %d: %.2f s, train loss %.4f, test accuracy %.2f%%, %.0f samples/s"
              % ("CPU" if a.cpu else torch.cuda.get_device_name(0),
                 " compiled" if a.compile else " eager",
                 " DDP x%d" % world if world > 1 else "", epoch, seconds, row["train_loss"],
                 100 * acc, row["samples_per_s"]))
    if a.json and rank == 0:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "peer-fashion-mnist", "torch": torch.__version__,
                       "device": "cpu" if a.cpu else torch.cuda.get_device_name(0),
                       "compiled": a.compile, "ranks": world, "batch_per_rank": a.batch,
                       "lr_schedule": a.lr_schedule, "ema": a.ema,
                       "epochs": rows}, f, indent=2)
    if world > 1:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
