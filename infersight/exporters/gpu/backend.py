"""The contract every GPU backend (dcgm, nvml, fake) fulfils."""

from __future__ import annotations

from typing import Protocol

from infersight.exporters.gpu.model import Snapshot


class BackendUnavailable(RuntimeError):
    """The backend cannot be used on this machine at all (e.g. its Python bindings are not installed)."""


class GpuBackend(Protocol):
    name: str  # the value of infersight_exporter_info{backend=...}

    def collect(self) -> Snapshot:
        """Read every GPU once. Driver trouble is returned as ``Snapshot.problems``, never raised:
        a lost GPU drops out of ``devices`` while the others keep reporting."""
        ...

    def close(self) -> None: ...
