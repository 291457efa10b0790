"""Session-wide fixtures: tiny local models and real services on loopback.

vLLM start-up is the main cost of the suite (60-90 s on 2 cores), so servers that tests
can share are session-scoped; a test that kills its server starts its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from infersight.stack.tiny_models import SERVED_NAMES, ensure_tiny_model
from infersight.stack.vllm_server import BATCHED_STREAMING_ARGS, SMALL_KV_ARGS, VLLMServer
from tests.exporters.moe import probe

# Two shared cores and real services beside: per-example deadlines would only measure load.
settings.register_profile("infersight", deadline=None)
settings.load_profile("infersight")


@pytest.fixture(scope="session")
def stack_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stack")


@pytest.fixture(scope="session")
def tiny_dense_model() -> Path:
    return ensure_tiny_model("dense")


@pytest.fixture(scope="session")
def tiny_moe_model() -> Path:
    return ensure_tiny_model("moe")


@pytest.fixture(scope="session")
def vllm_moe_small_kv(stack_dir: Path, tiny_moe_model: Path) -> Iterator[VLLMServer]:
    """The shared engine: tiny MoE with an 8-block KV cache, saturable on purpose.
    Tests must not kill it; start a dedicated server for fault tests that stop the engine."""
    args = (*SMALL_KV_ARGS, *BATCHED_STREAMING_ARGS)
    server = VLLMServer(tiny_moe_model, SERVED_NAMES["moe"], stack_dir / "vllm-shared", extra_args=args)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def plugged_moe(stack_dir: Path, tiny_moe_model: Path) -> Iterator[probe.PluggedVLLM]:
    """The tiny MoE model with the infersight MoE plugin on: the plugin's and the MoE pack's
    end-to-end tests share it (neither stops it)."""
    with probe.plugged_vllm(stack_dir, tiny_moe_model, SERVED_NAMES["moe"]) as plugged:
        yield plugged
