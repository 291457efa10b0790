"""The fleet overview: golden signals per model and instance, plus SLO rows."""

from __future__ import annotations

from typing import Any

from infersight import conventions, promql
from infersight.alerts import serving as serving_alerts
from infersight.alerts.common import on
from infersight.config import Config
from infersight.dashboards import trace_links
from infersight.dashboards.common import Column, Query, Section, filters, render, stat, table, timeseries
from infersight.recording_rules import lora, mfu
from infersight.recording_rules import serving as serving_rules

FILE = "vllm-overview.json"
VARIABLES = ("job", "model_name", "instance", "engine")
INSTANCE_FILTERS = filters("job", "model_name", "instance")
MODEL_FILTERS = filters("job", "model_name")


def _selected(name: str, extra: list[str] | None = None, base: list[str] = INSTANCE_FILTERS) -> str:
    return promql.recorded(name, [*base, *(extra or [])])


def _targets(cfg: Config) -> str:
    """The selected vLLM scrape targets' up: the vLLM selectors too, as the target-down alert reads."""
    return promql.series("up", [*cfg.selectors.vllm, *filters("job", "instance")])


def _overview(cfg: Config) -> Section:
    bad = serving_rules.bad_reasons(cfg)
    ttft_buckets = conventions.bucket_rate(cfg, "vllm:time_to_first_token_seconds", "model")
    return Section(
        "Overview",
        [
            stat(
                "Targets up",
                "vLLM scrape targets answering right now (selected jobs and instances).",
                "short",
                [Query(f"sum({_targets(cfg)})", instant=True)],
                thresholds=((None, "red"), (1, "green")),
            ),
            stat(
                "Requests/s",
                f"Finished requests per second over {cfg.intervals.rate}.",
                "reqps",
                [Query(f"sum({_selected(serving_rules.requests(cfg))})")],
            ),
            stat(
                "Error ratio",
                "Share of finished requests whose finished_reason counts as bad "
                f"({', '.join(cfg.slo.availability.bad_finished_reasons)}).",
                "percentunit",
                [
                    Query(
                        f"sum({_selected(serving_rules.requests_by_reason(cfg), [bad], MODEL_FILTERS)})"
                        f" / sum({_selected(serving_rules.requests_by_reason(cfg), base=MODEL_FILTERS)})"
                    )
                ],
                thresholds=((None, "green"), (1 - cfg.slo.availability.objective, "red")),
            ),
            stat(
                "TTFT p99",
                "99th percentile time to first token across the selected models (bucket rates are "
                "recorded per model, so the instance selection does not narrow it).",
                "s",
                [Query(promql.quantile_from_buckets(0.99, (), _selected(ttft_buckets, base=MODEL_FILTERS)))],
                thresholds=((None, "green"), (cfg.slo.ttft.threshold_seconds, "red")),
            ),
            stat(
                "Generation tokens/s",
                "Output tokens produced per second.",
                "short",
                [Query(f"sum({_selected(serving_rules.tokens(cfg, 'generation'))})")],
            ),
            stat(
                "Engines",
                "vLLM engines reporting (one per data-parallel rank of each server), selected models and instances.",
                "short",
                [Query(f"count({_selected(serving_rules.KV_USAGE_ENGINE, filters('engine'))})", instant=True)],
                width=4,
            ),
            stat(
                "KV-cache usage (max)",
                "Fullest KV cache among the selected engines.",
                "percentunit",
                [Query(f"max({_selected(serving_rules.KV_USAGE_ENGINE, filters('engine'))})")],
                thresholds=((None, "green"), (0.9, "orange")),
            ),
            stat(
                "Targets down",
                "vLLM scrape targets that did not answer their last scrape (selected jobs and instances); "
                "InfersightVLLMTargetDown pages on one that stays down.",
                "short",
                [Query(f"count({_targets(cfg)} == 0) or vector(0)", instant=True)],
                width=8,
                thresholds=((None, "green"), (1, "red")),
            ),
        ],
    )


def _traffic(cfg: Config) -> Section:
    return Section(
        "Traffic",
        [
            timeseries(
                "Request rate",
                "Finished requests per second, per model and instance.",
                "reqps",
                [Query(_selected(serving_rules.requests(cfg)), "{{model_name}} @ {{instance}}")],
            ),
            timeseries(
                "Token throughput",
                "Prompt (prefill) and generation tokens per second, per model.",
                "short",
                [
                    Query(
                        f"sum by (model_name) ({_selected(serving_rules.tokens(cfg, 'prompt'))})",
                        "{{model_name}} prompt",
                    ),
                    Query(
                        f"sum by (model_name) ({_selected(serving_rules.tokens(cfg, 'generation'))})",
                        "{{model_name}} generation",
                    ),
                ],
            ),
            timeseries(
                "Finished requests by reason",
                "stop/length are normal ends; abort and error are failures.",
                "reqps",
                [
                    Query(
                        f"sum by (model_name, finished_reason) "
                        f"({_selected(serving_rules.requests_by_reason(cfg), base=MODEL_FILTERS)})",
                        "{{model_name}} {{finished_reason}}",
                    )
                ],
                stacked=True,
            ),
            timeseries(
                "Finish reason share",
                "Share of each model's finished requests per finished_reason: a rising length share is "
                "requests cut at max_tokens, a rising abort share is clients giving up.",
                "percentunit",
                [Query(_reason_share(cfg), "{{model_name}} {{finished_reason}}")],
                max_val=1,
            ),
            timeseries(
                "Token throughput per server",
                "Prompt and generation tokens per second of each server: which replicas a model's traffic reaches.",
                "short",
                [
                    Query(_selected(serving_rules.tokens(cfg, kind)), f"{{{{model_name}}}} @ {{{{instance}}}} {kind}")
                    for kind in ("prompt", "generation")
                ],
                width=24,
            ),
        ],
    )


def _reason_share(cfg: Config) -> str:
    by_reason = _selected(serving_rules.requests_by_reason(cfg), base=MODEL_FILTERS)
    total = promql.sum_by(conventions.MODEL, by_reason)
    return f"{by_reason}\n/ ignoring (finished_reason) group_left ()\n({total} > 0)"


def _errors(cfg: Config) -> Section:
    return Section(
        "Errors",
        [
            timeseries(
                "Request error ratio",
                "Share of finished requests that ended with "
                f"{' or '.join(cfg.slo.availability.bad_finished_reasons)}, per model and per instance.",
                "percentunit",
                [
                    Query(_selected(serving_rules.error_ratio(cfg, "model"), base=MODEL_FILTERS), "{{model_name}}"),
                    Query(_selected(serving_rules.error_ratio(cfg)), "{{model_name}} @ {{instance}}"),
                ],
            ),
            timeseries(
                "HTTP 5xx ratio",
                "Share of API-server responses with a 5xx status, per instance. The API "
                "server groups status codes and has no model_name label.",
                "percentunit",
                [Query(promql.recorded(serving_rules.http_5xx_ratio(cfg), filters("job", "instance")), "{{instance}}")],
            ),
        ],
    )


def _latency(cfg: Config) -> Section:
    panels = []
    for metric, short in serving_rules.LATENCY_HISTOGRAMS:
        queries = [
            Query(
                _selected(conventions.quantile(cfg, metric, "model", qv), base=MODEL_FILTERS),
                f"p{round(qv * 100)} {{{{model_name}}}}",
            )
            for qv in conventions.QUANTILES
        ]
        panels.append(
            timeseries(
                f"{short} latency",
                f"{short} p50/p95/p99 per model, from the server's histogram over {cfg.intervals.rate}."
                + trace_links.hint(cfg),
                "s",
                queries,
                width=8,
                links=trace_links.links(cfg, ("model_name",), "series"),
            )
        )
    panels.append(
        timeseries(
            "TTFT p99 by instance",
            "Finds the instance that drags a model's TTFT tail." + trace_links.hint(cfg),
            "s",
            [
                Query(
                    _selected(conventions.quantile(cfg, "vllm:time_to_first_token_seconds", "instance", 0.99)),
                    "{{model_name}} @ {{instance}}",
                )
            ],
            width=24,
            links=trace_links.links(cfg, ("model_name", "instance"), "series"),
        )
    )
    return Section("Latency", panels)


def _saturation(cfg: Config) -> Section:
    return Section(
        "Saturation",
        [
            timeseries(
                "Running and waiting requests",
                "Requests in the batch and in the queue; a growing queue means demand exceeds capacity.",
                "short",
                [
                    Query(
                        _selected(conventions.gauge_sum("vllm:num_requests_running")),
                        "running {{model_name}} @ {{instance}}",
                    ),
                    Query(
                        _selected(conventions.gauge_sum("vllm:num_requests_waiting")),
                        "waiting {{model_name}} @ {{instance}}",
                    ),
                ],
                width=8,
            ),
            timeseries(
                "KV-cache usage",
                "Fraction of KV-cache blocks in use, per engine.",
                "percentunit",
                [
                    Query(
                        _selected(serving_rules.KV_USAGE_ENGINE, filters("engine")),
                        "{{model_name}} @ {{instance}} e{{engine}}",
                    )
                ],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Preemptions",
                "Requests preempted per second: the KV cache ran out and work is recomputed.",
                "short",
                [Query(_selected(serving_rules.preemptions(cfg)), "{{model_name}} @ {{instance}}")],
                width=8,
            ),
        ],
    )


def _slo(cfg: Config, spec: serving_rules.SLOSpec) -> Section:
    slo = [promql.label_matcher("slo", "=", spec.name)]
    period = serving_rules.slo_errors(cfg.slo.period)
    objective = promql.recorded(serving_rules.SLO_OBJECTIVE, [*MODEL_FILTERS, *slo])
    default = spec.cohorts[0]
    what = f"under {default.threshold}s" if default.threshold else "not ending in error"
    return Section(
        f"SLO: {spec.title}",
        [
            stat(
                f"{spec.title} attainment ({cfg.slo.period})",
                f"Share of good events ({what}) over the SLO period; objective {default.objective} by default.",
                "percentunit",
                [Query(f"1 - {_selected(period, slo, MODEL_FILTERS)}", "{{model_name}}")],
                width=6,
                decimals=3,
            ),
            stat(
                f"{spec.title} error budget remaining",
                "1 means untouched, 0 means spent, below 0 means the objective is missed for the period.",
                "percentunit",
                [Query(f"1 - ({_selected(period, slo, MODEL_FILTERS)} / (1 - {objective}))", "{{model_name}}")],
                width=6,
                thresholds=((None, "red"), (0, "orange"), (0.25, "green")),
            ),
            timeseries(
                f"{spec.title} burn rate",
                "Error ratio divided by the error budget, per window. Pages fire "
                "when both windows of a row exceed its factor.",
                "short",
                [
                    Query(
                        f"{_selected(serving_rules.slo_errors(w), slo, MODEL_FILTERS)} / (1 - {objective})",
                        f"{{{{model_name}}}} {w}",
                    )
                    for w in serving_rules.slo_windows(cfg)
                ],
                width=12,
            ),
        ],
    )


def _models_over_range(cfg: Config) -> Section:
    """vLLM's per-model summary over the dashboard's time range, from the recorded rates: a rate's
    mean over the range times its length is the count in it, and the mean of the recorded bucket
    rates gives the range's quantile (a histogram_quantile of averaged rates, no subquery)."""
    model = ("job", "model_name")

    def total(name: str) -> str:
        return f"{promql.sum_by(model, promql.over_time('avg', _selected(name), '$__range'))} * $__range_s"

    def p95(metric: str) -> str:
        buckets = promql.recorded(conventions.bucket_rate(cfg, metric, "model"), MODEL_FILTERS)
        return promql.quantile_from_buckets(0.95, model, promql.over_time("avg", buckets, "$__range"))

    by_reason = serving_rules.requests_by_reason(cfg)
    bad = promql.over_time("avg", _selected(by_reason, [serving_rules.bad_reasons(cfg)], MODEL_FILTERS), "$__range")
    every = promql.over_time("avg", _selected(by_reason, base=MODEL_FILTERS), "$__range")
    kv_peak = promql.agg("max", model, promql.over_time("max", _selected(serving_rules.KV_USAGE_ENGINE), "$__range"))
    columns = [
        Column(promql.agg("count", model, _selected(serving_rules.requests(cfg))), "servers now", "short"),
        Column(total(serving_rules.requests(cfg)), "requests", "short"),
        Column(total(serving_rules.tokens(cfg, "generation")), "output tokens", "short"),
        Column(promql.ratio(promql.sum_by(model, bad), promql.sum_by(model, every)), "error ratio", "percentunit"),
        *(Column(p95(metric), f"{short} p95", "s") for metric, short in serving_rules.LATENCY_HISTOGRAMS),
        Column(kv_peak, "KV cache peak", "percentunit"),
        Column(total(serving_rules.preemptions(cfg)), "preemptions", "short"),
    ]
    return Section(
        "Models over the selected range",
        [
            table(
                "Per-model summary",
                "One row per model over the dashboard's time range: requests and output tokens served, the "
                f"error ratio ({', '.join(cfg.slo.availability.bad_finished_reasons)}), TTFT/ITL/E2E p95, the "
                f"fullest engine's KV cache and the preemptions. From the recorded {cfg.intervals.rate} rates, "
                "so a range shorter than that reads as its last window.",
                model,
                columns,
            )
        ],
    )


def _uptime(cfg: Config) -> str:
    """Seconds since the API server process started. Its process series carry no model_name, so
    each server's value is copied onto its rows (one per model it serves) through its request rate."""
    servers = [*cfg.selectors.vllm, *filters("job", "instance")]
    started = promql.agg("max", ("job", "instance"), promql.series("process_start_time_seconds", servers))
    rows = f"0 * {_selected(serving_rules.requests(cfg))} + 1"
    return f"(time() - {started})\n* {on(('job', 'instance'))} group_right ()\n({rows})"


def _instances(cfg: Config) -> Section:
    """vLLM's own "Instances" view, with each replica's latency against its model's median: the
    outlier-replica alert's comparison, coloured where the alert would count it."""
    a = cfg.alerts.serving.outlier_replica
    judged = serving_alerts.replicas_judged(cfg)
    engines = promql.agg("count", conventions.INSTANCE, _selected(serving_rules.KV_USAGE_ENGINE))
    columns = [
        Column(engines, "engines", "short"),
        Column(_selected(serving_rules.requests(cfg)), "requests/s", "reqps"),
        Column(_selected(serving_rules.tokens(cfg, "generation")), "output tokens/s", "short"),
    ]
    titles = {"ttft_p99": "TTFT p99", "queue_p95": "queue p95", "itl_mean": "ITL mean"}
    for signal, value, _ in serving_alerts.outlier_signals(cfg, "$__rate_interval"):
        mine = f"({value})\nand {on(conventions.INSTANCE)} ({_selected(serving_rules.requests(cfg))})"
        median = (
            f"quantile by ({', '.join(conventions.MODEL)}) (0.5, {value}\nand {on(conventions.INSTANCE)} ({judged}))"
        )
        columns += [
            Column(mine, titles[signal], "s"),
            Column(
                f"({mine})\n/ {on(conventions.MODEL)} group_left ()\n({median})",
                f"{titles[signal]} x median",
                "suffix:x",
                red_from=a.factor,
            ),
        ]
    kv_max = promql.agg("max", conventions.INSTANCE, _selected(serving_rules.KV_USAGE_ENGINE))
    columns += [
        Column(_selected(conventions.gauge_sum("vllm:num_requests_running")), "running", "short"),
        Column(_selected(conventions.gauge_sum("vllm:num_requests_waiting")), "waiting", "short"),
        Column(kv_max, "KV cache (fullest engine)", "percentunit"),
        Column(_selected(serving_rules.preemptions(cfg)), "preemptions/s", "short"),
        Column(_uptime(cfg), "uptime", "s"),
    ]
    return Section(
        "Instances",
        [
            table(
                "Instances",
                "One row per vLLM server: its engines, traffic and latency, each latency over the median of "
                f"its model's replicas with traffic (over {a.min_requests_per_second:g} requests/s started), then its "
                "running and waiting requests, its fullest engine's KV cache, preemptions and the API "
                "server's uptime (a restart shows as a short uptime). Red from "
                f"{a.factor:g}x the median: the outlier-replica alert fires when that lasts {a.for_} and the model "
                f"has {a.min_replicas} such replicas or more. TTFT and queue time are the alert's recorded "
                f"{cfg.intervals.rate} quantiles; the mean ITL is over the panel's rate interval."
                + trace_links.hint(cfg),
                conventions.INSTANCE,
                columns,
                links=trace_links.links(cfg, ("model_name", "instance"), "row"),
            )
        ],
    )


def _lora(cfg: Config) -> Section:
    """vLLM's LoRA info has no model_name: these panels follow the job and instance variables only."""
    servers = filters("job", "instance")
    off = "No LoRA here: vLLM exports vllm:lora_requests_info only when started with --enable-lora"
    newest = promql.agg("topk", ("job", "instance"), f"1, {promql.series(lora.INFO, servers)}")
    return Section(
        "LoRA adapters",
        [
            timeseries(
                "LoRA adapters per server",
                "Adapters running and waiting on each server, counted from the newest series of "
                f"vllm:lora_requests_info (its comma-separated name lists; {lora.MAX_COUNTED} means that many "
                "or more). Waiting adapters beyond --max-loras hold their requests back: see the "
                "deferred waiting requests in the KV cache dashboard.",
                "short",
                [Query(promql.recorded(lora.ADAPTERS, servers), "{{instance}} {{state}}")],
                no_value=off,
            ),
            table(
                "LoRA adapters now",
                "The adapter names vLLM reports per server right now (its newest info series) and when "
                "that last changed. The names are read at view time and never recorded: each name list "
                "vLLM reports is a series of its own.",
                ("job", "instance", "max_lora", "running_lora_adapters", "waiting_lora_adapters"),
                [Column(f"{newest} * 1000", "Last change", "dateTimeAsIso")],
                width=12,
                height=8,
                no_value=off,
            ),
        ],
    )


def _compute(cfg: Config) -> Section:
    off = (
        "No MFU estimates: vLLM was started without --enable-mfu-metrics (it then exports 0, which is not "
        "recorded), or the engine is idle"
    )
    engine = [*INSTANCE_FILTERS, 'engine=~"$engine"']
    who = "{{model_name}} @ {{instance}} e{{engine}}"
    return Section(
        "Compute estimates (MFU)",
        [
            timeseries(
                "Model FLOP/s per GPU",
                "vLLM's estimate of the floating-point work per GPU of each engine, from the model's shape "
                "(not measured on the device). MFU is this over the GPU's peak: e.g. an H100 SXM does about "
                "989 TFLOP/s dense BF16.",
                "flops",
                [Query(promql.recorded(mfu.per_gpu(cfg, "flops"), engine), who)],
                no_value=off,
            ),
            timeseries(
                "Memory traffic per GPU",
                "vLLM's estimate of the bytes read from and written to device memory per GPU per second. "
                "Decode is usually bound by this, not by FLOP/s: hold it to the GPU's memory bandwidth.",
                "Bps",
                [
                    Query(promql.recorded(mfu.per_gpu(cfg, "read_bytes"), engine), "read " + who),
                    Query(promql.recorded(mfu.per_gpu(cfg, "write_bytes"), engine), "write " + who),
                ],
                no_value=off,
            ),
        ],
    )


def _api_server(cfg: Config) -> Section:
    """The API server process of each vLLM (prometheus_client's process collector): read raw, one
    series per server, as cheap as a recording would be."""
    servers = [*cfg.selectors.vllm, *filters("job", "instance")]
    fds = promql.ratio(promql.series("process_open_fds", servers), promql.series("process_max_fds", servers))
    return Section(
        "API server",
        [
            timeseries(
                "HTTP requests by status",
                "Requests per second the API server answered, by status class, per server: 4xx are the "
                "clients' mistakes (bad parameters, a prompt over the context), 5xx the server's.",
                "reqps",
                [
                    Query(
                        promql.sum_by(
                            ("job", "instance", "status"),
                            promql.rate("http_requests_total", "$__rate_interval", servers),
                        ),
                        "{{instance}} {{status}}",
                    )
                ],
                width=6,
            ),
            timeseries(
                "API server CPU",
                "CPU cores the API server process uses: tokenisation, detokenisation and streaming. Near "
                "one core it limits throughput however fast the engine is (the engine core is another "
                "process and not shown here).",
                "short",
                [Query(promql.rate("process_cpu_seconds_total", "$__rate_interval", servers), "{{instance}}")],
                width=6,
            ),
            timeseries(
                "API server memory",
                "Resident memory of the API server process; steady growth under steady load is a leak.",
                "bytes",
                [Query(promql.series("process_resident_memory_bytes", servers), "{{instance}}")],
                width=6,
            ),
            timeseries(
                "Open file descriptors",
                "Open descriptors over the process's limit: each streaming client holds at least one; at "
                "100% new connections fail.",
                "percentunit",
                [Query(fds, "{{instance}}")],
                width=6,
                max_val=1,
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    sections = [_overview(cfg), _models_over_range(cfg), _instances(cfg), _traffic(cfg), _errors(cfg)]
    sections += [_latency(cfg), _saturation(cfg)]
    sections += [_api_server(cfg), _lora(cfg), _compute(cfg)]
    sections += [_slo(cfg, spec) for spec in serving_rules.slo_specs(cfg)]
    board = render(
        cfg,
        name="vllm-overview",
        title="vLLM / Overview",
        description="Golden signals and SLOs of vLLM serving, per model and instance (infersight).",
        variables_from=serving_rules.KV_USAGE_ENGINE,
        variable_labels=VARIABLES,
        sections=sections,
    )
    return {FILE: board}
