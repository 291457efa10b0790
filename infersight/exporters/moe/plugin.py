"""The ``vllm.general_plugins`` entry point: ``infersight_moe = infersight.exporters.moe.plugin:register``.

vLLM calls ``register()`` in every process it starts (API server, engine core, workers), possibly
more than once. It reads the environment; with ``INFERSIGHT_MOE_EXPORTER`` unset or off it does
nothing at all. When on, it arranges for the hooks to be installed as vLLM imports the MoE
classes, which only processes that build a model do; the API server stays untouched.
"""

from __future__ import annotations

import os
import threading

from infersight.exporters.moe import hooks
from infersight.exporters.moe.logs import get_logger
from infersight.exporters.moe.settings import SettingsError, from_env

log = get_logger(__name__)

_lock = threading.Lock()
_installed = False


def register() -> None:
    """Idempotent; never raises (a misconfiguration is logged and leaves the exporter off)."""
    global _installed
    try:
        settings = from_env(os.environ)
    except SettingsError as exc:
        log.error("infersight MoE exporter disabled: %s", exc)
        return
    if not settings.enabled:
        return
    with _lock:
        if _installed:
            return
        try:
            hooks.install(settings)
            hooks.isolate_compile_cache(os.environ)
        except Exception:  # a bug here must not stop vLLM from starting
            log.exception("infersight MoE exporter disabled: installing its hooks failed")
            return
        _installed = True
    log.info("infersight MoE exporter enabled in pid %d (base port %d)", os.getpid(), settings.base_port)
