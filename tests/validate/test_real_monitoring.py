"""The watcher and the monitoring-health readings against a real Prometheus (the time-scaled
bundle) and Alertmanager, with a vLLM target that is down from the start: no vLLM is needed, and
InfersightVLLMTargetDown goes pending, fires and reaches Alertmanager within seconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from infersight.alerts import serving as serving_alerts
from infersight.config import Config
from infersight.stack.observed import ObservedStack, validation_profile
from infersight.stack.ports import LOOPBACK, free_port
from infersight.validate import monitoring_health
from infersight.validate.apis import AlertmanagerApi, PrometheusApi
from infersight.validate.local_stack import validation_intervals
from infersight.validate.watcher import AlertWatcher

pytestmark = pytest.mark.e2e

CFG = validation_profile(validation_intervals(Config()))


def test_watcher_sees_a_real_alert_through_pending_firing_and_alertmanager(tmp_path: Path) -> None:
    dead = f"{LOOPBACK}:{free_port()}"  # nothing listens there
    with ObservedStack(tmp_path, CFG, {"vllm": [dead]}) as stack:
        prom = PrometheusApi(stack.prometheus.url)
        before = monitoring_health.rule_iterations(stack.prometheus.url)
        start = time.time()
        watcher = AlertWatcher(prom, AlertmanagerApi(stack.alertmanager.url), poll_s=0.25).start()
        try:
            stack.prometheus.wait_until(
                lambda: any(
                    i.name == serving_alerts.TARGET_DOWN and i.received_at is not None for i in watcher.intervals()
                ),
                timeout=60,
                what=f"{serving_alerts.TARGET_DOWN} seen firing and in Alertmanager",
            )
        finally:
            watcher.stop()
        end = time.time()
        after = monitoring_health.rule_iterations(stack.prometheus.url)
        failed, scrapes = monitoring_health.failed_scrapes(prom, start, end)
        scrape_s, evaluation_s = prom.scrape_interval_s(dead), prom.evaluation_interval_s(serving_alerts.TARGET_DOWN)
        unknown = prom.evaluation_interval_s("NoSuchAlert")
    (down,) = [i for i in watcher.intervals() if i.name == serving_alerts.TARGET_DOWN]
    assert down.labels["instance"] == dead and down.severity == "critical"
    assert down.firing_at is not None and down.received_at is not None
    # for: 5m at time scale 60 is 5 s; Prometheus's own activeAt is when pending began.
    assert down.firing_at - down.pending_at >= 5
    assert down.received_at >= down.firing_at and down.resolved_at is None
    assert watcher.errors == [] and watcher.polls > 10
    assert before is not None and after is not None and (after - before).total > 0
    assert failed["vllm"] == scrapes["vllm"] > 3  # every scrape of the dead target failed
    # What the companion-stall check reads: 1m scrape and evaluation at time scale 60.
    assert (scrape_s, evaluation_s, unknown) == (1.0, 1.0, None)
