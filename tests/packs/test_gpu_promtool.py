"""promtool unit tests of the GPU alerts against the production build, and proof that they can
fail: each guard, threshold or for: that a case depends on, changed, breaks that case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infersight.config import parse_config
from infersight.recording_rules import gpu as gpu_rules
from tests.promtool_runner import only_case, promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "gpu.test.yaml"


def test_gpu_alerts_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("broken_case", "override"),
    [
        # for: shorter than the test expects: the leak fires before 80m
        ("leak fires on steady growth under flat load", {"alerts": {"memory_leak": {"for": "35m"}}}),
        # the old threshold (150 MiB per 10m, strictly above): the design documents' leak is missed
        (
            "leak fires on steady growth under flat load",
            {"alerts": {"memory_leak": {"growth_mib": 150, "window": "10m", "for": "30m"}}},
        ),
        # without the warm-up guard a slow warm-up creep reads as a leak
        ("not a leak during vLLM warm-up with a slow allocation creep", {"warmup": "1m"}),
        # a restart's dip and re-allocation lift the trend for less than for:, not for none of it
        ("not a leak when the engine restarts and re-allocates slowly", {"alerts": {"memory_leak": {"for": "35m"}}}),
        # tolerances so loose that rising load counts as flat
        ("not a leak while the engine's KV-cache usage rises", {"alerts": {"memory_leak": {"kv_usage_rise": 0.5}}}),
        ("not a leak while the engine's request rate rises", {"alerts": {"memory_leak": {"request_rate_rise": 10}}}),
        ("predicted OOM fires when free memory trends to zero", {"alerts": {"predicted_oom": {"within": "2h"}}}),
        ("XID error fires on a new code", {"alerts": {"xid": {"window": "5m"}}}),
        ("ECC double-bit errors", {"alerts": {"ecc_double_bit": {"for": "10m"}}}),
        # an error seen only on the new pod's series no longer counts at 125m
        ("an XID or a double-bit error that takes the pod down", {"alerts": {"ecc_double_bit": {"window": "30m"}}}),
        ("throttling for thermal reasons and for a power cap", {"alerts": {"throttling": {"power_ratio": 1.0}}}),
        # a limit of 500 of 700 W (71 %) no longer counts as lowered below 70 %
        (
            "throttling for thermal reasons and for a power cap",
            {"alerts": {"throttling": {"lowered_limit_ratio": 0.7}}},
        ),
        # 15 % of evaluations no longer crosses a 20 % threshold; at 5 % the 10 % GPU fires too
        ("the throttling share counts evaluations", {"alerts": {"throttling": {"thermal_ratio": 0.2}}}),
        ("the throttling share counts evaluations", {"alerts": {"throttling": {"thermal_ratio": 0.05}}}),
        ("temperature above the threshold", {"alerts": {"temperature": {"celsius": 90}}}),
        ("bandwidth saturation fires only together", {"alerts": {"bandwidth_kv_thrash": {"mem_copy_ratio": 0.96}}}),
        ("idle GPU while requests wait", {"alerts": {"idle_with_queue": {"min_waiting": 20}}}),
        ("dcgm-exporter target down", {"alerts": {"telemetry_down": {"for": "10m"}}}),
        ("lost GPU fires while its exporter answers", {"alerts": {"lost": {"for": "5m"}}}),
        ("lost GPU fires while its exporter answers", {"alerts": {"lost": {"window": "3m"}}}),
        ("field missing fires for a GPU without ECC", {"alerts": {"field_missing": {"for": "20m"}}}),
        # a list without the ECC counters no longer sees them missing
        (
            "field missing fires for a GPU without ECC",
            {"alerts": {"field_missing": {"fields": ["DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"]}}},
        ),
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path, broken_case: str, override: dict[str, Any]) -> None:
    result = promtool_test(
        only_case(TEST_FILE, broken_case, tmp_path), tmp_path / "bundle", parse_config({"gpu": override})
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"name: {broken_case}" in output, output[-3000:]


def test_the_unit_tests_catch_a_join_that_misses_a_host_spelling(tmp_path: Path) -> None:
    # Only the released exporter's label: GPUs from dcgm-exporter's main branch lose Hostname and their key.
    cfg = parse_config({"gpu": {"join": {"gpu_host_labels": ["Hostname"]}}})
    result = promtool_test(
        only_case(TEST_FILE, "every GPU gets Hostname and engines a join key", tmp_path), tmp_path / "bundle", cfg
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'expr: "node:dcgm_gpus:count"' in output


def test_the_unit_tests_catch_a_throttle_bit_read_as_the_wrong_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HW power brake (0x80) read as a power cap: the 0x80 and 0xA0 GPUs get the wrong reason.
    monkeypatch.setattr(gpu_rules, "THROTTLE_BITS", {"thermal": (3, 5, 6), "power_cap": (2, 7)})
    case = "every throttling bit maps to its reason"
    result = promtool_test(only_case(TEST_FILE, case, tmp_path), tmp_path / "bundle")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'expr: "gpu:dcgm_clock_throttle:active"' in output, output[-3000:]
