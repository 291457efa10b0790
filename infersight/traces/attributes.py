"""vLLM's request span: its name and the attributes infersight reads (vllm/tracing/utils.py
``SpanAttributes`` in vLLM 0.32). Kept apart from the protobuf decoding so the deploy stage can
name them without importing it."""

from __future__ import annotations

REQUEST_SPAN = "llm_request"  # the span vLLM sends when a request finishes

TTFT = "gen_ai.latency.time_to_first_token"
E2E = "gen_ai.latency.e2e"
QUEUE = "gen_ai.latency.time_in_queue"
PREFILL = "gen_ai.latency.time_in_model_prefill"
DECODE = "gen_ai.latency.time_in_model_decode"
PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"

# The stages of a request, as the report and the collector's stage histograms name them.
STAGES = (("queue", QUEUE), ("prefill", PREFILL), ("decode", DECODE), ("first_token", TTFT))

# The collector's stage histograms (deploy/otelcol, signaltometrics): their OpenTelemetry names, and
# the names Prometheus stores them under after remote write, by OpenTelemetry's Prometheus naming
# ('.' becomes '_', unit "s" the suffix "_seconds"). job is the span's service.name (vLLM's served
# model name, as infersight starts it) and instance its service.instance.id.
STAGE_METRIC_PREFIX = "vllm.request.stage."


def stage_metric(stage: str) -> str:
    return f"{STAGE_METRIC_PREFIX}{stage}"


def stage_histogram(stage: str) -> str:
    return stage_metric(stage).replace(".", "_") + "_seconds"
