from __future__ import annotations

import re

import pytest

from infersight import promql
from infersight.catalog import UnknownMetricError
from infersight.lint import metric_names


def test_renamed_metric_reads_both_names_new_first() -> None:
    expr = promql.rate("vllm:inter_token_latency_seconds", "5m", ['job="vllm"'], "_bucket")
    assert expr == (
        '(rate(vllm:inter_token_latency_seconds_bucket{job="vllm"}[5m]) or '
        'rate(vllm:time_per_output_token_seconds_bucket{job="vllm"}[5m]))'
    )
    assert promql.series("vllm:kv_cache_usage_perc") == "(vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)"


def test_unknown_metric_is_refused() -> None:
    with pytest.raises(UnknownMetricError, match="not in the metric catalog"):
        promql.rate("vllm:num_preemptions", "5m")  # the classic mistake: counters carry _total


def test_rate_of_a_gauge_is_refused() -> None:
    with pytest.raises(ValueError, match="gauge"):
        promql.rate("vllm:num_requests_running", "5m")


def test_le_matches_python_and_prometheus3_spellings() -> None:
    pattern = promql.le_value(1.0)
    assert re.fullmatch(pattern, "1.0") and re.fullmatch(pattern, "1")
    assert not re.fullmatch(pattern, "1x0")
    assert re.fullmatch(promql.le_value(2.5), "2.5") and not re.fullmatch(promql.le_value(2.5), "25")


def test_regex_values_are_escaped_and_quoted_for_promql() -> None:
    matcher = promql.label_matcher("model_name", "=~", promql.alternation(["meta-llama/Llama-3.1-8B", "a|b"]))
    # Parses, and the dot and pipe are literal.
    assert metric_names(f"up{{{matcher}}}") == {"up"}
    assert "\\\\." in matcher and "a\\\\|b" in matcher
