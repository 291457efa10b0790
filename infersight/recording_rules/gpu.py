"""GPU recording rules: dcgm-exporter series in SI units, one host label, and a join key to vLLM.

Every GPU series is normalised the same way (:func:`normalise`):
- ``Hostname`` holds the host whichever label the exporter used (``gpu.join.gpu_host_labels``:
  dcgm-exporter releases say ``Hostname``, its main branch ``hostname``);
- ``infersight_workload`` is the join key: ``pod/<namespace>/<pod>`` when the GPU's pod labels are
  all set (Kubernetes), else ``host/<host>``.
The vLLM side gets the same key from its targets' ``up`` series (:data:`WORKLOAD_MAP`), so alerts
can ask about "the engines on this GPU" with ``on (infersight_workload)``.

Levels: ``gpu`` keeps every label of a dcgm-exporter series (one series per GPU or MIG instance);
``workload`` aggregates the vLLM engines sharing a join key. DCGM reports memory in MiB, clocks in
MHz and utilization in percent; the rules record bytes, hertz and 0-1 ratios.
"""

from __future__ import annotations

from collections.abc import Sequence

from infersight import conventions, promql
from infersight.config import Config
from infersight.recording_rules import serving as serving_rules
from infersight.rules import RecordingRule, RuleGroup

WORKLOAD_LABEL = "infersight_workload"
HOST_LABEL = "Hostname"
_TMP = "infersight_tmp"  # scratch label, always removed again
MIB = 1048576
MHZ = 1000000

FB_USED = conventions.record_name("gpu", "dcgm_fb_used", "bytes")
FB_FREE = conventions.record_name("gpu", "dcgm_fb_free", "bytes")
FB_TOTAL = conventions.record_name("gpu", "dcgm_fb_total", "bytes")
FB_USED_RATIO = conventions.record_name("gpu", "dcgm_fb_used", "ratio")
UTIL = conventions.record_name("gpu", "dcgm_gpu_util", "ratio")
MEM_COPY = conventions.record_name("gpu", "dcgm_mem_copy_util", "ratio")
POWER = conventions.record_name("gpu", "dcgm_power_usage", "watts")
TEMP = conventions.record_name("gpu", "dcgm_gpu_temp", "celsius")
MEMORY_TEMP = conventions.record_name("gpu", "dcgm_memory_temp", "celsius")
SM_CLOCK = conventions.record_name("gpu", "dcgm_sm_clock", "hertz")
MEM_CLOCK = conventions.record_name("gpu", "dcgm_mem_clock", "hertz")
XID = conventions.record_name("gpu", "dcgm_xid_errors", "last")
THROTTLE = conventions.record_name("gpu", "dcgm_clock_throttle", "active")  # 0/1 per reason label

# DCGM_CLOCKS_EVENT_REASON_* bits per reason label: thermal = HW slowdown (0x8), SW thermal (0x20),
# HW thermal (0x40); power = SW power cap (0x4), HW power brake (0x80).
THROTTLE_BITS: dict[str, tuple[int, ...]] = {"thermal": (3, 5, 6), "power": (2, 7)}

# The vLLM side: one series per (job, instance) carrying its join key, then per-key aggregates.
WORKLOAD_MAP = conventions.record_name("instance", "vllm_gpu_workload", "group")
WORKLOAD_KV_USAGE = conventions.record_name("workload", "vllm:kv_cache_usage", "max")
WORKLOAD_WAITING = conventions.record_name("workload", "vllm:num_requests_waiting", "sum")
WORKLOAD_UPTIME = conventions.record_name("workload", "vllm_process_uptime_seconds", "min")


def fb_used_deriv(cfg: Config) -> str:
    """Used framebuffer trend, bytes per second over the leak window."""
    return conventions.record_name("gpu", "dcgm_fb_used_bytes", f"deriv{cfg.gpu.alerts.memory_leak.window}")


def fb_free_deriv(cfg: Config) -> str:
    return conventions.record_name("gpu", "dcgm_fb_free_bytes", f"deriv{cfg.gpu.alerts.predicted_oom.long_window}")


def time_to_oom(cfg: Config) -> str:
    """Seconds until free framebuffer reaches zero at the long-window trend (only while it falls)."""
    return conventions.record_name(
        "gpu", "dcgm_fb_time_to_oom_seconds", f"deriv{cfg.gpu.alerts.predicted_oom.long_window}"
    )


def ecc_rate(cfg: Config, kind: str) -> str:
    """``kind`` is ``dbe`` (uncorrectable), ``sbe`` (corrected) or ``remapped_rows_uncorrectable``."""
    return conventions.record_name("gpu", f"dcgm_ecc_{kind}", conventions.op_rate(cfg))


ECC_COUNTERS = (
    ("dbe", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
    ("sbe", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
    ("remapped_rows_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
)


def workload_requests(cfg: Config) -> str:
    return conventions.record_name("workload", "vllm:requests", conventions.op_rate(cfg))


def workload_preemptions(cfg: Config) -> str:
    return conventions.record_name("workload", "vllm:num_preemptions", conventions.op_rate(cfg))


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


def normalise(cfg: Config, expr: str) -> str:
    """A dcgm-exporter expression with ``Hostname`` set from the first non-empty host label, and
    its join key. The label set is otherwise kept (MIG instances stay apart)."""
    join = cfg.gpu.join
    out = expr
    for label in reversed(join.gpu_host_labels):  # applied last wins, so the first label goes last
        out = label_replace(out, _TMP, "$1", label, "(.+)")
    out = _drop(label_replace(out, HOST_LABEL, "$1", _TMP, "(.*)"), _TMP)
    return with_workload(out, [p.gpu for p in join.pod_labels], HOST_LABEL, join.host_regex)


def dcgm(cfg: Config, metric: str) -> str:
    """A raw dcgm-exporter selector (aliases joined) under the configured selector."""
    return promql.series(metric, cfg.selectors.dcgm)


# --- rules ------------------------------------------------------------------------------------


def _scaled(cfg: Config, record: str, metric: str, factor: str = "") -> RecordingRule:
    expr = dcgm(cfg, metric) + (f" {factor}" if factor else "")
    return RecordingRule(record, normalise(cfg, expr))


def _fb_total(cfg: Config) -> str:
    """FB_TOTAL when the exporter collects it, else used + free (+ reserved when collected)."""
    used, free, reserved = (dcgm(cfg, f"DCGM_FI_DEV_FB_{k}") for k in ("USED", "FREE", "RESERVED"))
    mib = f"({dcgm(cfg, 'DCGM_FI_DEV_FB_TOTAL')}\nor\n{used} + {free} + {reserved}\nor\n{used} + {free})"
    return f"{mib} * {MIB}"


def _throttle(cfg: Config) -> str:
    """1 while any bit of a reason is set, per reason label. PromQL has no bitwise operators:
    bit b of x is floor(x / 2^b) % 2."""
    mask = dcgm(cfg, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
    parts = []
    for reason, bits in THROTTLE_BITS.items():
        any_bit = " + ".join(f"floor({mask} / {2**b}) % 2" for b in bits)
        parts.append(label_replace(normalise(cfg, f"clamp_max({any_bit}, 1)"), "reason", reason, "", ""))
    return "\nor\n".join(parts)


def _gpu_rules(cfg: Config) -> list[RecordingRule]:
    leak_window = cfg.scaled(cfg.gpu.alerts.memory_leak.window)
    long_window = cfg.scaled(cfg.gpu.alerts.predicted_oom.long_window)
    rules = [
        _scaled(cfg, FB_USED, "DCGM_FI_DEV_FB_USED", f"* {MIB}"),
        _scaled(cfg, FB_FREE, "DCGM_FI_DEV_FB_FREE", f"* {MIB}"),
        RecordingRule(FB_TOTAL, normalise(cfg, _fb_total(cfg))),
        RecordingRule(FB_USED_RATIO, f"{FB_USED} / {FB_TOTAL}"),
        RecordingRule(fb_used_deriv(cfg), f"deriv({FB_USED}[{leak_window}])"),
        RecordingRule(fb_free_deriv(cfg), f"deriv({FB_FREE}[{long_window}])"),
        RecordingRule(time_to_oom(cfg), f"{FB_FREE} / -({fb_free_deriv(cfg)} < 0)"),
        _scaled(cfg, UTIL, "DCGM_FI_DEV_GPU_UTIL", "/ 100"),
        _scaled(cfg, MEM_COPY, "DCGM_FI_DEV_MEM_COPY_UTIL", "/ 100"),
        _scaled(cfg, POWER, "DCGM_FI_DEV_POWER_USAGE"),
        _scaled(cfg, TEMP, "DCGM_FI_DEV_GPU_TEMP"),
        _scaled(cfg, MEMORY_TEMP, "DCGM_FI_DEV_MEMORY_TEMP"),
        _scaled(cfg, SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", f"* {MHZ}"),
        _scaled(cfg, MEM_CLOCK, "DCGM_FI_DEV_MEM_CLOCK", f"* {MHZ}"),
        _scaled(cfg, XID, "DCGM_FI_DEV_XID_ERRORS"),
        RecordingRule(THROTTLE, _throttle(cfg)),
    ]
    w = cfg.scaled(cfg.intervals.rate)
    for kind, metric in ECC_COUNTERS:
        rules.append(RecordingRule(ecc_rate(cfg, kind), normalise(cfg, promql.rate(metric, w, cfg.selectors.dcgm))))
    return rules


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
    uptime = f"(time() - {promql.series('process_start_time_seconds', cfg.selectors.vllm)})"
    return [
        RecordingRule(WORKLOAD_MAP, promql.agg("group", ("job", "instance", WORKLOAD_LABEL), keyed_up)),
        RecordingRule(workload_requests(cfg), _per_workload("sum", serving_rules.requests(cfg))),
        RecordingRule(WORKLOAD_KV_USAGE, _per_workload("max", serving_rules.KV_USAGE_ENGINE)),
        RecordingRule(workload_preemptions(cfg), _per_workload("sum", serving_rules.preemptions(cfg))),
        RecordingRule(WORKLOAD_WAITING, _per_workload("sum", conventions.gauge_sum("vllm:num_requests_waiting"))),
        RecordingRule(WORKLOAD_UPTIME, _per_workload("min", uptime)),
    ]


def groups(cfg: Config) -> list[RuleGroup]:
    interval = cfg.scaled(cfg.intervals.evaluation)
    return [
        RuleGroup("infersight-gpu.rules", interval, tuple(_gpu_rules(cfg))),
        RuleGroup("infersight-gpu-workload.rules", interval, tuple(_workload_rules(cfg))),
    ]
