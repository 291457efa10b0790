"""promtool unit tests of the serving alerts, against the production build. A changed rule runs only
the case it must break: the whole file takes over 20 s a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.alerts import serving as serving_alerts
from infersight.config import parse_config
from tests.promtool_runner import only_case, promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "serving.test.yaml"


def test_serving_alerts_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_tests_catch_a_wrong_for(tmp_path: Path) -> None:
    # Proof the file can fail: with for: 1m the target-down alert fires too early.
    cfg = parse_config({"alerts": {"serving": {"target_down": {"for": "1m"}}}})
    result = promtool_test(only_case(TEST_FILE, "target down fires only after for 5m", tmp_path), tmp_path / "b", cfg)
    assert result.returncode != 0
    assert "InfersightVLLMTargetDown" in result.stdout + result.stderr


def test_the_unit_tests_catch_a_wrong_objective(tmp_path: Path) -> None:
    cfg = parse_config({"slo": {"availability": {"objective": 0.9}}})
    result = promtool_test(only_case(TEST_FILE, "availability burn pages and tickets", tmp_path), tmp_path / "b", cfg)
    assert result.returncode != 0
    assert "InfersightVLLMAvailabilityBudgetBurn" in result.stdout + result.stderr


def test_the_unit_tests_catch_a_hung_engine_alert_that_fires_early(tmp_path: Path) -> None:
    cfg = parse_config({"alerts": {"serving": {"hung_engine": {"for": "1m"}}}})
    result = promtool_test(
        only_case(TEST_FILE, "hung engine pages after window and for", tmp_path), tmp_path / "b", cfg
    )
    assert result.returncode != 0
    assert serving_alerts.HUNG_ENGINE in result.stdout + result.stderr


def test_the_unit_tests_catch_a_traffic_stop_alert_that_fires_on_a_decline(tmp_path: Path) -> None:
    # Firing below 80% of the hourly average pages on the daily decline (30% per half hour).
    cfg = parse_config({"alerts": {"serving": {"traffic_stop": {"drop_fraction": 0.2}}}})
    case = only_case(TEST_FILE, "traffic stop stays quiet on a gradual decline", tmp_path)
    result = promtool_test(case, tmp_path / "b", cfg)
    assert result.returncode != 0
    assert "gradual decline" in result.stdout + result.stderr


OUTLIER_FILE = Path(__file__).parent / "promtool" / "outlier.test.yaml"


def test_the_unit_tests_catch_an_engine_unhealthy_alert_that_waits_too_long(tmp_path: Path) -> None:
    cfg = parse_config({"alerts": {"serving": {"engine_unhealthy": {"for": "2m"}}}})
    case = only_case(TEST_FILE, "an engine rank reporting unhealthy", tmp_path)
    result = promtool_test(case, tmp_path / "b", cfg)
    assert result.returncode != 0
    assert serving_alerts.ENGINE_UNHEALTHY in result.stdout + result.stderr


def test_outlier_replica_passes_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(OUTLIER_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_replica_that_completes_in_bursts_is_still_judged(tmp_path: Path) -> None:
    # Failed before the alert judged replicas by the requests they start: got nothing at 40m.
    result = promtool_test(OUTLIER_FILE.with_name("outlier_bursty.test.yaml"), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("override", "broken_case"),
    [
        ({"factor": 1.2}, "outlier stays quiet on the normal spread"),  # the healthy spread reads as an outlier
        ({"min_ttft_seconds": 0.1}, "outlier stays quiet under the floor"),  # a fast model's small gap pages
        ({"min_requests_per_second": 0.01}, "outlier stays quiet on a replica with too little"),  # 1-2 requests judge
        ({"for": "5m"}, "outlier fires on TTFT p99"),  # fires before its for:
    ],
)
def test_the_outlier_cases_catch_a_changed_rule(override: dict[str, object], broken_case: str, tmp_path: Path) -> None:
    cfg = parse_config({"alerts": {"serving": {"outlier_replica": override}}})
    result = promtool_test(only_case(OUTLIER_FILE, broken_case, tmp_path), tmp_path / "bundle", cfg)
    assert result.returncode != 0
    assert broken_case in result.stdout + result.stderr


def test_fewer_than_three_replicas_stay_quiet_even_at_a_low_factor(tmp_path: Path) -> None:
    # At factor 2 two replicas can never alert (the slow one would exceed their sum); at 1.2 the
    # slow one does, unless the min-replicas guard holds.
    cfg = parse_config({"alerts": {"serving": {"outlier_replica": {"factor": 1.2}}}})
    case = only_case(OUTLIER_FILE, "outlier stays quiet with fewer than three replicas", tmp_path)
    result = promtool_test(case, tmp_path / "bundle", cfg)
    assert result.returncode == 0, result.stdout + result.stderr


def test_lora_adapter_counts_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(Path(__file__).parent / "promtool" / "lora.test.yaml", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
