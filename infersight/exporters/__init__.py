"""Exporters for what vLLM and dcgm-exporter do not expose: ``gpu`` (per-node GPUs) and ``moe`` (a vLLM
plugin). ``common`` holds the plumbing both share: web-config serving, health metrics, sampling."""
