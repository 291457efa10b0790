"""The DCGM backend against stand-in bindings shaped like DcgmReader, and backend selection."""

from __future__ import annotations

from collections.abc import Iterator

import pynvml
import pytest

from infersight.exporters.gpu import choose, dcgm
from infersight.exporters.gpu.backend import BackendUnavailable
from infersight.exporters.gpu.dcgm import DcgmBackend, DcgmModules
from infersight.exporters.gpu.fake import FakeBackend
from infersight.exporters.gpu.model import Kind
from infersight.exporters.gpu.nvml import NvmlBackend

from . import standins
from .standins import MIB, StandInDcgmReader, StandInGpu, StandInNvml

F = standins.dcgm_fields


@pytest.fixture
def modules() -> Iterator[DcgmModules]:
    StandInDcgmReader.engine_up = True
    StandInDcgmReader.raise_on_read = None
    StandInDcgmReader.instances = []
    StandInDcgmReader.values = {
        0: {F.DCGM_FI_DEV_FB_USED: 2048, F.DCGM_FI_DEV_POWER_USAGE: 512.5, F.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: 0.42},
        1: {F.DCGM_FI_DEV_FB_USED: 1024, F.DCGM_FI_DEV_XID_ERRORS: 79},
    }
    reader_module = type("M", (), {"DcgmReader": StandInDcgmReader})
    yield DcgmModules(reader_module, F, standins.dcgm_structs)  # type: ignore[arg-type]


def nvml_for_processes() -> NvmlBackend:
    return NvmlBackend(StandInNvml([StandInGpu("GPU-dcgm-0", processes=[(7, 100 * MIB)]), StandInGpu("GPU-dcgm-1")]))


def test_values_pass_through_in_dcgm_units_with_processes_from_nvml(modules: DcgmModules) -> None:
    backend = DcgmBackend(modules=modules, processes=nvml_for_processes(), interval_s=2)
    snap = backend.collect()
    assert snap.problems == ()
    d0, d1 = snap.devices
    assert (d0.uuid, d0.pci_bus_id, d0.device, d0.model_name) == (
        "GPU-dcgm-0",
        "00000000:07:00.0",
        "nvidia0",
        "NVIDIA H200",
    )
    assert d0.values == {
        "DCGM_FI_DEV_FB_USED": 2048,
        "DCGM_FI_DEV_POWER_USAGE": 512.5,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.42,
    }
    assert d1.values["DCGM_FI_DEV_XID_ERRORS"] == 79
    assert [(p.gpu_index, p.pid, p.used_bytes) for p in snap.processes] == [(0, 7, 100 * MIB)]
    reader = StandInDcgmReader.instances[0]
    assert reader.hostname is None  # embedded host engine by default
    assert reader.kwargs["updateFrequency"] == 2_000_000  # microseconds
    assert set(reader.field_ids) == set(vars(F).values())  # every served field is watched


def test_host_engine_down_is_reported_and_reconnected(modules: DcgmModules) -> None:
    StandInDcgmReader.engine_up = False
    backend = DcgmBackend(address="127.0.0.1:5555", modules=modules, processes=nvml_for_processes())
    snap = backend.collect()
    assert snap.devices == () and [(p.kind, p.fatal) for p in snap.problems] == [(Kind.DCGM_CONNECTION, True)]
    StandInDcgmReader.engine_up = True
    assert len(backend.collect().devices) == 2
    StandInDcgmReader.engine_up = False  # engine goes away mid-run
    assert [p.kind for p in backend.collect().problems] == [Kind.DCGM_CONNECTION]
    StandInDcgmReader.engine_up = True
    assert len(backend.collect().devices) == 2
    assert len(StandInDcgmReader.instances) == 3  # a fresh reader after each loss


@pytest.mark.parametrize(
    ("code", "kind"),
    [("DCGM_ST_GPU_IS_LOST", Kind.GPU_LOST), ("DCGM_ST_NO_PERMISSION", Kind.PERMISSION_DENIED)],
)
def test_dcgm_errors_become_problems(modules: DcgmModules, code: str, kind: str) -> None:
    StandInDcgmReader.raise_on_read = standins.DCGMError(getattr(standins.dcgm_structs, code))
    snap = DcgmBackend(modules=modules, processes=nvml_for_processes()).collect()
    assert snap.devices == () and [p.kind for p in snap.problems] == [kind]


def test_nvml_trouble_in_the_process_list_is_not_fatal(modules: DcgmModules) -> None:
    nvml = StandInNvml([StandInGpu("GPU-dcgm-0"), StandInGpu("GPU-dcgm-1")])
    nvml.init_error = pynvml.NVMLError_LibraryNotFound()
    snap = DcgmBackend(modules=modules, processes=NvmlBackend(nvml)).collect()
    assert len(snap.devices) == 2
    assert [(p.kind, p.fatal) for p in snap.problems] == [(Kind.NVML_NOT_FOUND, False)]


def test_dcgm_46_renames_are_used_only_where_the_unit_is_unchanged() -> None:
    from types import SimpleNamespace

    renamed = SimpleNamespace(DCGM_FI_DEV_GPU_UTIL_RATIO=1, DCGM_FI_PROF_TENSOR_UTIL_RATIO=2, DCGM_FI_DEV_XID_ERROR=3)
    assert dcgm._field_ids(renamed) == {  # type: ignore[arg-type]
        2: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",  # 0-1 before and after
        3: "DCGM_FI_DEV_XID_ERRORS",
    }  # GPU_UTIL_RATIO (0-1) is not served as the percent-valued DCGM_FI_DEV_GPU_UTIL


def test_without_bindings_dcgm_is_unavailable_with_a_hint() -> None:
    with pytest.raises(BackendUnavailable, match="datacenter-gpu-manager-4"):
        dcgm.import_dcgm()


def test_auto_falls_back_to_nvml_without_dcgm(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_bindings(**kw: object) -> None:
        raise BackendUnavailable("DCGM Python bindings are not importable")  # also where DCGM is installed

    monkeypatch.setattr(choose, "DcgmBackend", no_bindings)
    backend = choose.open_backend("auto")
    try:
        assert backend.name == "nvml"
    finally:
        backend.close()


def test_auto_prefers_dcgm_and_falls_back_when_its_engine_is_down(
    modules: DcgmModules, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choose, "DcgmBackend", lambda **kw: DcgmBackend(modules=modules, processes=None, **kw))
    assert choose.open_backend("auto").name == "dcgm"
    StandInDcgmReader.engine_up = False
    assert choose.open_backend("auto").name == "nvml"


def test_auto_without_any_backend_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(*a: object, **kw: object) -> None:
        raise BackendUnavailable("nvidia-ml-py missing")

    monkeypatch.setattr(choose, "NvmlBackend", unavailable)
    with pytest.raises(BackendUnavailable, match=r"no GPU backend available.*--backend fake --scenario steady"):
        choose.open_backend("auto")


def test_fake_needs_a_scenario_and_scenario_needs_fake() -> None:
    with pytest.raises(BackendUnavailable, match="needs --scenario"):
        choose.open_backend("fake")
    with pytest.raises(BackendUnavailable, match="only applies to --backend fake"):
        choose.open_backend("nvml", scenario="steady")
    assert isinstance(choose.open_backend("fake", scenario="steady"), FakeBackend)
    with pytest.raises(BackendUnavailable, match="choose one of auto, dcgm, nvml, fake"):
        choose.open_backend("rocm")
