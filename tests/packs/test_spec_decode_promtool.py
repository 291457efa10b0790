"""promtool unit tests of the speculative-decoding rules and the acceptance-collapse alert against
the production build, and proof that they can fail: a changed threshold or for: breaks them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infersight.config import parse_config
from tests.promtool_runner import promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "spec_decode.test.yaml"


def test_spec_decode_rules_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "override",
    [
        {"for": "5m"},  # fires before the 148m case allows
        {"min_baseline_ratio": 0.05},  # the 8% baseline of 10.0.0.2 now counts
        {"min_draft_tokens_per_second": 0.1},  # the trickling 10.0.0.4 now counts
        {"drop_fraction": 0.9},  # 10% is not under a tenth of 60%
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path, override: dict[str, Any]) -> None:
    cfg = parse_config({"spec_decode": {"alerts": {"acceptance_collapse": override}}})
    result = promtool_test(TEST_FILE, tmp_path, cfg)
    assert result.returncode != 0
    assert "InfersightVLLMDraftAcceptanceCollapse" in result.stdout + result.stderr
