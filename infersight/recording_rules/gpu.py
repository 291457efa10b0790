"""GPU recording rules: dcgm-exporter series in SI units, one host label, and a join key to vLLM.

Every GPU series is normalised the same way (:func:`normalise`):
- ``Hostname`` holds the host whichever label the exporter used (``gpu.join.gpu_host_labels``:
  dcgm-exporter releases say ``Hostname``, its main branch ``hostname``);
- ``infersight_workload`` is the join key: ``pod/<namespace>/<pod>`` when the GPU's pod labels are
  all set (Kubernetes), else ``host/<host>``.
The vLLM side gets the same key from its targets' ``up`` series (:data:`WORKLOAD_MAP`), so alerts
can ask about "the engines on this GPU" with ``on (infersight_workload)``.

Levels. Nothing is recorded per GPU: a GPU's raw series are already one series per GPU, and
copies of them would add about as many series as the fleet's GPUs expose (docs/scale.md). Alerts
and the per-node drill-down read the raw series through :func:`per_gpu`, which applies the same
normalisation and units. The exceptions have a series only while something is wrong:
:data:`GPU_THROTTLED` while a GPU is throttled, :func:`gpu_uncorrectable` while its
uncorrectable-error count rises. What is recorded is ``node`` (per ``Hostname``: the fleet view of the GPU
dashboard) and ``workload`` (the vLLM engines sharing a join key). DCGM reports memory in MiB,
clocks in MHz and utilization in percent; the expressions give bytes, hertz and 0-1 ratios.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infersight import conventions, promql
from infersight.config import Config
from infersight.durations import Duration
from infersight.recording_rules import serving as serving_rules
from infersight.rules import RecordingRule, RuleGroup

WORKLOAD_LABEL = "infersight_workload"
HOST_LABEL = "Hostname"
# One GPU, or one MIG instance of it: dcgm-exporter reports each instance as its own series.
# Across a pod's replacement (a new series, same device) these labels stay.
DEVICE = ("UUID", "GPU_I_ID")
_TMP = "infersight_tmp"  # scratch label, always removed again
MIB = 1048576
MHZ = 1000000

NODE = ("job", HOST_LABEL)


@dataclass(frozen=True)
class Field:
    """A dcgm-exporter field and the factor that turns it into SI units."""

    metric: str
    factor: str = ""  # e.g. "* 1048576"


FB_USED = Field("DCGM_FI_DEV_FB_USED", f"* {MIB}")
FB_FREE = Field("DCGM_FI_DEV_FB_FREE", f"* {MIB}")
UTIL = Field("DCGM_FI_DEV_GPU_UTIL", "/ 100")
MEM_COPY = Field("DCGM_FI_DEV_MEM_COPY_UTIL", "/ 100")
POWER = Field("DCGM_FI_DEV_POWER_USAGE")
TEMP = Field("DCGM_FI_DEV_GPU_TEMP")
MEMORY_TEMP = Field("DCGM_FI_DEV_MEMORY_TEMP")
SM_CLOCK = Field("DCGM_FI_DEV_SM_CLOCK", f"* {MHZ}")
MEM_CLOCK = Field("DCGM_FI_DEV_MEM_CLOCK", f"* {MHZ}")
XID = Field("DCGM_FI_DEV_XID_ERRORS")

# Per node: the fleet rows of the GPU dashboard.
NODE_GPUS = conventions.record_name("node", "dcgm_gpus", "count")
NODE_UTIL = conventions.record_name("node", "dcgm_gpu_util", "avg_ratio")
NODE_MEM_COPY = conventions.record_name("node", "dcgm_mem_copy_util", "max_ratio")
NODE_FB_USED = conventions.record_name("node", "dcgm_fb_used", "sum_bytes")
NODE_FB_TOTAL = conventions.record_name("node", "dcgm_fb_total", "sum_bytes")
NODE_POWER = conventions.record_name("node", "dcgm_power_usage", "sum_watts")
NODE_TEMP = conventions.record_name("node", "dcgm_gpu_temp", "max_celsius")
NODE_THROTTLED = conventions.record_name("node", "dcgm_clock_throttle", "count")  # GPUs, per reason
NODE_XID = conventions.record_name("node", "dcgm_xid_errors", "count")  # GPUs whose last XID is not 0

# Per GPU and reason, 1 and present only while the GPU is throttled for that reason, at every
# evaluation; THROTTLE_EVALUATIONS is 1 at each of the same evaluations. The throttling alert
# divides their sample counts over its window: the share of evaluations throttled. The subquery
# it replaces decoded every GPU's bitmask at every step of the window, every 2 m: at 1,000
# engines the costliest GPU rule (docs/scale.md). Series exist only for GPUs held down: a
# thermal or power-brake bit set, or the power-cap bit under a lowered power limit (a busy GPU at
# its default limit sits at its cap by design, so a busy fleet adds no series).
GPU_THROTTLED = conventions.record_name("gpu", "dcgm_clock_throttle", "active")
THROTTLE_EVALUATIONS = conventions.record_name("infersight", "dcgm_clock_throttle_evaluations", "count")

# DCGM_CLOCKS_EVENT_REASON_* bits per reason label: thermal = HW slowdown (0x8), SW thermal (0x20),
# HW thermal (0x40); power_brake = HW power brake (0x80, asserted by the chassis or PSU);
# power_cap = SW power cap (0x4): the GPU at its power limit, normal under full load at the default
# limit, so the alert counts it only under a lowered limit.
THROTTLE_BITS: dict[str, tuple[int, ...]] = {"thermal": (3, 5, 6), "power_brake": (7,), "power_cap": (2,)}
POWER_CAP_REASON = "power_cap"
ENFORCED_POWER_LIMIT = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
DEFAULT_POWER_LIMIT = "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF"

# The vLLM side: one series per (job, instance) carrying its join key, then per-key aggregates.
WORKLOAD_MAP = conventions.record_name("instance", "vllm_gpu_workload", "group")
WORKLOAD_KV_USAGE = conventions.record_name("workload", "vllm:kv_cache_usage", "max")


def node_leak_trend(cfg: Config) -> str:
    """The steepest used-framebuffer trend among a node's GPUs, bytes per second."""
    return conventions.record_name("node", "dcgm_fb_used_bytes", f"max_deriv{cfg.gpu.alerts.memory_leak.window}")


def node_time_to_oom(cfg: Config) -> str:
    """The soonest predicted OOM among a node's GPUs."""
    return conventions.record_name(
        "node", "dcgm_fb_time_to_oom_seconds", f"min_deriv{cfg.gpu.alerts.predicted_oom.long_window}"
    )


def node_ecc(cfg: Config) -> str:
    """ECC errors per second of a node's GPUs, per ``kind`` (see :data:`ECC_COUNTERS`)."""
    return conventions.record_name("node", "dcgm_ecc_errors", "sum_" + conventions.op_rate(cfg))


ECC_COUNTERS = (
    ("dbe", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
    ("sbe", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
    ("remapped_rows_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
)
# The counters the ECC alert reads (all but the corrected errors): data in memory may be corrupt.
UNCORRECTABLE_COUNTERS = tuple(metric for kind, metric in ECC_COUNTERS if kind != "sbe")
# How far back a device's count is compared when its series is new (its pod replaced).
ECC_RECENT = Duration.parse("10m")


def gpu_uncorrectable(cfg: Config) -> str:
    """Per GPU, the uncorrectable errors that appeared over ``intervals.rate``; see
    :func:`uncorrectable_errors`."""
    return conventions.record_name("gpu", "dcgm_uncorrectable_errors", f"increase{cfg.intervals.rate}")


def workload_requests(cfg: Config) -> str:
    return conventions.record_name("workload", "vllm:requests", conventions.op_rate(cfg))


def workload_preemptions(cfg: Config) -> str:
    """Preemptions per second per join key: an expression over the instance recording (not
    recorded again: the workloads are as many as the instances)."""
    return _per_workload("sum", serving_rules.preemptions(cfg))


def workload_uptime(cfg: Config) -> str:
    """Seconds since the newest engine of each join key started (an expression, not recorded)."""
    return _per_workload("min", f"(time() - {promql.series('process_start_time_seconds', cfg.selectors.vllm)})")


# --- label plumbing ---------------------------------------------------------------------------


def label_replace(expr: str, dst: str, replacement: str, src: str, regex: str) -> str:
    args = ", ".join(promql.quote(a) for a in (dst, replacement, src, regex))
    return f"label_replace({expr}, {args})"


def _drop(expr: str, label: str) -> str:
    return label_replace(expr, label, "", label, ".*")


def with_workload(expr: str, pod_labels: Sequence[str], host_label: str, host_regex: str) -> str:
    """Add ``infersight_workload``: ``host/<host>`` from ``host_label``, overridden by
    ``pod/<v1>/<v2>...`` when every pod label is non-empty."""
    out = label_replace(expr, WORKLOAD_LABEL, "host/$1", host_label, host_regex)
    sources = ", ".join(promql.quote(p) for p in pod_labels)
    joined = f"label_join({out}, {promql.quote(_TMP)}, {promql.quote('/')}, {sources})"
    every_part = "/".join(["[^/]+"] * len(pod_labels))
    out = label_replace(joined, WORKLOAD_LABEL, "pod/$1", _TMP, f"({every_part})")
    return _drop(out, _TMP)


def with_host(cfg: Config, expr: str) -> str:
    """``expr`` with ``Hostname`` set from the first non-empty host label (gpu.join.gpu_host_labels)."""
    out = expr
    for label in reversed(cfg.gpu.join.gpu_host_labels):  # applied last wins, so the first label goes last
        out = label_replace(out, _TMP, "$1", label, "(.+)")
    return _drop(label_replace(out, HOST_LABEL, "$1", _TMP, "(.*)"), _TMP)


def normalise(cfg: Config, expr: str) -> str:
    """A dcgm-exporter expression with ``Hostname`` set from the first non-empty host label, and
    its join key. The label set is otherwise kept (MIG instances stay apart).

    Eight label_replace calls per series are the costliest part of a GPU rule, so rules filter and
    aggregate the raw series first and normalise what is left (``raw=True`` below)."""
    join = cfg.gpu.join
    return with_workload(with_host(cfg, expr), [p.gpu for p in join.pod_labels], HOST_LABEL, join.host_regex)


def by_workload(cfg: Config, op: str, raw_expr: str) -> str:
    """``op`` of a raw per-GPU expression per join key. It aggregates by the labels the key is
    made of before it normalises, so the label work is per pod (or host), not per GPU: an
    engine's GPUs share a pod, and the idle alert reads every GPU every 30 s."""
    join = cfg.gpu.join
    parts = ("job", *join.gpu_host_labels, *(p.gpu for p in join.pod_labels))
    return promql.agg(op, (WORKLOAD_LABEL,), normalise(cfg, promql.agg(op, parts, raw_expr)))


def _maybe(cfg: Config, expr: str, raw: bool) -> str:
    return expr if raw else normalise(cfg, expr)


def dcgm(cfg: Config, metric: str, matchers: Sequence[str] = ()) -> str:
    """A raw dcgm-exporter selector (aliases joined) under the configured selector."""
    return promql.series(metric, [*cfg.selectors.dcgm, *matchers])


def host_matchers(cfg: Config, value: str) -> list[list[str]]:
    """One matcher list per configured host label, each selecting GPUs whose host matches
    ``value``: an exporter names the host in one of them, so a drill-down ORs the selections."""
    return [[promql.label_matcher(label, "=~", value)] for label in cfg.gpu.join.gpu_host_labels]


# --- per-GPU expressions (read by alerts and the drill-down; never recorded) -------------------


# Each gives one series per GPU (or MIG instance) in SI units, normalised; with ``raw=True`` it keeps
# the exporter's labels, for a rule that filters or aggregates before it normalises.


def per_gpu(cfg: Config, field: Field, matchers: Sequence[str] = (), raw: bool = False) -> str:
    return _maybe(cfg, f"{dcgm(cfg, field.metric, matchers)} {field.factor}".rstrip(), raw)


def fb_total(cfg: Config, matchers: Sequence[str] = (), raw: bool = False) -> str:
    """Total framebuffer in bytes when the exporter collects it, else used + free (+ reserved)."""
    used, free, reserved = (dcgm(cfg, f"DCGM_FI_DEV_FB_{k}", matchers) for k in ("USED", "FREE", "RESERVED"))
    total = dcgm(cfg, "DCGM_FI_DEV_FB_TOTAL", matchers)
    return _maybe(cfg, f"({total}\nor\n{used} + {free} + {reserved}\nor\n{used} + {free}) * {MIB}", raw)


def over_time(
    cfg: Config,
    fn: str,
    field: Field,
    window: Duration,
    matchers: Sequence[str] = (),
    args: str = "",
    raw: bool = False,
) -> str:
    """``fn(field[window], args)`` per GPU (e.g. deriv, avg_over_time), in SI units (per second for
    deriv). ``window`` is nominal; the time scale is applied here."""
    out = promql.range_fn(fn, field.metric, cfg.scaled(window), [*cfg.selectors.dcgm, *matchers], args=args)
    return _maybe(cfg, f"{out} {field.factor}".rstrip(), raw)


def fb_used_trend(cfg: Config, matchers: Sequence[str] = (), raw: bool = False) -> str:
    """Used framebuffer trend over the leak window, bytes per second."""
    return over_time(cfg, "deriv", FB_USED, cfg.gpu.alerts.memory_leak.window, matchers, raw=raw)


def time_to_oom(cfg: Config, matchers: Sequence[str] = (), raw: bool = False) -> str:
    """Seconds until free framebuffer reaches zero at the long-window trend (only while it falls)."""
    falling = over_time(cfg, "deriv", FB_FREE, cfg.gpu.alerts.predicted_oom.long_window, matchers, raw=True)
    return _maybe(cfg, f"{per_gpu(cfg, FB_FREE, matchers, raw=True)}\n/\n-(\n{falling}\n< 0)", raw)


def throttle(cfg: Config, matchers: Sequence[str] = ()) -> str:
    """1 while any bit of a reason is set, else 0, per GPU and ``reason`` label: the drill-down's
    view of a few GPUs (the fleet reads the sparse :func:`throttled`). PromQL has no bitwise
    operators: bit b of x is floor(x / 2^b) % 2."""
    mask = dcgm(cfg, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", matchers)
    parts = []
    for reason, bits in THROTTLE_BITS.items():
        any_bit = " + ".join(f"floor({mask} / {2**b}) % 2" for b in bits)
        parts.append(label_replace(f"clamp_max({any_bit}, 1)", "reason", reason, "", ""))
    return normalise(cfg, "(\n" + "\nor\n".join(parts) + "\n)")


def throttled(cfg: Config) -> str:
    """Per GPU and ``reason``, 1 only while a bit of the reason is set, and no series otherwise: what
    :data:`GPU_THROTTLED` records. The mask is first filtered to GPUs with a bit at or above the
    lowest throttling bit (the idle and clock-setting bits are below it): the arithmetic then
    runs only on GPUs that may be throttled. Each run of consecutive bits is
    one test (thermal: 0x8, 0x20-0x40), and each test reads the mask again:
    reading it costs more than the arithmetic on all GPUs (docs/scale.md). A power cap is recorded
    only under a lowered power limit (:func:`lowered_power_limit`)."""
    lowest = min(b for bits in THROTTLE_BITS.values() for b in bits)
    mask = f"({dcgm(cfg, 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS')} >= {2**lowest})"
    parts = []
    for reason, bits in THROTTLE_BITS.items():
        tests = [f"floor({mask} / {2**low}) % {2**width} > 0" for low, width in _bit_runs(bits)]
        held = f"clamp_max({' or '.join(tests)}, 1)"
        if reason == POWER_CAP_REASON:
            held = f"(\n{held}\nand on (UUID)\n{lowered_power_limit(cfg)}\n)"
        parts.append(label_replace(held, "reason", reason, "", ""))
    return "(\n" + "\nor\n".join(parts) + "\n)"


def lowered_power_limit(cfg: Config) -> str:
    """Per UUID, GPUs whose enforced power limit is below ``lowered_limit_ratio`` of their default.
    A power cap counts as throttling only on these: at the default limit a busy GPU sits at its cap
    by design, and recording it would add a series per busy GPU that no alert needs. max by UUID:
    one limit per GPU whichever exporter generation or scrape reports it."""
    ratio = promql.number(cfg.gpu.alerts.throttling.lowered_limit_ratio)
    return (
        f"(max by (UUID) ({dcgm(cfg, ENFORCED_POWER_LIMIT)})\n"
        f"< {ratio} * max by (UUID) ({dcgm(cfg, DEFAULT_POWER_LIMIT)}))"
    )


def _bit_runs(bits: Sequence[int]) -> list[tuple[int, int]]:
    """(lowest bit, width) of each run of consecutive bits: (3, 5, 6) -> [(3, 1), (5, 2)]."""
    runs: list[tuple[int, int]] = []
    for b in sorted(bits):
        if runs and runs[-1][0] + runs[-1][1] == b:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((b, 1))
    return runs


def ecc_rate(cfg: Config, matchers: Sequence[str] = (), window: str = "", raw: bool = False) -> str:
    """ECC errors per second per GPU, with ``kind`` = dbe, sbe or remapped_rows_uncorrectable, over
    ``window`` (a dashboard's ``$__rate_interval``) or else the scaled ``intervals.rate``."""
    w = window or cfg.scaled(cfg.intervals.rate)
    parts = [
        label_replace(promql.rate(metric, w, [*cfg.selectors.dcgm, *matchers]), "kind", kind, "", "")
        for kind, metric in ECC_COUNTERS
    ]
    return _maybe(cfg, "(\n" + "\nor\n".join(parts) + "\n)", raw)


def uncorrectable_errors(cfg: Config) -> str:
    """Raw, per GPU series: the double-bit ECC errors or uncorrectably remapped rows that appeared
    over ``intervals.rate``, with no series while there are none. What :func:`gpu_uncorrectable`
    records. The ECC alert holds each for its window (1 h) with max_over_time over this sparse
    series: an increase() of every GPU's two counters over the whole window, at every evaluation,
    was the costliest GPU rule at 1,000 engines (docs/scale.md). increase() counts across a
    driver reload's reset. The second clause compares the count now against the device's count
    ECC_RECENT ago: dcgm-exporter labels a GPU's series with its pod, and a double-bit error
    usually ends the pod, so the error may first show on the next pod's series, which increase()
    reads as flat."""
    w = cfg.scaled(cfg.intervals.rate)

    def rose_on_the_gpu(metric: str) -> str:
        before = promql.agg("max", DEVICE, promql.offset(metric, cfg.scaled(ECC_RECENT), cfg.selectors.dcgm))
        return f"({dcgm(cfg, metric)} - on ({', '.join(DEVICE)}) group_left {before}) > 0"

    parts = [
        f"{promql.range_fn('increase', metric, w, cfg.selectors.dcgm)} > 0\nor\n{rose_on_the_gpu(metric)}"
        for metric in UNCORRECTABLE_COUNTERS
    ]
    return "(\n" + "\nor\n".join(parts) + "\n)"


# --- rules ------------------------------------------------------------------------------------


def _by_node(cfg: Config, op: str, raw_expr: str, extra: Sequence[str] = ()) -> str:
    """Aggregate the raw series by every host label, then set Hostname on the node's one series
    (not on each GPU's) and drop the other host labels."""
    hosts = cfg.gpu.join.gpu_host_labels
    out = with_host(cfg, promql.agg(op, ("job", *hosts, *extra), raw_expr))
    for label in hosts:
        if label != HOST_LABEL:
            out = _drop(out, label)
    return out


def _node_rules(cfg: Config) -> list[RecordingRule]:
    """What the GPU dashboard's fleet rows draw as it moves: every evaluation."""
    return [
        RecordingRule(NODE_GPUS, _by_node(cfg, "count", per_gpu(cfg, FB_USED, raw=True))),
        RecordingRule(NODE_UTIL, _by_node(cfg, "avg", per_gpu(cfg, UTIL, raw=True))),
        RecordingRule(NODE_MEM_COPY, _by_node(cfg, "max", per_gpu(cfg, MEM_COPY, raw=True))),
        RecordingRule(NODE_FB_USED, _by_node(cfg, "sum", per_gpu(cfg, FB_USED, raw=True))),
        RecordingRule(NODE_FB_TOTAL, _by_node(cfg, "sum", fb_total(cfg, raw=True))),
        RecordingRule(NODE_POWER, _by_node(cfg, "sum", per_gpu(cfg, POWER, raw=True))),
        RecordingRule(NODE_TEMP, _by_node(cfg, "max", per_gpu(cfg, TEMP, raw=True))),
    ]


def _slow_node_rules(cfg: Config) -> list[RecordingRule]:
    """Trends over 10 m or more and rare events (throttling, XIDs, ECC), drawn only by the GPU
    dashboard (the alerts read the raw series): at fleet size these cost the most of the GPU
    rules (docs/scale.md), and a 2 m step changes nothing they show."""
    return [
        RecordingRule(node_leak_trend(cfg), _by_node(cfg, "max", fb_used_trend(cfg, raw=True))),
        RecordingRule(node_time_to_oom(cfg), _by_node(cfg, "min", time_to_oom(cfg, raw=True))),
        RecordingRule(NODE_THROTTLED, _by_node(cfg, "count", promql.recorded(GPU_THROTTLED), ("reason",))),
        RecordingRule(NODE_XID, _by_node(cfg, "count", f"{per_gpu(cfg, XID, raw=True)} > 0")),
        RecordingRule(node_ecc(cfg), _by_node(cfg, "sum", ecc_rate(cfg, raw=True), ("kind",))),
    ]


def _throttle_rules(cfg: Config) -> list[RecordingRule]:
    return [
        RecordingRule(GPU_THROTTLED, throttled(cfg)),
        RecordingRule(THROTTLE_EVALUATIONS, "vector(1)"),
    ]


def _error_rules(cfg: Config) -> list[RecordingRule]:
    """Sparse per-GPU records of memory errors, read by the ECC alert."""
    return [RecordingRule(gpu_uncorrectable(cfg), uncorrectable_errors(cfg))]


def _per_workload(op: str, expr: str) -> str:
    """Aggregate per-instance vLLM series by the join key of their (job, instance)."""
    return promql.agg(
        op, (WORKLOAD_LABEL,), f"{expr}\n* on (job, instance) group_left ({WORKLOAD_LABEL})\n{WORKLOAD_MAP}"
    )


def _workload_rules(cfg: Config) -> list[RecordingRule]:
    join = cfg.gpu.join
    keyed_up = with_workload(
        promql.series("up", cfg.selectors.vllm),
        [p.vllm for p in join.pod_labels],
        join.vllm_host_label,
        join.host_regex,
    )
    return [
        RecordingRule(WORKLOAD_MAP, promql.agg("group", ("job", "instance", WORKLOAD_LABEL), keyed_up)),
        RecordingRule(workload_requests(cfg), _per_workload("sum", serving_rules.requests(cfg))),
        RecordingRule(WORKLOAD_KV_USAGE, _per_workload("max", serving_rules.KV_USAGE_ENGINE)),
    ]


def groups(cfg: Config) -> list[RuleGroup]:
    interval = cfg.scaled(cfg.intervals.evaluation)
    return [
        RuleGroup("infersight-gpu.rules", interval, tuple(_node_rules(cfg))),
        RuleGroup("infersight-gpu-slow.rules", cfg.scaled(cfg.intervals.slow_evaluation), tuple(_slow_node_rules(cfg))),
        RuleGroup("infersight-gpu-workload.rules", interval, tuple(_workload_rules(cfg))),
        RuleGroup("infersight-gpu-throttle.rules", interval, tuple(_throttle_rules(cfg)), every_evaluation=True),
        RuleGroup("infersight-gpu-errors.rules", interval, tuple(_error_rules(cfg))),
    ]
