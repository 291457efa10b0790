"""KV-cache and scheduler alerts: saturation, sustained preemptions, queue build-up,
prefix-cache hit collapse and KV-cache thrash."""

from __future__ import annotations

from infersight import conventions
from infersight.alerts.common import collapse, num, on, tuned_alert
from infersight.config import Config
from infersight.recording_rules import kv_cache as kv_rules
from infersight.recording_rules import serving as serving_rules
from infersight.rules import Alert, RuleGroup

SATURATED = "InfersightVLLMKVCacheSaturated"
PREEMPTIONS = "InfersightVLLMPreemptionsSustained"
QUEUE_BUILD_UP = "InfersightVLLMQueueBuildUp"
PREFIX_COLLAPSE = "InfersightVLLMPrefixCacheHitCollapse"
THRASH = "InfersightVLLMKVCacheThrash"


def _saturation(cfg: Config) -> Alert:
    a = cfg.kv_cache.alerts.saturation
    expr = (
        # Averaged over the window so the dip right after a preemption does not reset the alert.
        f"{kv_rules.usage_avg(cfg)} > {num(a.usage_threshold)}\nand {on(conventions.ENGINE)}\n(\n"
        f"  {kv_rules.engine_preemptions(cfg)} > {num(a.preemptions_per_second)}\n  or {on(conventions.ENGINE)}\n"
        f"  {kv_rules.queue_growth(cfg)} > {num(a.queue_growth_per_second)}\n)"
    )
    return tuned_alert(
        cfg,
        "kv_cache",
        SATURATED,
        a,
        expr,
        "A vLLM engine's KV cache is full and requests suffer for it.",
        "The KV cache of {{ $labels.model_name }} engine {{ $labels.engine }} on {{ $labels.instance }} averaged "
        f"{{{{ $value | humanizePercentage }}}} full over {cfg.scaled(cfg.intervals.rate)} (threshold "
        f"{num(a.usage_threshold * 100)}%) while requests were preempted or the waiting queue grew.",
    )


def _preemptions(cfg: Config) -> Alert:
    a = cfg.kv_cache.alerts.preemptions
    return tuned_alert(
        cfg,
        "kv_cache",
        PREEMPTIONS,
        a,
        f"{serving_rules.preemptions(cfg)} > {num(a.per_second)}",
        "A vLLM server keeps preempting requests.",
        "{{ $labels.model_name }} on {{ $labels.instance }} preempts requests "
        '{{ $value | printf "%.2f" }} times per second '
        f"(threshold {num(a.per_second)}/s): preempted requests lose their KV blocks and are recomputed.",
    )


def _queue_build_up(cfg: Config) -> Alert:
    a = cfg.kv_cache.alerts.queue_build_up
    return tuned_alert(
        cfg,
        "kv_cache",
        QUEUE_BUILD_UP,
        a,
        f"{conventions.quantile(cfg, kv_rules.QUEUE_TIME, 'instance', 0.95)} > {num(a.p95_seconds)}",
        "Requests wait too long in a vLLM queue before they are scheduled.",
        "95% of {{ $labels.model_name }} requests on {{ $labels.instance }} waited up to "
        f"{{{{ $value | humanizeDuration }}}} in the queue (threshold {num(a.p95_seconds)}s). {_WAITING_NOW}",
    )


# Why requests wait, read when the alert is sent: "capacity" waits for KV blocks or batch slots
# (scale out, relieve the KV cache), "deferred" is held back by the LoRA budget, a KV transfer or a
# blocked status (more replicas do not help it). vLLM before 0.20 has no breakdown.
_WAITING_NOW = (
    '{{ with printf "sum by (reason) (vllm:num_requests_waiting_by_reason{job=%q, instance=%q, model_name=%q})" '
    '$labels.job $labels.instance $labels.model_name | query | sortByLabel "reason" }}Waiting now: '
    '{{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ $s.Labels.reason }} {{ $s.Value | printf "%.0f" }}{{ end }}.'
    "{{ else }}No breakdown of the waiting requests by reason (vLLM before 0.20).{{ end }}"
)


def _prefix_collapse(cfg: Config) -> Alert:
    a = cfg.kv_cache.alerts.prefix_collapse
    baseline = f"({kv_rules.prefix_hit_ratio(a.baseline_window)} offset {cfg.scaled(a.baseline_offset)})"
    current = kv_rules.prefix_hit_ratio(cfg.intervals.rate)
    expr = collapse(
        current,
        baseline,
        conventions.INSTANCE,
        a.drop_fraction,
        a.min_baseline_ratio,
        kv_rules.prefix_queries(cfg),
        a.min_queries_per_second,
    )
    return tuned_alert(
        cfg,
        "kv_cache",
        PREFIX_COLLAPSE,
        a,
        expr,
        "A vLLM server's prefix-cache hit ratio collapsed against its own baseline.",
        "The prefix-cache hit ratio of {{ $labels.model_name }} on {{ $labels.instance }} fell to "
        f"{{{{ $value | humanizePercentage }}}}, under {num((1 - a.drop_fraction) * 100)}% of its ratio over "
        f"{cfg.scaled(a.baseline_window)} ending {cfg.scaled(a.baseline_offset)} ago.",
    )


def _thrash(cfg: Config) -> Alert:
    a = cfg.kv_cache.alerts.thrash
    expr = (
        f"{kv_rules.usage_stddev(cfg)} > {num(a.usage_stddev)}\nand {on(conventions.ENGINE)}\n"
        f"{kv_rules.engine_preemptions(cfg)} > {num(a.preemptions_per_second)}"
    )
    return tuned_alert(
        cfg,
        "kv_cache",
        THRASH,
        a,
        expr,
        "A vLLM engine's KV cache is thrashing: usage swings while requests are preempted.",
        "KV usage of {{ $labels.model_name }} engine {{ $labels.engine }} on {{ $labels.instance }} swings with "
        f"a standard deviation of {{{{ $value | humanizePercentage }}}} over {cfg.scaled(a.window)} (threshold "
        f"{num(a.usage_stddev * 100)}%) while requests are preempted.",
    )


def groups(cfg: Config) -> list[RuleGroup]:
    a = cfg.kv_cache.alerts
    table = (
        (a.saturation, _saturation),
        (a.preemptions, _preemptions),
        (a.queue_build_up, _queue_build_up),
        (a.prefix_collapse, _prefix_collapse),
        (a.thrash, _thrash),
    )
    alerts = tuple(make(cfg) for rule, make in table if rule.enabled)
    return [RuleGroup("infersight-kv-cache.alerts", cfg.scaled(cfg.intervals.evaluation), alerts)]
