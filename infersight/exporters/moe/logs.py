"""Loggers under vLLM's ``vllm`` logger, so the plugin's lines appear in vLLM's own output with
its process prefix (``(Worker pid=...)``) and level, in every process it runs in."""

from __future__ import annotations

import logging


def get_logger(module: str) -> logging.Logger:
    return logging.getLogger("vllm.infersight_moe." + module.rsplit(".", 1)[-1])
