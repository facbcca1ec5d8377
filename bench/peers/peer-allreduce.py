#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-allreduce's peer: torch.distributed all-reduce (NCCL, GPU to GPU) of the same sizes.

    torchrun --nproc_per_node 2 bench/peers/peer-allreduce.py --json results/peer-allreduce.json

f32 tensors of 1 MB to 256 MB on one GPU per process, all-reduced in place (sum), 10 timed
repetitions after 3 warm-ups, synchronised, the median of the slowest rank's times; bus bandwidth
as NCCL's tests define it (size / time x 2 (P - 1) / P). Also the host-staging copies PyTorch makes
for comparison: a pinned device-to-host and host-to-device copy of the tensor. Rank 0 prints and
writes."""
import argparse
import json
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-mb", type=float, default=1)
    ap.add_argument("--max-mb", type=float, default=256)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print("peer-allreduce: skipped: %s" % e)
        return 0
    if not torch.cuda.is_available() or "WORLD_SIZE" not in os.environ:
        print("peer-allreduce: skipped: needs CUDA and torchrun")
        return 0
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    bus = 2.0 * (world - 1) / world
    rows = []
    mb = a.min_mb
    if rank == 0:
        print("peer-allreduce: %d ranks, %s, NCCL %s" % (world, torch.cuda.get_device_name(local),
                                                       ".".join(map(str, torch.cuda.nccl.version()))))
        print("%10s %12s %10s %14s %14s" % ("MB", "all-reduce", "bus GB/s", "D2H pinned GB/s",
                                            "H2D pinned GB/s"))
    while mb <= a.max_mb * 1.0001:
        n = int(mb * 1048576) // 4
        x = torch.ones(n, device="cuda")
        host = torch.empty(n, pin_memory=True)

        def timed(fn):
            times = []
            for r in range(3 + a.reps):
                dist.barrier()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                if r >= 3:
                    times.append(time.perf_counter() - t0)
            t = torch.tensor(times, device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            return statistics.median(t.tolist())

        t_all = timed(lambda: dist.all_reduce(x))
        t_d2h = timed(lambda: host.copy_(x, non_blocking=True))
        t_h2d = timed(lambda: x.copy_(host, non_blocking=True))
        nbytes = 4 * n
        row = {"bytes": nbytes, "allreduce_s": t_all, "bus_gbs": bus * nbytes / t_all / 1e9,
               "d2h_gbs": nbytes / t_d2h / 1e9, "h2d_gbs": nbytes / t_h2d / 1e9}
        rows.append(row)
        if rank == 0:
            print("%10.0f %9.3f ms %10.2f %14.2f %14.2f" % (mb, 1e3 * t_all, row["bus_gbs"],
                                                            row["d2h_gbs"], row["h2d_gbs"]))
        mb *= 2
    if rank == 0 and a.json:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "peer-allreduce", "torch": torch.__version__, "ranks": world,
                       "device": torch.cuda.get_device_name(local), "sizes": rows}, f, indent=2)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
