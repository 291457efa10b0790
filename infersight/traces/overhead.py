"""What vLLM's tracing costs: the same closed-loop load against a vLLM sending request spans, an
identical one that does not, and one whose spans go to a port nobody listens on (a collector that
is down), in alternating rounds of one run, so that drift of the host (another process, a thermal
limit) falls on all of them. While one server is measured the others are frozen (``pause``), so
that none takes CPU from another.

``infersight bench tracing`` starts them (the tiny dense model, spans to a loopback receiver);
:func:`measure` takes any targets, which is how the tests drive it."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from infersight.loadgen import runner
from infersight.loadgen.prompts import Vocabulary
from infersight.loadgen.scenario import Scenario, parse_scenario

TRACED, PLAIN = "traced", "plain"
UNRECEIVED = "unreceived"  # traced, but to a collector that is down
COMPARED = (TRACED, UNRECEIVED)  # each against PLAIN


@dataclass
class BenchTarget:
    name: str  # TRACED, PLAIN or UNRECEIVED
    url: str
    model: str
    pause: Callable[[], None] = lambda: None
    resume: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class Round:
    target: str
    index: int
    output_tokens_per_s: float
    succeeded: int
    errors: int
    ttft_p50_s: float | None
    trace_ids: tuple[str, ...]  # of the requests that succeeded


def scenario(seconds: float, concurrency: int, output_tokens: int) -> Scenario:
    return parse_scenario(
        {
            "name": "tracing-overhead",
            "description": "closed-loop load, every request the same size",
            "limits": {"max_duration": f"{int(seconds) + 60}s", "max_requests": 1_000_000, "request_timeout": "60s"},
            "stages": [
                {
                    "name": "load",
                    "duration": f"{int(seconds)}s",
                    "concurrency": concurrency,
                    "prompt_tokens": 32,
                    "output_tokens": output_tokens,
                }
            ],
        }
    )


def _round(target: BenchTarget, index: int, sc: Scenario, vocabulary: Vocabulary, out_dir: Path) -> Round:
    opts = runner.RunOptions(
        target=target.url, out_dir=out_dir, vocabulary=vocabulary, model=target.model, handle_signals=False
    )
    outcome = runner.run(sc, opts)
    summary = outcome.run["summary"]
    overall, (stage,) = summary["overall"], summary["stages"]
    with outcome.csv_path.open(newline="") as f:
        ids = tuple(r["trace_id"] for r in csv.DictReader(f) if r["status"] == "200" and not r["error"])
    return Round(
        target.name,
        index,
        float(stage.get("output_tokens_per_s") or 0.0),
        int(overall["succeeded"]),
        int(overall["sent"]) - int(overall["succeeded"]),
        overall["ttft_s"].get("p50"),
        ids,
    )


def measure(
    targets: Sequence[BenchTarget],
    rounds: int,
    seconds: float,
    concurrency: int,
    output_tokens: int,
    vocabulary: Vocabulary,
    out_dir: Path,
    say: Callable[[str], None] = lambda _: None,
) -> list[Round]:
    """``rounds`` rounds per target, alternating (A B C C B A A B C ...: each round in both orders,
    so the warm-up of a round and the order within it fall on every target); the others paused
    meanwhile."""
    sc = scenario(seconds, concurrency, output_tokens)
    out: list[Round] = []
    for k in range(rounds):
        order = targets if k % 2 == 0 else list(reversed(targets))
        for t in order:
            others = [o for o in targets if o is not t]
            for o in others:
                o.pause()
            try:
                r = _round(t, k, sc, vocabulary, out_dir / f"{k:02d}-{t.name}")
            finally:
                for o in others:
                    o.resume()
            say(f"  round {k + 1}/{rounds} {t.name}: {r.output_tokens_per_s:.1f} output tokens/s, {r.errors} errors")
            out.append(r)
    return out


def ratio(rounds: Sequence[Round], name: str = TRACED) -> float | None:
    """Median throughput of ``name`` over median throughput plain (1.0: tracing costs nothing)."""
    by = {n: [r.output_tokens_per_s for r in rounds if r.target == n] for n in (name, PLAIN)}
    if not by[name] or not by[PLAIN] or statistics.median(by[PLAIN]) <= 0:
        return None
    return statistics.median(by[name]) / statistics.median(by[PLAIN])


def render(rounds: Sequence[Round], spans_matched: int | None) -> str:
    lines = ["round  server      output tok/s  requests  errors  TTFT p50 (s)"]
    for r in rounds:
        ttft = "-" if r.ttft_p50_s is None else f"{r.ttft_p50_s:.3f}"
        rate = f"{r.output_tokens_per_s:>12.1f}"
        lines.append(f"{r.index + 1:>5}  {r.target:<10}  {rate}  {r.succeeded:>8}  {r.errors:>6}  {ttft:>12}")
    names = list(dict.fromkeys(r.target for r in rounds))
    for name in names:
        values = [r.output_tokens_per_s for r in rounds if r.target == name]
        lines.append(f"{name}: median {statistics.median(values):.1f} output tokens/s over {len(values)} rounds")
    for name in (n for n in COMPARED if n in names):
        value = ratio(rounds, name)
        lines.append(f"throughput {name} / plain: " + ("-" if value is None else f"{value:.3f}"))
    traced = sum(r.succeeded for r in rounds if r.target == TRACED)
    if spans_matched is not None:
        lines.append(f"spans received for the traced server's successful requests: {spans_matched} of {traced}")
    return "\n".join(lines)
