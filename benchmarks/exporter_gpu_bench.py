"""Scrape latency and CPU cost per scrape of `infersight exporter gpu` with 8 simulated GPUs and 64
processes (fake backend), as ratios against a baseline measured in the same run: the same HTTP
server plumbing serving an EMPTY prometheus_client registry.

Each server runs in its own process (this script re-invoked with --serve), so its CPU time is read
from /proc without the client's. The sampler interval is 1h: after its first sample, the server's
CPU goes to scrapes only. Not a test: it prints numbers, it asserts nothing.

    python benchmarks/exporter_gpu_bench.py [--scrapes 300]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

GPUS, PROCESSES = 8, 64
USER, PASSWORD = "bench", "bench-password"


def scenario() -> dict:
    return {
        "description": f"benchmark: {GPUS} GPUs, {PROCESSES} processes",
        "gpus": [{"count": GPUS, "gpu_util": 80, "gr_engine_active": 0.7, "dram_active": 0.4, "tensor_active": 0.5}],
        "processes": [
            {"pid": 10_000 + i, "gpu": i % GPUS, "model_name": f"model-{i % 4}", "memory_mib": 100 + i}
            for i in range(PROCESSES)
        ],
    }


# --- server side ---------------------------------------------------------------------------------
def serve(kind: str, port_file: Path, workdir: Path) -> None:
    from prometheus_client import CollectorRegistry

    from infersight.exporters.common.server import MetricsServer
    from infersight.exporters.common.webconfig import WebConfig, load_web_config
    from infersight.exporters.gpu.exporter import GpuExporter, GpuExporterOptions
    from infersight.exporters.gpu.fake import FakeBackend
    from infersight.exporters.gpu.scenario import parse_scenario

    web = load_web_config(workdir / "web.yml") if kind == "gpu-tls" else WebConfig()
    if kind == "empty":
        server = MetricsServer(CollectorRegistry(), "127.0.0.1", 0, web, "empty").start()
        port = server.port
    else:
        backend = FakeBackend(parse_scenario(scenario(), "bench"), "bench")
        options = GpuExporterOptions(port=0, interval_s=3600, hostname="bench-node", proc_root=None, web=web)
        exporter = GpuExporter(backend, options).start()
        while exporter.sampler.latest is None:
            time.sleep(0.01)
        port = exporter.server.port
    port_file.write_text(str(port))
    while True:
        time.sleep(3600)


# --- client side ---------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def make_certs(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def measure(kind: str, workdir: Path, scrapes: int) -> dict[str, float]:
    port_file = workdir / f"{kind}.port"
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--port-file", str(port_file), "--workdir", str(workdir)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{kind} server did not start")
            time.sleep(0.05)
        port = int(port_file.read_text())
        headers = {}
        if kind == "gpu-tls":
            ctx = ssl.create_default_context(cafile=str(workdir / "server.crt"))
            headers["Authorization"] = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

            def connect() -> http.client.HTTPConnection:
                return http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
        else:

            def connect() -> http.client.HTTPConnection:
                return http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        def scrape() -> int:
            conn = connect()  # a new connection per scrape, as Prometheus' default keep-alive may not hold
            try:
                conn.request("GET", "/metrics", headers=headers)
                resp = conn.getresponse()
                body = resp.read()
                assert resp.status == 200, resp.status
                return len(body)
            finally:
                conn.close()

        for _ in range(20):  # warm-up (and the bcrypt check, cached afterwards)
            size = scrape()
        latencies = []
        cpu0 = cpu_seconds(proc.pid)
        for _ in range(scrapes):
            t0 = time.perf_counter()
            size = scrape()
            latencies.append(time.perf_counter() - t0)
        cpu = (cpu_seconds(proc.pid) - cpu0) / scrapes
        latencies.sort()
        return {
            "bytes": float(size),
            "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
            "cpu_ms": cpu * 1000,
        }
    finally:
        proc.kill()
        proc.wait()


def collection_cost(samples: int) -> float:
    """CPU ms per background collection (fake backend + snapshot), measured in this process."""
    from infersight.exporters.gpu.exporter import GpuExporter, GpuExporterOptions
    from infersight.exporters.gpu.fake import FakeBackend
    from infersight.exporters.gpu.scenario import parse_scenario

    exporter = GpuExporter(
        FakeBackend(parse_scenario(scenario(), "bench")), GpuExporterOptions(port=0, proc_root=None, hostname="b")
    )
    t0 = time.process_time()
    for _ in range(samples):
        exporter.sampler.sample_once()
    return (time.process_time() - t0) / samples * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=300)
    parser.add_argument("--serve", choices=("empty", "gpu", "gpu-tls"), help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port_file, args.workdir)
        return
    import bcrypt

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cert, key = make_certs(work)
        hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()
        (work / "web.yml").write_text(
            yaml.safe_dump(
                {
                    "tls_server_config": {"cert_file": str(cert), "key_file": str(key)},
                    "basic_auth_users": {USER: hashed},
                }
            )
        )
        results = {kind: measure(kind, work, args.scrapes) for kind in ("empty", "gpu", "gpu-tls")}
    base = results["empty"]
    print(f"GPU exporter scrape benchmark: {GPUS} fake GPUs, {PROCESSES} processes, {args.scrapes} scrapes each")
    print(f"{'server':<34}{'bytes':>8}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms/scrape':>15}{'p50 x':>8}{'CPU x':>8}")
    names = {
        "empty": "baseline: empty registry (HTTP)",
        "gpu": "gpu exporter (HTTP)",
        "gpu-tls": "gpu exporter (TLS + basic auth)",
    }
    for kind, r in results.items():
        print(
            f"{names[kind]:<34}{r['bytes']:>8.0f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['cpu_ms']:>15.3f}"
            f"{r['p50_ms'] / base['p50_ms']:>8.2f}{r['cpu_ms'] / base['cpu_ms']:>8.2f}"
        )
    print(f"background collection (fake backend, no /proc): {collection_cost(200):.3f} CPU ms per sample")


if __name__ == "__main__":
    main()
