#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""examples/gru-world-model's peer: the same GRU ensemble, data, data order and optimizer in PyTorch.

    build-gpu/bin/gru-world-model --device nvidia --save-data wm.bin --csv wm.csv
    python3 bench/peers/peer-gru-world-model.py wm.bin --json peer-gru-world-model.json

Reads the example's data file (examples/gru-world-model/README.md, "The data file": the curves
and the kernel's 64 features) and repeats the example: features standardised over the training
curves and clipped to +-5, targets u_t = v(W + t) - v(W - 1) over the training targets' RMS,
x_t = [f, y_{t-1}] with y_{-1} = 0; per member nn.GRU(65, H) (PyTorch's cell, the example's
linear_before_reset = 1) and nn.Linear(H, 1), MSE, AdamW(lr, weight_decay 0.01), members one
after another, the example's Fisher-Yates order (Philox4x32-10 of (seed + 2, member, epoch), as
kp_random_uniform), the last partial batch skipped. PyTorch's own initialisation (the example
draws from Philox with the same bounds). Then 50-step rollouts feeding back each member's own
prediction, and the ensemble mean's RMSE in log loss on the held-out curves (the last --test).
Eager on CUDA with TF32 off (default) or the CPU (--cpu); --compile adds torch.compile to the
training step. Prints per epoch the seconds of training (synchronised), the loss and samples/s,
and the ms per step to compare with the example's."""
import argparse
import json
import struct
import sys
import time

import numpy as np

M32 = 0xFFFFFFFF


def philox_uniform(seed, offset, index):
    """kp_random_uniform(seed, offset, index) of include/kernelport/ops/random.h."""
    n = index + offset
    g = n // 4
    c = [g & M32, (g >> 32) & M32, 0, 0]
    k0, k1 = seed & M32, (seed >> 32) & M32
    for rnd in range(10):
        if rnd:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
    return (c[n % 4] >> 8) * 2.0 ** -24


def order(n, seed, member, epoch):
    """The example's shuffle of n training curves for (member, epoch)."""
    perm = list(range(n))
    stream = (member << 48) | (epoch << 32)
    for i in range(n - 1, 0, -1):
        j = int(philox_uniform(seed + 2, stream, i) * (i + 1)) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"KPWMDATA":
        sys.exit("peer-gru-world-model: %s is not a gru-world-model data file" % path)
    version, n, w, length = struct.unpack("<4I", data[8:24])
    v = np.frombuffer(data, "<f4", n * length, 24).reshape(n, length).astype(np.float64)
    feats = np.frombuffer(data, "<f4", n * 64, 24 + 4 * n * length).reshape(n, 64)
    return v, feats.astype(np.float64), w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("--seed", type=int, default=1, help="the example's --seed (the data order)")
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--train", type=int, default=-1)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("peer-gru-world-model: skipped: %s" % e)
        return 0
    if not a.cpu and not torch.cuda.is_available():
        print("peer-gru-world-model: skipped: no CUDA device (--cpu for the CPU)")
        return 0
    dev = torch.device("cpu" if a.cpu else "cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sync = (lambda: None) if a.cpu else torch.cuda.synchronize
    v, feats, w = read(a.data)
    n = v.shape[0]
    horizon = v.shape[1] - w
    n_train = a.train if a.train > 0 else n - a.test
    mean = feats[:n_train].mean(axis=0)
    std = feats[:n_train].std(axis=0)
    std[~(std > 1e-12)] = 1
    f = np.clip((feats - mean) / std, -5, 5).astype(np.float32)
    u = v[:, w - 1:] - v[:, w - 1:w]  # [N, 1 + T]: u_{-1} = 0, then the targets
    y_scale = float(np.sqrt((u[:n_train, 1:] ** 2).mean()))
    y = torch.from_numpy((u / y_scale).astype(np.float32)).to(dev)
    f_dev = torch.from_numpy(f).to(dev)
    nb = n_train // a.batch
    nn = torch.nn
    torch.manual_seed(a.seed)
    members, rows, total_train = [], [], 0.0
    for e in range(a.members):
        gru = nn.GRU(65, a.hidden).to(dev)
        head = nn.Linear(a.hidden, 1).to(dev)
        params = list(gru.parameters()) + list(head.parameters())
        opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)

        def step(x, target):
            opt.zero_grad(set_to_none=True)
            h, _ = gru(x)
            loss = torch.nn.functional.mse_loss(head(h)[..., 0], target)
            loss.backward()
            opt.step()
            return loss.detach()

        train_step = torch.compile(step) if a.compile else step
        for epoch in range(a.epochs):
            perm = torch.tensor(order(n_train, a.seed, e, epoch), device=dev)
            sync()
            t0 = time.perf_counter()
            total = torch.zeros((), device=dev)
            for b in range(nb):
                idx = perm[b * a.batch:(b + 1) * a.batch]
                yb = y[idx]  # [B, 1 + T]
                x = torch.cat([f_dev[idx][None].expand(horizon, -1, -1),
                               yb[:, :horizon].t()[..., None]], dim=2)  # [T, B, 65]
                total += train_step(x, yb[:, 1:].t())
            sync()
            seconds = time.perf_counter() - t0
            total_train += seconds
            row = {"member": e, "epoch": epoch + 1, "seconds": seconds,
                   "loss": float(total) / nb, "samples_per_s": nb * a.batch / seconds,
                   "ms_per_step": 1e3 * seconds / nb}
            rows.append(row)
            print("torch %s%s member %d epoch %d: %.3f s, loss %.5f, %.0f samples/s, %.3f ms a step"
                  % ("CPU" if a.cpu else torch.cuda.get_device_name(0),
                     " compiled" if a.compile else " eager", e, epoch + 1, seconds, row["loss"],
                     row["samples_per_s"], row["ms_per_step"]))
        members.append((gru, head))
    test = torch.arange(n - a.test, n, device=dev)
    preds = []
    with torch.no_grad():
        for gru, head in members:
            h = torch.zeros(1, a.test, a.hidden, device=dev)
            prev = torch.zeros(a.test, 1, device=dev)
            out = []
            for _ in range(horizon):
                o, h = gru(torch.cat([f_dev[test], prev], dim=1)[None], h)
                prev = head(o[0])
                out.append(prev[:, 0])
            preds.append(torch.stack(out, dim=1))
    ens = (torch.stack(preds).mean(dim=0) * y_scale).cpu().numpy()
    rmse = float(np.sqrt(((ens - u[n - a.test:, 1:]) ** 2).mean()))
    steps = a.members * a.epochs * nb
    # The first epoch warms cuDNN and the allocator, as the C example's builds its kernels.
    later = 1e3 * (total_train - rows[0]["seconds"]) / (steps - nb) if steps > nb else 0.0
    print("torch: %d steps in %.2f s (%.3f ms a step; %.3f ms a step after the first epoch); "
          "ensemble %d-step held-out RMSE %.4f"
          % (steps, total_train, 1e3 * total_train / steps, later, horizon, rmse))
    if a.json:
        with open(a.json, "w") as out:
            json.dump({"benchmark": "peer-gru-world-model", "torch": torch.__version__,
                       "device": "cpu" if a.cpu else torch.cuda.get_device_name(0),
                       "compiled": a.compile, "ms_per_step": 1e3 * total_train / steps,
                       "ms_per_step_after_first_epoch": later,
                       "heldout_rmse": rmse, "epochs": rows}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
