"""promtool unit tests of the MoE alerts (built with tiny-moe configured as MoE), and proof
that they can fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infersight.config import parse_config
from tests.promtool_runner import promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "moe.test.yaml"
MOE_MODELS = {"moe": {"models": ["tiny-moe"]}}


def test_moe_alerts_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path, parse_config(MOE_MODELS))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("alert", "override"),
    [
        ("InfersightMoEExpertImbalance", {"alerts": {"imbalance": {"variance_threshold": 0.05}}}),
        ("InfersightMoEExpertImbalance", {"min_expected_tokens_per_expert": 1.0}),  # the idle layer fires too
        ("InfersightMoEExpertImbalance", {"min_expected_tokens_per_expert": 200.0}),  # thin ranks together: silent
        ("InfersightMoEDeadExpert", {"alerts": {"dead_expert": {"for": "5m"}}}),
        ("InfersightMoEExpertLoadAbsent", {"models": []}),  # no MoE model configured: no absent alert at all
        ("InfersightMoEExpertLoadAbsent", {"models": ["tiny-moe", "tiny-dense"]}),  # the dense model fires
        ("InfersightMoEExpertLoadAbsent", {"window": "1m"}),  # the 3-scrape gap outlasts the window
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path, alert: str, override: dict[str, Any]) -> None:
    cfg = parse_config({"moe": {**MOE_MODELS["moe"], **override}})
    result = promtool_test(TEST_FILE, tmp_path, cfg)
    assert result.returncode != 0
    assert alert in result.stdout + result.stderr
