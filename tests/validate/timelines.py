"""Synthetic scenarios and alert timelines for the validator's unit tests (no services)."""

from __future__ import annotations

from typing import Any

from infersight.loadgen.scenario import Scenario, parse_scenario
from infersight.validate.evaluator import RunWindow
from infersight.validate.timeline import ActionOutcome, AlertInterval

T0 = 1_700_000_000.0  # the scenario's start, Unix time
TTFT_BURN = "InfersightVLLMTTFTBudgetBurn"
TARGET_DOWN = "InfersightVLLMTargetDown"
LEAK = "InfersightGPUMemoryLeak"
INSTANCE = "127.0.0.1:8000"
MODEL = "tiny-moe"


def overload(**expect: Any) -> Scenario:
    """20 s baseline, 40 s overload (the fault), 20 s recovery; TTFT burn expected within 30 s."""
    data: dict[str, Any] = {
        "name": "overload",
        "limits": {"max_duration": "2m", "max_requests": 10_000},
        "stages": [
            {"name": "baseline", "duration": "20s", "rate": 1},
            {"name": "overload", "duration": "40s", "rate": 10, "fault": "overload"},
            {"name": "recovery", "duration": "20s", "rate": 1},
        ],
        "expect": expect
        or {
            "fire": [{"alert": TTFT_BURN, "within": "30s"}],
            "quiet": [{"component": "serving", "during": ["baseline"]}, {"component": "gpu"}],
        },
    }
    return parse_scenario(data)


def target_down() -> Scenario:
    return parse_scenario(
        {
            "name": "target_down",
            "limits": {"max_duration": "2m", "max_requests": 10_000},
            "stages": [{"name": "traffic", "duration": "60s", "rate": 1}],
            "actions": [{"name": "down", "at": "20s", "do": "target_down"}],
            "expect": {"fire": [{"alert": TARGET_DOWN, "within": "20s", "after": "down"}]},
        }
    )


HUNG = "InfersightVLLMHungEngine"


def hung_engine() -> Scenario:
    """Traffic for 80 s; the engine frozen at 20 s and thawed at 50 s."""
    return parse_scenario(
        {
            "name": "hung_engine",
            "limits": {"max_duration": "2m", "max_requests": 10_000},
            "stages": [{"name": "traffic", "duration": "80s", "rate": 1}],
            "actions": [
                {"name": "freeze", "at": "20s", "do": "engine_pause"},
                {"name": "thaw", "at": "50s", "do": "engine_resume"},
            ],
            "expect": {
                "fire": [{"alert": HUNG, "within": "30s", "after": "freeze"}],
                "resolve": [{"alert": HUNG, "within": "20s", "after": "thaw"}],
            },
        }
    )


STOP = "InfersightVLLMTrafficStop"
COMPANION_MODEL = "tiny-moe-companion"


def traffic_stop() -> Scenario:
    """40 s of traffic, then 40 s with none (the fault); the companion's model must stay quiet."""
    return parse_scenario(
        {
            "name": "traffic_stop",
            "limits": {"max_duration": "2m", "max_requests": 10_000},
            "companion": {"rate": 1},
            "stages": [
                {"name": "traffic", "duration": "40s", "rate": 2},
                {"name": "stopped", "duration": "40s", "idle": True, "fault": "traffic_stop"},
            ],
            "expect": {
                "fire": [{"alert": STOP, "within": "30s"}],
                "quiet": [{"alert": STOP, "of": "companion"}],
            },
        }
    )


OUTLIER = "InfersightVLLMOutlierReplica"
PEERS = ("127.0.0.1:8001", "127.0.0.1:8002")


def outlier_replica() -> Scenario:
    """One replica and two peers with the same load for 80 s; the replica throttled from 30 s to 60 s."""
    return parse_scenario(
        {
            "name": "outlier_replica",
            "limits": {"max_duration": "2m", "max_requests": 10_000},
            "peers": 2,
            "stages": [
                {"name": "healthy", "duration": "30s", "rate": 1},
                {"name": "throttled", "duration": "50s", "rate": 1},
            ],
            "actions": [
                {"name": "throttle", "at": "30s", "do": "engine_throttle", "stopped_share": 0.9},
                {"name": "let_go", "at": "60s", "do": "engine_unthrottle"},
            ],
            "expect": {
                "fire": [{"alert": OUTLIER, "within": "30s", "after": "throttle"}],
                "quiet": [{"alert": OUTLIER, "during": ["healthy"]}, {"alert": OUTLIER, "of": "peers"}],
            },
        }
    )


def healthy() -> Scenario:
    return parse_scenario(
        {
            "name": "healthy",
            "limits": {"max_duration": "2m", "max_requests": 10_000},
            "stages": [{"name": "steady", "duration": "60s", "rate": 1}],
            "expect": {"quiet": [{"component": "serving"}, {"component": "kv_cache"}]},
        }
    )


def window(scenario: Scenario, extra_s: float = 5.0) -> RunWindow:
    load_end = T0 + scenario.scheduled_duration.total_seconds
    return RunWindow.of(scenario, T0, load_end, load_end + extra_s)


def alert(
    name: str,
    pending: float,
    firing: float | None,
    resolved: float | None = None,
    to_alertmanager: float | None = 0.5,
    component: str = "serving",
    **labels: str,
) -> AlertInterval:
    """Offsets in seconds from T0; Alertmanager has it ``to_alertmanager`` s after it fires (None: never)."""
    received_at = None if firing is None or to_alertmanager is None else firing + to_alertmanager
    all_labels = {"alertname": name, "severity": "critical", "component": component, **labels}
    return AlertInterval(
        name,
        all_labels,
        T0 + pending,
        None if firing is None else T0 + firing,
        None if received_at is None else T0 + received_at,
        None if resolved is None else T0 + resolved,
    )


def action(name: str, kind: str, at: float, status: str = "done", detail: str = "") -> ActionOutcome:
    started = T0 + at if status != "skipped" else None
    return ActionOutcome(name, kind, T0 + at, status, started, started, detail)  # type: ignore[arg-type]
