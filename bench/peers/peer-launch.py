#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-launch's peer: the XOR model's training step in PyTorch eager, 200 steps.

    build/bin/bench-launch --json results/bench-launch.json
    python3 bench/peers/peer-launch.py --ours results/bench-launch.json --json results/peer-launch.json

The model is examples/xor's: Linear(2, 8), tanh, Linear(8, 1), BCEWithLogitsLoss on the four XOR
rows, AdamW(lr=0.05) (PyTorch's other defaults; foreach, PyTorch's default, or fused with
--fused), the step being zero_grad, forward, backward and opt.step(). Timed as bench-launch times
its 200 steps: wall time from the first call to the device's last command (torch.cuda.synchronize
on CUDA), median over rounds after warm-up. CUDA when it is there (--cpu: the CPU). With --ours,
prints the ratio against bench-launch's "xor" row (issue #24's target: >= 10x PyTorch eager).
"""
import argparse
import json
import statistics
import sys
import time

from peer_common import skip, write

STEPS = 200


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--ours", help="bench-launch's JSON, for the ratio")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--fused", action="store_true")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        return skip("peer-launch", a.json, "PyTorch is not installed")
    if not a.cpu and not torch.cuda.is_available():
        return skip("peer-launch", a.json, "no CUDA device (--cpu times the CPU)")
    dev = torch.device("cpu" if a.cpu else "cuda")
    sync = (lambda: None) if a.cpu else torch.cuda.synchronize
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(),
                                torch.nn.Linear(8, 1)).to(dev)
    x = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=torch.float32, device=dev)
    t = torch.tensor([[0], [1], [1], [0]], dtype=torch.float32, device=dev)
    kw = {"fused": True} if a.fused else {}
    opt = torch.optim.AdamW(model.parameters(), lr=0.05, **kw)
    loss_fn = torch.nn.BCEWithLogitsLoss()

    def steps():
        t0 = time.perf_counter()
        for _ in range(STEPS):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), t)
            loss.backward()
            opt.step()
        sync()
        return time.perf_counter() - t0

    for _ in range(2):
        steps()
    runs = [steps() for _ in range(3 if a.quick else 15)]
    med = statistics.median(runs)
    name = "torch_eager_adamw" + ("_fused" if a.fused else "")
    where = "CPU" if a.cpu else torch.cuda.get_device_name(0)
    print("xor 2-8-1 MLP: %d training steps  %s on %s: %.2f ms (%.1f us a step)"
          % (STEPS, name, where, med * 1e3, med / STEPS * 1e6))
    doc = {"benchmark": "peer-launch", "device": where, "torch": torch.__version__,
           "results": [{"case": "xor 2-8-1 MLP: %d training steps" % STEPS, "kernel": name,
                        "status": "KP_OK", "seconds": med, "p10_s": min(runs), "p90_s": max(runs)}]}
    if a.ours:
        with open(a.ours) as f:
            ours = json.load(f)
        rows = [r for r in ours.get("results", []) if r.get("case", "").startswith("xor")
                and "mul_sum" in r.get("case", "")]
        if rows:
            mine = rows[0]["seconds"]
            ratio = med / mine
            print("Kernelport kp_graph_replay (tensor.mul_sum): %.2f ms; %.2fx PyTorch eager (target >= 10x); "
                  "200 steps %s 18 ms" % (mine * 1e3, ratio, "within" if mine <= 0.018 else
                                           "NOT within"))
            doc["ratio_vs_ours"] = ratio
    write(a.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
