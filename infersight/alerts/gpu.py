"""GPU alerts: memory leak and predicted OOM, hardware health (XID, ECC, throttling,
temperature), a lost GPU, bandwidth saturation with KV thrash, idle GPUs under a queue, and
telemetry (an exporter down, or a GPU without a field the pack needs).

Alerts about "the engines on this GPU" join on ``infersight_workload`` (see
:mod:`infersight.recording_rules.gpu`). A GPU no vLLM engine maps to is judged on its own
series: nothing suppresses its leak or OOM alerts, and the load-dependent alerts stay quiet.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.alerts.common import num, on, tuned_alert
from infersight.config import Config
from infersight.durations import Duration
from infersight.recording_rules import gpu as gpu_rules
from infersight.rules import Alert, RuleGroup

LEAK = "InfersightGPUMemoryLeak"
PREDICTED_OOM = "InfersightGPUPredictedOOM"
XID = "InfersightGPUXidError"
ECC = "InfersightGPUEccDoubleBitError"
THROTTLING = "InfersightGPUThrottling"
TEMPERATURE = "InfersightGPUTemperatureHigh"
BANDWIDTH = "InfersightGPUBandwidthKVThrash"
IDLE = "InfersightGPUIdleWithQueuedRequests"
TELEMETRY = "InfersightGPUTelemetryDown"
LOST = "InfersightGPULost"
FIELD_MISSING = "InfersightGPUFieldMissing"
COVERAGE_EVALUATION = Duration.parse("5m")

_BY_WORKLOAD = on((gpu_rules.WORKLOAD_LABEL,))
# Names one GPU in descriptions, whichever exporter generation wrote it (Hostname is normalised).
_GPU = "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on {{ $labels.Hostname }}"


def _warming_up(cfg: Config) -> str:
    """Join keys whose newest engine started less than gpu.warmup ago."""
    return f"{gpu_rules.workload_uptime(cfg)} < {num(cfg.scaled(cfg.gpu.warmup).total_seconds)}"


def _leak(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.memory_leak
    window = cfg.scaled(a.window)
    # Restarts and warm-ups are steps: a step lifts the trend for at most one window, a restart's
    # fall turns it negative (resetting for:) and its re-allocation then lifts it for about half a
    # window; for: outlasts both (the config insists). A slow warm-up creep is what the engines'
    # start time is for. Why these defaults: config.gpu.GPULeakAlert.
    growth_mib = f"{gpu_rules.fb_used_trend(cfg, raw=True)} * {num(window.total_seconds)} / {gpu_rules.MIB}"

    # Load is compared window against window (means, not points), so noise in a light load does
    # not read as a rise.
    def mean(name: str, shift: str = "") -> str:
        return f"avg_over_time({name}[{window}]{shift})"

    before = f" offset {window}"
    requests, kv_usage = gpu_rules.workload_requests(cfg), gpu_rules.WORKLOAD_KV_USAGE
    load_rising = (
        f"  {mean(requests)} > {num(1 + a.request_rate_rise)} * {mean(requests, before)}\n"
        f"  or\n  {mean(kv_usage)} > {mean(kv_usage, before)} + {num(a.kv_usage_rise)}\n"
        f"  or\n  {_warming_up(cfg)}"
    )
    # Filtered before it is normalised: only growing GPUs pay for the label_replace chain.
    growing = gpu_rules.normalise(cfg, f"{growth_mib} > {num(a.growth_mib)}")
    expr = f"{growing}\nunless {_BY_WORKLOAD}\n(\n{load_rising}\n)"
    return tuned_alert(
        cfg,
        "gpu",
        LEAK,
        a,
        expr,
        "GPU memory keeps growing while the load on it is flat.",
        f'Used framebuffer of {_GPU} grew {{{{ $value | printf "%.0f" }}}} MiB per {window} (threshold '
        f"{num(a.growth_mib)} MiB) for {cfg.scaled(a.for_)} while the request rate and KV-cache "
        "usage of its engines ({{ $labels.infersight_workload }}) stayed flat: likely a memory leak.",
    )


def _predicted_oom(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.predicted_oom
    within = cfg.scaled(a.within).total_seconds
    expr = (  # the value is hours: a description that rounds them survives a scrape's jitter
        gpu_rules.normalise(
            cfg,
            f"(\n{gpu_rules.time_to_oom(cfg, raw=True)}\n) / 3600 < {num(within / 3600)}\nand\n"
            + gpu_rules.over_time(cfg, "predict_linear", gpu_rules.FB_FREE, a.short_window, args=num(within), raw=True)
            + " < 0",
        )
        + f"\nunless {_BY_WORKLOAD}\n{_warming_up(cfg)}"
    )
    return tuned_alert(
        cfg,
        "gpu",
        PREDICTED_OOM,
        a,
        expr,
        "A GPU is predicted to run out of memory.",
        f"At the trend of the last {cfg.scaled(a.long_window)} "
        f"(the last {cfg.scaled(a.short_window)} agree), {_GPU} runs "
        f'out of free framebuffer in about {{{{ $value | printf "%.1f" }}}}h (alert horizon {cfg.scaled(a.within)}).',
    )


def _xid(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.xid
    w = cfg.scaled(a.window)
    # The gauge holds the last XID until the driver reloads, so only a change is news: within the
    # series, or against what the GPU (or MIG instance) reported a window ago. That comparison is
    # by device, not by series, because dcgm-exporter labels a GPU's series with the pod holding
    # it: a replaced pod is a new series carrying the old code (not news), and an XID that ends the
    # pod may first show on the next pod's series (news). Newer exporters also put the code in an
    # err_code label, so a code the device did not have is news too. The last clause keeps a code
    # that was already there when monitoring began from counting as new.
    sel = cfg.selectors.dcgm
    xid, before = gpu_rules.dcgm(cfg, gpu_rules.XID.metric), promql.offset(gpu_rules.XID.metric, w, sel)
    changed = promql.range_fn("changes", gpu_rules.XID.metric, w, sel)
    code = (*gpu_rules.DEVICE, "err_code")
    expr = gpu_rules.normalise(
        cfg,
        f"(\n  ({xid} > 0 and {changed} > 0)\n  or\n  ({xid} > 0 unless {on(code)} {before})\n  or\n"
        f"  (({xid} > 0) != {on(code)} group_left {promql.agg('max', code, before)})\n)\n"
        f"and {on(gpu_rules.DEVICE)}\n{before}",
    )
    return tuned_alert(
        cfg,
        "gpu",
        XID,
        a,
        expr,
        "A GPU reported a new XID error.",
        f"{_GPU} reported XID {{{{ $value }}}} within the last {w}. See NVIDIA's XID catalogue: "
        "48, 63, 64, 74, 79, 92, 94, 95 and 119 point at hardware; 13, 31 and 43 usually at the application.",
    )


def _ecc(cfg: Config) -> Alert:
    """Errors recorded at any time in the window: the recording is sparse (see
    :func:`gpu_rules.uncorrectable_errors`), so holding it costs nothing on a healthy fleet."""
    a = cfg.gpu.alerts.ecc_double_bit
    w = cfg.scaled(a.window)
    held = f"max_over_time({promql.recorded(gpu_rules.gpu_uncorrectable(cfg))}[{w}])"
    return tuned_alert(
        cfg,
        "gpu",
        ECC,
        a,
        gpu_rules.normalise(cfg, held),
        "A GPU had uncorrectable (double-bit) memory errors.",
        f"{_GPU} had uncorrectable ECC errors or remapped rows in the last {w} "
        f'(up to {{{{ $value | printf "%.0f" }}}} within {cfg.scaled(cfg.intervals.rate)}): '
        "data in its memory may be corrupt.",
    )


def _lost(cfg: Config) -> Alert:
    """A GPU (by UUID) seen within the window but no longer reported, while its exporter answers.

    A GPU that falls off the bus (XID 79) or needs a reset drops out of NVML and DCGM, so its
    series go stale. The exporter answering rules out a failed scrape (the telemetry alert's case),
    and matching on UUID alone keeps a GPU whose pod labels changed, or whose exporter moved, from
    counting as lost. The labels are the GPU's last, pod included, so inhibition finds its engines."""
    a = cfg.gpu.alerts.lost
    expr = (
        gpu_rules.normalise(
            cfg,
            gpu_rules.over_time(cfg, "last_over_time", gpu_rules.FB_USED, a.window, raw=True)
            + f"\nunless on (UUID)\n{gpu_rules.dcgm(cfg, gpu_rules.FB_USED.metric)}",
        )
        + f"\nand on (job, instance)\n{promql.series('up', cfg.selectors.dcgm)} == 1"
    )
    return tuned_alert(
        cfg,
        "gpu",
        LOST,
        a,
        expr,
        "A GPU stopped reporting while its exporter still answers.",
        f"{_GPU} was reported within the last {cfg.scaled(a.window)} but is gone from dcgm-exporter "
        "{{ $labels.instance }}, which still answers: the GPU fell off the bus (XID 79) or needs a reset, "
        "and the engines on it have lost it.",
    )


def _field_missing(cfg: Config) -> Alert:
    """One alert per GPU and missing field: a GPU that reports used memory (so its exporter is
    up and sees it) but not the field. Matching on UUID alone accepts the field from any exporter
    generation or scrape of that GPU, and a MIG instance finds its parent GPU's fields. The value
    is not shown, so the raw MiB series serves as it is (no unit conversion on every GPU, 13 times)."""
    a = cfg.gpu.alerts.field_missing
    missing = gpu_rules.normalise(
        cfg,
        "\nor\n".join(
            gpu_rules.label_replace(
                f"{gpu_rules.dcgm(cfg, gpu_rules.FB_USED.metric)} unless on (UUID) {gpu_rules.dcgm(cfg, field)}",
                "field",
                field,
                "",
                "",
            )
            for field in a.fields
        ),
    )
    return tuned_alert(
        cfg,
        "gpu",
        FIELD_MISSING,
        a,
        missing,
        "A GPU reports memory but not a DCGM field the GPU alerts need.",
        f"{_GPU} reports DCGM_FI_DEV_FB_USED but not {{{{ $labels.field }}}} (for {cfg.scaled(a.for_)}): "
        "the alerts that read it cannot fire on this GPU. Its dcgm-exporter counters file leaves the field "
        "out (NVIDIA's default one does for the ECC counters and clock-event reasons): deploy the bundle's "
        "deploy/dcgm-exporter/dcgm-metrics.csv (README: Enabling every DCGM field the bundle reads), or drop "
        "the field from gpu.alerts.field_missing.fields if this GPU cannot report it.",
    )


def _throttling(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.throttling
    w = cfg.scaled(a.window)
    ratios = {reason: a.thermal_ratio if reason == "thermal" else a.power_ratio for reason in gpu_rules.THROTTLE_BITS}
    # Evaluations throttled over evaluations seen, both counted in the same group's samples: a
    # missed evaluation leaves the share true, and a window of 21 samples cannot read 105 %.
    # max: a ruler that reads several Prometheus servers (Thanos, Mimir) sees one counter each,
    # and scalar() of more than one series is NaN, which would silence the alert.
    evaluations = f"scalar(max(count_over_time({gpu_rules.THROTTLE_EVALUATIONS}[{w}])))"

    def share(reason: str) -> str:
        throttled = promql.recorded(gpu_rules.GPU_THROTTLED, [f'reason="{reason}"'])
        return f"count_over_time({throttled}[{w}])\n/ {evaluations}"

    # The power-cap share counts only GPUs under a lowered power limit: the recording holds no other.
    expr = gpu_rules.normalise(
        cfg, "\nor\n".join(f"{share(reason)} > {num(ratio)}" for reason, ratio in ratios.items())
    )
    return tuned_alert(
        cfg,
        "gpu",
        THROTTLING,
        a,
        expr,
        "A GPU is clock-throttled for thermal or power reasons.",
        f"{_GPU} had its clocks held down ({{{{ $labels.reason }}}}) in "
        f"{{{{ $value | humanizePercentage }}}} of the last {w} (thresholds: thermal "
        f"{num(a.thermal_ratio * 100)}%, power {num(a.power_ratio * 100)}%; a power cap counts only under "
        f"a power limit below {num(a.lowered_limit_ratio * 100)}% of the GPU's default).",
    )


def _temperature(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.temperature
    return tuned_alert(
        cfg,
        "gpu",
        TEMPERATURE,
        a,
        gpu_rules.normalise(cfg, f"{gpu_rules.per_gpu(cfg, gpu_rules.TEMP, raw=True)} > {num(a.celsius)}"),
        "A GPU runs hot.",
        f"{_GPU} is at {{{{ $value }}}} °C (threshold {num(a.celsius)} °C); it will throttle near its slowdown "
        "temperature.",
    )


def _bandwidth(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.bandwidth_kv_thrash
    rate = cfg.scaled(cfg.intervals.rate)
    expr = (
        gpu_rules.normalise(
            cfg,
            gpu_rules.over_time(cfg, "avg_over_time", gpu_rules.MEM_COPY, cfg.intervals.rate, raw=True)
            + f" > {num(a.mem_copy_ratio)}",
        )
        + f"\nand {_BY_WORKLOAD}\n{gpu_rules.workload_preemptions(cfg)} > {num(a.preemptions_per_second)}"
    )
    return tuned_alert(
        cfg,
        "gpu",
        BANDWIDTH,
        a,
        expr,
        "A GPU's memory bandwidth is saturated while its engines preempt KV-cache blocks.",
        f"{_GPU} averaged {{{{ $value | humanizePercentage }}}} memory-copy utilization over {rate} (threshold "
        f"{num(a.mem_copy_ratio * 100)}%) while its engines ({{{{ $labels.infersight_workload }}}}) preempted "
        "requests: the KV cache is thrashing.",
    )


def _idle(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.idle_with_queue
    rate = cfg.scaled(cfg.intervals.rate)
    waiting = (
        f"{conventions.gauge_sum('vllm:num_requests_waiting')}\n"
        f"* on (job, instance) group_left ({gpu_rules.WORKLOAD_LABEL})\n"
        f"{gpu_rules.WORKLOAD_MAP}"
    )
    idle = gpu_rules.by_workload(
        cfg, "max", gpu_rules.over_time(cfg, "max_over_time", gpu_rules.UTIL, cfg.intervals.rate, raw=True)
    )
    expr = f"(\n{waiting}\n) >= {num(a.min_waiting)}\nand {_BY_WORKLOAD}\n{idle} < {num(a.util_ratio)}"
    return tuned_alert(
        cfg,
        "gpu",
        IDLE,
        a,
        expr,
        "Requests wait on a vLLM server whose GPUs are idle.",
        "{{ $value }} requests of {{ $labels.model_name }} wait on {{ $labels.instance }} while every GPU of "
        f"{{{{ $labels.infersight_workload }}}} stayed below {num(a.util_ratio * 100)}% utilization for {rate}: "
        "the scheduler is stuck or the engine lost its GPU.",
    )


def _telemetry(cfg: Config) -> Alert:
    a = cfg.gpu.alerts.telemetry_down
    return tuned_alert(
        cfg,
        "gpu",
        TELEMETRY,
        a,
        f"{promql.series('up', cfg.selectors.dcgm)} == 0",
        "A dcgm-exporter target cannot be scraped.",
        "dcgm-exporter {{ $labels.instance }} (job {{ $labels.job }}) has failed every scrape for "
        f"{cfg.scaled(a.for_)}: every GPU alert of its node is blind.",
    )


def groups(cfg: Config) -> list[RuleGroup]:
    a = cfg.gpu.alerts
    builders = (
        (a.xid, _xid),
        (a.ecc_double_bit, _ecc),
        (a.temperature, _temperature),
        (a.bandwidth_kv_thrash, _bandwidth),
        (a.idle_with_queue, _idle),
        (a.telemetry_down, _telemetry),
        (a.lost, _lost),
    )
    # Long windows and long for: (10 m to 45 m): at a 2 m interval they detect as fast, and at
    # 1,000 engines they were most of the GPU alerts' time (docs/scale.md).
    slow_builders = (
        (a.memory_leak, _leak),
        (a.predicted_oom, _predicted_oom),
        (a.throttling, _throttling),
    )
    alerts = tuple(build(cfg) for rule, build in builders if rule.enabled)
    slow = tuple(build(cfg) for rule, build in slow_builders if rule.enabled)
    out = [RuleGroup("infersight-gpu.alerts", cfg.scaled(cfg.intervals.evaluation), alerts)]
    if slow:
        out.append(RuleGroup("infersight-gpu-slow.alerts", cfg.scaled(cfg.intervals.slow_evaluation), slow))
    if a.field_missing.enabled:
        out.append(RuleGroup("infersight-gpu-coverage.alerts", coverage_interval(cfg), (_field_missing(cfg),)))
    return out


def coverage_interval(cfg: Config) -> Duration:
    """The field-coverage alert joins every GPU once per field, and what it finds (a counters file)
    changes only with a deploy: every COVERAGE_EVALUATION detects it within its for: (15 m) as
    surely as every 30 s. At 1,000 engines it was the third costliest GPU rule every 2 m
    (docs/scale.md)."""
    return cfg.scaled(max(cfg.intervals.slow_evaluation, COVERAGE_EVALUATION))
