#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Which training recipe lets examples/fashion-mnist's CNN reach #25's 91% after 3 epochs.

    python3 bench/peers/fashion-mnist-recipes.py --seeds 1-5 --jsonl results/recipes.jsonl
    python3 bench/peers/fashion-mnist-recipes.py --recipes constant,flip --seeds 1-2 --cpu

The model, data, normalisation, shuffle, initialisation and AdamW (lr 1e-3, betas (0.9, 0.95),
weight decay 0.01, batch 128, the last partial batch skipped) are peer-fashion-mnist.py's, which
are the example's. Each recipe changes one thing the issue leaves open, never the model, the
batch or the optimizer's settings:
  constant   the example's defaults (constant lr 1e-3)
  cosine     lr 1e-3 x (1 + cos(pi k / K)) / 2 at step k of K (the example's --lr-schedule cosine)
  flip       each training image mirrored left-right with probability 1/2 (Fashion-MNIST's
             classes are symmetric that way)
  shift      each training image moved by up to 2 pixels in x and y (zeros shifted in)
  smooth     label smoothing 0.1 in the cross-entropy
  ema        the test accuracy of an exponential moving average of the weights (a copy after
             step 1, then a move by 1 - min(0.999, (1 + t) / (10 + t)) towards them after step t:
             optim.ema with warm-up, the example's --ema; the trained weights unchanged)
  flip+ema, flip+shift ...: several joined by "+"
Prints a line per run (test accuracy after each epoch, the epoch-3 training loss) and, at the end,
each recipe's accuracies after the last epoch over the seeds: min, mean, max, runs >= 91%."""
import argparse
import importlib.util
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def peer():
    spec = importlib.util.spec_from_file_location("peer", os.path.join(HERE, "peer-fashion-mnist.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def seeds_of(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--recipes", default="constant,cosine,flip,shift,smooth,ema,flip+ema")
    ap.add_argument("--seeds", default="1-3")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-limit", type=int, default=0, help="the first N training images")
    ap.add_argument("--ema-decay", type=float, default=0.999)
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--jsonl")
    a = ap.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("fashion-mnist-recipes: skipped: %s" % e)
        return 0
    if not a.cpu and not torch.cuda.is_available():
        print("fashion-mnist-recipes: skipped: no CUDA device (--cpu for the CPU)")
        return 0
    p = peer()
    dev = torch.device("cpu" if a.cpu else "cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    xtr, ytr, xte, yte = p.load_data(np, torch, a.data, a.train_limit, dev)
    n_train, batch = len(ytr), 128
    # The normalised value of a black pixel: what a shift moves in.
    black = (0.0 - 0.2860) / 0.3530
    ar = torch.arange(28, device=dev)[None, :]
    bi = torch.arange(batch, device=dev)[:, None, None]
    nn = torch.nn
    steps = n_train // batch
    total_steps = a.epochs * steps
    out = open(a.jsonl, "a") if a.jsonl else None
    finals = {}
    for recipe in a.recipes.split(","):
        parts = set(recipe.split("+"))
        unknown = parts - {"constant", "cosine", "flip", "shift", "smooth", "ema"}
        if unknown:
            print("fashion-mnist-recipes: unknown recipe part %s" % ", ".join(sorted(unknown)))
            return 2
        for seed in seeds_of(a.seeds):
            model = p.make_model(torch, seed, dev)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95),
                                    weight_decay=0.01)
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda k: 0.5 * (1 + math.cos(math.pi * k / total_steps))) \
                if "cosine" in parts else None
            ema = [q.detach().clone() for q in model.parameters()] if "ema" in parts else None
            loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1 if "smooth" in parts else 0.0)
            gen = torch.Generator(device=dev)
            gen.manual_seed(seed + 7919)
            accs, t0 = [], time.perf_counter()
            for epoch in range(1, a.epochs + 1):
                order = torch.tensor(p.shuffle(n_train, seed * 1000003 + epoch), device=dev)
                total = torch.zeros((), device=dev)
                for s in range(steps):
                    idx = order[s * batch:(s + 1) * batch]
                    x = xtr[idx]
                    if "flip" in parts:
                        m = torch.rand(batch, 1, 1, 1, device=dev, generator=gen) < 0.5
                        x = torch.where(m, x.flip(3), x)
                    if "shift" in parts:
                        d = torch.randint(0, 5, (2, batch, 1), device=dev, generator=gen)
                        rows, cols = d[0] + ar, d[1] + ar
                        xp = torch.nn.functional.pad(x, (2, 2, 2, 2), value=black)
                        x = xp[bi, 0, rows[:, :, None], cols[:, None, :]].unsqueeze(1)
                    opt.zero_grad(set_to_none=True)
                    loss = loss_fn(model(x), ytr[idx])
                    loss.backward()
                    opt.step()
                    if sched:
                        sched.step()
                    if ema is not None:
                        with torch.no_grad():
                            t = (epoch - 1) * steps + s + 1
                            current = [q.detach() for q in model.parameters()]
                            if t == 1:
                                torch._foreach_copy_(ema, current)
                            else:
                                torch._foreach_lerp_(ema, current,
                                                     1 - min(a.ema_decay, (1 + t) / (10 + t)))
                    total += loss.detach()
                with torch.no_grad():
                    saved = None
                    if ema is not None:
                        saved = [q.detach().clone() for q in model.parameters()]
                        for q, e in zip(model.parameters(), ema):
                            q.copy_(e)
                    right = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum())
                                for i in range(0, len(yte), 1000))
                    if saved is not None:
                        for q, w in zip(model.parameters(), saved):
                            q.copy_(w)
                accs.append(right / len(yte))
            row = {"recipe": recipe, "seed": seed, "test_accuracy": accs,
                   "train_loss_last_epoch": float(total) / steps,
                   "seconds": time.perf_counter() - t0, "torch": torch.__version__,
                   "device": "cpu" if a.cpu else torch.cuda.get_device_name(0)}
            finals.setdefault(recipe, []).append(accs[-1])
            print("%-12s seed %d: %s (epoch-%d loss %.4f, %.1f s)" % (
                recipe, seed, " / ".join("%.2f%%" % (100 * v) for v in accs), a.epochs,
                row["train_loss_last_epoch"], row["seconds"]), flush=True)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    print("\n%-12s %6s %6s %6s  %s" % ("recipe", "min", "mean", "max", ">= 91%"))
    for recipe, v in finals.items():
        print("%-12s %5.2f%% %5.2f%% %5.2f%%  %d of %d" % (
            recipe, 100 * min(v), 100 * sum(v) / len(v), 100 * max(v),
            sum(x >= 0.91 for x in v), len(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
