"""promtool unit tests of the MoE alerts (built with tiny-moe configured as MoE), and proof
that they can fail."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.config import Config, parse_config
from infersight.exporters.moe.balance import balance
from infersight.exporters.moe.counting import LayerKey
from infersight.lint import substitute
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


# --- many thin ranks, routed by chance -----------------------------------------------------------
# Each rank's share variance is the exporter's own figure (exporters/moe/balance.py) over expert
# ids drawn at random, top-k without repeats: a rank with few tokens shows a large variance by
# chance alone, however evenly its router spreads them.
THIN_RANKS = 100
THIN_TOKENS = 4  # per rank: 400 expert-token counts together, 100 per expert at 4 experts (judged)
THIN_EXPERTS, THIN_TOP_K = 4, 1
EVEN = (0.25, 0.25, 0.25, 0.25)
SKEWED = (0.6, *[0.4 / 3] * 3)  # share variance 0.041, above the 0.0225 threshold by more than the noise


def _routed(rng: random.Random, tokens: int, weights: tuple[float, ...], top_k: int) -> list[int]:
    counts = [0] * len(weights)
    for _ in range(tokens):
        chosen: set[int] = set()
        while len(chosen) < top_k:
            chosen.add(rng.choices(range(len(weights)), weights)[0])
        for expert in chosen:
            counts[expert] += 1
    return counts


def _rank_gauges(labels: str, counts: list[int], top_k: int, values: str = "{v!r}x30") -> list[dict[str, str]]:
    """One rank's gauges for layer 0 over a 300 s window, as the exporter computes them; ``values``
    spells a gauge's samples in promtool's notation around its value ``v``."""
    figures = balance(LayerKey("tiny-moe", "0"), 300.0, [0] * len(counts), counts)
    return [
        {"series": f"infersight_moe_layer_{name}{{{labels}}}", "values": values.format(v=value)}
        for name, value in (
            ("experts", len(counts)),
            ("top_k", top_k),
            ("window_seconds", figures.span_s),
            ("window_tokens", figures.tokens),
            ("share_variance", figures.share_variance),
            ("max_share", figures.max_share),
            ("dead_experts", figures.dead_experts),
        )
    ]


FIRING_IMBALANCE = "ALERTS{alertname='InfersightMoEExpertImbalance', alertstate='firing'}"


def _imbalance_case(
    name: str, series: list[dict[str, str]], firing: list[dict[str, str]], interval: str = "1m"
) -> dict[str, Any]:
    """A promtool file checking which imbalance alerts fire at 20m, by their labels."""
    return {
        "rule_files": ["recording_rules/moe.yaml", "alerts/moe.yaml"],
        "evaluation_interval": "30s",
        "tests": [
            {
                "name": name,
                "interval": interval,
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": f"group without (alertstate) ({FIRING_IMBALANCE})",
                        "eval_time": "20m",
                        "exp_samples": [
                            {"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "value": 1}
                            for labels in firing
                        ],
                    }
                ],
            }
        ],
    }


def _run_case(tmp_path: Path, case: dict[str, Any], cfg: Config) -> None:
    test_file = tmp_path / "case" / "moe_generated.test.yaml"
    test_file.parent.mkdir()
    test_file.write_text(yaml.safe_dump(case, sort_keys=False))
    result = promtool_test(test_file, tmp_path / "bundle", cfg)
    assert result.returncode == 0, result.stdout + result.stderr


LAYER_0_ALERT = {
    "alertname": "InfersightMoEExpertImbalance",
    "component": "moe",
    "job": "infersight-moe",
    "layer": "0",
    "model_name": "tiny-moe",
    "severity": "warning",
}


def _thin_pod(rank: int) -> str:
    """A one-rank replica of its own: too thin to judge alone."""
    return (
        f'job="infersight-moe", namespace="llm", pod="moe-{rank}", instance="10.0.{rank}.1:9400", '
        'model_name="tiny-moe", layer="0", rank="0"'
    )


@pytest.mark.parametrize(("weights", "fires"), [(EVEN, False), (SKEWED, True)], ids=["even", "skewed"])
def test_many_thin_ranks_fire_on_skew_not_on_chance(tmp_path: Path, weights: tuple[float, ...], fires: bool) -> None:
    """A large, nearly idle fleet whose every rank routes evenly must stay quiet; the same ranks
    with one hot expert fire. Each rank is a pod of its own, too thin to judge alone: the job's
    ranks are also judged together."""
    rng = random.Random(7)
    series = [
        gauge
        for rank in range(THIN_RANKS)
        for gauge in _rank_gauges(_thin_pod(rank), _routed(rng, THIN_TOKENS, weights, THIN_TOP_K), THIN_TOP_K)
    ]
    case = _imbalance_case(f"{THIN_RANKS} thin ranks routing {weights}", series, [LAYER_0_ALERT] if fires else [])
    _run_case(tmp_path, case, parse_config(MOE_MODELS))


# --- one skewed replica among even ones ---------------------------------------------------------
EVEN_COUNTS = [1000] * 8
HOT_COUNTS = [5500, *[643] * 7]  # share variance 0.0258: a hot expert on this replica alone


def _replicas_case(replicas: int) -> list[dict[str, str]]:
    """``replicas`` pods of two ranks each, the first pod's ranks routing with one hot expert."""
    return [
        gauge
        for pod in range(replicas)
        for rank in range(2)
        for gauge in _rank_gauges(
            f'job="infersight-moe", namespace="llm", pod="moe-{pod}", instance="10.0.{pod}.1:940{rank}", '
            f'model_name="tiny-moe", layer="0", rank="{rank}"',
            HOT_COUNTS if pod == 0 else EVEN_COUNTS,
            2,
        )
    ]


@pytest.mark.parametrize(
    ("replica_labels", "firing"),
    [
        (None, [LAYER_0_ALERT]),  # the default: namespace and pod
        ([], []),  # pooled under the job: the hot replica is one of six
    ],
    ids=["per-pod", "pooled"],
)
def test_one_skewed_replica_among_even_ones_fires(
    tmp_path: Path, replica_labels: list[str] | None, firing: list[dict[str, str]]
) -> None:
    """Replicas are judged apart (moe.replica_labels) and the alert reads the worst: pooled with
    five even peers, one pod's hot expert is diluted below the threshold."""
    moe = {**MOE_MODELS["moe"], **({} if replica_labels is None else {"replica_labels": replica_labels})}
    cfg = parse_config({"moe": moe})
    case = _imbalance_case("one hot replica of six", _replicas_case(6), firing)
    # The dashboard's Most uneven replicas panel, as built, names the hot pod alone above the threshold.
    board = json.loads(bundle_files.render(bundle.build(cfg))["dashboards/vllm-moe.json"])
    panel = next(p for p in board["panels"] if p["title"] == "Most uneven replicas")
    over = f"count by (pod) (({substitute(panel['targets'][0]['expr'])}) > 0.0225)"
    hot = [{"labels": '{pod="moe-0"}', "value": 1}] if firing else []
    case["tests"][0]["promql_expr_test"].append({"expr": over, "eval_time": "20m", "exp_samples": hot})
    _run_case(tmp_path, case, cfg)


def _at_seconds(samples: list[tuple[int, str]]) -> str:
    """promtool values at 1 s steps: each (second, value) in order, nothing in between."""
    out, last = [], -1
    for second, value in samples:
        gap = second - last - 1
        out += [f"_x{gap}"] if gap > 0 else []
        out.append(value)
        last = second
    return " ".join(out)


def test_an_exporter_scraped_every_minute_keeps_the_alert_through_a_failed_scrape(tmp_path: Path) -> None:
    """A 60 s PodMonitor on the exporter, one failed scrape (stale markers) and the next one 2 s
    late: the figure is missing for three evaluations. The alert reads its highest value over at
    least 3m, so it fires after its for: instead of restarting it (over 3 x 15 s it would not)."""
    times = [29 + 60 * i for i in range(10)], 629, [691 + 60 * i for i in range(19)]
    every_minute = _at_seconds(
        [(t, "{v!r}") for t in times[0]] + [(times[1], "stale")] + [(t, "{v!r}") for t in times[2]]
    )
    series = [
        gauge
        for rank in range(2)
        for gauge in _rank_gauges(
            f'job="infersight-moe", instance="10.0.0.1:940{rank}", model_name="tiny-moe", layer="0", rank="{rank}"',
            HOT_COUNTS,
            2,
            every_minute,
        )
    ]
    case = _imbalance_case("a hot expert, scraped every minute", series, [LAYER_0_ALERT], interval="1s")
    _run_case(tmp_path, case, parse_config(MOE_MODELS))


def test_thin_ranks_are_judged_without_bias(tmp_path: Path) -> None:
    """A rank of n counts shows, on average, its router's variance times (1 - k/n) plus the chance
    term (each expert's count is binomial). Ranks whose gauges are exactly that average, for a true
    variance of 0.03, must read 0.03 and fire; weighting by n instead of n - k reads 0.0225,
    exactly the threshold, and stays silent."""
    n, k, experts, true_variance = 4, 1, 4, 0.03
    chance = (1 - k / experts) / (experts * n)
    seen = true_variance * (1 - k / n) + chance
    series = [
        {"series": f"infersight_moe_layer_{name}{{{_thin_pod(rank)}}}", "values": f"{value!r}x30"}
        for rank in range(THIN_RANKS)
        for name, value in (
            ("experts", experts),
            ("top_k", k),
            ("window_seconds", 300.0),
            ("window_tokens", n),
            ("share_variance", seen),
        )
    ]
    _run_case(
        tmp_path,
        _imbalance_case("thin ranks at their expected variance", series, [LAYER_0_ALERT]),
        parse_config(MOE_MODELS),
    )


def test_a_rank_going_idle_does_not_restart_the_alert(tmp_path: Path) -> None:
    """A rank that routes nothing for a window sends its tokens as 0 and no share figures (stale
    markers). It must drop out, not turn its replica's figure into NaN (which would restart the
    alert's for: on every idle spell)."""
    busy = _rank_gauges(
        'job="infersight-moe", instance="10.0.0.1:9400", model_name="tiny-moe", layer="0", rank="0"', HOT_COUNTS, 2
    )
    idle_from_10m = [
        {**g, "values": g["values"].replace("x30", "x10 " + ("0x20" if "window_tokens" in g["series"] else "stale"))}
        if any(n in g["series"] for n in ("window_tokens", "share_variance", "max_share", "dead_experts"))
        else g
        for g in _rank_gauges(
            'job="infersight-moe", instance="10.0.0.1:9401", model_name="tiny-moe", layer="0", rank="1"', HOT_COUNTS, 2
        )
    ]
    case = _imbalance_case("one of two hot ranks idle from 10m", busy + idle_from_10m, [LAYER_0_ALERT])
    _run_case(tmp_path, case, parse_config(MOE_MODELS))
