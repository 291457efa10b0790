"""The tiny LoRA adapter: PEFT's layout for the tiny dense model, built once and cached. That
vLLM serves it is shown by scripts/capture_vllm_features.py (its scrape in tests/data/ holds
``vllm:lora_requests_info`` naming the adapter)."""

from __future__ import annotations

import json
from pathlib import Path

from safetensors import safe_open

from infersight.stack.tiny_models import TINY_LORA_RANK, ensure_tiny_lora


def test_the_adapter_targets_both_layers_attention_at_its_rank_and_is_cached(tmp_path: Path) -> None:
    adapter = ensure_tiny_lora(tmp_path)
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert (config["peft_type"], config["r"], config["target_modules"]) == (
        "LORA",
        TINY_LORA_RANK,
        ["q_proj", "v_proj"],
    )
    with safe_open(str(adapter / "adapter_model.safetensors"), "pt") as f:
        shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 (not a dict)
    assert len(shapes) == 2 * 2 * 2  # layers x (q, v) x (A, B)
    assert shapes["base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight"] == (TINY_LORA_RANK, 128)
    assert shapes["base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"] == (128, TINY_LORA_RANK)
    stamp = (adapter / "adapter_model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_lora(tmp_path) == adapter  # cached: not rebuilt
    assert (adapter / "adapter_model.safetensors").stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [adapter.name]  # no temporary folder left
