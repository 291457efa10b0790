"""The bundle's alertmanager.yml in a real Alertmanager on loopback: real alerts go in through
its API, and its API says which are inhibited."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from infersight.alerts import gpu as gpu_alerts
from infersight.alerts import kv_cache as kv_alerts
from infersight.alerts import moe as moe_alerts
from infersight.alerts import serving as serving_alerts
from infersight.deploy import alertmanager
from infersight.stack.alertmanager import Alertmanager
from infersight.stack.process import ServiceError, wait_until
from tests import written

pytestmark = pytest.mark.e2e

TTFT_BURN = serving_alerts.burn_alert_name("ttft")


@pytest.fixture(scope="module")
def am(tmp_path_factory: pytest.TempPathFactory, built: dict[str, str]) -> Iterator[Alertmanager]:
    with Alertmanager(tmp_path_factory.mktemp("am"), config_yaml=built[alertmanager.PATH]) as server:
        yield server


def labels(built: dict[str, str], name: str, severity: str | None = None, **extra: str) -> dict[str, str]:
    """The labels the bundle's rule gives alert ``name``, plus those its expression carries."""
    rule = next(r for r in written.alerts(built) if r["alert"] == name and severity in (None, r["labels"]["severity"]))
    return {"alertname": name, **rule["labels"], **extra}


# (case, labels, expected state); every case is posted together, as a storm would arrive.
def cases(built: dict[str, str]) -> list[tuple[str, dict[str, str], str]]:
    engine_a = {"job": "vllm", "instance": "a:8000", "model_name": "m", "engine": "0"}
    pod9 = {"namespace": "llm", "pod": "vllm-9"}
    return [
        ("target down", labels(built, serving_alerts.TARGET_DOWN, job="vllm", instance="a:8000"), "active"),
        ("KV alert of the down target", labels(built, kv_alerts.SATURATED, **engine_a), "suppressed"),
        (
            "KV alert of another target",
            labels(built, kv_alerts.SATURATED, **(engine_a | {"instance": "b:8000"})),
            "active",
        ),
        (
            "model-level burn (page)",
            labels(built, TTFT_BURN, "critical", job="vllm", model_name="m", slo="ttft"),
            "active",
        ),
        (
            "model-level burn (ticket) under its page",
            labels(built, TTFT_BURN, "warning", job="vllm", model_name="m", slo="ttft"),
            "suppressed",
        ),
        (
            "target down in a pod",
            labels(built, serving_alerts.TARGET_DOWN, job="vllm", instance="10.0.0.9:8000", **pod9),
            "active",
        ),
        (
            "MoE alert from the same pod's exporter port",
            labels(
                built,
                moe_alerts.IMBALANCE,
                job="infersight-moe",
                instance="10.0.0.9:9836",
                model_name="m",
                layer="3",
                **pod9,
            ),
            "suppressed",
        ),
        (
            "XID on the GPU of pod vllm-0",
            labels(built, gpu_alerts.XID, gpu="0", Hostname="n1", namespace="llm", pod="vllm-0"),
            "active",
        ),
        (
            "preemptions of pod vllm-0",
            labels(
                built,
                kv_alerts.PREEMPTIONS,
                job="vllm",
                instance="10.0.0.1:8000",
                model_name="m",
                namespace="llm",
                pod="vllm-0",
            ),
            "suppressed",
        ),
        (
            "preemptions of pod vllm-1",
            labels(
                built,
                kv_alerts.PREEMPTIONS,
                job="vllm",
                instance="10.0.0.2:8000",
                model_name="m",
                namespace="llm",
                pod="vllm-1",
            ),
            "active",
        ),
        (
            "lost GPU of pod vllm-5",
            labels(built, gpu_alerts.LOST, gpu="2", Hostname="n3", job="dcgm-exporter", namespace="llm", pod="vllm-5"),
            "active",
        ),
        (
            "KV alert of pod vllm-5",
            labels(
                built, kv_alerts.SATURATED, **(engine_a | {"instance": "10.0.0.5:8000"}), namespace="llm", pod="vllm-5"
            ),
            "suppressed",
        ),
        # Without pod labels an XID must not mute anything: equal on absent labels would be true.
        ("XID outside Kubernetes", labels(built, gpu_alerts.XID, gpu="1", Hostname="n2"), "active"),
        (
            "engine alert outside Kubernetes",
            labels(built, kv_alerts.PREEMPTIONS, job="vllm", instance="c:8000", model_name="m"),
            "active",
        ),
    ]


def _post(am: Alertmanager, label_sets: list[dict[str, str]]) -> None:
    now = dt.datetime.now(dt.UTC)
    am.post_alerts(
        [
            {"labels": ls, "startsAt": now.isoformat(), "endsAt": (now + dt.timedelta(hours=1)).isoformat()}
            for ls in label_sets
        ]
    )


def _states(am: Alertmanager, label_sets: list[dict[str, str]]) -> list[str]:
    held: dict[tuple[tuple[str, str], ...], Any] = {
        tuple(sorted(a["labels"].items())): a["status"]["state"] for a in am.alerts()
    }
    return [held.get(tuple(sorted(ls.items())), "missing") for ls in label_sets]


def test_inhibitions_in_a_real_alertmanager(am: Alertmanager, built: dict[str, str]) -> None:
    table = cases(built)
    label_sets = [ls for _, ls, _ in table]
    expected = [state for _, _, state in table]
    _post(am, label_sets)
    # Inhibition sources are indexed asynchronously: let the states settle, then compare.
    with contextlib.suppress(ServiceError):
        wait_until(lambda: _states(am, label_sets) == expected, 30, "the inhibitions to settle", interval=0.3)
    got = dict(zip([case for case, _, _ in table], _states(am, label_sets), strict=True))
    assert got == dict(zip([case for case, _, _ in table], expected, strict=True))
    by_labels = {tuple(sorted(a["labels"].items())): a for a in am.alerts()}
    down, kv = (by_labels[tuple(sorted(label_sets[i].items()))] for i in (0, 1))
    assert kv["status"]["inhibitedBy"] == [down["fingerprint"]]


def test_config_file_is_the_one_served(am: Alertmanager) -> None:
    status = am._get("/api/v2/status")
    assert "inhibit_rules" in status["config"]["original"]
    assert "infersight-page" in status["config"]["original"]
