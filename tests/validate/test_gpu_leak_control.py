"""The fake GPU backend's runtime leak control (the hook behind gpu_leak_start/stop): growth at the
file's rate from when it is read, memory kept after a stop, bad files ignored."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from infersight.exporters.gpu.fake import FakeBackend
from infersight.exporters.gpu.fake_control import DEFAULT_LEAK_PID, LeakControl, LeakSetting, write_setting
from infersight.exporters.gpu.scenario import load_scenario


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def used(backend: FakeBackend, gpu: int = 0) -> float:
    return next(d.values["DCGM_FI_DEV_FB_USED"] for d in backend.collect().devices if d.index == gpu)


def setup(tmp_path: Path) -> tuple[FakeBackend, Clock, Path]:
    clock = Clock()
    control = tmp_path / "control.json"
    backend = FakeBackend(load_scenario("steady"), "steady", clock=clock, control=LeakControl(control, clock))
    return backend, clock, control


def test_no_file_no_leak(tmp_path: Path) -> None:
    backend, clock, _ = setup(tmp_path)
    before = used(backend)
    clock.t += 60
    assert used(backend) == before
    assert all(p.pid != DEFAULT_LEAK_PID for p in backend.collect().processes)


def test_leak_grows_at_the_rate_then_stays_after_a_stop(tmp_path: Path) -> None:
    backend, clock, control = setup(tmp_path)
    base0, base1 = used(backend, 0), used(backend, 1)
    write_setting(control, LeakSetting(gpu=0, mib_per_second=64))
    assert used(backend, 0) == base0  # read now; growth starts from here
    clock.t += 10
    assert used(backend, 0) == pytest.approx(base0 + 640)
    assert used(backend, 1) == base1  # the other GPU is untouched
    leak = next(p for p in backend.collect().processes if p.pid == DEFAULT_LEAK_PID)
    assert leak.gpu_index == 0 and leak.used_bytes == 640 * 1024 * 1024
    assert leak.identity is not None and leak.identity.process == "python3"
    write_setting(control, LeakSetting(gpu=0, mib_per_second=0))
    clock.t += 5  # growth continued at 64 MiB/s until the stop was read
    assert used(backend, 0) == pytest.approx(base0 + 960)
    clock.t += 100
    assert used(backend, 0) == pytest.approx(base0 + 960)  # a stopped leak keeps its memory


def test_a_bad_file_is_ignored_and_the_last_setting_kept(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    backend, clock, control = setup(tmp_path)
    base = used(backend)
    write_setting(control, LeakSetting(mib_per_second=10))
    used(backend)
    control.write_text('{"leak_mib_per_second": -5}')
    with caplog.at_level(logging.WARNING):
        clock.t += 10
        assert used(backend) == pytest.approx(base + 100)
        clock.t += 10
        assert used(backend) == pytest.approx(base + 200)
    assert "leak_mib_per_second must be a number >= 0" in caplog.text


def test_the_leak_stops_when_the_gpu_is_full(tmp_path: Path) -> None:
    backend, clock, control = setup(tmp_path)
    write_setting(control, LeakSetting(mib_per_second=100_000))
    used(backend)
    clock.t += 60
    device = next(d for d in backend.collect().devices if d.index == 0)
    assert device.values["DCGM_FI_DEV_FB_FREE"] == pytest.approx(0)
