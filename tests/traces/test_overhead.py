"""The tracing benchmark's method, on stub servers (real HTTP) of known speed: rounds alternate,
the servers not measured are paused meanwhile, and each ratio compares medians with the plain
server's. The three real vLLMs are ``infersight bench tracing`` (measured in docs/results.md)."""

from __future__ import annotations

from pathlib import Path

from infersight.loadgen.prompts import WordVocabulary
from infersight.loadgen.stub_server import StubConfig, StubServer
from infersight.traces import overhead


def test_rounds_alternate_pause_the_other_server_and_compare_medians(tmp_path: Path) -> None:
    events: list[str] = []
    with StubServer(StubConfig(ttft=0.01, itl=0.002)) as fast, StubServer(StubConfig(ttft=0.01, itl=0.004)) as slow:

        def target(name: str, url: str) -> overhead.BenchTarget:
            return overhead.BenchTarget(
                name, url, "stub-model", lambda: events.append(f"pause {name}"), lambda: events.append(f"resume {name}")
            )

        targets = [target(overhead.TRACED, slow.url), target(overhead.PLAIN, fast.url)]
        rounds = overhead.measure(targets, 2, 2, 2, 16, WordVocabulary(), tmp_path)
        received = {tp.split("-")[1] for tp in slow.traceparents}
    assert [(r.index, r.target) for r in rounds] == [(0, "traced"), (0, "plain"), (1, "plain"), (1, "traced")]
    plain_paused, traced_paused = ["pause plain", "resume plain"], ["pause traced", "resume traced"]
    assert events == plain_paused + traced_paused + traced_paused + plain_paused
    assert all(r.errors == 0 and r.succeeded > 5 for r in rounds)
    # Each round's trace IDs are those its requests carried.
    assert {t for r in rounds if r.target == "traced" for t in r.trace_ids} <= received
    # The slow server takes about twice as long per token: the ratio says so.
    ratio = overhead.ratio(rounds)
    assert ratio is not None and 0.35 < ratio < 0.8, ratio
    text = overhead.render(rounds, spans_matched=3)
    assert "throughput traced / plain: " in text and "3 of " in text
    assert "unreceived" not in text  # no such server was measured


def test_a_third_server_takes_its_turn_in_both_orders_and_gets_its_own_ratio(tmp_path: Path) -> None:
    events: list[str] = []
    with (
        StubServer(StubConfig(ttft=0.01, itl=0.002)) as plain,
        StubServer(StubConfig(ttft=0.01, itl=0.002)) as traced,
        StubServer(StubConfig(ttft=0.01, itl=0.006)) as unreceived,
    ):
        targets = [
            overhead.BenchTarget(name, s.url, "stub-model", lambda n=name: events.append(f"pause {n}"))
            for name, s in ((overhead.PLAIN, plain), (overhead.TRACED, traced), (overhead.UNRECEIVED, unreceived))
        ]
        rounds = overhead.measure(targets, 2, 2, 2, 16, WordVocabulary(), tmp_path)
    order = [r.target for r in rounds]
    assert order == ["plain", "traced", "unreceived", "unreceived", "traced", "plain"]
    # While one is measured, both others are paused.
    assert events[:2] == ["pause traced", "pause unreceived"] and len(events) == 12
    same, slower = overhead.ratio(rounds, overhead.TRACED), overhead.ratio(rounds, overhead.UNRECEIVED)
    assert same is not None and slower is not None and slower < 0.8 * same, (same, slower)
    text = overhead.render(rounds, spans_matched=None)
    assert "throughput traced / plain: " in text and "throughput unreceived / plain: " in text


def test_no_ratio_without_both_servers() -> None:
    one = [overhead.Round("traced", 0, 10.0, 5, 0, 0.1, ())]
    assert overhead.ratio(one) is None
    assert overhead.ratio([*one, overhead.Round("plain", 0, 0.0, 0, 5, None, ())]) is None
