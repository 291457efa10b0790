"""What the requests look like: the latency distributions as heatmaps, the prompt and output
lengths, the time per output token, the end-to-end latency per server and the API server's
requests and durations per endpoint, and (with infersight's collector) the time of each stage
from vLLM's spans.

The heatmaps read the per-model bucket rates the serving pack records anyway. The other panels
read vLLM's raw histograms on purpose: they are opened to investigate, not watched all day, and
recording them would cost every rule evaluation on every engine of the fleet (docs/scale.md)
where a query costs only while someone looks. The overview stays on recorded series."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grafana_foundation_sdk.builders.heatmap import Panel as HeatmapPanel
from grafana_foundation_sdk.builders.table import Panel as TablePanel

from infersight import conventions, promql
from infersight.config import Config
from infersight.dashboards import trace_links
from infersight.dashboards.common import Column, Query, Section, filters, heatmap, render, table, timeseries
from infersight.recording_rules import serving as serving_rules
from infersight.traces.attributes import STAGES, stage_histogram

FILE = "vllm-requests.json"
VARIABLES = ("job", "model_name", "instance")
MODEL_FILTERS = filters("job", "model_name")
INSTANCE_FILTERS = filters(*VARIABLES)
# vLLM's per-request histograms of length and pace; the serving pack's reads include them.
PROMPT_TOKENS = "vllm:request_prompt_tokens"
OUTPUT_TOKENS = "vllm:request_generation_tokens"
LONGEST_SAMPLE_TOKENS = "vllm:request_max_num_generation_tokens"  # per request with n > 1
TPOT = "vllm:request_time_per_output_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
ITL = "vllm:inter_token_latency_seconds"
QUEUE_TIME = "vllm:request_queue_time_seconds"
PREFILL_COMPUTED_TOKENS = "vllm:request_prefill_kv_computed_tokens"
# The API server's operation histograms (label operation): sleep mode, and RL weight updates.
OPERATIONS = ("vllm:sleep_mode_operation_duration_seconds", "vllm:rl_weight_update_operation_duration_seconds")
HTTP_DURATION = "http_request_duration_seconds"
STAGES_OFF = (
    "No span metrics here: they come from infersight's collector config (deploy/otelcol/config.yaml) "
    "receiving the spans of a vLLM started with --otlp-traces-endpoint"
)
_RAW = "Read from vLLM's raw histogram (not recorded: this dashboard is opened to investigate)."


def _raw_bucket_rates(cfg: Config, metric: str) -> str:
    """A raw vLLM histogram's bucket rates over the selected servers, as Grafana asks for them."""
    return promql.rate(metric, "$__rate_interval", [*cfg.selectors.vllm, *INSTANCE_FILTERS], "_bucket")


def _raw_quantiles(cfg: Config, metric: str, by: tuple[str, ...], quantiles: tuple[float, ...]) -> list[Query]:
    rates = _raw_bucket_rates(cfg, metric)
    who = " @ ".join("{{" + label + "}}" for label in by if label != "job")
    return [Query(promql.quantile_from_buckets(qv, by, rates), f"p{round(qv * 100)} {who}") for qv in quantiles]


def _raw_mean(cfg: Config, metric: str, by: tuple[str, ...]) -> str:
    """A raw histogram's mean per group over the selected servers, where it was observed."""
    sel = [*cfg.selectors.vllm, *INSTANCE_FILTERS]

    def summed(suffix: str) -> str:
        return promql.sum_by(by, promql.rate(metric, "$__rate_interval", sel, suffix))

    return f"{summed('_sum')}\n/\n({summed('_count')} > 0)"


def _tpot_cohorts(cfg: Config) -> tuple[serving_rules.Cohort, ...]:
    """The ITL SLO's models and thresholds (its per-model overrides apply), even while it is off."""
    (itl,) = (spec for spec in serving_rules.slo_specs(cfg, include_disabled=True) if spec.name == "itl")
    return itl.cohorts


def tpot_attainment(cfg: Config) -> str:
    """Per model, the share of requests whose time per output token was at most the ITL threshold
    (a bucket bound of both histograms: vLLM gives them the same buckets)."""
    by = ("job", "model_name")
    parts = []
    for cohort in _tpot_cohorts(cfg):
        assert cohort.threshold is not None
        sel = [*cfg.selectors.vllm, *INSTANCE_FILTERS, *([cohort.matcher] if cohort.matcher else [])]
        le = promql.label_matcher("le", "=~", promql.le_value(cohort.threshold))
        good = promql.sum_by(by, promql.rate(TPOT, "$__rate_interval", [*sel, le], "_bucket"))
        total = promql.sum_by(by, promql.rate(TPOT, "$__rate_interval", sel, "_count"))
        parts.append(f"({good}\n/\n({total} > 0))")
    return "\nor\n".join(parts)


def _distributions(cfg: Config) -> Section:
    panels = []
    for metric, short in serving_rules.LATENCY_HISTOGRAMS:
        buckets = promql.sum_by(("le",), promql.recorded(conventions.bucket_rate(cfg, metric, "model"), MODEL_FILTERS))
        panels.append(
            heatmap(
                f"{short} distribution",
                f"Requests per second in each {short} bucket (upper bound on the y axis), summed over the "
                f"selected models, from the recorded {cfg.intervals.rate} bucket rates. A second band above the "
                "usual one is a slow population the percentiles average away.",
                "s",
                [Query(buckets, "{{le}}", buckets=True)],
                width=8,
            )
        )
    return Section("Latency distributions", panels)


def _length_distribution(cfg: Config, metric: str, what: str) -> HeatmapPanel:
    buckets = promql.sum_by(("le",), _raw_bucket_rates(cfg, metric))
    return heatmap(
        f"{what} length distribution",
        f"Requests per second in each {what.lower()}-length bucket (tokens, upper bound on the y axis), summed "
        f"over the selected servers. {_RAW}",
        "short",
        [Query(buckets, "{{le}}", buckets=True)],
        width=12,
    )


def _shape(cfg: Config) -> Section:
    model = ("job", "model_name")
    return Section(
        "Request shape",
        [
            _length_distribution(cfg, PROMPT_TOKENS, "Prompt"),
            _length_distribution(cfg, OUTPUT_TOKENS, "Output"),
            timeseries(
                "Prompt length",
                "Prompt tokens per request, p50 and p95 per model. Longer prompts cost prefill time and KV "
                f"cache: a TTFT rise with a prompt-length rise is load, not a fault. {_RAW}",
                "short",
                _raw_quantiles(cfg, PROMPT_TOKENS, model, (0.5, 0.95)),
                width=8,
            ),
            timeseries(
                "Output length",
                "Generated tokens per request, p50 and p95 per model: with the time per output token, what an "
                f"end-to-end latency is made of. {_RAW}",
                "short",
                _raw_quantiles(cfg, OUTPUT_TOKENS, model, (0.5, 0.95)),
                width=8,
            ),
            timeseries(
                "Time per output token (TPOT)",
                "Each request's decode time over its output tokens, p50/p95/p99 per model. Unlike the ITL "
                "(every gap between tokens), one value per request: a few long stalls raise the ITL tail "
                f"but barely move TPOT. {_RAW}",
                "s",
                _raw_quantiles(cfg, TPOT, model, conventions.QUANTILES),
                width=8,
            ),
            timeseries(
                "TPOT within the ITL threshold",
                "Share of requests per model whose time per output token was at most the ITL SLO's threshold "
                f"({cfg.slo.itl.threshold_seconds:g} s; per-model overrides apply): vLLM's TPOT SLO panel, at "
                "infersight's threshold. It counts requests; the overview's ITL attainment counts tokens, so a "
                f"model can meet one and miss the other. {_RAW}",
                "percentunit",
                [Query(tpot_attainment(cfg), "{{model_name}}")],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Prompt and computed tokens per request",
                "Mean prompt tokens per request per model, and how many of them were computed in prefill: the "
                f"rest were found in the prefix cache or loaded by a KV connector. {_RAW}",
                "short",
                [
                    Query(_raw_mean(cfg, PROMPT_TOKENS, model), "prompt {{model_name}}"),
                    Query(_raw_mean(cfg, PREFILL_COMPUTED_TOKENS, model), "computed {{model_name}}"),
                ],
                width=8,
            ),
            timeseries(
                "Mean time per request phase",
                "Where an average request's time goes, per model: waiting in the queue, prefill and decode. "
                f"Together they approximate the end-to-end latency. {_RAW}",
                "s",
                [
                    Query(_raw_mean(cfg, metric, model), f"{phase} {{{{model_name}}}}")
                    for metric, phase in (
                        (QUEUE_TIME, "queue"),
                        ("vllm:request_prefill_time_seconds", "prefill"),
                        ("vllm:request_decode_time_seconds", "decode"),
                    )
                ],
                width=8,
            ),
            timeseries(
                "Longest of n parallel samples",
                "Per model, over the requests that asked for n > 1 samples: the mean generated tokens of each "
                "request's longest sample, which its end-to-end latency waits for. vLLM's own dashboard draws "
                f"this family as *Max Generation Token in Sequence Group*. {_RAW}",
                "short",
                [Query(_raw_mean(cfg, LONGEST_SAMPLE_TOKENS, model), "{{model_name}}")],
                width=24,
                no_value="No request with n > 1 (parallel sampling) here",
            ),
        ],
    )


def _per_server(cfg: Config) -> Section:
    """Which replica a model's slow requests come from; a click on one opens its requests' traces."""
    traces = trace_links.links(cfg, ("model_name", "instance"), "series")
    return Section(
        "Latency per server",
        [
            *(
                timeseries(
                    title,
                    f"{what} {_RAW}{trace_links.hint(cfg)}",
                    "s",
                    _raw_quantiles(cfg, metric, conventions.INSTANCE, (0.95,)),
                    width=8,
                    links=traces,
                )
                for metric, title, what in (
                    (E2E, "E2E latency p95 by instance", "End-to-end request latency p95 per server."),
                    (
                        ITL,
                        "ITL p95 by instance",
                        "Inter-token latency p95 per server: a replica on a slow or shared GPU decodes slower.",
                    ),
                )
            ),
            timeseries(
                "Mean queue time by instance",
                f"Mean time a request waited for a slot, per server: a replica its router overloads. {_RAW}"
                + trace_links.hint(cfg),
                "s",
                [Query(_raw_mean(cfg, QUEUE_TIME, conventions.INSTANCE), "{{model_name}} @ {{instance}}")],
                width=8,
                links=traces,
            ),
        ],
    )


def _endpoints(cfg: Config) -> Section:
    """The API server's HTTP metrics carry no model_name: these follow the job and instance variables."""
    servers = [*cfg.selectors.vllm, *filters("job", "instance")]
    by = ("job", "handler")

    def summed(suffix: str, metric: str = HTTP_DURATION) -> str:
        return promql.sum_by(by, promql.rate(metric, "$__rate_interval", servers, suffix))

    return Section(
        "API server endpoints",
        [
            timeseries(
                "HTTP requests by endpoint",
                "Requests per second per API route over the selected servers: completions against chat, "
                f"and how often health checks and model listings call. {_RAW}",
                "reqps",
                [Query(summed("", "http_requests_total"), "{{handler}}")],
            ),
            timeseries(
                "HTTP mean duration by endpoint",
                "Mean time per request per API route, over the selected servers; a streamed completion "
                f"counts until its last chunk, so this follows the output length. {_RAW}",
                "s",
                [Query(promql.ratio(summed("_sum"), summed("_count")), "{{handler}}")],
            ),
            _operations(cfg, servers),
        ],
    )


def _operations(cfg: Config, servers: list[str]) -> TablePanel:
    """Sleep mode and RL weight-update calls per server and operation, since each server started:
    the cumulative histograms at the instant (their operations do not overlap, so ``or`` joins them)."""
    key = ("instance", "operation")

    def either(expr: Callable[[str], str]) -> str:
        return "\nor\n".join(f"({expr(metric)})" for metric in OPERATIONS)

    def series(metric: str, suffix: str) -> str:
        return promql.sum_by(key, promql.series(metric, servers, suffix))

    return table(
        "Sleep mode and weight update operations",
        "Per server since it started: sleep, wake and KV-cache release calls of the sleep mode API, and the "
        "steps of RL weight updates (start, update, finish), failed ones included. Rows appear once an "
        f"operation has run. {_RAW}",
        key,
        [
            Column(either(lambda m: series(m, "_count")), "Count", "none"),
            Column(either(lambda m: f"{series(m, '_sum')}\n/\n({series(m, '_count')} > 0)"), "Mean", "s"),
            Column(
                either(lambda m: promql.quantile_from_buckets(0.99, key, promql.series(m, servers, "_bucket"))),
                "p99",
                "s",
            ),
        ],
        height=6,
        no_value="No sleep-mode or weight-update call since the selected servers started",
    )


def _stages(cfg: Config) -> Section:
    """The collector's per-stage histograms from vLLM's spans. Their job label is the span's
    service.name, which infersight has vLLM set to the served model name (docs/traces.md)."""
    models = ['job=~"$model_name"', 'instance=~"$instance"']
    queries = []
    for stage, _ in STAGES:
        rates = promql.rate(stage_histogram(stage), "$__rate_interval", models, "_bucket")
        queries.append(
            Query(promql.quantile_from_buckets(0.95, ("job",), rates), f"{{{{job}}}} {stage.replace('_', ' ')}")
        )
    return Section(
        "Request stages (from vLLM's spans)",
        [
            timeseries(
                "Stage time p95 per model",
                "Where a request's time goes, p95 per model: queue, prefill, decode and the first token, "
                "from vLLM's own request span, turned into histograms by infersight's OpenTelemetry "
                "Collector config (signaltometrics). Which requests were slow, and in which stage, is in "
                "the trace search the latency panels link to.",
                "s",
                queries,
                width=24,
                no_value=STAGES_OFF,
            )
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    board = render(
        cfg,
        name="vllm-requests",
        title="vLLM / Requests",
        description="Latency distributions and request shape (lengths, time per output token) per model and "
        "server (infersight).",
        variables_from=serving_rules.requests(cfg),
        variable_labels=VARIABLES,
        sections=[_distributions(cfg), _shape(cfg), _per_server(cfg), _endpoints(cfg), _stages(cfg)],
    )
    return {FILE: board}
