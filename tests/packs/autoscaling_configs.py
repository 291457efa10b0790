"""The scaled models the autoscaling tests share (promtool cases, deploy artefacts, e2e)."""

from __future__ import annotations

from typing import Any

THREE_MODELS: dict[str, Any] = {
    "autoscaling": {
        "models": [
            {
                "model_name": "tiny-moe",
                "workload": {"kind": "Deployment", "name": "vllm-tiny-moe", "namespace": "llm"},
                "min_replicas": 1,
                "max_replicas": 6,
                "signal": "waiting_per_replica",
            },
            {
                "model_name": "org/big",
                "workload": {"kind": "StatefulSet", "name": "vllm-big", "namespace": "llm"},
                "signal": "kv_usage",
            },
            {
                "model_name": "dense",
                "workload": {"kind": "LeaderWorkerSet", "name": "lws-dense", "namespace": "other"},
                "signal": "batch_fill",
                "max_num_seqs": 4,
            },
        ]
    }
}
