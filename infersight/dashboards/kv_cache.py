"""KV cache and scheduler: cache usage, prefix-cache hits, preemptions, queueing, request
phases, batch fill and admission rejections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from infersight import conventions, promql
from infersight.config import Config
from infersight.dashboards import kv_connectors, trace_links
from infersight.dashboards.common import Column, Query, Section, filters, model_quantiles, render, table, timeseries
from infersight.recording_rules import kv_cache as kv_cache_rules
from infersight.recording_rules import kv_connectors as kv_connectors_rules
from infersight.recording_rules import serving as serving_rules

FILE = "vllm-kv-cache.json"
VARIABLES = ("job", "model_name", "instance", "engine")
MODEL_FILTERS = filters("job", "model_name")
INSTANCE_FILTERS = filters("job", "model_name", "instance")
ENGINE_FILTERS = filters(*VARIABLES)
_WHO = "{{model_name}} @ {{instance}}"
_WHO_ENGINE = _WHO + " e{{engine}}"


def _raw(cfg: Config, metric: str, matchers: Sequence[str] = INSTANCE_FILTERS) -> str:
    """A raw vLLM series on this dashboard, for what a recording would not make cheaper."""
    return promql.series(metric, [*cfg.selectors.vllm, *matchers])


def _usage(cfg: Config) -> Section:
    fleet = [
        Query(promql.recorded(kv_cache_rules.usage_quantile(qv), MODEL_FILTERS), f"p{qv * 100:g} {{{{model_name}}}}")
        for qv in cfg.kv_cache.fleet_quantiles
    ]
    fleet += [
        Query(promql.recorded(name, MODEL_FILTERS), f"{legend} {{{{model_name}}}}")
        for name, legend in (
            (kv_cache_rules.USAGE_MAX, "max"),
            (kv_cache_rules.USAGE_MEAN, "mean"),
            (kv_cache_rules.USAGE_MIN, "min"),
        )
    ]
    thrash = cfg.kv_cache.alerts.thrash
    return Section(
        "KV cache",
        [
            timeseries(
                "KV-cache usage per engine",
                "Fraction of KV-cache blocks in use. Full is normal under load; it hurts only together "
                "with preemptions or a growing queue.",
                "percentunit",
                [Query(promql.recorded(serving_rules.KV_USAGE_ENGINE, ENGINE_FILTERS), _WHO_ENGINE)],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Fleet KV-cache usage",
                "Percentiles, mean, maximum and minimum of KV usage across each model's engines. A minimum "
                "far under the maximum is load the router spreads unevenly.",
                "percentunit",
                fleet,
                width=8,
                max_val=1,
            ),
            timeseries(
                "KV-cache usage oscillation",
                f"Standard deviation of KV usage over {thrash.window}. High together with preemptions "
                f"means thrash (alert threshold {thrash.usage_stddev:g}).",
                "percentunit",
                [Query(promql.recorded(kv_cache_rules.usage_stddev(cfg), ENGINE_FILTERS), _WHO_ENGINE)],
                width=8,
            ),
        ],
    )


def _prefix(cfg: Config) -> Section:
    a = cfg.kv_cache.alerts.prefix_collapse
    baseline = promql.recorded(kv_cache_rules.prefix_hit_ratio(a.baseline_window), INSTANCE_FILTERS)
    return Section(
        "Prefix cache",
        [
            timeseries(
                "Prefix-cache hit ratio",
                f"Hit tokens over queried tokens, from rates over {cfg.intervals.rate}, per server and per "
                "model, against the baseline the collapse alert compares with: the server's ratio over "
                f"{a.baseline_window} ending {a.baseline_offset} ago. A KV connector's external prefix cache "
                "has its own panel in the KV connector row.",
                "percentunit",
                [
                    Query(promql.recorded(kv_cache_rules.prefix_hit_ratio(cfg.intervals.rate), INSTANCE_FILTERS), _WHO),
                    Query(f"{baseline} offset {cfg.scaled(a.baseline_offset)}", "baseline " + _WHO),
                    Query(
                        promql.recorded(kv_cache_rules.prefix_hit_ratio(cfg.intervals.rate, "model"), MODEL_FILTERS),
                        "model {{model_name}}",
                    ),
                ],
                max_val=1,
            ),
            timeseries(
                "Prefix-cache lookups",
                "Prompt tokens looked up in, and found in, the prefix cache per second.",
                "short",
                [
                    Query(promql.recorded(kv_cache_rules.prefix_queries(cfg), INSTANCE_FILTERS), "queried " + _WHO),
                    Query(
                        f"{promql.recorded(kv_cache_rules.prefix_queries(cfg), INSTANCE_FILTERS)}\n* "
                        f"{promql.recorded(kv_cache_rules.prefix_hit_ratio(cfg.intervals.rate), INSTANCE_FILTERS)}",
                        "hit " + _WHO,
                    ),
                ],
            ),
            timeseries(
                "Multimodal cache hit ratio",
                f"Multimodal items (images, audio) found in the input cache over those looked up, per model over "
                f"{cfg.intervals.rate}: a hit skips the item's preprocessing.",
                "percentunit",
                [
                    Query(
                        promql.recorded(kv_connectors_rules.cache_hit_ratio(cfg, "mm_cache"), MODEL_FILTERS),
                        "{{model_name}}",
                    )
                ],
                width=6,
                max_val=1,
                no_value="No multimodal lookups here: a multimodal model fills this",
            ),
            timeseries(
                "Prompt tokens that skipped prefill",
                "Share of prompt tokens whose KV was cached locally or loaded through a KV connector "
                "(vllm:prompt_tokens_cached over vllm:prompt_tokens). The hit ratio above counts local "
                "prefix-cache lookups only, as vLLM's own dashboards do; this one adds external KV.",
                "percentunit",
                [
                    Query(
                        promql.recorded(kv_cache_rules.cached_prompt_ratio(cfg), MODEL_FILTERS),
                        "{{model_name}}",
                    )
                ],
                width=6,
                max_val=1,
            ),
            timeseries(
                "Prompt tokens by source",
                "Prompt tokens per second per model: computed, found in the local cache, or transferred "
                "by a KV connector (disaggregated prefill).",
                "short",
                [
                    Query(
                        promql.recorded(kv_cache_rules.prompt_tokens_by_source(cfg), MODEL_FILTERS),
                        "{{source}} {{model_name}}",
                    )
                ],
                width=6,
                stacked=True,
            ),
            timeseries(
                "Cached prompt tokens by tier",
                "Cached prompt tokens per second per model by the tier that supplied them: device (GPU), "
                "host, p2p, disk. Anything but device needs a KV offload or transfer connector.",
                "short",
                [
                    Query(
                        promql.recorded(kv_cache_rules.cached_prompt_tokens_by_tier(cfg), MODEL_FILTERS),
                        "{{source}} {{model_name}}",
                    )
                ],
                width=6,
                stacked=True,
            ),
        ],
    )


def _residency(cfg: Config) -> Section:
    off = "No block residency here: vLLM exports vllm:kv_block_* only when started with --kv-cache-metrics"
    return Section(
        "KV block residency",
        [
            timeseries(
                f"{title}",
                f"p50 and p95 per model over {cfg.intervals.rate}, from the blocks vLLM samples "
                "(--kv-cache-metrics-sample, 1% by default). " + why,
                "s",
                model_quantiles(cfg, metric, kv_cache_rules.RESIDENCY_QUANTILES),
                width=8,
                no_value=off,
            )
            for (metric, title), why in zip(
                kv_cache_rules.RESIDENCY_HISTOGRAMS,
                (
                    "Short lifetimes under load mean the cache is too small for the working set.",
                    "Blocks evicted soon after their last use were still warm: a larger cache keeps them.",
                    "How long a cached prefix waits to be reused: a cache must hold blocks at least this long.",
                ),
                strict=True,
            )
        ],
    )


def _configuration(cfg: Config) -> Section:
    return Section(
        "Configuration",
        [
            table(
                "Cache configuration",
                "Each server's KV-cache settings as vLLM reports them (vllm:cache_config_info, no model_name), "
                "and how many of its engines run with them. Tokens per block times blocks is the cache's size "
                "in tokens; prefix caching caches full blocks only.",
                ("job", "instance", *kv_cache_rules.CACHE_CONFIG_LABELS),
                [
                    # Raw and instant: one constant series per engine, read only when the table is open.
                    Column(
                        promql.agg(
                            "count",
                            ("job", "instance", *kv_cache_rules.CACHE_CONFIG_LABELS),
                            _raw(cfg, "vllm:cache_config_info", filters("job", "instance")),
                        ),
                        "engines",
                        "short",
                    )
                ],
                width=16,
                height=8,
            ),
            timeseries(
                "Engines by sleep state",
                "Engines per model in each sleep state (vllm:engine_sleep_state): awake, weights offloaded or "
                "everything discarded. A sleeping engine serves nothing until it is woken. Per model: the instance "
                "filter does not apply.",
                "short",
                [
                    Query(
                        promql.recorded(kv_cache_rules.SLEEP_STATE_ENGINES, MODEL_FILTERS),
                        "{{sleep_state}} {{model_name}}",
                    )
                ],
                width=8,
                height=8,
            ),
        ],
    )


def _preemptions(cfg: Config) -> Section:
    return Section(
        "Preemptions",
        [
            timeseries(
                "Preemptions per server",
                f"Requests preempted per second over {cfg.intervals.rate}: an engine ran out of KV blocks and "
                "evicted a running request, whose work is recomputed later. A data-parallel server's engines "
                "are summed; the KV alerts judge each engine.",
                "short",
                [Query(promql.recorded(serving_rules.preemptions(cfg), INSTANCE_FILTERS), _WHO)],
            ),
            timeseries(
                "Preemptions per finished request",
                "Mean number of times each finished request was preempted.",
                "short",
                [Query(promql.recorded(kv_cache_rules.preemptions_per_request(cfg), INSTANCE_FILTERS), _WHO)],
            ),
        ],
    )


def _queue(cfg: Config) -> Section:
    return Section(
        "Queue",
        [
            timeseries(
                "Queue depth",
                "Requests running in the batch and waiting to be scheduled.",
                "short",
                [
                    Query(
                        promql.recorded(conventions.gauge_sum("vllm:num_requests_running"), INSTANCE_FILTERS),
                        "running " + _WHO,
                    ),
                    Query(
                        promql.recorded(conventions.gauge_sum("vllm:num_requests_waiting"), INSTANCE_FILTERS),
                        "waiting " + _WHO,
                    ),
                ],
                width=8,
            ),
            timeseries(
                "Waiting by reason",
                "Per model. capacity: no KV blocks or batch slots free; deferred: held back by the scheduler policy.",
                "short",
                [Query(promql.recorded(kv_cache_rules.WAITING_BY_REASON, MODEL_FILTERS), "{{reason}} {{model_name}}")],
                width=8,
                stacked=True,
            ),
            timeseries(
                "Queue growth",
                f"Slope of the waiting queue over {cfg.intervals.rate}, requests per second. Positive for "
                "long means demand exceeds capacity.",
                "short",
                [Query(promql.recorded(kv_cache_rules.queue_growth(cfg), ENGINE_FILTERS), _WHO_ENGINE)],
                width=8,
                min_val=None,
            ),
        ],
    )


def _phases(cfg: Config) -> Section:
    """Where a model's request time goes; a click on a series opens that model's request traces,
    whose spans break each request down into the same stages."""
    panels = [
        timeseries(
            f"{title} latency",
            f"{title} p50/p95/p99 per model, from vLLM's histogram over {cfg.intervals.rate}." + trace_links.hint(cfg),
            "s",
            model_quantiles(cfg, metric, conventions.QUANTILES),
            width=8,
            links=trace_links.links(cfg, ("model_name",), "series"),
        )
        for metric, title in kv_cache_rules.PHASE_HISTOGRAMS
    ]
    return Section("Request phases", panels)


def _batch(cfg: Config) -> Section:
    return Section(
        "Batch and admission",
        [
            timeseries(
                "Batch fill (tokens per step)",
                "Tokens processed per engine step (prefill and decode together): the mean per server, and "
                "p50/p95 per model over every step of its engines.",
                "short",
                [
                    Query(promql.recorded(kv_cache_rules.batch_mean(cfg), INSTANCE_FILTERS), "mean " + _WHO),
                    *(
                        Query(
                            promql.recorded(
                                conventions.quantile(cfg, kv_cache_rules.BATCH_TOKENS, "model", qv), MODEL_FILTERS
                            ),
                            f"p{round(qv * 100)} {{{{model_name}}}}",
                        )
                        for qv in kv_cache_rules.BATCH_QUANTILES
                    ),
                ],
                width=8,
            ),
            timeseries(
                "Engine steps per second",
                f"Scheduler steps per second per server over {cfg.intervals.rate}, from the count of vLLM's "
                "tokens-per-step histogram. Steps times batch fill is the token rate.",
                "short",
                [Query(promql.recorded(kv_cache_rules.engine_steps(cfg), INSTANCE_FILTERS), _WHO)],
                width=8,
            ),
            timeseries(
                "Admission rejections",
                "Requests refused at admission, per model, because a queue limit (requests or tokens) was reached.",
                "reqps",
                [Query(promql.recorded(kv_cache_rules.rejections(cfg), MODEL_FILTERS), "{{reason}} {{model_name}}")],
                width=8,
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    board = render(
        cfg,
        name="vllm-kv-cache",
        title="vLLM / KV cache and scheduler",
        description="KV-cache pressure, prefix caching, preemptions and queueing of vLLM engines (infersight).",
        variables_from=serving_rules.KV_USAGE_ENGINE,
        variable_labels=VARIABLES,
        sections=[
            _usage(cfg),
            _prefix(cfg),
            _residency(cfg),
            *kv_connectors.sections(cfg),
            _preemptions(cfg),
            _queue(cfg),
            _phases(cfg),
            _batch(cfg),
            _configuration(cfg),
        ],
    )
    return {FILE: board}
