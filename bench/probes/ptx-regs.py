#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Registers and spills of the newest NVIDIA programs in Kernelport's binary cache.

The cache keeps each program's binary between a 16-byte header and a 32-byte checksum; on NVIDIA
that binary is PTX, which ptxas (from CUDA, or the copy Triton ships) assembles with -v to report
what the driver's own compile will allot. Prints one line per kernel:
    ptx-regs.py CACHE_DIR [COUNT]
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def find_ptxas():
    found = shutil.which("ptxas")
    if found:
        return found
    try:
        import triton  # noqa: F401 (only its directory is wanted)
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    return path if os.access(path, os.X_OK) else None


def main():
    cache, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    ptxas = find_ptxas()
    if not ptxas:
        print("ptx-regs: no ptxas here")
        return
    files = sorted(glob.glob(os.path.join(cache, "**", "*.bin"), recursive=True),
                   key=os.path.getmtime)[-count:]
    for path in files:
        with open(path, "rb") as f:
            ptx = f.read()[16:-32].rstrip(b"\0")
        if b".target" not in ptx:
            continue
        target = re.search(rb"\.target\s+(sm_\w+)", ptx).group(1).decode()
        with tempfile.NamedTemporaryFile(suffix=".ptx") as tmp:
            tmp.write(ptx)
            tmp.flush()
            run = subprocess.run([ptxas, "-arch=" + target, "-v", tmp.name, "-o", os.devnull],
                                 capture_output=True, text=True)
        lines = (run.stdout + run.stderr).splitlines()
        for line in lines:
            if "Used" in line or "spill" in line or "wgmma" in line:
                print("  ptxas:", line.split("info    :")[-1].strip())
        if run.returncode != 0:
            print("  ptxas failed:", *lines[:3], "; PTX begins", repr(ptx[:120]), sep="\n    ")


if __name__ == "__main__":
    main()
