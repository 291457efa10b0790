"""Schedule accuracy of infersight's load generator versus GuideLLM, against one local stub.

Both tools send constant-rate open-loop streaming /v1/completions requests (32-token prompts,
8 output tokens) to the same streaming stub server (infersight.loadgen.stub_server, its own
process on loopback) at several target rates, in one run. For each tool and rate it prints, from
the tools' own per-request records (scheduled vs actual send time):

- achieved/target rate: requests sent / max(duration, last send - first due + 1/rate) / rate;
- schedule-lag p99: p99 of (actual send - scheduled send), in ms;
- the errors the stub answered (a saturated stub hurts both tools alike).

The goal (issue 5): at least GuideLLM's accuracy at >= 2x the rate on 2 cores. "Accurate" here
means achieved/target >= 0.99 and lag p99 <= 10 ms (the loadgen's own validity threshold).

GuideLLM lives in its own virtual environment (never a project dependency)::

    python3.11 -m venv /tmp/guidellm-venv
    /tmp/guidellm-venv/bin/pip install guidellm==0.8.1    # add the CPU torch wheel first to skip CUDA
    .venv/bin/python benchmarks/loadgen_vs_guidellm.py --rates 50,100,200,400,800 --duration 10

This is run by hand; it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from infersight.loadgen.stats import percentile
from infersight.stack.ports import free_port
from infersight.stack.process import ManagedProcess

PROMPT_TOKENS = 32
OUTPUT_TOKENS = 8
ACCURATE_RATIO = 0.99
ACCURATE_LAG_MS = 10.0


@dataclass
class Measure:
    tool: str
    rate: float
    sent: int
    errors: int
    ratio: float | None
    lag_p99_ms: float | None

    @property
    def accurate(self) -> bool:
        return (
            self.ratio is not None
            and self.lag_p99_ms is not None
            and self.ratio >= ACCURATE_RATIO
            and self.lag_p99_ms <= ACCURATE_LAG_MS
        )


def measure(tool: str, rate: float, duration: float, pairs: list[tuple[float, float]], errors: int) -> Measure:
    """``pairs`` are (scheduled, actual) send times of every request sent, on one clock."""
    if not pairs:
        return Measure(tool, rate, 0, errors, None, None)
    first_due = min(s for s, _ in pairs)
    last_sent = max(a for _, a in pairs)
    span = max(duration, last_sent - first_due + 1 / rate)
    lags = sorted((a - s) * 1000 for s, a in pairs)
    return Measure(tool, rate, len(pairs), errors, len(pairs) / span / rate, percentile(lags, 0.99))


def run_infersight(url: str, rate: float, duration: float, work: Path) -> Measure:
    scenario = {
        "name": f"bench-{rate:g}",
        "limits": {
            "max_duration": f"{int(duration * 3 + 30)}s",
            "max_requests": int(rate * duration) + 10,
            "max_in_flight": 4096,
            "request_timeout": "30s",
        },
        "stages": [
            {
                "name": "constant",
                "duration": f"{int(duration * 1000)}ms",
                "rate": rate,
                "arrival": "constant",
                "prompt_tokens": PROMPT_TOKENS,
                "output_tokens": OUTPUT_TOKENS,
            }
        ],
    }
    path = work / f"infersight-{rate:g}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = work / f"infersight-{rate:g}"
    cmd = [sys.executable, "-m", "infersight.cli", "loadgen", "run", str(path), "--target", url]
    subprocess.run(
        [*cmd, "--out", str(out), "--no-progress"], check=False, capture_output=True, timeout=duration * 4 + 120
    )
    rows = list(csv.DictReader((out / "requests.csv").open()))
    pairs = [(float(r["scheduled_s"]), float(r["sent_s"])) for r in rows]
    errors = sum(1 for r in rows if r["status"] != "200" or r["error"])
    return measure("infersight", rate, duration, pairs, errors)


def run_guidellm(
    guidellm: Path, url: str, rates: list[float], duration: float, tokenizer: Path, work: Path
) -> list[Measure]:
    """One GuideLLM invocation over every rate (its own sweep), defaults otherwise."""
    out = work / "guidellm.json"
    cmd = [
        str(guidellm),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model=stub-model,request_format=/v1/completions",
        "--profile",
        f"kind=constant,rate={rates[0]:g}",
        "--override",
        "profile.rate",
        ",".join(f"{r:g}" for r in rates),
        "--data",
        f"kind=synthetic_text,prompt_tokens={PROMPT_TOKENS},output_tokens={OUTPUT_TOKENS}",
        "--tokenizer",
        f"kind=huggingface_auto,model={tokenizer}",
        "--constraint",
        f"kind=max_duration,seconds={duration:g}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, env=env, timeout=len(rates) * (duration + 300)
    )
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"guidellm failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(out.read_text())
    results = []
    for bench in report["benchmarks"]:
        rate = float(bench["config"]["strategy"]["rate"])
        reqs = bench["requests"]
        pairs, errors = [], len(reqs["errored"])
        for req in [*reqs["successful"], *reqs["errored"], *reqs["incomplete"]]:
            timings = req["info"]["timings"]
            if timings.get("request_start") is not None and timings.get("targeted_start") is not None:
                pairs.append((timings["targeted_start"], timings["request_start"]))
        results.append(measure("guidellm", rate, duration, pairs, errors))
    return results


def best_rate(measures: list[Measure], lag: bool) -> float:
    """The highest rate whose achieved/target ratio (and, with ``lag``, lag p99 too) is accurate."""
    return max((m.rate for m in measures if (m.accurate if lag else (m.ratio or 0) >= ACCURATE_RATIO)), default=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", default="50,100,200,400,800", help="target rates, requests/s")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per rate")
    parser.add_argument("--guidellm", type=Path, default=Path("/tmp/guidellm-venv/bin/guidellm"))
    parser.add_argument("--tokenizer", type=Path, help="HF tokenizer folder for GuideLLM's synthetic prompts")
    parser.add_argument("--ttft", type=float, default=0.01, help="stub TTFT (s)")
    parser.add_argument("--itl", type=float, default=0.002, help="stub ITL (s)")
    parser.add_argument("--skip-guidellm", action="store_true")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    if not args.skip_guidellm and not args.guidellm.exists():
        print(f"{args.guidellm} not found; install GuideLLM in its own venv (see this file's docstring)")
        return 2
    tokenizer = args.tokenizer
    if tokenizer is None and not args.skip_guidellm:
        from infersight.stack.tiny_models import ensure_tiny_model

        tokenizer = ensure_tiny_model("dense")

    cores = len(os.sched_getaffinity(0))
    print(f"cores available: {cores}; load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="loadgen-bench-") as tmp:
        work = Path(tmp)
        port = free_port()
        stub_cmd = [sys.executable, "-m", "infersight.loadgen.stub_server", "--port", str(port)]
        stub = ManagedProcess("stub", [*stub_cmd, "--ttft", str(args.ttft), "--itl", str(args.itl)], work / "stub.log")
        url = f"http://127.0.0.1:{port}"
        with stub:
            stub.wait_http_ready(url + "/health", timeout=30)
            ours = [run_infersight(url, rate, args.duration, work) for rate in rates]
            theirs = (
                [] if args.skip_guidellm else run_guidellm(args.guidellm, url, rates, args.duration, tokenizer, work)
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    head_ours = f"{'infersight ratio':>16} {'lag p99 ms':>10} {'err':>5}"
    head_theirs = f"{'guidellm ratio':>14} {'lag p99 ms':>10} {'err':>5}"
    print(f"\n{'rate/s':>8} | {head_ours} | {head_theirs}")
    by_rate = {m.rate: m for m in theirs}
    for m in ours:
        g = by_rate.get(m.rate)
        cells = [f"{m.rate:8g}", _cells(m, 16)]
        cells.append(_cells(g, 14) if g else f"{'-':>14} {'-':>10} {'-':>5}")
        print(" | ".join(cells))
    print(f"\nhighest rate with achieved/target >= {ACCURATE_RATIO}, and with lag p99 <= {ACCURATE_LAG_MS:g} ms too:")
    for name, measures in (("infersight", ours), ("guidellm", theirs)):
        if measures:
            print(f"  {name:<10} {best_rate(measures, lag=False):>7g}/s {best_rate(measures, lag=True):>7g}/s")
    print("\nthe goal, infersight at 2x the rate at least as accurate as guidellm (ratio and lag p99):")
    ours_by_rate = {m.rate: m for m in ours}
    for g in theirs:
        o = ours_by_rate.get(2 * g.rate)
        if o is None or o.ratio is None or g.ratio is None or o.lag_p99_ms is None or g.lag_p99_ms is None:
            continue
        met = o.ratio >= g.ratio and o.lag_p99_ms <= g.lag_p99_ms
        print(
            f"  guidellm@{g.rate:g}/s ratio {g.ratio:.3f} lag {g.lag_p99_ms:.1f} ms vs infersight@{o.rate:g}/s "
            f"ratio {o.ratio:.3f} lag {o.lag_p99_ms:.1f} ms: {'met' if met else 'NOT met'}"
        )
    return 0


def _cells(m: Measure, width: int) -> str:
    ratio = "-" if m.ratio is None else f"{m.ratio:.3f}"
    lag = "-" if m.lag_p99_ms is None else f"{m.lag_p99_ms:.1f}"
    return f"{ratio:>{width}} {lag:>10} {m.errors:>5}"


if __name__ == "__main__":
    sys.exit(main())
