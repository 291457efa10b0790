"""promtool unit tests of the KV-cache alerts against the production build, and proof that
they can fail: a wrong for: or threshold breaks them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infersight.config import parse_config
from tests.promtool_runner import promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "kv_cache.test.yaml"
CONNECTORS_TEST_FILE = Path(__file__).parent / "promtool" / "kv_connectors.test.yaml"


def test_kv_cache_alerts_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_kv_connector_recordings_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(CONNECTORS_TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("alert", "override"),
    [
        ("InfersightVLLMKVCacheSaturated", {"saturation": {"for": "1m"}}),
        ("InfersightVLLMPreemptionsSustained", {"preemptions": {"per_second": 0.01}}),  # the trickle fires too
        ("InfersightVLLMPreemptionsSustained", {"preemptions": {"for": "5m"}}),  # a shorter for: than production
        ("InfersightVLLMQueueBuildUp", {"queue_build_up": {"for": "20m"}}),
        ("InfersightVLLMPrefixCacheHitCollapse", {"prefix_collapse": {"min_baseline_ratio": 0.05}}),
        ("InfersightVLLMKVCacheThrash", {"thrash": {"preemptions_per_second": 1.0}}),
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path, alert: str, override: dict[str, Any]) -> None:
    cfg = parse_config({"kv_cache": {"alerts": override}})
    result = promtool_test(TEST_FILE, tmp_path, cfg)
    assert result.returncode != 0
    assert alert in result.stdout + result.stderr
