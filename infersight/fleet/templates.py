"""Scrape bodies as precomputed templates: the text with a ``%s`` per sample value, and two arrays
``a`` and ``b`` so that every value at ``t`` seconds after the fleet started is ``a + b * t``.
Rendering a target is then one vector expression and one ``%`` on a string, which is what lets
one process answer 15 s scrapes of a thousand engines.

Counters advance at ``b`` per second; gauges have ``b = 0`` (or a slope: a leaking GPU)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources

import numpy as np

from infersight import catalog
from infersight.fleet import topology

# The reference scrape is 32 requests over about a minute of traffic.
_REF_REQUESTS = 32.0
_REF_SECONDS = 60.0
_REF_MODEL = 'model_name="tiny-moe"'
# A verbatim /metrics of vLLM 0.32.0 (one engine, model "tiny-moe", after 32 requests): the
# families, label sets and bucket boundaries the synthetic fleet copies. Package data, so it ships.
SAMPLE = resources.files("infersight.fleet").joinpath("vllm-0.32.0-metrics-sample.txt").read_text(encoding="utf-8")
_SAMPLE_LINE = re.compile(r"^(?P<name>[^{\s]+)(?P<labels>\{.*\})?\s+(?P<value>\S+)$")
_LATENCY = re.compile(
    r"^vllm:(time_to_first_token|inter_token_latency|e2e_request_latency|request_\w+_time|request_time_per)"
)


@dataclass(frozen=True)
class Template:
    text: str  # sample values as %s; every other % doubled
    a: np.ndarray
    b: np.ndarray

    def render(self, t: float) -> bytes:
        values = self.a + self.b * t
        return (self.text % tuple(f"{v:.12g}" for v in values.tolist())).encode()

    @property
    def series(self) -> int:
        return len(self.a)


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.a: list[float] = []
        self.b: list[float] = []

    def comment(self, line: str) -> None:
        self.parts.append(line.replace("%", "%%") + "\n")

    def sample(self, head: str, a: float, b: float) -> None:
        self.parts.append(head.replace("%", "%%") + " %s\n")
        self.a.append(a)
        self.b.append(b)

    def build(self) -> Template:
        return Template("".join(self.parts), np.array(self.a, dtype=float), np.array(self.b, dtype=float))


# --- vLLM -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RefSample:
    family: str
    kind: str  # the family's TYPE
    name: str
    labels: str
    value: float


def _reference() -> Iterator[tuple[str, _RefSample | None]]:
    """(line, sample) per line of the reference scrape; sample None for comments."""
    family, kind = "", "untyped"
    for line in SAMPLE.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            fields = line.split(maxsplit=3)
            if len(fields) >= 4 and fields[1] == "TYPE":
                family, kind = fields[2], fields[3]
            yield line, None
            continue
        m = _SAMPLE_LINE.match(line)
        if m is None:
            raise ValueError(f"reference scrape: unreadable line {line!r}")
        yield line, _RefSample(family, kind, m["name"], m["labels"] or "", float(m["value"]))


_REF = list(_reference())


def _histogram_buckets() -> dict[tuple[str, str], list[float]]:
    """Reference cumulative bucket values per (histogram series name, labels without le)."""
    out: dict[tuple[str, str], list[float]] = {}
    for _, s in _REF:
        if s is not None and s.name.endswith("_bucket"):
            out.setdefault((s.name, _without_le(s.labels)), []).append(s.value)
    return out


def _without_le(labels: str) -> str:
    return re.sub(r',?le="[^"]*"', "", labels)


_BUCKETS = _histogram_buckets()


def _shifted(values: list[float], position: int, shift: int) -> float:
    """Bucket ``position`` after moving every observation ``shift`` buckets up (+Inf unchanged)."""
    if position == len(values) - 1 or shift == 0:
        return values[position]
    return values[position - shift] if position >= shift else 0.0


def _vllm_slope(s: _RefSample, server: topology.Server, bucket_pos: int) -> float:
    """Per-second growth of one reference counter on this server."""
    beh = server.behaviour
    scale = beh.requests_per_s / (_REF_REQUESTS / _REF_SECONDS)
    per_s = s.value / _REF_SECONDS * scale
    if s.name == "vllm:num_preemptions_total":
        return beh.preemptions_per_s
    if s.family == "vllm:request_num_preemptions":
        count = _REF_REQUESTS / _REF_SECONDS * scale
        if beh.preemptions_per_s == 0:  # every request in the lowest bucket, sum 0
            return 0.0 if s.name.endswith("_sum") else count
        return per_s
    if _LATENCY.match(s.family) and beh.slow_buckets:
        if s.name.endswith("_sum"):
            return per_s * (1 + beh.slow_buckets)
        if s.name.endswith("_bucket"):
            values = _BUCKETS[(s.name, _without_le(s.labels))]
            return _shifted(values, bucket_pos, beh.slow_buckets) / _REF_SECONDS * scale
    return per_s


def _vllm_gauge(s: _RefSample, server: topology.Server) -> float:
    beh = server.behaviour
    if s.name == "vllm:num_requests_running":
        return round(beh.requests_per_s * 4)
    if s.name == "vllm:num_requests_waiting":
        return beh.queue_depth
    if s.name == "vllm:num_requests_waiting_by_reason":
        return beh.queue_depth if 'reason="capacity"' in s.labels else 0
    if s.name == "vllm:kv_cache_usage_perc":
        return beh.kv_usage
    return s.value


def vllm(server: topology.Server, started: float) -> Template:
    """One vLLM server's /metrics: the reference scrape relabelled and set in motion."""
    out = _Builder()
    model = f'model_name="{server.model.name}"'
    bucket_pos: dict[tuple[str, str], int] = {}
    for line, s in _REF:
        if s is None:
            out.comment(line)
            continue
        head = line[: line.rindex(" ")].replace(_REF_MODEL, model)
        engines = [head]
        if 'engine="0"' in head:
            engines += [head.replace('engine="0"', f'engine="{e}"') for e in range(1, server.model.data_parallel)]
        position = 0
        if s.name.endswith("_bucket"):
            key = (s.name, _without_le(s.labels))
            position = bucket_pos.get(key, 0)
            bucket_pos[key] = position + 1
        for engine_head in engines:
            if s.name.endswith("_created") or s.name == "process_start_time_seconds":
                out.sample(engine_head, started - server.behaviour.uptime_s, 0.0)
            elif s.name == "process_cpu_seconds_total":
                out.sample(engine_head, server.behaviour.uptime_s * 0.8, 0.8)
            elif s.kind in ("counter", "histogram"):
                out.sample(engine_head, 0.0, _vllm_slope(s, server, position))
            else:
                out.sample(engine_head, _vllm_gauge(s, server), 0.0)
    return out.build()


# --- dcgm-exporter ------------------------------------------------------------------------------

_FB_TOTAL_MIB = 81559.0


def _gpu_values(
    user: topology.Server | None, leaking: bool, throttled: bool, xid: float
) -> dict[str, tuple[float, float]]:
    """(a, b) per dcgm-exporter field for one GPU."""
    busy = user is not None
    used = 72000.0 if busy else 0.0
    leak = 1.5 if leaking else 0.0  # MiB/s: OOM in about an hour
    util = 95.0 if busy else 0.0
    return {
        "DCGM_FI_DEV_FB_USED": (used, leak),
        "DCGM_FI_DEV_FB_FREE": (_FB_TOTAL_MIB - 500 - used, -leak),
        "DCGM_FI_DEV_FB_RESERVED": (500.0, 0.0),
        "DCGM_FI_DEV_FB_TOTAL": (_FB_TOTAL_MIB, 0.0),
        "DCGM_FI_DEV_GPU_UTIL": (util, 0.0),
        "DCGM_FI_DEV_MEM_COPY_UTIL": (util * 0.4, 0.0),
        "DCGM_FI_DEV_POWER_USAGE": (550.0 if busy else 70.0, 0.0),
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": (500.0 if throttled else 700.0, 0.0),  # capped under a lowered limit
        "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": (700.0, 0.0),
        "DCGM_FI_DEV_GPU_TEMP": (68.0 if busy else 32.0, 0.0),
        "DCGM_FI_DEV_MEMORY_TEMP": (72.0 if busy else 35.0, 0.0),
        "DCGM_FI_DEV_SM_CLOCK": (1980.0, 0.0),
        "DCGM_FI_DEV_MEM_CLOCK": (2619.0, 0.0),
        "DCGM_FI_DEV_XID_ERRORS": (xid, 0.0),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (util / 100, 0.0),
        "DCGM_FI_PROF_DRAM_ACTIVE": (util / 250, 0.0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (util / 300, 0.0),
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (0.0, 0.0),
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": (0.0, 0.001 if busy else 0.0),
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": (0.0, 0.0),
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": (4.0 if throttled else 0.0, 0.0),  # 0x4: power cap
    }


def _gpu_labels(node: topology.Node, gpu: int, user: topology.Server | None) -> str:
    uuid = f"GPU-{zlib.crc32(f'{node.name}/{gpu}'.encode()):08x}-0000-0000-0000-{node.index:012d}"
    labels = (
        f'gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:{0x18 + gpu * 0x10:02X}:00.0",device="nvidia{gpu}",'
        f'modelName="NVIDIA H100 80GB HBM3",Hostname="{node.name}"'
    )
    if user is not None:  # dcgm-exporter's Kubernetes mapping: the pod that holds the GPU
        labels += f',container="vllm",namespace="{user.namespace}",pod="{user.pod}"'
    return labels


def dcgm(node: topology.Node) -> Template:
    """One node's dcgm-exporter /metrics: every DCGM field of the catalog for its 8 GPUs."""
    fields = [m for m in catalog.CATALOG.values() if m.source == catalog.Source.DCGM]
    # One node in fifty has a leaking first GPU, another a power-capped one, a third one whose last
    # XID is 48 (a double-bit ECC error; the code sticks until the driver reloads).
    leaking, throttled, xid = node.index % 50 == 7, node.index % 50 == 3, 48.0 if node.index % 50 == 5 else 0.0
    per_gpu = [
        (_gpu_labels(node, g, user), _gpu_values(user, leaking and g == 0, throttled and g == 0, xid if g == 0 else 0))
        for g, user in enumerate(node.gpu_users)
    ]
    out = _Builder()
    for field in fields:
        out.comment(f"# HELP {field.name} {field.help}")
        out.comment(f"# TYPE {field.name} {field.type.value}")
        for labels, values in per_gpu:
            a, b = values.get(field.name, (0.0, 0.0))
            out.sample(f"{field.name}{{{labels}}}", a, b)
    return out.build()


# --- infersight MoE exporter ----------------------------------------------------------------------


def moe(server: topology.Server) -> Template:
    """One MoE engine's expert counters: capped at MOE_LAYERS x MOE_EXPERTS, a hot expert per layer."""
    beh = server.behaviour
    tokens_per_s = beh.requests_per_s * 200 * topology.MOE_TOP_K  # every routed token counted top_k times
    model = server.model.name
    out = _Builder()
    name = "infersight_moe_expert_tokens_total"
    out.comment(f"# HELP {name} Tokens routed to one expert of one MoE layer.")
    out.comment(f"# TYPE {name} counter")
    weights = [1.0 + (3.0 if e == 0 else 0.0) for e in range(topology.MOE_EXPERTS)]
    total = sum(weights)
    for layer in range(topology.MOE_LAYERS):
        for expert in range(topology.MOE_EXPERTS):
            w = weights[(expert + layer) % topology.MOE_EXPERTS] / total
            head = f'{name}{{model_name="{model}",layer="{layer}",expert="{expert}",rank="0"}}'
            out.sample(head, 0.0, tokens_per_s * w)
    # The exporter's per-layer balance over its 5 m window (exporters/moe/balance.py): one hot
    # expert of four times the others' weight in every layer, no dead experts.
    window_s = 300.0
    hot = max(weights) / total
    variance = sum((w / total - 1 / topology.MOE_EXPERTS) ** 2 for w in weights) / topology.MOE_EXPERTS
    per_layer = (
        ("infersight_moe_layer_experts", topology.MOE_EXPERTS),
        ("infersight_moe_layer_top_k", topology.MOE_TOP_K),
        ("infersight_moe_layer_window_seconds", window_s),
        ("infersight_moe_layer_window_tokens", tokens_per_s * window_s),
        ("infersight_moe_layer_share_variance", variance),
        ("infersight_moe_layer_max_share", hot),
        ("infersight_moe_layer_dead_experts", 0),
    )
    for gauge, value in per_layer:
        out.comment(f"# TYPE {gauge} gauge")
        for layer in range(topology.MOE_LAYERS):
            out.sample(f'{gauge}{{model_name="{model}",layer="{layer}",rank="0"}}', float(value), 0.0)
    # The window the exporter was started with, once per rank.
    out.comment("# TYPE infersight_moe_exporter_window_seconds gauge")
    out.sample('infersight_moe_exporter_window_seconds{rank="0"}', window_s, 0.0)
    return out.build()


def all_targets(fleet: topology.Fleet, started: float) -> dict[str, Template]:
    """URL path -> template, for every target of the fleet."""
    out = {engine_path(s.index): vllm(s, started) for s in fleet.servers}
    out.update({node_path(n.index): dcgm(n) for n in fleet.nodes})
    out.update({moe_path(s.index): moe(s) for s in fleet.moe_servers})
    return out


def engine_path(index: int) -> str:
    return f"/engines/{index}/metrics"


def node_path(index: int) -> str:
    return f"/nodes/{index}/metrics"


def moe_path(index: int) -> str:
    return f"/moe/{index}/metrics"
