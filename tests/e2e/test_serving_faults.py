"""Named fault tests for serving alerts whose condition only exists under a fault, with a
real Prometheus and Alertmanager. No vLLM is needed: the fault is its absence."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from infersight.alerts import serving as serving_alerts
from infersight.stack.observed import ObservedStack, validation_profile
from infersight.stack.ports import LOOPBACK, free_port

pytestmark = pytest.mark.e2e
CFG = validation_profile()


def test_metrics_absent_when_the_vllm_job_scrapes_something_else(tmp_path: Path) -> None:
    # A real exporter that answers /metrics with no vllm: series, standing where vLLM should be.
    registry = CollectorRegistry()
    Gauge("some_sidecar_up", "not vLLM", registry=registry).set(1)
    port = free_port()
    server, thread = start_http_server(port, addr=LOOPBACK, registry=registry)
    try:
        with ObservedStack(tmp_path, CFG, {"vllm": [f"{LOOPBACK}:{port}"]}) as stack:
            stack.prometheus.wait_for_targets_up(timeout=30)
            stack.prometheus.wait_until(
                lambda: serving_alerts.METRICS_ABSENT in stack.alertmanager.alert_names(),
                timeout=60,
                what=f"{serving_alerts.METRICS_ABSENT} in Alertmanager",
            )
            assert serving_alerts.TARGET_DOWN not in stack.firing()
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_no_targets_when_the_vllm_job_is_missing(tmp_path: Path) -> None:
    with ObservedStack(tmp_path, CFG, {"other": []}) as stack:
        stack.prometheus.wait_until(
            lambda: serving_alerts.NO_TARGETS in stack.alertmanager.alert_names(),
            timeout=60,
            what=f"{serving_alerts.NO_TARGETS} in Alertmanager",
        )
