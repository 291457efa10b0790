"""Faults and bad input for ``infersight exporter gpu``: an interval the sampler cannot sleep, a
sampler thread that dies, and a node without a GPU driver (stand-in bindings: there is no GPU here).

The health contract under test: ``infersight_exporter_up`` is 1 only while the sampler thread runs
and its last collection succeeded; every way of not having readings reads 0, with the reason in
``infersight_exporter_errors_total{kind}``."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pynvml
import pytest
from prometheus_client.parser import text_string_to_metric_families

from infersight.cli import main, make_parser
from infersight.exporters.common.health import ExporterHealth
from infersight.exporters.common.sampler import BackgroundSampler
from infersight.exporters.gpu import choose
from infersight.exporters.gpu.backend import BackendUnavailable
from infersight.exporters.gpu.dcgm import DcgmBackend, DcgmModules
from infersight.exporters.gpu.exporter import GpuExporter, GpuExporterOptions
from infersight.exporters.gpu.fake import FakeBackend
from infersight.exporters.gpu.model import Kind, Snapshot
from infersight.exporters.gpu.nvml import NvmlBackend
from infersight.exporters.gpu.scenario import load_scenario
from infersight.stack.process import wait_until

from . import standins
from .standins import StandInDcgmReader, StandInGpu, StandInNvml

THOUSAND_YEARS_S = 1000 * 365 * 86400.0


def scrape(exporter: GpuExporter) -> dict[str, float]:
    """``name{kind}`` -> value for the exporter's own health series, read over HTTP."""
    conn = http.client.HTTPConnection("127.0.0.1", exporter.server.port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        assert resp.status == 200
        text = resp.read().decode()
    finally:
        conn.close()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith("infersight_exporter_"):
                out[s.name + (f"{{{s.labels['kind']}}}" if "kind" in s.labels else "")] = s.value
    return out


@pytest.fixture
def exporters() -> Iterator[list[GpuExporter]]:
    started: list[GpuExporter] = []
    yield started
    for exporter in started:
        exporter.stop()


def start(started: list[GpuExporter], backend: object, interval_s: float = 0.05) -> GpuExporter:
    options = GpuExporterOptions(port=0, interval_s=interval_s, hostname="h", proc_root=None)
    exporter = GpuExporter(backend, options)  # type: ignore[arg-type]
    started.append(exporter)
    return exporter.start()


# --- item 15: the sampling interval and a dead sampler --------------------------------------------
@pytest.mark.parametrize("interval", ["1000y", "293y", "2h"])
def test_an_interval_beyond_one_hour_is_a_one_line_cli_error(capsys: pytest.CaptureFixture[str], interval: str) -> None:
    with pytest.raises(SystemExit) as info:  # parse only: a bad interval accepted would run forever
        make_parser().parse_args(["exporter", "gpu", "--interval", interval])
    assert info.value.code == 2
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]  # after argparse's usage
    assert "--interval" in line and interval in line and "the sampling interval must be 100ms to 1h" in line


@pytest.mark.parametrize("interval", ["100ms", "1h"])
def test_the_interval_bounds_themselves_are_allowed(interval: str) -> None:
    assert str(make_parser().parse_args(["exporter", "gpu", "--interval", interval]).interval) == interval


def test_the_sampler_refuses_an_interval_it_cannot_sleep() -> None:
    health = ExporterHealth("gpu", "fake")
    with pytest.raises(ValueError, match="sampling interval"):
        BackgroundSampler("gpu", lambda: (None, []), THOUSAND_YEARS_S, health)
    with pytest.raises(ValueError, match="sampling interval"):
        BackgroundSampler("gpu", lambda: (None, []), float("nan"), health)


class _Killed(BaseException):
    """Escapes the sampler's ``except Exception`` the way an interpreter-level failure would."""


class _DyingBackend(FakeBackend):
    def __init__(self) -> None:
        super().__init__(load_scenario("steady"), scenario_name="steady")
        self.die = threading.Event()

    def collect(self) -> Snapshot:
        if self.die.is_set():
            raise _Killed("sampler thread killed")
        return super().collect()


def test_a_dead_sampler_thread_reads_down(exporters: list[GpuExporter]) -> None:
    backend = _DyingBackend()
    exporter = start(exporters, backend)
    wait_until(lambda: scrape(exporter)["infersight_exporter_up"] == 1.0, 10, "up=1", interval=0.05)
    backend.die.set()
    wait_until(lambda: not exporter.sampler.running, 10, "the sampler thread to end", interval=0.05)
    health = scrape(exporter)
    assert health["infersight_exporter_up"] == 0.0
    assert health["infersight_exporter_errors_total{internal}"] >= 1.0


def test_a_sampler_whose_sleep_fails_reads_down(exporters: list[GpuExporter], monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``--interval 1000y`` did: ``Event.wait`` raised OverflowError after the first sample."""
    exporter = GpuExporter(
        FakeBackend(load_scenario("steady"), scenario_name="steady"),
        GpuExporterOptions(port=0, interval_s=0.05, hostname="h", proc_root=None),
    )
    exporters.append(exporter)

    def overflow(timeout: float | None = None) -> bool:
        raise OverflowError("timeout value is too large")

    monkeypatch.setattr(exporter.sampler._stop, "wait", overflow)
    exporter.start()
    wait_until(lambda: not exporter.sampler.running, 10, "the sampler thread to end", interval=0.05)
    assert exporter.sampler.samples_taken == 1
    assert scrape(exporter)["infersight_exporter_up"] == 0.0


# --- item 16: no GPU driver on the node -----------------------------------------------------------
def nvml_without(error: Exception) -> StandInNvml:
    nvml = StandInNvml([StandInGpu("GPU-0")])
    nvml.init_error = error
    return nvml


@pytest.fixture
def no_dcgm(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(**kw: object) -> None:
        raise BackendUnavailable("DCGM Python bindings are not importable")

    monkeypatch.setattr(choose, "DcgmBackend", unavailable)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (pynvml.NVMLError_LibraryNotFound(), Kind.NVML_NOT_FOUND),
        (pynvml.NVMLError_DriverNotLoaded(), "driver_not_loaded"),
    ],
    ids=["no-libnvidia-ml", "driver-not-loaded"],
)
def test_auto_without_a_driver_serves_down_with_the_reason_and_recovers(
    exporters: list[GpuExporter], monkeypatch: pytest.MonkeyPatch, no_dcgm: None, error: Exception, kind: str
) -> None:
    """A DaemonSet pod on a node whose driver is not ready yet: serve up=0 and say why, so Prometheus
    can alert, rather than exit into a crash loop; pick the GPUs up when the driver arrives."""
    nvml = nvml_without(error)
    monkeypatch.setattr(choose, "NvmlBackend", lambda: NvmlBackend(nvml))
    backend = choose.open_backend("auto")
    exporter = start(exporters, backend)
    wait_until(lambda: scrape(exporter).get(f"infersight_exporter_errors_total{{{kind}}}", 0) >= 1, 10, kind)
    assert scrape(exporter)["infersight_exporter_up"] == 0.0
    nvml.init_error = None  # the driver arrives
    wait_until(lambda: scrape(exporter)["infersight_exporter_up"] == 1.0, 10, "up=1 once the driver loads")


def test_explicit_nvml_without_libnvidia_ml_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asked for NVML by name where its library cannot load: a deployment mistake, said at start."""
    monkeypatch.setattr(choose, "NvmlBackend", lambda: NvmlBackend(nvml_without(pynvml.NVMLError_LibraryNotFound())))
    monkeypatch.setattr(GpuExporter, "run_until_signalled", GpuExporter.stop)  # never block if it starts
    assert main(["exporter", "gpu", "--backend", "nvml", "--port", "0"]) == 2
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert line.startswith("infersight exporter gpu: --backend nvml:") and "Traceback" not in err
    assert "libnvidia-ml" in line and "--backend auto" in line


def test_explicit_nvml_with_the_driver_not_loaded_yet_serves_down(
    exporters: list[GpuExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library is there, the kernel module is not yet: a node state, not a mistake."""
    nvml = nvml_without(pynvml.NVMLError_DriverNotLoaded())
    monkeypatch.setattr(choose, "NvmlBackend", lambda: NvmlBackend(nvml))
    exporter = start(exporters, choose.open_backend("nvml"))
    wait_until(lambda: scrape(exporter).get("infersight_exporter_errors_total{driver_not_loaded}", 0) >= 1, 10, "kind")
    assert scrape(exporter)["infersight_exporter_up"] == 0.0


@pytest.fixture
def dcgm_modules() -> Iterator[DcgmModules]:
    StandInDcgmReader.engine_up = True
    StandInDcgmReader.raise_on_read = None
    StandInDcgmReader.values = {0: {standins.dcgm_fields.DCGM_FI_DEV_FB_USED: 1024}}
    yield DcgmModules(
        type("M", (), {"DcgmReader": StandInDcgmReader}),  # type: ignore[arg-type]
        standins.dcgm_fields,  # type: ignore[arg-type]
        standins.dcgm_structs,  # type: ignore[arg-type]
    )
    StandInDcgmReader.raise_on_read = None
    StandInDcgmReader.engine_up = True


def test_explicit_dcgm_without_libdcgm_is_an_error_and_with_its_engine_down_serves_down(
    dcgm_modules: DcgmModules, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choose, "DcgmBackend", lambda **kw: DcgmBackend(modules=dcgm_modules, processes=None, **kw))
    StandInDcgmReader.raise_on_read = standins.DCGMError(standins.dcgm_structs.DCGM_ST_LIBRARY_NOT_FOUND)
    with pytest.raises(BackendUnavailable, match=r"^--backend dcgm: .*--backend auto"):
        choose.open_backend("dcgm")
    StandInDcgmReader.raise_on_read = None
    StandInDcgmReader.engine_up = False  # nv-hostengine not up yet: retried every interval
    backend = choose.open_backend("dcgm")
    assert [p.kind for p in backend.collect().problems] == [Kind.DCGM_CONNECTION]
    backend.close()


def test_auto_without_any_gpu_bindings_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, no_dcgm: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one case auto exits: no backend's Python bindings import, which no retry can fix."""

    def not_installed() -> None:
        raise BackendUnavailable("the NVML backend needs nvidia-ml-py: pip install 'infersight[gpu]'")

    monkeypatch.setattr(choose, "NvmlBackend", not_installed)
    monkeypatch.setattr(GpuExporter, "run_until_signalled", GpuExporter.stop)
    assert main(["exporter", "gpu", "--port", "0"]) == 2
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert line.startswith("infersight exporter gpu: no GPU backend available:")
    assert "nvidia-ml-py" in line and "--backend fake --scenario steady" in line
