"""Capture the GPU exporter's answer on a real NVIDIA GPU, idle and under a matrix-product burn.

    python scripts/capture_gpu_scrape.py OUT_DIR [--burn-seconds 40]

Runs ``infersight exporter gpu --backend=nvml`` on loopback (hostname ``gpu-node``) and writes:

- ``gpu-exporter-nvml-scrape.txt``: one scrape of the idle GPU(s), for tests/data/ (the fields a
  real GPU serves through NVML, which InfersightGPUFieldMissing checks);
- ``gpu-burn.csv``: once a second during a bf16 matrix-product burn on GPU 0
  (tests/gpu/power_burn_child.py) and after it: power, SM clock, utilisation, temperatures and the clock-event mask, to
  see which clock-event bits a loaded GPU sets (the throttling rule reads them);
- ``gpu-exporter-nvml-scrape-burn.txt``: one scrape in the middle of the burn.

Bounded: the burn stops after --burn-seconds (at most 300) and every process is stopped on exit.
Needs an NVIDIA GPU and PyTorch with CUDA; a development tool, not part of the bundle."""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from infersight.exporters.gpu import exporter as gpu_exporter
from infersight.output import write_atomic
from infersight.stack.ports import free_port
from infersight.stack.process import ManagedProcess, http_get

FIELDS = (
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_FB_USED",
)
BURN_CHILD = Path(__file__).resolve().parent.parent / "tests" / "gpu" / "power_burn_child.py"


def gpu0(text: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in FIELDS and sample.labels.get("gpu") == "0":
                values[sample.name] = sample.value
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--burn-seconds", type=float, default=40.0)
    args = parser.parse_args()
    if not 0 < args.burn_seconds <= 300:
        parser.error(f"--burn-seconds must be in (0, 300], got {args.burn_seconds}")
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with ManagedProcess(
        "gpu-exporter", gpu_exporter.command("nvml", port, "gpu-node"), args.out / "exporter.log"
    ) as exporter:
        exporter.wait_http_ready(url, timeout=60)
        time.sleep(2)  # a few samples at the exporter's 250 ms interval
        write_atomic(args.out / "gpu-exporter-nvml-scrape.txt", http_get(url)[1].decode())
        child = subprocess.Popen(
            [sys.executable, str(BURN_CHILD), str(args.burn_seconds)], stdout=subprocess.PIPE, text=True
        )
        rows: list[dict[str, float]] = []
        try:
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":
                sys.exit("the burn child could not start on the GPU")
            start = time.monotonic()
            while time.monotonic() - start < args.burn_seconds + 10:  # 10 s of cool-down after it
                body = http_get(url)[1].decode()
                t = time.monotonic() - start
                rows.append({"t_s": round(t, 1), **gpu0(body)})
                if abs(t - args.burn_seconds / 2) < 0.6:
                    write_atomic(args.out / "gpu-exporter-nvml-scrape-burn.txt", body)
                time.sleep(1)
        finally:
            child.kill()
            child.wait(30)
    with (args.out / "gpu-burn.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t_s", *FIELDS])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} samples and the scrapes to {args.out}")


if __name__ == "__main__":
    main()
