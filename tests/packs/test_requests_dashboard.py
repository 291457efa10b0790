"""The requests dashboard's queries that depend on the SLO config (no services)."""

from __future__ import annotations

from infersight.config import parse_config
from infersight.dashboards.requests import tpot_attainment


def test_tpot_attainment_follows_the_itl_thresholds_and_overrides_even_with_the_itl_slo_off() -> None:
    for enabled in (True, False):
        cfg = parse_config(
            {
                "slo": {
                    "itl": {"enabled": enabled, "threshold_seconds": 0.2},
                    "overrides": {"big-model": {"itl_threshold_seconds": 0.5}},
                }
            }
        )
        expr = tpot_attainment(cfg)
        parts = expr.split("\nor\n")
        assert len(parts) == 2, expr
        default, big = parts
        assert 'model_name!~"big-model"' in default and 'le=~"0\\\\.2"' in default, default
        assert 'model_name="big-model"' in big and 'le=~"0\\\\.5"' in big, big
        assert all("vllm:request_time_per_output_token_seconds_count" in p and "> 0" in p for p in parts)
