"""KV-cache and scheduler recording rules: cache usage, prefix-cache hits, preemptions,
queueing, request phases, batch fill and admission rejections.

Rates use ``intervals.rate``, like the serving pack; the per-engine KV usage, per-instance
preemption rate and queue depth that pack already records are read from it, not recorded
twice. Names carry nominal windows (``rate5m``) even in a time-scaled profile.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.config import Config
from infersight.conventions import ENGINE, INSTANCE, MODEL, QUANTILES
from infersight.durations import Duration
from infersight.recording_rules import kv_connectors
from infersight.recording_rules import serving as serving_rules
from infersight.recording_rules.histograms import quantile_rules
from infersight.recording_rules.ratios import counter_ratio, positive
from infersight.rules import RecordingRule, RuleGroup

KV_USAGE = "vllm:kv_cache_usage_perc"

# Request-phase histograms: (catalog name, title used by the dashboard).
PHASE_HISTOGRAMS = (
    ("vllm:request_queue_time_seconds", "Queue time"),
    ("vllm:request_prefill_time_seconds", "Prefill time"),
    ("vllm:request_decode_time_seconds", "Decode time"),
)
QUEUE_TIME = PHASE_HISTOGRAMS[0][0]
BATCH_TOKENS = "vllm:iteration_tokens_total"  # a histogram despite the _total
BATCH_QUANTILES = (0.5, 0.95)


def usage_quantile(qv: float) -> str:
    return conventions.record_name("model", "vllm:kv_cache_usage", conventions.percent(qv))


USAGE_MAX = conventions.record_name("model", "vllm:kv_cache_usage", "max")
# The mean and the emptiest engine per model, beside the percentiles (vLLM's own panels draw both).
USAGE_MEAN = conventions.record_name("model", "vllm:kv_cache_usage", "avg")
USAGE_MIN = conventions.record_name("model", "vllm:kv_cache_usage", "min")
# Per model and reason: a per-instance split by reason would double the instance's series.
WAITING_BY_REASON = conventions.record_name("model", "vllm:num_requests_waiting_by_reason", "sum")
# KV block residency (--kv-cache-metrics): sampled blocks' lifetime, idle time before eviction and
# the gap between reuses. Model quantiles only: a handful of series, and none without the flag.
RESIDENCY_HISTOGRAMS = (
    ("vllm:kv_block_lifetime_seconds", "Block lifetime"),
    ("vllm:kv_block_idle_before_evict_seconds", "Idle before eviction"),
    ("vllm:kv_block_reuse_gap_seconds", "Reuse gap"),
)
RESIDENCY_QUANTILES = (0.5, 0.95)


# Per-engine views: the alerts' usage average and preemption rate are PromQL over the raw series
# (one series per engine either way, read once per evaluation). The oscillation and the queue's
# slope are recorded: their long windows made the dashboard's per-engine panels read every raw
# sample of the window at every step, which timed out over 6 h at 1,000 engines (docs/scale.md).
def usage_avg(cfg: Config) -> str:
    """KV usage averaged over ``intervals.rate``, per engine."""
    return _usage_over_time(cfg, "avg_over_time", cfg.intervals.rate)


def usage_stddev(cfg: Config) -> str:
    """Recorded: KV usage's standard deviation over the thrash window, per engine."""
    return conventions.record_name("engine", "vllm:kv_cache_usage", f"stddev{cfg.kv_cache.alerts.thrash.window}")


def engine_preemptions(cfg: Config) -> str:
    """Preemptions per second per engine, over the scaled ``intervals.rate``."""
    w = cfg.scaled(cfg.intervals.rate)
    return promql.sum_by(ENGINE, promql.rate("vllm:num_preemptions_total", w, cfg.selectors.vllm))


def preemptions_per_request(cfg: Config) -> str:
    return conventions.record_name("instance", "vllm:request_num_preemptions", "mean_" + conventions.op_rate(cfg))


def queue_growth(cfg: Config) -> str:
    """Recorded: slope of the waiting queue over ``intervals.rate``, requests per second, per engine."""
    return conventions.record_name("engine", "vllm:num_requests_waiting", f"deriv{cfg.intervals.rate}")


def _engine_rules(cfg: Config) -> list[RecordingRule]:
    waiting = promql.range_fn("deriv", "vllm:num_requests_waiting", cfg.scaled(cfg.intervals.rate), cfg.selectors.vllm)
    return [
        RecordingRule(usage_stddev(cfg), _usage_over_time(cfg, "stddev_over_time", cfg.kv_cache.alerts.thrash.window)),
        RecordingRule(queue_growth(cfg), promql.sum_by(ENGINE, waiting)),
    ]


def prefix_queries(cfg: Config) -> str:
    """Prompt tokens per second looked up in the prefix cache."""
    return conventions.record_name("instance", "vllm:prefix_cache_queries", conventions.op_rate(cfg))


def prefix_hit_ratio(window: Duration, level: str = "instance") -> str:
    return conventions.record_name(level, "vllm:prefix_cache_hits", f"ratio_rate{window}")


def batch_mean(cfg: Config) -> str:
    return conventions.record_name("instance", "vllm:iteration_tokens", "mean_" + conventions.op_rate(cfg))


def engine_steps(cfg: Config) -> str:
    """Scheduler steps per second per server: the count of the tokens-per-step histogram."""
    return conventions.record_name("instance", "vllm:engine_steps", conventions.op_rate(cfg))


# KV-cache configuration labels of vllm:cache_config_info (which carries no model_name).
CACHE_CONFIG_LABELS = ("block_size", "num_gpu_blocks", "enable_prefix_caching", "cache_dtype")
# Engines per model in each sleep state; only the state an engine is in (the one-hot 1). Per model,
# not per server: the panel draws models, and per server it was a series per engine at fleet size.
SLEEP_STATE_ENGINES = "model:vllm_engines_by_sleep_state:count"


def rejections(cfg: Config) -> str:
    """Per model and reason (rejected before reaching an engine)."""
    return conventions.record_name("model", "vllm:admission_rejections", conventions.op_rate(cfg))


def _usage_over_time(cfg: Config, fn: str, window: Duration) -> str:
    return promql.agg("max", ENGINE, promql.range_fn(fn, KV_USAGE, cfg.scaled(window), cfg.selectors.vllm))


def _usage_rules(cfg: Config) -> list[RecordingRule]:
    rules = [
        RecordingRule(usage_quantile(qv), f"quantile by ({', '.join(MODEL)}) ({qv}, {serving_rules.KV_USAGE_ENGINE})")
        for qv in cfg.kv_cache.fleet_quantiles
    ]
    rules += [
        RecordingRule(USAGE_MAX, promql.agg("max", MODEL, serving_rules.KV_USAGE_ENGINE)),
        RecordingRule(USAGE_MEAN, promql.agg("avg", MODEL, serving_rules.KV_USAGE_ENGINE)),
        RecordingRule(USAGE_MIN, promql.agg("min", MODEL, serving_rules.KV_USAGE_ENGINE)),
    ]
    return rules


def _scheduler_rules(cfg: Config) -> list[RecordingRule]:
    sel = cfg.selectors.vllm
    w = cfg.scaled(cfg.intervals.rate)
    per_request = "vllm:request_num_preemptions"
    return [
        # Both counted when a request finishes, so the ratio is preemptions per finished request.
        RecordingRule(
            preemptions_per_request(cfg),
            promql.ratio(
                promql.sum_by(INSTANCE, promql.rate(per_request, w, sel, "_sum")),
                promql.sum_by(INSTANCE, promql.rate(per_request, w, sel, "_count")),
            ),
        ),
        RecordingRule(
            WAITING_BY_REASON,
            promql.sum_by((*MODEL, "reason"), promql.series("vllm:num_requests_waiting_by_reason", sel)),
        ),
        RecordingRule(engine_steps(cfg), promql.sum_by(INSTANCE, promql.rate(BATCH_TOKENS, w, sel, "_count"))),
        # Over the steps just recorded: one rate of the count, not two. No mean while nothing runs.
        RecordingRule(
            batch_mean(cfg),
            promql.ratio(
                promql.sum_by(INSTANCE, promql.rate(BATCH_TOKENS, w, sel, "_sum")), positive(engine_steps(cfg))
            ),
        ),
        RecordingRule(
            SLEEP_STATE_ENGINES,
            promql.agg("count", (*MODEL, "sleep_state"), f"{promql.series('vllm:engine_sleep_state', sel)} == 1"),
        ),
        # Rejected before reaching an engine: the series carry model_name and reason, no engine.
        RecordingRule(
            rejections(cfg),
            promql.sum_by((*MODEL, "reason"), promql.rate("vllm:admission_rejections_total", w, sel)),
        ),
    ]


def _prefix_rules(cfg: Config) -> list[RecordingRule]:
    """Hit ratio = rate of hit tokens / rate of queried tokens; never a ratio of the
    cumulative counters, which would average over the whole process lifetime."""
    sel = cfg.selectors.vllm
    queries = prefix_queries(cfg)
    w = cfg.scaled(cfg.intervals.rate)
    hits = promql.rate("vllm:prefix_cache_hits_total", w, sel)
    rules = [
        RecordingRule(queries, promql.sum_by(INSTANCE, promql.rate("vllm:prefix_cache_queries_total", w, sel))),
        # Hits are not recorded apart: queries x ratio gives them back. No ratio while nothing is looked up.
        RecordingRule(
            prefix_hit_ratio(cfg.intervals.rate), promql.ratio(promql.sum_by(INSTANCE, hits), positive(queries))
        ),
        RecordingRule(
            prefix_hit_ratio(cfg.intervals.rate, "model"),
            promql.ratio(promql.sum_by(MODEL, hits), positive(promql.sum_by(MODEL, queries))),
        ),
    ]
    baseline = cfg.kv_cache.alerts.prefix_collapse.baseline_window
    if baseline != cfg.intervals.rate:
        rules.append(
            counter_ratio(
                cfg,
                prefix_hit_ratio(baseline),
                "vllm:prefix_cache_hits_total",
                "vllm:prefix_cache_queries_total",
                baseline,
                INSTANCE,
            )
        )
    return rules


def cached_prompt_ratio(cfg: Config) -> str:
    """Per model, the share of prompt tokens whose prefill was skipped: cached locally or loaded by a
    KV connector."""
    return conventions.record_name("model", "vllm:prompt_tokens_cached", "ratio_" + conventions.op_rate(cfg))


def prompt_tokens_by_source(cfg: Config) -> str:
    """Prompt tokens per second per model by source: computed, local cache hit, external KV transfer."""
    return conventions.record_name("model", "vllm:prompt_tokens_by_source", conventions.op_rate(cfg))


def cached_prompt_tokens_by_tier(cfg: Config) -> str:
    """Cached prompt tokens per second per model by the tier that supplied them (device, host, ...)."""
    return conventions.record_name("model", "vllm:prompt_tokens_cached_by_source", conventions.op_rate(cfg))


def _cached_prompt_rules(cfg: Config) -> list[RecordingRule]:
    """vLLM's own split (0.32): the hit ratio stays prefix hits over lookups (the alert's); the share
    of prompt tokens that skipped prefill adds what a KV connector loaded."""
    rules = [
        counter_ratio(
            cfg,
            cached_prompt_ratio(cfg),
            "vllm:prompt_tokens_cached_total",
            "vllm:prompt_tokens_total",
            cfg.intervals.rate,
            MODEL,
        )
    ]
    sel, w = cfg.selectors.vllm, cfg.scaled(cfg.intervals.rate)
    rules += [
        RecordingRule(name, promql.sum_by((*MODEL, "source"), promql.rate(metric, w, sel)))
        for name, metric in (
            (prompt_tokens_by_source(cfg), "vllm:prompt_tokens_by_source_total"),
            (cached_prompt_tokens_by_tier(cfg), "vllm:prompt_tokens_cached_by_source_total"),
        )
    ]
    return rules


def _phase_group_name(metric: str) -> str:
    """vllm:request_queue_time_seconds -> infersight-kv-cache-queue-time"""
    phase = metric.removeprefix("vllm:request_").removesuffix("_seconds").replace("_", "-")
    return f"infersight-kv-cache-{phase}"


def groups(cfg: Config) -> list[RuleGroup]:
    """One group for usage, scheduler and prefix cache, then one each for prompt-token sources, KV
    block residency, KV connectors (transfer and offload), batch fill and every request-phase
    histogram: each within a Mimir ruler's 20 rules per group; no rule reads a later group of this
    pack."""
    interval = cfg.scaled(cfg.intervals.evaluation)
    rules = [*_usage_rules(cfg), *_engine_rules(cfg), *_scheduler_rules(cfg), *_prefix_rules(cfg)]
    out = conventions.split_groups("infersight-kv-cache", interval, rules)
    out += conventions.split_groups("infersight-kv-cache-prompt-sources", interval, _cached_prompt_rules(cfg))
    residency = [r for metric, _ in RESIDENCY_HISTOGRAMS for r in quantile_rules(cfg, metric, RESIDENCY_QUANTILES)]
    out += conventions.split_groups("infersight-kv-cache-residency", interval, residency)
    out += conventions.split_groups("infersight-kv-cache-transfer", interval, kv_connectors.rules(cfg))
    out += conventions.split_groups(
        "infersight-kv-cache-batch", interval, quantile_rules(cfg, BATCH_TOKENS, BATCH_QUANTILES)
    )
    for metric, _ in PHASE_HISTOGRAMS:
        # The queue-build-up alert reads each instance's queue-time p95.
        per_instance = (0.95,) if metric == QUEUE_TIME else ()
        out += conventions.split_groups(
            _phase_group_name(metric), interval, quantile_rules(cfg, metric, QUANTILES, per_instance)
        )
    return out
