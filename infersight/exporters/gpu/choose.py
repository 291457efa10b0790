"""Which backend to run: ``--backend auto`` prefers DCGM (profiling fields), then NVML, else an error
that says how to get either (or to run the fake one on purpose)."""

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
        return NvmlBackend()
    if name == "dcgm":
        return DcgmBackend(address=dcgm_address, interval_s=interval_s)
    dcgm, why_not_dcgm = _dcgm_or_none(dcgm_address, interval_s)
    if dcgm is not None:
        return dcgm
    log.info("DCGM unavailable (%s); using NVML", why_not_dcgm)
    try:
        return NvmlBackend()
    except BackendUnavailable as exc:
        raise BackendUnavailable(
            f"no GPU backend available. DCGM: {why_not_dcgm}. NVML: {exc}. "
            "On a machine without GPUs, run `--backend fake --scenario steady` to exercise the pipeline."
        ) from None
