"""Process attribution from a fake /proc tree: short names only, vLLM model names through retitled
workers, pods from cgroups, vanished and unreadable processes reported as non-fatal problems."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.exporters.gpu.attribution import ProcAttribution, model_from_argv, pod_uid_from_cgroup
from infersight.exporters.gpu.model import Kind, ProcessIdentity

POD_UID = "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab"
CGROUP_V2 = (
    "0::/kubepods.slice/kubepods-burstable.slice/"
    f"kubepods-burstable-pod{POD_UID.replace('-', '_')}.slice/cri-containerd-0123abcd.scope\n"
)
CGROUP_V1 = f"12:memory:/kubepods/burstable/pod{POD_UID}/0123abcd\n11:cpu:/kubepods/burstable/pod{POD_UID}/0123abcd\n"


def add_proc(
    root: Path,
    pid: int,
    argv: list[str],
    *,
    ppid: int = 1,
    comm: str = "python3",
    start: int = 1000,
    cgroup: str = "0::/user.slice\n",
    hostname: str | None = None,
) -> None:
    d = root / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    # Field 2 (comm) may contain spaces and parentheses; start time is field 22.
    rest = ["S", str(ppid)] + ["0"] * 17 + [str(start)] + ["0"] * 10
    (d / "stat").write_text(f"{pid} ({comm}) " + " ".join(rest) + "\n")
    (d / "comm").write_text(comm[:15] + "\n")
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (d / "cgroup").write_text(cgroup)
    if hostname is not None:
        (d / "root/etc").mkdir(parents=True)
        (d / "root/etc/hostname").write_text(hostname + "\n")


@pytest.mark.parametrize(
    ("argv", "model"),
    [
        (["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/models/llama"], "/models/llama"),
        (["vllm", "serve", "meta-llama/Llama-3-8B", "--port", "8000"], "meta-llama/Llama-3-8B"),
        (["vllm", "serve", "/m", "--served-model-name", "llama-8b", "alias2"], "llama-8b"),
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model=/m", "--served-model-name=chat"], "chat"),
        (["python3", "train.py", "--model", "resnet"], ""),  # not vLLM: no model label
        (["vllm", "serve", "--port", "8000"], ""),
    ],
)
def test_model_from_argv(argv: list[str], model: str) -> None:
    assert model_from_argv(argv) == model


def test_pod_uid_from_both_cgroup_layouts() -> None:
    assert pod_uid_from_cgroup(CGROUP_V2) == POD_UID
    assert pod_uid_from_cgroup(CGROUP_V1) == POD_UID
    assert pod_uid_from_cgroup("0::/system.slice/docker-abc.scope\n") == ""


def test_retitled_vllm_worker_gets_the_model_from_its_api_server_ancestor(tmp_path: Path) -> None:
    api = ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/w", "--api-key", "sk-SECRET"]
    add_proc(tmp_path, 100, [*api, "--served-model-name", "tiny-moe"])
    add_proc(tmp_path, 200, ["VLLM::EngineCore"], ppid=100, comm="VLLM::EngineCore")
    add_proc(tmp_path, 300, ["VLLM::Worker_TP0"], ppid=200, comm="VLLM::Worker_TP0")
    identity, problem = ProcAttribution(tmp_path).identify(300)
    assert problem is None
    assert identity == ProcessIdentity(process="VLLM::Worker_TP", model_name="tiny-moe", pod="")
    # Never the command line (it holds secrets): no label value contains any argv word but the model.
    assert "sk-SECRET" not in repr(identity) and "--model" not in repr(identity)


def test_parent_search_is_bounded(tmp_path: Path) -> None:
    add_proc(tmp_path, 10, ["vllm", "serve", "far-away"])
    for pid in range(11, 17):
        add_proc(tmp_path, pid, ["child"], ppid=pid - 1)
    assert ProcAttribution(tmp_path, max_parents=4).identify(16)[0].model_name == ""
    assert ProcAttribution(tmp_path, max_parents=6).identify(16)[0].model_name == "far-away"


def test_non_vllm_process_has_only_its_short_name(tmp_path: Path) -> None:
    add_proc(tmp_path, 42, ["/opt/conda/bin/python", "train.py", "--token", "hunter2"], comm="python")
    identity, problem = ProcAttribution(tmp_path).identify(42)
    assert problem is None
    assert identity == ProcessIdentity(process="python", model_name="", pod="")


def test_odd_characters_in_comm_are_sanitised(tmp_path: Path) -> None:
    add_proc(tmp_path, 43, ["x"], comm='we"ird name\\')
    assert ProcAttribution(tmp_path).identify(43)[0].process == "we_ird_name_"


def test_pod_name_from_the_container_hostname_else_uid(tmp_path: Path) -> None:
    add_proc(tmp_path, 50, ["vllm", "serve", "m"], cgroup=CGROUP_V2, hostname="vllm-llama-7f9c4-x2x9z")
    add_proc(tmp_path, 51, ["vllm", "serve", "m"], cgroup=CGROUP_V1)  # root/ unreadable: UID
    add_proc(tmp_path, 52, ["vllm", "serve", "m"], cgroup=CGROUP_V2, hostname="node-7")  # hostNetwork pod
    attribution = ProcAttribution(tmp_path, own_hostname="node-7")
    assert attribution.identify(50)[0].pod == "vllm-llama-7f9c4-x2x9z"
    assert attribution.identify(51)[0].pod == POD_UID
    assert attribution.identify(52)[0].pod == POD_UID


def test_vanished_process_is_a_non_fatal_problem(tmp_path: Path) -> None:
    identity, problem = ProcAttribution(tmp_path).identify(999)
    assert identity == ProcessIdentity()
    assert problem is not None and (problem.kind, problem.fatal) == (Kind.PROCESS_VANISHED, False)


def test_process_exiting_between_reads_is_vanished(tmp_path: Path) -> None:
    add_proc(tmp_path, 60, ["x"])
    (tmp_path / "60" / "cmdline").unlink()
    _, problem = ProcAttribution(tmp_path).identify(60)
    assert problem is not None and problem.kind == Kind.PROCESS_VANISHED


def test_permission_denied_is_a_non_fatal_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add_proc(tmp_path, 70, ["x"])
    attribution = ProcAttribution(tmp_path)

    def denied(pid: int, name: str) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(attribution, "_read", denied)  # tests run as root, which chmod cannot stop
    identity, problem = attribution.identify(70)
    assert identity == ProcessIdentity()
    assert problem is not None and (problem.kind, problem.fatal) == (Kind.PROC_PERMISSION_DENIED, False)


def test_cache_is_keyed_by_start_time_so_reused_pids_are_reread(tmp_path: Path) -> None:
    add_proc(tmp_path, 80, ["vllm", "serve", "first"], start=1000)
    attribution = ProcAttribution(tmp_path)
    assert attribution.identify(80)[0].model_name == "first"
    (tmp_path / "80" / "cmdline").write_bytes(b"vllm\0serve\0changed\0")
    assert attribution.identify(80)[0].model_name == "first"  # same process: cached
    add_proc(tmp_path, 80, ["vllm", "serve", "second"], start=2000)  # pid reused by a new process
    assert attribution.identify(80)[0].model_name == "second"
    attribution.forget_except([])
    assert attribution._cache == {}
