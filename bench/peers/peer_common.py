# SPDX-License-Identifier: Apache-2.0
"""What the bench/peers/peer-*.py scripts share: the JSON they write, the skip when there is no GPU,
and the CUDA-event timing. Imported from the scripts' own directory (python3
bench/peers/peer-x.py puts bench/peers/ first on sys.path)."""
import json
import statistics
import time


def write(path, doc):
    if path:
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


def skip(name, path, why):
    """No GPU to measure on: say so, leave a JSON that says so, and succeed."""
    print("%s: skipped: %s" % (name, why))
    write(path, {"benchmark": name, "skipped": why, "results": []})
    return 0


def time_events(torch, fn, quick, sleep=True, warmup=10, quick_warmup=3, max_runs=200,
                sleep_cycles=100000):
    """Median, 10th and 90th percentile seconds of fn() between CUDA events. With `sleep`, a
    short GPU sleep (sleep_cycles) before each span keeps the GPU busy while the host enqueues, so
    the span holds the call alone and not the host's launch latency; a call whose host side takes
    longer than the sleep needs a longer one."""
    pause = getattr(torch.cuda, "_sleep", None) if sleep else None
    for _ in range(quick_warmup if quick else warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    runs = max(5, min(max_runs, int((0.05 if quick else 0.3) / one)))
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if pause:
            pause(sleep_cycles)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]


def time_host(fn, quick, max_case_s=None):
    """Median, 10th and 90th percentile wall seconds of fn() on the host, with the rule of
    bench/programs/harness.c (kpb_more_runs): two warm-up calls, then at least 10 runs and 0.3 s
    (--quick: 3 runs and 0.01 s), at most 200 runs, and no more once max_case_s is measured
    after 3 runs."""
    for _ in range(2):
        fn()
    times, total = [], 0.0
    while len(times) < 200:
        n = len(times)
        if max_case_s and n >= 3 and total >= max_case_s:
            break
        if n >= (3 if quick else 10) and total >= (0.01 if quick else 0.3):
            break
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        total += times[-1]
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]
