"""Run a callback when a module is imported (now, if it already is).

The plugin loads in every vLLM process, but only workers import the MoE layer code. Patching on
import, instead of importing to patch, keeps the API server free of the model-runner import
(over a second and a few hundred MB) and of any effect of the plugin at all.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

from infersight.exporters.moe.logs import get_logger

log = get_logger(__name__)
_lock = threading.Lock()
_pending: dict[str, list[Callable[[ModuleType], None]]] = {}


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str):
        self._inner = inner
        self._name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        with _lock:
            callbacks = _pending.pop(self._name, [])
        for callback in callbacks:
            _call(callback, module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        with _lock:
            if fullname not in _pending:
                return None
        # Ask the rest of the meta path (without us) for the real spec, then wrap its loader.
        for finder in sys.meta_path:
            if isinstance(finder, _Finder):
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


_finder = _Finder()


def when_imported(module_name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` once ``module_name`` has executed; immediately if it already has."""
    with _lock:
        module = sys.modules.get(module_name)
        if module is None:
            _pending.setdefault(module_name, []).append(callback)
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            return
    _call(callback, module)


def _call(callback: Callable[[ModuleType], None], module: ModuleType) -> None:
    # A failing callback must not fail the import it rode on (that would take vLLM down with it).
    try:
        callback(module)
    except Exception:
        log.exception("infersight: post-import hook for %s failed; continuing without it", module.__name__)
