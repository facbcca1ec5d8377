#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench-logic-ca: the same logic-gate CAs written in plain PyTorch (difflogic's
formulation, autograd for the backward), one training step timed on CUDA or on the CPU.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-logic-ca.py --json results/peer-logic-ca.json
    python3 bench/peers/peer-logic-ca.py --device cpu --threads 2      # against PoCL on 2 cores
    python3 bench/peers/peer-logic-ca.py --train 500                  # the loss curve as well

The models are examples/logic-ca's tasks: the checkerboard (8 channels, 16 perception kernels
[9, 8, 4, 2], update 264 -> 256 x 10 -> 128 -> ... -> 8, 2 grids of 16 x 16, zero boundary, 20
steps) and Game of Life (--task gol: 1 channel, [9, 8, 4, 2, 1], 17 -> 128 x 16 -> 64 ... -> 1, the
512 periodic 3 x 3 boards, one step). Perception reads each channel's 3 x 3 patch (F.unfold), the
first layer a neighbour against the centre, the K kernels sharing the wiring; later layers wired
`unique` (difflogic's pairs; not Kernelport's splitmix stream, so the wirings differ, the sizes do
not). A gate is C = softmax(w) M (four coefficients, y = C1 + Ca a + Cb b + Cab ab), the stronger
of difflogic's two pure-PyTorch forms; --ops16 uses the other (the 16 relaxations weighted by the
softmax). A training step: random 0/1 states, T soft steps, the summed squared error of channel 0,
backward, clip_grad_norm_(100), AdamW (lr 0.05, betas (0.9, 0.99), weight decay 0.01), then the
hard rollout's loss (argmax gates) without gradients, as libkernelport-ca's step does. The timing
is the median wall time of one step with the device synchronised, after warm-up. Exits 0, printing
why, without PyTorch (or CUDA when asked for it)."""
import argparse
import platform
import time

from peer_common import skip, time_host, write

TABLE = [(0, 0, 0, 0), (0, 0, 0, 1), (0, 1, 0, -1), (0, 1, 0, 0), (0, 0, 1, -1), (0, 0, 1, 0),
         (0, 1, 1, -2), (0, 1, 1, -1), (1, -1, -1, 1), (1, -1, -1, 2), (1, 0, -1, 0),
         (1, 0, -1, 1), (1, -1, 0, 0), (1, -1, 0, 1), (1, 0, 0, -1), (1, 0, 0, 0)]

TASKS = {
    "checkerboard": dict(C=8, K=16, perceive=[8, 4, 2], update=[256] * 10 + [128, 64, 32, 16, 8, 8],
                         H=16, W=16, B=2, T=20, zero=True),
    "gol": dict(C=1, K=16, perceive=[8, 4, 2, 1],
                update=[128] * 16 + [64, 32, 16, 8, 4, 2, 1], H=3, W=3, B=512, T=1, zero=False),
}


def unique_pairs(torch, n_in, n_out, gen):
    """difflogic's `unique` connections: (0,1), (2,3), ...; (1,2), (3,4), ...; then (i, i+d)."""
    pairs = [(i, i + 1) for i in range(0, n_in - 1, 2)] + [(i, i + 1) for i in range(1, n_in - 1, 2)]
    d = 2
    while len(pairs) < n_out and len(pairs) > d:
        pairs += [(i, i + d) for i in range(n_in - d)]
        d += 1
    pairs = pairs[:n_out]
    perm = torch.randperm(n_out, generator=gen).tolist()
    return [pairs[p][0] for p in perm], [pairs[p][1] for p in perm]


class LogicCA:
    def __init__(self, torch, cfg, device, ops16):
        self.t, self.cfg, self.ops16 = torch, cfg, ops16
        gen = torch.Generator().manual_seed(1)
        C, K = cfg["C"], cfg["K"]
        neighbours = [0, 1, 2, 3, 5, 6, 7, 8]
        perm = torch.randperm(8, generator=gen).tolist()
        self.pwire = [([neighbours[p] for p in perm], [4] * 8)]
        for i in range(1, len(cfg["perceive"])):
            self.pwire.append(unique_pairs(torch, cfg["perceive"][i - 1], cfg["perceive"][i], gen))
        n_in = C + K * C * cfg["perceive"][-1]
        self.uwire = []
        for w in cfg["update"]:
            self.uwire.append(unique_pairs(torch, n_in, w, gen))
            n_in = w
        self.pwire = [(torch.tensor(a, device=device), torch.tensor(b, device=device))
                      for a, b in self.pwire]
        self.uwire = [(torch.tensor(a, device=device), torch.tensor(b, device=device))
                      for a, b in self.uwire]

        def logits(*shape):
            w = torch.zeros(*shape, 16, device=device)
            w[..., 3] = 10.0
            return w.requires_grad_()
        self.pw = [logits(K, w) for w in cfg["perceive"]]
        self.uw = [logits(w) for w in cfg["update"]]
        self.M = torch.tensor(TABLE, dtype=torch.float32, device=device)

    def params(self):
        return self.pw + self.uw

    def coeffs(self, w, hard):
        if hard:
            p = self.t.nn.functional.one_hot(w.argmax(-1), 16).float()
        else:
            p = self.t.softmax(w, dim=-1)
        return p @ self.M

    def gate(self, w, a, b, hard):
        if self.ops16 and not hard:
            p = self.t.softmax(w, dim=-1)
            ab = a * b
            ops = [self.t.zeros_like(a), ab, a - ab, a, b - ab, b, a + b - 2 * ab, a + b - ab,
                   1 - (a + b - ab), 1 - (a + b - 2 * ab), 1 - b, 1 - b + ab, 1 - a, 1 - a + ab,
                   1 - ab, self.t.ones_like(a)]
            return sum(p[..., i] * ops[i] for i in range(16))
        c = self.coeffs(w, hard)
        return c[..., 0] + c[..., 1] * a + c[..., 2] * b + c[..., 3] * (a * b)

    def step(self, x, hard):
        F = self.t.nn.functional
        cfg = self.cfg
        B, C, H, W = x.shape
        padded = F.pad(x, (1, 1, 1, 1), mode="constant" if cfg["zero"] else "circular")
        # [B, C*9, H*W] -> [cells, 1, C, 9]: each channel's patch, f = 3 dy + dx.
        patch = F.unfold(padded, 3).view(B, C, 9, H * W).permute(0, 3, 1, 2).reshape(-1, 1, C, 9)
        h = patch
        for (a, b), w in zip(self.pwire, self.pw):
            # w [K, width, 16] -> per (kernel, gate) broadcast over cells and channels.
            h = self.gate(w[None, :, None], h[..., a], h[..., b], hard)
        # [cells, K, C, w_last] -> (channel, output, kernel), after the cell's own channels.
        u = self.t.cat([patch[:, 0, :, 4], h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)], dim=1)
        for (a, b), w in zip(self.uwire, self.uw):
            u = self.gate(w, u[:, a], u[:, b], hard)
        return u.view(B, H * W, C).permute(0, 2, 1).reshape(B, C, H, W)

    def rollout(self, x, hard):
        for _ in range(self.cfg["T"]):
            x = self.step(x, hard)
        return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", choices=sorted(TASKS), default="checkerboard")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (CPU)")
    ap.add_argument("--ops16", action="store_true", help="difflogic's 16-relaxation form")
    ap.add_argument("--train", type=int, default=0, help="also train N steps, printing the losses")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    name = "peer-logic-ca"
    try:
        import torch
    except ImportError:
        return skip(name, a.json, "no PyTorch")
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        return skip(name, a.json, "no CUDA device")
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = TASKS[a.task]
    dev = torch.device(a.device)
    ca = LogicCA(torch, cfg, dev, a.ops16)
    opt = torch.optim.AdamW(ca.params(), lr=0.05, betas=(0.9, 0.99), weight_decay=0.01)
    C, H, W, B = cfg["C"], cfg["H"], cfg["W"], cfg["B"]
    yy, xx = torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij")
    target = (((yy // 2 + xx // 2) % 2).float()[None].expand(B, H, W)).to(dev)
    boards = None
    if a.task == "gol":
        b = torch.arange(512)[:, None]
        boards = ((b >> torch.arange(9)) & 1).float().view(512, 1, 3, 3).to(dev)
        live = torch.nn.functional.conv2d(torch.nn.functional.pad(boards, (1, 1, 1, 1), "circular"),
                                          torch.ones(1, 1, 3, 3, device=dev)) - boards
        target = ((live == 3) | ((boards == 1) & (live == 2))).float()[:, 0]
    gen = torch.Generator(device=dev).manual_seed(7)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    losses = {}

    def train_step():
        x0 = boards if boards is not None else \
            torch.bernoulli(torch.full((B, C, H, W), 0.5, device=dev), generator=gen)
        loss = ((ca.rollout(x0, False)[:, 0] - target) ** 2).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ca.params(), 100.0)
        opt.step()
        with torch.no_grad():
            hard = ((ca.rollout(x0, True)[:, 0] - target) ** 2).sum()
        losses["soft"], losses["hard"] = loss, hard

    def timed():
        train_step()
        sync()

    med, p10, p90 = time_host(timed, a.quick, max_case_s=10.0)
    label = "torch_%s_%s" % ("ops16" if a.ops16 else "coeffs", dev.type)
    print("%s %s: %.3f ms a training step (p10 %.3f, p90 %.3f)" %
          (a.task, label, med * 1e3, p10 * 1e3, p90 * 1e3))
    curve = []
    if a.train:
        t0 = time.perf_counter()
        for s in range(1, a.train + 1):
            train_step()
            if s % 10 == 0 or s == a.train:
                curve.append((s, float(losses["soft"]), float(losses["hard"])))
                print("step %5d  loss %10.4f  hard %6.0f" % curve[-1])
        sync()
        print("trained %d steps in %.2f s" % (a.train, time.perf_counter() - t0))
    write(a.json, {"benchmark": name, "torch": torch.__version__, "host": platform.node(),
                   "device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
                   "threads": torch.get_num_threads(), "curve": curve,
                   "results": [{"case": a.task, "kernel": label, "status": "KP_OK",
                                "seconds": med, "p10_s": p10, "p90_s": p90}]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
