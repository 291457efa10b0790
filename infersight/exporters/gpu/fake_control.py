"""Runtime control of the fake backend: a small JSON file that ``infersight validate`` rewrites to
start and stop a GPU memory leak while the exporter runs (a scenario file is fixed at start).

    {"gpu": 0, "leak_mib_per_second": 64}

From the first collection that sees a positive rate, a stand-in process (pid 4999 unless ``pid``
says otherwise) grows on that GPU at that rate; 0 stops the growth and the leaked memory stays, as
a real leak's does until its process exits. A missing file means no leak. A file that cannot be
used is logged once and the last good setting is kept, so a half-edited file never spikes a GPU.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infersight.output import dump_json, write_atomic

DEFAULT_LEAK_PID = 4999
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeakSetting:
    gpu: int = 0
    mib_per_second: float = 0.0
    pid: int = DEFAULT_LEAK_PID


@dataclass(frozen=True)
class Leak:
    """Memory a stand-in process holds on one GPU."""

    gpu: int
    pid: int
    mib: float


def parse_setting(text: str) -> LeakSetting:
    """Raises ValueError naming the bad field and what is allowed."""
    data = json.loads(text)
    if not isinstance(data, dict) or set(data) - {"gpu", "leak_mib_per_second", "pid"}:
        raise ValueError('must be a JSON object with keys "gpu", "leak_mib_per_second" and optionally "pid"')
    gpu, rate, pid = data.get("gpu", 0), data.get("leak_mib_per_second", 0), data.get("pid", DEFAULT_LEAK_PID)
    if not isinstance(gpu, int) or isinstance(gpu, bool) or gpu < 0:
        raise ValueError(f"gpu must be a GPU index >= 0, got {gpu!r}")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate) or rate < 0:
        raise ValueError(f"leak_mib_per_second must be a number >= 0, got {rate!r}")
    if not isinstance(pid, int) or isinstance(pid, bool) or not 2 <= pid <= 4_194_304:
        raise ValueError(f"pid must be a process id (2-4194304), got {pid!r}")
    return LeakSetting(gpu, float(rate), pid)


def write_setting(path: Path, setting: LeakSetting) -> None:
    """Atomically, so the exporter never reads half a file."""
    write_atomic(
        path, dump_json({"gpu": setting.gpu, "leak_mib_per_second": setting.mib_per_second, "pid": setting.pid})
    )


class LeakControl:
    """Integrates the file's leak rate over the backend's clock; read once per collection."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self._clock = clock
        self._setting = LeakSetting()
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the file last read
        self._mib = 0.0
        self._last: float | None = None

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return  # no file (yet): keep the current setting
        except OSError as exc:
            log.warning("fake GPU control %s unreadable: %s", self.path, exc)
            return
        key = (stat.st_mtime_ns, stat.st_size)
        if key == self._seen:
            return
        self._seen = key
        try:
            setting = parse_setting(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
            log.warning("fake GPU control %s ignored (keeping the last setting): %s", self.path, exc)
            return
        if setting.gpu != self._setting.gpu or setting.pid != self._setting.pid:
            self._mib = 0.0  # another stand-in process: it starts empty
        self._setting = setting

    def current(self) -> Leak | None:
        """The leak now: growth at the old rate up to this moment, then the file's new rate."""
        now = self._clock()
        if self._last is not None:
            self._mib += self._setting.mib_per_second * max(0.0, now - self._last)
        self._last = now
        self._reload()
        if self._mib <= 0 and self._setting.mib_per_second <= 0:
            return None
        return Leak(self._setting.gpu, self._setting.pid, self._mib)
