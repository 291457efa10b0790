"""A bounded full-load burn on the GPU it is given: bf16 8192x8192 matrix products back to back for
SECONDS, then exit. It prints "ready" once its matrices are allocated, so a caller can start
measuring after the one-time allocation. An H200 runs at its power cap under it (SW power cap,
0x4, in every sample at about 690 W of 700 W: docs/results.md).

Run: python power_burn_child.py SECONDS   (at most 600)
"""

from __future__ import annotations

import sys
import time

import torch


def main() -> None:
    seconds = float(sys.argv[1])
    if not 0 < seconds <= 600:
        sys.exit(f"SECONDS must be in (0, 600], got {sys.argv[1]}")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
