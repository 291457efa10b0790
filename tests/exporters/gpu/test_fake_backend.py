"""The fake backend's scenarios (bundled and hand-written) and scenario-file errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.exporters.gpu.fake import FakeBackend, fake_uuid
from infersight.exporters.gpu.model import DEVICE_FIELDS, Kind
from infersight.exporters.gpu.scenario import ScenarioError, bundled_names, load_scenario, parse_scenario


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def backend(name: str) -> tuple[FakeBackend, Clock]:
    clock = Clock()
    return FakeBackend(load_scenario(name), name, clock=clock), clock


def fb_used(b: FakeBackend, gpu: int) -> float:
    return next(d.values["DCGM_FI_DEV_FB_USED"] for d in b.collect().devices if d.index == gpu)


def test_bundled_scenarios() -> None:
    assert set(bundled_names()) >= {"steady", "leak", "restart", "xid", "gpu_lost"}
    for name in bundled_names():
        snap = backend(name)[0].collect()
        assert snap.devices and snap.problems == ()
        assert all(set(d.values) <= set(DEVICE_FIELDS) for d in snap.devices)


def test_steady_is_constant_and_consistent() -> None:
    b, clock = backend("steady")
    first = b.collect()
    clock.t = 300
    assert b.collect() == first
    d0 = first.devices[0]
    total = d0.values["DCGM_FI_DEV_FB_USED"] + d0.values["DCGM_FI_DEV_FB_FREE"] + d0.values["DCGM_FI_DEV_FB_RESERVED"]
    assert total == 81559
    assert d0.values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == 0.71
    assert [p.identity.model_name for p in first.processes if p.identity] == ["llama-3-8b", "qwen3-moe"]
    assert d0.uuid == fake_uuid(0) and d0.model_name.endswith("(fake)")


def test_leak_grows_on_one_gpu_until_full() -> None:
    b, clock = backend("leak")
    start0, start1 = fb_used(b, 0), fb_used(b, 1)
    clock.t = 100
    assert fb_used(b, 0) == start0 + 6400 and fb_used(b, 1) == start1
    proc = next(p for p in b.collect().processes if p.pid == 4201)
    assert proc.used_bytes == (16000 + 6400) * 1024 * 1024
    clock.t = 10_000  # long past full
    d0 = next(d for d in b.collect().devices if d.index == 0)
    assert d0.values["DCGM_FI_DEV_FB_FREE"] == 0
    assert d0.values["DCGM_FI_DEV_FB_USED"] == 81559 - 512


def test_restart_changes_pid_and_loops() -> None:
    b, clock = backend("restart")
    assert [p.pid for p in b.collect().processes] == [4301]
    clock.t = 22
    assert b.collect().processes == () and fb_used(b, 0) == 400
    clock.t = 27
    (p,) = b.collect().processes
    assert p.pid == 4302 and p.used_bytes == 2 * 4096 * 1024 * 1024
    clock.t = 59
    assert next(iter(b.collect().processes)).used_bytes == 40000 * 1024 * 1024  # capped at max_mib
    clock.t = 61  # loop_after 60s
    assert [p.pid for p in b.collect().processes] == [4301]


def test_xid_values_persist() -> None:
    b, clock = backend("xid")
    xids = lambda: {d.index: d.values["DCGM_FI_DEV_XID_ERRORS"] for d in b.collect().devices}  # noqa: E731
    assert xids() == {0: 0, 1: 0}
    clock.t = 10
    assert xids() == {0: 13, 1: 0}
    clock.t = 25
    assert xids() == {0: 13, 1: 31}
    assert b.collect().problems == ()


def test_gpu_lost_then_driver_gone_then_back() -> None:
    b, clock = backend("gpu_lost")
    clock.t = 16
    snap = b.collect()
    assert [(p.kind, p.fatal) for p in snap.problems] == [(Kind.GPU_LOST, True)]
    lost = next(d for d in snap.devices if d.index == 1)
    assert lost.values == {"DCGM_FI_DEV_XID_ERRORS": 79}
    assert [p.pid for p in snap.processes] == [4501]
    clock.t = 125
    snap = b.collect()
    assert snap.devices == () and [p.kind for p in snap.problems] == [Kind.NVML_NOT_FOUND]
    clock.t = 140
    assert [p.kind for p in b.collect().problems] == [Kind.GPU_LOST]  # the GPU is still gone


def test_gpu_recovered() -> None:
    data = {
        "gpus": [{"count": 1}],
        "events": [{"at": "1s", "kind": "gpu_lost", "gpu": 0}, {"at": "2s", "kind": "gpu_recovered", "gpu": 0}],
    }
    clock = Clock()
    b = FakeBackend(parse_scenario(data, "t"), clock=clock)
    clock.t = 1.5
    assert b.collect().devices == ()
    clock.t = 2.5
    assert len(b.collect().devices) == 1


def test_set_event_overrides_a_field_from_then_on() -> None:
    data = {
        "gpus": [{"count": 2}],
        "events": [{"at": "5s", "kind": "set", "gpu": 1, "field": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "value": 3}],
    }
    clock = Clock()
    b = FakeBackend(parse_scenario(data, "t"), clock=clock)
    dbe = lambda: [d.values["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] for d in b.collect().devices]  # noqa: E731
    assert dbe() == [0, 0]
    clock.t = 6
    assert dbe() == [0, 3]


@pytest.mark.parametrize(
    ("data", "path", "says"),
    [
        ({"gpus": []}, "gpus", "at least 1"),
        ({"gpus": [{"count": 1, "colour": "red"}]}, "gpus.0.colour", "unknown key"),
        ({"gpus": [{}], "processes": [{"pid": 5, "gpu": 3, "memory_mib": 1}]}, "processes.0.gpu", "0-0"),
        ({"gpus": [{}], "events": [{"at": "1s", "kind": "boom"}]}, "events.0.kind", "'xid'"),
        ({"gpus": [{}], "events": [{"at": "1s", "kind": "xid", "gpu": 0}]}, "events.0.xid", "<code> belongs to"),
        ({"gpus": [{}], "events": [{"at": "1s", "kind": "gpu_lost"}]}, "events.0", "needs gpu"),
        ({"gpus": [{}], "events": [{"at": "soon", "kind": "driver_unavailable"}]}, "events.0.at", "duration"),
        (
            {"gpus": [{}], "processes": [{"pid": 5, "gpu": 0, "memory_mib": 1}, {"pid": 5, "gpu": 0, "memory_mib": 1}]},
            "processes.1.pid",
            "appears twice",
        ),
        (
            {"gpus": [{}], "processes": [{"pid": 5, "gpu": 0, "memory_mib": 1, "start": "5s", "stop": "2s"}]},
            "processes.0",
            "must come after start",
        ),
        ({"gpus": [{"memory_total_mib": 100, "reserved_mib": 200}]}, "gpus.0", "exceed memory_total_mib"),
        ({"gpus": [{"gpu_util": 150}]}, "gpus.0.gpu_util", "less than or equal to 100"),
        (
            {"gpus": [{}], "events": [{"at": "1s", "kind": "set", "gpu": 0, "field": "DCGM_FI_DEV_FB_USED"}]},
            "events.0.field",
            "value: <number>",
        ),
        (
            {"gpus": [{}], "events": [{"at": "1s", "kind": "set", "gpu": 0, "field": "DCGM_FI_NOPE", "value": 1}]},
            "events.0",
            "not served by this exporter",
        ),
    ],
)
def test_scenario_errors_name_the_field(data: dict, path: str, says: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "my.yaml")
    problems = dict(info.value.problems)
    assert path in problems, problems
    assert says in problems[path]
    assert "my.yaml" in str(info.value)


def test_unknown_bundled_name_lists_the_bundled_ones() -> None:
    with pytest.raises(ScenarioError, match="bundled: gpu_lost, leak, restart, steady, xid"):
        load_scenario("leaky")


def test_scenario_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(str(tmp_path / "nope.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpus: [\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(str(bad))
    bad.write_text("- a list\n")
    with pytest.raises(ScenarioError, match="must be a mapping"):
        load_scenario(str(bad))


@pytest.mark.parametrize("number", ['"1e400"', '"Infinity"', '"-inf"', '"NaN"'])
def test_numbers_written_as_strings_must_be_finite(tmp_path: Path, number: str) -> None:
    # pydantic reads these strings as floats past any lower bound; a YAML .inf is caught by the reader
    path = tmp_path / "gpus.yaml"
    path.write_text(f"gpus: [{{model: x, count: 1, power_w: {number}}}]\nprocesses: []\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert [p for p, _ in info.value.problems] == ["gpus.0.power_w"]
    assert "finite" in str(info.value)
