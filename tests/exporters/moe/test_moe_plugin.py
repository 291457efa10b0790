"""The entry point: env gating, loading twice, post-import patching and the counting wrapper."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from infersight.exporters.moe import hooks, plugin
from infersight.exporters.moe.counting import LayerCounter
from infersight.exporters.moe.imports import when_imported
from infersight.exporters.moe.settings import ENABLE_VAR, PORT_VAR, Settings


@pytest.fixture
def installs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Settings]]:
    """Record hooks.install calls instead of patching vLLM in this test process."""
    calls: list[Settings] = []
    monkeypatch.setattr(plugin, "_installed", False)
    monkeypatch.setattr(hooks, "install", calls.append)
    monkeypatch.setattr(hooks, "isolate_compile_cache", lambda env: False)
    yield calls


@pytest.fixture
def plugin_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    logger = logging.getLogger("vllm.infersight_moe")
    logger.addHandler(caplog.handler)  # vLLM's "vllm" logger does not propagate once configured
    caplog.set_level(logging.INFO, logger="vllm.infersight_moe")
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


def test_disabled_is_a_no_op(monkeypatch: pytest.MonkeyPatch, installs: list[Settings]) -> None:
    monkeypatch.delenv(ENABLE_VAR, raising=False)
    meta_path = list(sys.meta_path)
    plugin.register()
    assert installs == [] and sys.meta_path == meta_path


def test_enabled_installs_once_however_often_it_is_loaded(
    monkeypatch: pytest.MonkeyPatch, installs: list[Settings], plugin_log: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ENABLE_VAR, "1")
    monkeypatch.setenv(PORT_VAR, "9911")
    plugin.register()
    plugin.register()
    assert [s.base_port for s in installs] == [9911]
    assert f"enabled in pid {os.getpid()}" in plugin_log.text


def test_misconfiguration_is_logged_and_leaves_the_exporter_off(
    monkeypatch: pytest.MonkeyPatch, installs: list[Settings], plugin_log: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ENABLE_VAR, "1")
    monkeypatch.setenv(PORT_VAR, "99999")
    plugin.register()  # must not raise: vLLM would not start
    assert installs == []
    assert "disabled" in plugin_log.text and PORT_VAR in plugin_log.text


def test_a_failing_install_is_logged_and_never_reaches_vllm(
    monkeypatch: pytest.MonkeyPatch, installs: list[Settings], plugin_log: pytest.LogCaptureFixture
) -> None:
    def broken(settings: Settings) -> None:
        raise RuntimeError("hook bug")

    monkeypatch.setattr(hooks, "install", broken)
    monkeypatch.setenv(ENABLE_VAR, "1")
    plugin.register()
    assert "installing its hooks failed" in plugin_log.text and "hook bug" in plugin_log.text
    assert not plugin._installed


def test_wrap_method_wraps_once() -> None:
    class Thing:
        def f(self, x: int) -> int:
            return x + 1

    def make(original: Any) -> Any:
        return lambda self, x: original(self, x) * 10

    assert hooks.wrap_method(Thing, "f", make)
    assert not hooks.wrap_method(Thing, "f", make)
    assert Thing().f(1) == 20


def test_when_imported_runs_after_the_module_executes_and_survives_a_failing_callback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin_log: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "infersight_probe_mod.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "infersight_probe_mod", raising=False)
    seen: list[int] = []

    def broken(module: ModuleType) -> None:
        raise RuntimeError("hook bug")

    when_imported("infersight_probe_mod", lambda m: seen.append(m.VALUE))
    when_imported("infersight_probe_mod", broken)
    assert seen == []
    import infersight_probe_mod  # type: ignore[import-not-found]

    assert infersight_probe_mod.VALUE == 42  # the import itself succeeded
    assert seen == [42]
    assert "hook bug" in plugin_log.text
    when_imported("infersight_probe_mod", lambda m: seen.append(m.VALUE + 1))  # already imported: now
    assert seen == [42, 43]


def test_counting_wrapper_adds_the_routers_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    class Router:
        def _apply_eplb_mapping(self, topk_ids: torch.Tensor) -> torch.Tensor:
            return topk_ids + 100  # stands in for the logical -> physical mapping

    hooks.wrap_method(Router, "_apply_eplb_mapping", hooks._counting)
    monkeypatch.setattr(hooks, "local_rows", lambda ids, dp_rank: (ids[:1], None))  # this rank: row 0
    untapped, tapped = Router(), Router()
    counter = LayerCounter(4, 2, "cpu", 8)
    setattr(tapped, hooks.TAP, hooks.RouterTap(counter, dp_rank=0))
    ids = torch.tensor([[0, 2], [3, 3]])
    assert untapped._apply_eplb_mapping(ids).tolist() == [[100, 102], [103, 103]]
    assert tapped._apply_eplb_mapping(ids).tolist() == [[100, 102], [103, 103]]  # result untouched
    assert counter.counts.tolist() == [1, 0, 1, 0, 0]  # logical ids, only this rank's rows


REAL_VLLM_PROBE = textwrap.dedent(
    """
    import os, sys
    os.environ["INFERSIGHT_MOE_EXPORTER"] = "1"
    from infersight.exporters.moe import hooks, plugin, serving
    plugin.register()
    plugin.register()
    # What the API server imports: none of the MoE classes, so nothing is patched or started.
    import vllm.entrypoints.openai.api_server  # noqa: F401
    assert hooks.RUNNER_MODULE not in sys.modules, "the plugin imported vLLM's MoE code itself"
    assert serving.current() is None
    plugin.register()
    from vllm.model_executor.layers.fused_moe.router.base_router import BaseRouter
    from vllm.model_executor.layers.fused_moe.runner.moe_runner import MoERunner
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner
    for fn in (BaseRouter._apply_eplb_mapping, MoERunner.__init__, GPUModelRunner.profile_run,
               GPUModelRunner.capture_model):
        assert getattr(fn, hooks.WRAPPED, False), fn
        assert not getattr(fn.__wrapped__, hooks.WRAPPED, False), f"{fn} wrapped twice"
    assert serving.current() is None  # no layer built, no endpoint
    print("OK")
    """
)


def test_real_vllm_classes_are_patched_once_and_only_when_imported() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFERSIGHT_MOE")}
    done = subprocess.run([sys.executable, "-c", REAL_VLLM_PROBE], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stdout + done.stderr
