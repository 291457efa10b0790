"""A deliberate GPU memory leak, one step per line on stdin: allocate (and touch) --step-mib of CUDA
memory, keep it, answer "allocated". Uses torch.cuda when available, else the CUDA driver API via
ctypes. Its file name contains "vllm" and it takes --served-model-name so the exporter's /proc
attribution treats it like a vLLM worker (model_name label) without needing vLLM on the GPU host.

Run: python vllm_like_leak_child.py --served-model-name NAME --step-mib 256
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable


def _arg(name: str) -> str:
    return sys.argv[sys.argv.index(name) + 1]


def torch_allocator(step: int) -> Callable[[], None] | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.zeros(1, device="cuda")  # create the context now, so each step adds only its allocation
    kept = []

    def alloc() -> None:
        t = torch.empty(step, dtype=torch.uint8, device="cuda")
        t.fill_(1)
        torch.cuda.synchronize()
        kept.append(t)

    return alloc


def driver_allocator(step: int) -> Callable[[], None]:
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(result: int, what: str) -> None:
        if result != 0:
            sys.exit(f"{what} failed with CUresult {result}")

    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    kept = []

    def alloc() -> None:
        ptr = ctypes.c_uint64()
        check(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(step)), "cuMemAlloc_v2")
        check(cuda.cuMemsetD8_v2(ptr, ctypes.c_ubyte(1), ctypes.c_size_t(step)), "cuMemsetD8_v2")
        check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
        kept.append(ptr)

    return alloc


def main() -> None:
    step = int(_arg("--step-mib")) * 1024 * 1024
    alloc = torch_allocator(step) or driver_allocator(step)
    print("ready", flush=True)
    for _line in sys.stdin:
        alloc()
        print("allocated", flush=True)


if __name__ == "__main__":
    main()
