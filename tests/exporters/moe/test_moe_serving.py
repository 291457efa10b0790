"""The per-process runtime: the sampler copies the buffers, the endpoint serves them, once per process."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator

import pytest
import torch
from prometheus_client.parser import text_string_to_metric_families

from infersight.exporters.moe import serving
from infersight.exporters.moe.counting import LayerCounter, LayerKey
from infersight.exporters.moe.settings import Settings
from infersight.exporters.moe.topology import RankInfo
from infersight.stack.ports import free_port
from infersight.stack.process import http_get, wait_until

RANK = RankInfo(rank=0, local_rank=0, tp_rank=0)


def settings(port: int, per_expert: bool = True) -> Settings:
    return Settings(enabled=True, base_port=port, interval_s=0.05, per_expert=per_expert)


@pytest.fixture(params=[True], ids=["per-expert"])
def runtime(request: pytest.FixtureRequest) -> Iterator[serving.Runtime]:
    rt = serving.Runtime(settings(free_port(), per_expert=request.param), RANK).start()
    try:
        yield rt
    finally:
        rt.stop()


def expert_tokens(url: str) -> dict[tuple[str, str], float]:
    status, body = http_get(url)
    assert status == 200
    return {
        (s.labels["layer"], s.labels["expert"]): s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
        if s.name == "infersight_moe_expert_tokens_total"
    }


def test_counts_reach_the_endpoint(runtime: serving.Runtime) -> None:
    counter = LayerCounter(4, 2, "cpu", 8)
    runtime.counters.register(LayerKey("m", "0"), counter)
    counter.add(torch.tensor([[0, 3], [3, 1]]))
    url = f"http://127.0.0.1:{runtime.port}/metrics"
    wait_until(lambda: expert_tokens(url).get(("0", "3")) == 2.0, timeout=10, what="counts on the endpoint")
    assert expert_tokens(url) == {("0", "0"): 1.0, ("0", "1"): 1.0, ("0", "2"): 0.0, ("0", "3"): 2.0}
    _, body = http_get(url)
    assert b'infersight_exporter_up{exporter="moe"} 1.0' in body
    assert b'backend="device-counter"' in body


def layer_gauges(url: str) -> dict[str, float]:
    _, body = http_get(url)
    return {
        s.name: s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
        if s.name.startswith("infersight_moe_layer_")
    }


def route_within_the_window(runtime: serving.Runtime) -> str:
    """Route 4 expert-token counts (1, 1, 0, 2) after a first reading; the endpoint's URL once
    the window holds them."""
    counter = LayerCounter(4, 2, "cpu", 8)
    runtime.counters.register(LayerKey("m", "0"), counter)
    url = f"http://127.0.0.1:{runtime.port}/metrics"
    wait_until(lambda: "infersight_moe_layer_window_tokens" in layer_gauges(url), timeout=10, what="a first reading")
    counter.add(torch.tensor([[0, 3], [3, 1]]))
    wait_until(
        lambda: layer_gauges(url).get("infersight_moe_layer_window_tokens") == 4.0, timeout=10, what="the window"
    )
    return url


def test_balance_over_the_window_reaches_the_endpoint(runtime: serving.Runtime) -> None:
    got = layer_gauges(route_within_the_window(runtime))
    assert got["infersight_moe_layer_dead_experts"] == 1.0
    assert got["infersight_moe_layer_max_share"] == 0.5
    assert got["infersight_moe_layer_share_variance"] == pytest.approx((0 + 0 + 0.25**2 + 0.25**2) / 4)
    assert 0 < got["infersight_moe_layer_window_seconds"] <= 300


@pytest.mark.parametrize("runtime", [False], ids=["no-per-expert"], indirect=True)
def test_per_expert_counters_switched_off_leave_the_layer_gauges(runtime: serving.Runtime) -> None:
    assert expert_tokens(route_within_the_window(runtime)) == {}


def test_port_in_use_is_logged_and_counting_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    # Attached directly: once vLLM is imported its "vllm" logger stops propagating to the root.
    logging.getLogger("vllm.infersight_moe").addHandler(caplog.handler)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rt = serving.Runtime(settings(port), RANK)
        try:
            with caplog.at_level("ERROR", logger="vllm.infersight_moe"):
                rt.start()  # does not raise
            assert rt.port is None
            assert "address already in use" in caplog.text
        finally:
            rt.stop()
            logging.getLogger("vllm.infersight_moe").removeHandler(caplog.handler)


def test_one_runtime_per_process_and_a_new_one_after_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[serving.Runtime] = []

    def fake_start(self: serving.Runtime) -> serving.Runtime:
        started.append(self)
        return self

    monkeypatch.setattr(serving.Runtime, "start", fake_start)
    monkeypatch.setattr(serving, "_runtime", None)
    first = serving.runtime(settings(1), RANK)
    assert serving.runtime(settings(2), RANK) is first
    assert serving.current() is first
    monkeypatch.setattr(os, "getpid", lambda: first.pid + 1)  # as seen from a forked child
    assert serving.current() is None
    child = serving.runtime(settings(1), RANK)
    assert child is not first and started == [first, child]
