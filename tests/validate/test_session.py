"""How long a scenario's companion load is allowed to run (pure arithmetic, no services)."""

from __future__ import annotations

from infersight.config import Config
from infersight.validate.apis import PrometheusApi
from infersight.validate.session import Monitoring, companion_duration
from tests.validate.timelines import traffic_stop


def test_the_companion_outlasts_the_load_and_the_watching_after_it() -> None:
    # CI failure this guards: the companion stopped when the stages ended, while the scenario was
    # still watched, and its model's own TrafficStop fired inside the window.
    sc = traffic_stop()  # 80 s of stages, max_duration 2m, the fire deadline at 40 s + 30 s
    mon = Monitoring(PrometheusApi("http://127.0.0.1:9"), None, Config(), 60.0, grace_s=3.0, action_timeout_s=30.0)
    # The load stops by max_duration at the latest; watching goes on for the actions and the grace.
    assert companion_duration(sc, mon).total_seconds >= 120 + 30 + 3
    mon.action_timeout_s = 330.0
    assert companion_duration(sc, mon).total_seconds >= 120 + 330 + 3
