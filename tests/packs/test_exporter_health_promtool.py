"""promtool unit tests of the exporter-health alerts against the production build, and proof
that they can fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infersight.config import parse_config
from tests.promtool_runner import promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "exporter_health.test.yaml"


def test_exporter_alerts_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("alert", "override"),
    [
        ("InfersightExporterDown", {"down": {"for": "3m"}}),
        ("InfersightExporterCollectionStale", {"stale": {"after": "8m"}}),
        ("InfersightExporterErrors", {"errors": {"for": "5m"}}),  # fires before 25m
        ("InfersightExporterErrors", {"errors": {"min_errors": 10}}),  # 10 errors in 10m no longer count
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path, alert: str, override: dict[str, Any]) -> None:
    result = promtool_test(TEST_FILE, tmp_path, parse_config({"exporters": {"alerts": override}}))
    assert result.returncode != 0
    assert alert in result.stdout + result.stderr
