"""Copying the counters from the device to the host, off the model's path.

The background sampler (about once a second) copies every layer buffer into one pinned host
tensor on a side stream of its own and waits for that stream only, so a read never joins or
stalls the stream the model runs on. On CPU it is a plain copy.

A CUDA-graph capture in "global" mode (vLLM's) fails if any other thread makes a synchronising
CUDA call meanwhile. ``DEVICE_GATE`` is a lock the reader holds for its CUDA calls and vLLM's
capture (wrapped in ``hooks``) holds for the whole capture, so the two never overlap.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from infersight.exporters.moe.counting import LayerCounter, LayerKey

DEVICE_GATE = threading.Lock()


class HostReader:
    """Reads a set of layer buffers; keeps its pinned host memory and side stream between reads."""

    def __init__(self) -> None:
        self._host: torch.Tensor | None = None
        self._stream: Any = None  # torch.cuda.Stream, created lazily under the gate

    def read(self, counters: dict[LayerKey, LayerCounter]) -> dict[LayerKey, list[int]]:
        if not counters:
            return {}
        keys = list(counters)
        buffers = [counters[k].counts for k in keys]
        width = max(b.shape[0] for b in buffers)
        device = buffers[0].device
        with DEVICE_GATE:
            if device.type == "cuda":
                # A new thread starts on device 0; without this, a worker on GPU 3 would open a
                # CUDA context (hundreds of MB) on GPU 0 for its pinned buffer.
                torch.cuda.set_device(device)
            host = self._host_buffer(len(buffers), width, device)
            if device.type == "cuda":
                self._copy_cuda(host, buffers)
            else:
                for row, buf in enumerate(buffers):
                    host[row, : buf.shape[0]].copy_(buf)
            rows = host.tolist()
        return {k: rows[i][: buffers[i].shape[0]] for i, k in enumerate(keys)}

    def _host_buffer(self, rows: int, width: int, device: torch.device) -> torch.Tensor:
        host = self._host
        if host is None or host.shape[0] < rows or host.shape[1] < width:
            pin = device.type == "cuda"
            host = torch.zeros((rows, width), dtype=torch.int64, pin_memory=pin)
            self._host = host
        return host[:rows, :width]

    def _copy_cuda(self, host: torch.Tensor, buffers: list[torch.Tensor]) -> None:
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=buffers[0].device)
        with torch.cuda.stream(self._stream):
            for row, buf in enumerate(buffers):
                host[row, : buf.shape[0]].copy_(buf, non_blocking=True)
        self._stream.synchronize()
