"""What the report plots and compares, read back from Prometheus after each scenario: the
bundle's recording rules over time (load, queue, TTFT/ITL p95, KV usage, preemptions, and the
fake GPU's memory and MoE imbalance where present), and the server's own TTFT quantiles over
the scenario's requests, to set beside the client's."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from infersight import conventions, promql
from infersight.config import Config
from infersight.durations import Duration
from infersight.recording_rules import gpu as gpu_rules
from infersight.recording_rules import moe as moe_rules
from infersight.recording_rules import serving as serving_rules
from infersight.validate.apis import ApiError, PrometheusApi

TTFT = "vllm:time_to_first_token_seconds"
CLIENT_QUANTILES = (0.5, 0.9, 0.95, 0.99)
Points = list[tuple[float, float]]


@dataclass(frozen=True)
class Line:
    label: str
    expr: str


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    lines: tuple[Line, ...]
    optional: bool = False  # drawn only when it has data (GPU, MoE)
    log_scale: bool = False


@dataclass
class PanelData:
    panel: Panel
    lines: dict[str, Points] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not any(self.lines.values())


def panels(cfg: Config, instance: str | None) -> list[Panel]:
    """The panels of one scenario's plot; serving series are those of the target ``instance``."""
    match = [promql.label_matcher("instance", "=", instance)] if instance else []

    def total(name: str, op: str = "sum") -> str:
        return promql.agg(op, (), promql.recorded(name, match))

    def target_p95(metric: str) -> str:
        """The target's own p95 from its raw buckets: the bundle records latency quantiles per model
        (fleet scale, docs/scale.md), and a scenario's plot is about its one target."""
        buckets = promql.rate(metric, cfg.scaled(cfg.intervals.rate), [*cfg.selectors.vllm, *match], "_bucket")
        return promql.quantile_from_buckets(0.95, (), buckets)

    ttft, itl = serving_rules.LATENCY_HISTOGRAMS[0][0], serving_rules.LATENCY_HISTOGRAMS[1][0]
    return [
        Panel("Load", "requests/s", (Line("requests/s", total(serving_rules.requests(cfg))),)),
        Panel(
            "Queue",
            "requests",
            (
                Line("running", total(conventions.gauge_sum("vllm:num_requests_running"))),
                Line("waiting", total(conventions.gauge_sum("vllm:num_requests_waiting"))),
            ),
        ),
        Panel(
            "Latency p95",
            "seconds",
            (
                Line("TTFT p95", target_p95(ttft)),
                Line("ITL p95", target_p95(itl)),
            ),
            log_scale=True,
        ),
        Panel("KV cache usage", "ratio", (Line("KV usage (max engine)", total(serving_rules.KV_USAGE_ENGINE, "max")),)),
        Panel("Preemptions", "per second", (Line("preemptions/s", total(serving_rules.preemptions(cfg))),)),
        Panel(
            "GPU memory (fake GPU)",
            "GiB",
            (Line("used framebuffer", f"max({gpu_rules.per_gpu(cfg, gpu_rules.FB_USED)}) / {gpu_rules.MIB * 1024}"),),
            optional=True,
        ),
        Panel(
            "MoE expert load",
            "variance of shares",
            (Line("max layer variance", promql.agg("max", (), promql.recorded(moe_rules.SHARE_VARIANCE_WORST))),),
            optional=True,
        ),
    ]


def step_for(start: float, end: float) -> float:
    """About 300 points per plot, never finer than half a second."""
    return max(0.5, round((end - start) / 300, 1))


def _points(result: list[dict[str, object]]) -> Points:
    out: Points = []
    for series in result[:1]:  # every expression aggregates to one series
        values = series.get("values", [])
        assert isinstance(values, list)
        for t, v in values:
            value = float(v)
            if math.isfinite(value):
                out.append((float(t), value))
    return out


def fetch(prom: PrometheusApi, panel_list: list[Panel], start: float, end: float) -> tuple[list[PanelData], list[str]]:
    """Every panel's lines over [start, end]; query errors are returned, not raised."""
    step = step_for(start, end)
    data, errors = [], []
    for panel in panel_list:
        pd = PanelData(panel)
        for line in panel.lines:
            try:
                pd.lines[line.label] = _points(prom.query_range(line.expr, start, end, step))
            except ApiError as exc:
                errors.append(f"{panel.title} / {line.label}: {exc}")
                pd.lines[line.label] = []
        if not (panel.optional and pd.empty):
            data.append(pd)
    return data, errors


@dataclass
class ServerTTFT:
    quantiles: dict[float, float | None]
    count: float | None
    window_s: float


def server_ttft(prom: PrometheusApi, instance: str | None, start: float, end: float) -> ServerTTFT:
    """TTFT quantiles of the server's histogram over [start, end]: ``increase`` of its buckets
    over the scenario, then ``histogram_quantile`` (linear within a bucket, so coarse)."""
    window = Duration.seconds(math.ceil(end - start))
    match = [promql.label_matcher("instance", "=", instance)] if instance else []
    buckets = promql.range_fn("increase", TTFT, window, match, suffix="_bucket")
    out: dict[float, float | None] = {}
    for qv in CLIENT_QUANTILES:
        try:
            result = prom.query(promql.quantile_from_buckets(qv, (), buckets), at=end)
        except ApiError:
            result = []
        value = float(result[0]["value"][1]) if result else math.nan
        out[qv] = value if math.isfinite(value) else None
    try:
        counted = prom.query(
            promql.agg("sum", (), promql.range_fn("increase", TTFT, window, match, suffix="_count")), at=end
        )
    except ApiError:
        counted = []
    count = float(counted[0]["value"][1]) if counted else None
    return ServerTTFT(out, count, window.total_seconds)
