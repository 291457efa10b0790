"""The MoE expert-load exporter: a vLLM general plugin that counts tokens routed to each expert.

Enable it with ``INFERSIGHT_MOE_EXPORTER=1`` in vLLM's environment; it exports
``infersight_moe_expert_tokens_total{model_name, layer, expert, rank}`` (plus the per-layer
``infersight_moe_layer_experts`` / ``infersight_moe_layer_top_k`` gauges and the
``infersight_exporter_*{exporter="moe"}`` health series) from each worker on
``INFERSIGHT_MOE_EXPORTER_PORT + local rank``.

Modules, one concern each:
- ``plugin``: the entry point (env gating, idempotent install);
- ``settings``: the environment variables;
- ``imports``: patch vLLM classes when vLLM imports them, never import them to patch;
- ``hooks``: the wrappers on vLLM's MoE runner, router and model runner;
- ``counting``: the device-side buffers (``index_add_`` in the step) and host-side totals;
- ``transfer``: the ~1 Hz device-to-host copy, kept off the model's stream and out of captures;
- ``topology``: which rank counts, its ``rank`` label and port;
- ``rendering``: metric families from the catalog;
- ``serving``: the per-process endpoint (why per process, not a multiprocess dir: see there).
"""
