"""Who a GPU process is, from ``/proc``: its short executable name, the vLLM model it serves and its
Kubernetes pod.

- ``process`` is ``/proc/<pid>/comm`` (the kernel's 15-character name), sanitised. Full command lines
  never become labels: they can carry paths, tokens and prompts.
- ``model_name`` follows vLLM's own label: the first ``--served-model-name``, else ``--model``, else
  the positional model of ``vllm serve``. vLLM's engine and worker processes retitle themselves
  (``VLLM::EngineCore``), so the parent chain is searched a few levels up for the API server's argv.
- ``pod`` is the pod's hostname (its name) when ``/proc/<pid>/root`` is readable (privileged
  exporter), else the pod UID from ``/proc/<pid>/cgroup``; empty outside Kubernetes.

Results are cached per (pid, start time), so a reused pid is never mistaken for its predecessor.
Attribution needs the exporter in the host PID namespace (``hostPID: true``); in its own namespace
NVML's host pids are simply not found and the labels stay empty.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from pathlib import Path

from infersight.exporters.common.health import Problem
from infersight.exporters.gpu.model import Kind, ProcessIdentity

MAX_LABEL_CHARS = 128
_UNSAFE = re.compile(r"[^A-Za-z0-9._:+@/=-]")
_POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")


def _clean(value: str) -> str:
    return _UNSAFE.sub("_", value.strip())[:MAX_LABEL_CHARS]


def _flag(argv: list[str], name: str) -> str:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return ""


def model_from_argv(argv: list[str]) -> str:
    """vLLM's ``model_name`` for a vLLM command line; "" for anything else."""
    if not any("vllm" in arg.lower() for arg in argv[:4]):
        return ""
    served = _flag(argv, "--served-model-name")
    if served:
        return _clean(served)
    model = _flag(argv, "--model")
    if model:
        return _clean(model)
    if "serve" in argv:
        rest = argv[argv.index("serve") + 1 :]
        if rest and not rest[0].startswith("-"):
            return _clean(rest[0])
    return ""


def pod_uid_from_cgroup(text: str) -> str:
    m = _POD_UID.search(text)
    return m.group(1).replace("_", "-") if m else ""


class ProcAttribution:
    def __init__(self, proc_root: Path = Path("/proc"), max_parents: int = 4, own_hostname: str | None = None):
        self.proc_root = proc_root
        self.max_parents = max_parents
        self.own_hostname = own_hostname if own_hostname is not None else socket.gethostname()
        self._cache: dict[int, tuple[str, ProcessIdentity]] = {}

    def _read(self, pid: int, name: str) -> str:
        return (self.proc_root / str(pid) / name).read_bytes().decode("utf-8", "replace")

    def _stat(self, pid: int) -> tuple[str, int]:
        """(start time, parent pid) from /proc/<pid>/stat; comm may hold spaces and parentheses."""
        stat = self._read(pid, "stat")
        fields = stat[stat.rindex(")") + 2 :].split()
        return fields[19], int(fields[1])

    def _argv(self, pid: int) -> list[str]:
        return [a for a in self._read(pid, "cmdline").split("\0") if a]

    def _model_name(self, pid: int, argv: list[str], ppid: int) -> str:
        model = model_from_argv(argv)
        for _ in range(self.max_parents):
            if model or ppid <= 1:
                break
            try:
                model = model_from_argv(self._argv(ppid))
                ppid = self._stat(ppid)[1]
            except (OSError, ValueError, IndexError):
                break
        return model

    def _pod(self, pid: int) -> str:
        uid = pod_uid_from_cgroup(self._read(pid, "cgroup"))
        if not uid:
            return ""
        try:
            hostname = (self.proc_root / str(pid) / "root/etc/hostname").read_text().strip()
        except (OSError, UnicodeDecodeError):
            return uid
        # hostNetwork pods carry the node's name, which says nothing about the pod.
        return hostname if _HOSTNAME.match(hostname) and hostname != self.own_hostname else uid

    def identify(self, pid: int) -> tuple[ProcessIdentity, Problem | None]:
        try:
            start, ppid = self._stat(pid)
            cached = self._cache.get(pid)
            if cached is not None and cached[0] == start:
                return cached[1], None
            identity = ProcessIdentity(
                process=_clean(self._read(pid, "comm")),
                model_name=self._model_name(pid, self._argv(pid), ppid),
                pod=self._pod(pid),
            )
        except (FileNotFoundError, ProcessLookupError):
            return ProcessIdentity(), Problem(Kind.PROCESS_VANISHED, f"pid {pid} is not in {self.proc_root}", False)
        except PermissionError:
            return ProcessIdentity(), Problem(Kind.PROC_PERMISSION_DENIED, f"{self.proc_root}/{pid} unreadable", False)
        except (OSError, ValueError, IndexError) as exc:
            return ProcessIdentity(), Problem(Kind.PROCESS_VANISHED, f"pid {pid}: unreadable /proc entry: {exc}", False)
        self._cache[pid] = (start, identity)
        return identity, None

    def forget_except(self, live_pids: Iterable[int]) -> None:
        """Drop cache entries of pids no longer on any GPU."""
        keep = set(live_pids)
        for pid in self._cache.keys() - keep:
            del self._cache[pid]
