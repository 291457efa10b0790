"""Who is who in a synthetic fleet: models, vLLM servers (one scrape target each), GPU nodes.

Everything is derived from (servers, models, seed), so the fleet server and the scrape config
that Prometheus reads agree without talking to each other."""

from __future__ import annotations

import random
from dataclasses import dataclass

GPUS_PER_NODE = 8
# Tensor-parallel sizes by model index: several GPUs behind one engine, never across nodes.
_TP_CYCLE = (1, 2, 4, 8, 2, 1, 4, 1)
_FAMILIES = ("llama-3.1-8b", "qwen2.5-32b", "mixtral-8x7b", "llama-3.1-70b", "gemma-2-27b", "mistral-7b")
NAMESPACES = 5
# A MoE exporter with 48 layers x 128 experts would add 6,144 series per MoE engine; the fleet caps
# it to keep one MoE engine near the size of one vLLM scrape (docs/scale.md, "MoE cap").
MOE_LAYERS = 16
MOE_EXPERTS = 64
MOE_TOP_K = 8


@dataclass(frozen=True)
class Model:
    index: int
    name: str
    tensor_parallel: int
    data_parallel: int  # engines per server: vLLM's `engine` label takes 0..data_parallel-1
    moe: bool


@dataclass(frozen=True)
class Behaviour:
    """How one server's counters and gauges move."""

    requests_per_s: float
    slow_buckets: int  # latency histograms shifted this many buckets up (0 = healthy)
    preemptions_per_s: float
    queue_depth: int
    kv_usage: float
    uptime_s: float  # at fleet start


@dataclass(frozen=True)
class Server:
    """One vLLM API server (a pod): one scrape target."""

    index: int
    model: Model
    namespace: str
    pod: str
    ip: str
    node: int
    gpus: tuple[int, ...]  # GPU indices on its node
    behaviour: Behaviour

    @property
    def instance(self) -> str:
        return f"{self.ip}:8000"


@dataclass(frozen=True)
class Node:
    index: int
    name: str
    ip: str
    gpu_users: tuple[Server | None, ...]  # per GPU index; None = idle GPU

    @property
    def instance(self) -> str:
        return f"{self.ip}:9400"


@dataclass(frozen=True)
class Fleet:
    models: tuple[Model, ...]
    servers: tuple[Server, ...]
    nodes: tuple[Node, ...]

    @property
    def moe_servers(self) -> tuple[Server, ...]:
        return tuple(s for s in self.servers if s.model.moe)


def _models(count: int) -> tuple[Model, ...]:
    return tuple(
        Model(
            index=i,
            name=f"{_FAMILIES[i % len(_FAMILIES)]}-{i:02d}",
            tensor_parallel=_TP_CYCLE[i % len(_TP_CYCLE)],
            data_parallel=2 if i % 4 == 3 else 1,
            moe=i % 10 == 1,  # model 1, 11, ...: one in ten models, and one already at 2 models
        )
        for i in range(count)
    )


def _behaviour(rng: random.Random) -> Behaviour:
    roll = rng.random()
    slow = 2 if roll < 0.05 else 1 if roll < 0.15 else 0
    queueing = rng.random() < 0.1
    return Behaviour(
        requests_per_s=rng.uniform(0.5, 5.0),
        slow_buckets=slow,
        preemptions_per_s=rng.uniform(0.05, 0.5) if rng.random() < 0.1 else 0.0,
        queue_depth=rng.randint(5, 50) if queueing else 0,
        kv_usage=rng.uniform(0.9, 0.99) if queueing else rng.uniform(0.2, 0.7),
        uptime_s=rng.uniform(3600, 5 * 86400),
    )


def build(servers: int, models: int, seed: int = 12) -> Fleet:
    """``servers`` vLLM servers spread round-robin over ``models`` models, packed onto 8-GPU nodes."""
    if servers < 1 or models < 1:
        raise ValueError("a fleet needs at least one server and one model")
    rng = random.Random(seed)
    model_list = _models(min(models, servers))
    placed: list[Server] = []
    node_users: list[list[Server | None]] = []
    free_on_last = 0
    for i in range(servers):
        model = model_list[i % len(model_list)]
        tp = model.tensor_parallel
        if free_on_last < tp:  # start a new node; the rest of the old one stays idle
            node_users.append([None] * GPUS_PER_NODE)
            free_on_last = GPUS_PER_NODE
        node = len(node_users) - 1
        first = GPUS_PER_NODE - free_on_last
        free_on_last -= tp
        server = Server(
            index=i,
            model=model,
            namespace=f"llm-{model.index % NAMESPACES}",
            pod=f"vllm-{model.name}-{i:05d}",
            ip=f"10.{1 + i // 62500}.{(i // 250) % 250}.{i % 250 + 1}",
            node=node,
            gpus=tuple(range(first, first + tp)),
            behaviour=_behaviour(rng),
        )
        for g in server.gpus:
            node_users[node][g] = server
        placed.append(server)
    nodes = tuple(
        Node(index=n, name=f"gpu-node-{n:04d}", ip=f"10.200.{n // 250}.{n % 250 + 1}", gpu_users=tuple(users))
        for n, users in enumerate(node_users)
    )
    return Fleet(models=model_list, servers=tuple(placed), nodes=nodes)
