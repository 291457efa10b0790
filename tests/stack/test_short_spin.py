"""The sitecustomize that shortens vLLM's shared-memory waits for the replicas of infersight up's
outlier scenario: loaded into a fresh interpreter of the installed vLLM, it changes exactly the
two values it names, and without it vLLM keeps its own (so a vLLM that renames them shows here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from infersight.stack.short_spin import RECHECK_MS, SPIN_S, short_spin_env

READ = (
    "import vllm.distributed.device_communicators.shm_broadcast as m; "
    "print(m.SpinCondition.__init__.__defaults__[0], m.SHM_READER_RECHECK_INTERVAL_MS)"
)


def _values(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_vllms_waits_are_shortened_only_where_the_sitecustomize_is_loaded(tmp_path: Path) -> None:
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert _values(plain) == "1 5000"  # vLLM's own: a second's spin, a recheck every 5 s
    assert _values(plain | short_spin_env(tmp_path / "site")) == f"{SPIN_S} {RECHECK_MS}"
