"""Which backend to run: ``--backend auto`` prefers DCGM (profiling fields), then NVML.

What a node without a working GPU stack gets depends on what is missing:
- a driver that is not loaded yet, or a host engine that does not answer yet, is a node state: the
  exporter serves ``infersight_exporter_up`` 0 with the reason as ``errors_total{kind}`` and retries
  every interval (a DaemonSet pod on a node whose driver is still installing keeps telling Prometheus
  why, instead of crash-looping). With ``--backend auto`` a missing libnvidia-ml is such a state too.
- a backend asked for by name whose native library does not load (``--backend nvml`` without
  libnvidia-ml, ``--backend dcgm`` without libdcgm) is a deployment mistake: an error at start.
- no backend's Python bindings import at all: nothing to retry, so ``auto`` says what to install.
"""

from __future__ import annotations

import logging
from pathlib import Path

from infersight.exporters.gpu.backend import BackendUnavailable, GpuBackend
from infersight.exporters.gpu.dcgm import DcgmBackend
from infersight.exporters.gpu.fake import FakeBackend
from infersight.exporters.gpu.fake_control import LeakControl
from infersight.exporters.gpu.model import Kind
from infersight.exporters.gpu.nvml import NvmlBackend
from infersight.exporters.gpu.scenario import load_scenario

BACKENDS = ("auto", "dcgm", "nvml", "fake")
# The problem kind meaning "this backend's native library cannot be loaded", and what provides it.
_LIBRARY_MISSING = {
    "nvml": (Kind.NVML_NOT_FOUND, "libnvidia-ml.so (the NVIDIA driver, or the NVIDIA container runtime)"),
    "dcgm": (Kind.DCGM_NOT_FOUND, "libdcgm (datacenter-gpu-manager-4)"),
}
log = logging.getLogger(__name__)


def _dcgm_or_none(address: str | None, interval_s: float) -> tuple[GpuBackend | None, str]:
    try:
        backend = DcgmBackend(address=address, interval_s=interval_s)
    except BackendUnavailable as exc:
        return None, str(exc)
    # Bindings import without a host engine or libdcgm; only a first read tells whether DCGM works.
    problems = backend.collect().problems
    unusable = [p for p in problems if p.kind in (Kind.DCGM_CONNECTION, Kind.DCGM_NOT_FOUND)]
    if unusable:
        backend.close()
        return None, unusable[0].detail
    return backend, ""


def _loadable(backend: GpuBackend) -> GpuBackend:
    """``backend``, once a first read shows that its native library loads; the driver or host engine
    behind it may still be down (that is served as up=0 and retried)."""
    kind, provider = _LIBRARY_MISSING[backend.name]
    missing = [p for p in backend.collect().problems if p.kind == kind]
    if missing:
        backend.close()
        raise BackendUnavailable(
            f"--backend {backend.name}: {missing[0].detail}; install {provider}, or run --backend auto to serve "
            "infersight_exporter_up=0 with the reason until it appears"
        )
    return backend


def open_backend(
    name: str,
    *,
    scenario: str | None = None,
    dcgm_address: str | None = None,
    interval_s: float = 5.0,
    control_file: Path | None = None,
) -> GpuBackend:
    """Raises BackendUnavailable (with what to do) or ScenarioError (with what is wrong)."""
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if scenario is not None and name != "fake":
        raise BackendUnavailable("--scenario only applies to --backend fake")
    if control_file is not None and name != "fake":
        raise BackendUnavailable("--control-file only applies to --backend fake")
    if name == "fake":
        if scenario is None:
            raise BackendUnavailable("--backend fake needs --scenario NAME|FILE (e.g. steady, leak, gpu_lost)")
        control = LeakControl(control_file) if control_file is not None else None
        return FakeBackend(load_scenario(scenario), scenario_name=scenario, control=control)
    if name == "nvml":
        return _loadable(NvmlBackend())
    if name == "dcgm":
        return _loadable(DcgmBackend(address=dcgm_address, interval_s=interval_s))
    dcgm, why_not_dcgm = _dcgm_or_none(dcgm_address, interval_s)
    if dcgm is not None:
        return dcgm
    log.info("DCGM unavailable (%s); using NVML", why_not_dcgm)
    try:
        return NvmlBackend()
    except BackendUnavailable as exc:
        raise BackendUnavailable(
            f"no GPU backend available: neither DCGM's nor NVML's Python bindings load (DCGM: {why_not_dcgm}; "
            f"NVML: {exc}). On a machine without GPUs, run `--backend fake --scenario steady` to exercise the "
            "pipeline."
        ) from None
