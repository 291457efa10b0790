"""``infersight exporter gpu``: the node GPU exporter (the MoE exporter is a vLLM plugin, not a command)."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path

from infersight.commands.arguments import duration
from infersight.durations import Duration
from infersight.exporters.common.server import ServeError
from infersight.exporters.common.webconfig import WebConfig, WebConfigError, load_web_config
from infersight.exporters.gpu.backend import BackendUnavailable
from infersight.exporters.gpu.choose import BACKENDS, open_backend
from infersight.exporters.gpu.collector import DEFAULT_MAX_PROCESS_SERIES
from infersight.exporters.gpu.exporter import DEFAULT_HOST, DEFAULT_PORT, GpuExporter, GpuExporterOptions
from infersight.exporters.gpu.scenario import ScenarioError, bundled_names

MIN_INTERVAL = Duration(100)
MAX_INTERVAL = Duration.parse("1h")  # samples further apart than Prometheus's scrapes only serve stale data
LOG_LEVELS = ("debug", "info", "warning", "error")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _interval(text: str) -> Duration:
    allowed = f"the sampling interval must be {MIN_INTERVAL} to {MAX_INTERVAL}"
    try:
        d = duration(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; {allowed}") from None
    if not MIN_INTERVAL <= d <= MAX_INTERVAL:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; {allowed}")
    return d


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return n


def add_parser(sub: argparse._SubParsersAction) -> None:
    p_exp = sub.add_parser("exporter", help="run one of infersight's Prometheus exporters")
    exp_sub = p_exp.add_subparsers(dest="exporter", required=True, metavar="EXPORTER")
    p = exp_sub.add_parser(
        "gpu",
        help="export this node's GPUs with dcgm-exporter's metric names, plus per-process GPU memory",
        description="Serve /metrics for this node's GPUs (dcgm-exporter names and labels, per-process memory, "
        "exporter health). Listens on 127.0.0.1 unless --listen-address says otherwise.",
    )
    p.add_argument("--backend", choices=BACKENDS, default="auto", help="auto = dcgm if usable, else nvml")
    p.add_argument(
        "--scenario",
        metavar="NAME|FILE",
        help=f"fake backend only: a scenario file or a bundled name ({', '.join(bundled_names())})",
    )
    p.add_argument(
        "--control-file",
        type=Path,
        metavar="FILE",
        help='fake backend only: JSON {"gpu": 0, "leak_mib_per_second": 64} read at every collection, to start '
        "and stop a leak at run time (infersight validate writes it)",
    )
    p.add_argument("--listen-address", default=DEFAULT_HOST, help=f"bind address (default {DEFAULT_HOST})")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"listen port (default {DEFAULT_PORT})")
    p.add_argument(
        "--interval",
        type=_interval,
        default=Duration.parse("5s"),
        help=f"sampling interval, {MIN_INTERVAL} to {MAX_INTERVAL} (default 5s)",
    )
    p.add_argument(
        "--web-config-file",
        type=Path,
        help="Prometheus exporter-toolkit web config: tls_server_config, basic_auth_users, http_server_config",
    )
    p.add_argument(
        "--hostname",
        default=os.environ.get("NODE_NAME") or socket.gethostname(),
        help="value of the Hostname label (default $NODE_NAME, else this host's name)",
    )
    p.add_argument(
        "--max-process-series",
        type=_count,
        default=DEFAULT_MAX_PROCESS_SERIES,
        help=f'keep the N largest GPU processes as series; sum the rest as pid="other" (default '
        f"{DEFAULT_MAX_PROCESS_SERIES})",
    )
    p.add_argument("--proc-root", type=Path, default=Path("/proc"), help="procfs to attribute processes from")
    p.add_argument(
        "--no-process-attribution",
        action="store_true",
        help="do not read /proc: leave process, model_name and pod labels empty",
    )
    p.add_argument("--dcgm-address", help="nv-hostengine host:port (default: an embedded host engine)")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info")
    p.set_defaults(func=run_gpu)


def run_gpu(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    prog = "infersight exporter gpu"
    web = WebConfig()
    try:
        if args.web_config_file is not None:
            web = load_web_config(args.web_config_file)
        backend = open_backend(
            args.backend,
            scenario=args.scenario,
            dcgm_address=args.dcgm_address,
            interval_s=args.interval.total_seconds,
            control_file=args.control_file,
        )
    except (WebConfigError, ScenarioError, BackendUnavailable) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    options = GpuExporterOptions(
        host=args.listen_address,
        port=args.port,
        interval_s=args.interval.total_seconds,
        hostname=args.hostname,
        max_process_series=args.max_process_series,
        proc_root=None if args.no_process_attribution else args.proc_root,
        web=web,
    )
    exporter = GpuExporter(backend, options)
    try:
        exporter.start()
    except ServeError as exc:
        backend.close()
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    exporter.run_until_signalled()
    return 0
