"""Where the plugin meets vLLM 0.32: wrappers on three vLLM classes, installed when vLLM imports them.

1. ``MoERunner.__init__`` (every fused MoE layer builds one): after vLLM's init, a
   :class:`LayerCounter` is allocated on the layer's device, registered with this process's
   runtime (which starts the endpoint), and tapped onto the layer's router.
2. ``BaseRouter._apply_eplb_mapping``: every router (fused top-k, grouped top-k, bias, custom,
   CPU, ...) passes its *logical* top-k ids through it right after computing them and before
   EPLB maps them to physical replicas. The wrapper adds those ids into the layer's counter. On
   GPUs the MoE layer runs inside the opaque ``vllm.moe_forward`` op, so this is eager code that
   CUDA-graph capture records; on CPUs torch.compile traces it into the compiled graph. Either
   way the add is part of the step and runs on replay. EPLB's own ``expert_load_pass`` is not
   used: it counts physical replicas and is cleared every step.
3. ``GPUModelRunner.profile_run`` (memory profiling, also the CPU warm-up) ends by zeroing the
   counters, and ``GPUModelRunner.capture_model`` holds the device gate (see ``transfer``).

Where torch.compile traces the MoE layer (CPU, TPU), :func:`isolate_compile_cache` also keeps
vLLM's compile cache from mixing graphs built with and without the counting.

Padding: vLLM marks padded rows in ``forward_context.is_padding`` (a persistent device mask,
refilled before each replay). Rows of CUDA-graph padding and every non-profiling dummy batch
(warm-up, capture, idle data-parallel ranks) are flagged there and not counted. While
torch.compile traces (CPU), the mask is not read: its shape is not the graph's symbolic token
count, and CPU pads no batches (its only dummy batch, the profiling pass, is discarded by the
reset; idle data-parallel ranks on CPU would count their one-token dummy batches).

Each wrapper is marked, so installing twice (the plugin loaded again) wraps nothing twice. Any
failure while attaching a counter is logged and leaves that layer uncounted; it never reaches
vLLM's model construction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from infersight.exporters.moe import serving, topology
from infersight.exporters.moe.counting import LayerCounter, LayerKey
from infersight.exporters.moe.imports import when_imported
from infersight.exporters.moe.logs import get_logger
from infersight.exporters.moe.settings import Settings
from infersight.exporters.moe.transfer import DEVICE_GATE

log = get_logger(__name__)

ROUTER_MODULE = "vllm.model_executor.layers.fused_moe.router.base_router"
RUNNER_MODULE = "vllm.model_executor.layers.fused_moe.runner.moe_runner"
MODEL_RUNNER_MODULE = "vllm.v1.worker.gpu_model_runner"

WRAPPED = "__infersight_moe_wrapped__"
TAP = "_infersight_moe_tap"


@dataclass(frozen=True)
class RouterTap:
    counter: LayerCounter
    dp_rank: int


def install(settings: Settings) -> None:
    """Arrange for the wrappers to be installed as soon as vLLM imports each class."""
    when_imported(ROUTER_MODULE, _patch_router)
    when_imported(RUNNER_MODULE, functools.partial(_patch_runner, settings))
    when_imported(MODEL_RUNNER_MODULE, _patch_model_runner)


def wrap_method(owner: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> bool:
    """Replace ``owner.name`` with ``make(original)`` unless it is already ours. True if wrapped now."""
    original = getattr(owner, name)
    if getattr(original, WRAPPED, False):
        return False
    wrapper = functools.wraps(original)(make(original))
    setattr(wrapper, WRAPPED, True)
    setattr(owner, name, wrapper)
    return True


# --- 2. counting at the router --------------------------------------------------------------------


def _patch_router(module: ModuleType) -> None:
    wrap_method(module.BaseRouter, "_apply_eplb_mapping", _counting)


def _counting(original: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def _apply_eplb_mapping(self: Any, topk_ids: torch.Tensor) -> torch.Tensor:
        tap = getattr(self, TAP, None)
        if tap is not None and topk_ids.dim() == 2:
            if torch.compiler.is_compiling():
                tap.counter.add(topk_ids)
            else:
                ids, padding = local_rows(topk_ids, tap.dp_rank)
                tap.counter.add(ids, padding)
        return original(self, topk_ids)

    return _apply_eplb_mapping


def own_rows(
    rows: int, padding_rows: int | None, tokens_per_dp_rank: list[int] | None, dp_rank: int
) -> tuple[slice, bool]:
    """Which rows of a routing decision are this rank's, and whether the padding mask fits them.

    Usually the router sees exactly the rank's (padded) batch. With data parallelism and a naive
    all-gather dispatch it sees every DP rank's batch concatenated; then only this rank's span
    counts, as in vLLM's routed-experts capturer. Other layouts (sequence-parallel shards) are
    counted whole, padding included.
    """
    if padding_rows == rows:
        return slice(0, rows), True
    if tokens_per_dp_rank and rows == sum(tokens_per_dp_rank) and 0 <= dp_rank < len(tokens_per_dp_rank):
        start = sum(tokens_per_dp_rank[:dp_rank])
        mine = tokens_per_dp_rank[dp_rank]
        return slice(start, start + mine), padding_rows == mine
    return slice(0, rows), False


def local_rows(topk_ids: torch.Tensor, dp_rank: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`own_rows` applied with the step's forward context: (ids to count, padding mask)."""
    from vllm.forward_context import get_forward_context, is_forward_context_available

    if not is_forward_context_available():
        return topk_ids, None
    ctx = get_forward_context()
    padding = ctx.is_padding
    dp = ctx.dp_metadata
    per_rank = [int(n) for n in dp.num_tokens_across_dp_cpu.tolist()] if dp is not None else None
    rows, use_mask = own_rows(topk_ids.shape[0], None if padding is None else padding.shape[0], per_rank, dp_rank)
    ids = topk_ids if rows == slice(0, topk_ids.shape[0]) else topk_ids[rows]
    return ids, padding if use_mask else None


# --- 1. a counter per MoE layer ---------------------------------------------------------------------


def _patch_runner(settings: Settings, module: ModuleType) -> None:
    def make(original: Callable[..., None]) -> Callable[..., None]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            try:
                attach(self, settings)
            except Exception:
                log.exception("infersight MoE exporter: layer %s left uncounted", getattr(self, "layer_name", "?"))

        return __init__

    wrap_method(module.MoERunner, "__init__", make)


def _served_model_name(vllm_config: Any) -> str:
    name = vllm_config.model_config.served_model_name
    if isinstance(name, (list, tuple)):
        name = name[0] if name else None
    return str(name or vllm_config.model_config.model)


def attach(runner: Any, settings: Settings) -> None:
    """Give ``runner``'s router a counter (or, on a rank that does not count, only the endpoint)."""
    from vllm.config import get_current_vllm_config

    vllm_config = get_current_vllm_config()
    rank = topology.from_vllm()
    runtime = serving.runtime(settings, rank)
    moe = runner.moe_config
    if not rank.counts_routing(bool(moe.moe_parallel_config.is_sequence_parallel)):
        return
    router = runner.router
    if not hasattr(type(router), "_apply_eplb_mapping"):
        log.warning(
            "infersight MoE exporter: router %s of %s is not supported", type(router).__name__, runner.layer_name
        )
        return
    # Larger batches (a DP all-gather) still count, with a ones vector made on the spot.
    max_rows = max(int(vllm_config.scheduler_config.max_num_batched_tokens), 1)
    counter = LayerCounter(int(moe.num_logical_experts), int(moe.experts_per_token), moe.device, max_rows)
    key = LayerKey(_served_model_name(vllm_config), topology.layer_label(runner.layer_name))
    runtime.counters.register(key, counter)
    setattr(router, TAP, RouterTap(counter, int(vllm_config.parallel_config.data_parallel_rank)))


# --- 3. profiling reset and capture gate ------------------------------------------------------------


def _patch_model_runner(module: ModuleType) -> None:
    runner_cls = module.GPUModelRunner

    def make_profile(original: Callable[..., Any]) -> Callable[..., Any]:
        def profile_run(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(self, *args, **kwargs)
            finally:
                runtime = serving.current()
                if runtime is not None:
                    runtime.counters.reset()

        return profile_run

    def make_capture(original: Callable[..., Any]) -> Callable[..., Any]:
        def capture_model(self: Any, *args: Any, **kwargs: Any) -> Any:
            with DEVICE_GATE:
                return original(self, *args, **kwargs)

        return capture_model

    wrap_method(runner_cls, "profile_run", make_profile)
    wrap_method(runner_cls, "capture_model", make_capture)


# --- compile cache --------------------------------------------------------------------------------

COMPILE_CACHE_VAR = "VLLM_DISABLE_COMPILE_CACHE"


def isolate_compile_cache(env: MutableMapping[str, str]) -> bool:
    """Keep torch.compile artifacts with and without the counting apart. True if it acted.

    Where torch.compile traces the MoE layer itself (CPU, TPU; on GPUs it is an opaque custom
    op), the counting is part of the compiled artifact, yet vLLM's cache key does not know the
    plugin: an artifact built with it on and loaded with it off would read a counter that does
    not exist, and one built with it off would never count. Processes that count therefore
    neither load nor save vLLM's compile cache.
    """
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    if not (current_platform.is_cpu() or current_platform.is_tpu()):
        return False
    if env.get(COMPILE_CACHE_VAR) != "1":
        env[COMPILE_CACHE_VAR] = "1"
        log.info("infersight MoE exporter: %s=1 (the counting is traced into compiled graphs here)", COMPILE_CACHE_VAR)
    return True
