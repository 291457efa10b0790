"""TTFT/ITL/TPOT computation from chunk arrival times (pure, exact timestamps)."""

from __future__ import annotations

import pytest

from infersight.loadgen.timings import StreamTimer


def test_itl_comes_from_usage_deltas_not_chunk_gaps() -> None:
    # 4 tokens per chunk every 40 ms: the inter-token latency is 10 ms, the chunk gap is 40 ms.
    timer = StreamTimer(sent=100.0)
    timer.on_chunk(100.5, has_content=True, completion_tokens=4)
    timer.on_chunk(100.54, has_content=True, completion_tokens=8)
    timer.on_chunk(100.58, has_content=True, completion_tokens=12)
    itl, source = timer.itl(12)
    assert source == "usage"
    assert len(itl) == 8  # one per token after the first chunk
    assert timer.first_chunk_tokens == 4  # the tokens that came with the first chunk have no ITL of their own
    assert itl == pytest.approx([0.01] * 8)
    assert timer.ttft == pytest.approx(0.5)
    assert timer.tpot(12) == pytest.approx(0.08 / 11)


def test_uneven_chunks_weight_each_token() -> None:
    timer = StreamTimer(sent=0.0)
    timer.on_chunk(0.2, True, 1)
    timer.on_chunk(0.3, True, 2)  # 1 token after 100 ms
    timer.on_chunk(0.5, True, 6)  # 4 tokens after 200 ms: 50 ms each
    itl, source = timer.itl(6)
    assert source == "usage"
    assert itl == pytest.approx([0.1, 0.05, 0.05, 0.05, 0.05])


def test_ttft_ignores_chunks_without_content() -> None:
    # A chat stream opens with a role-only chunk; usage-only chunks carry no content either.
    timer = StreamTimer(sent=10.0)
    timer.on_chunk(10.01, has_content=False, completion_tokens=0)
    timer.on_chunk(10.30, has_content=True, completion_tokens=1)
    timer.on_chunk(10.35, has_content=True, completion_tokens=2)
    timer.on_chunk(10.36, has_content=False, completion_tokens=2)  # final usage chunk
    assert timer.ttft == pytest.approx(0.30)
    assert timer.itl(2) == (pytest.approx([0.05]), "usage")


def test_one_token_per_chunk_without_continuous_usage_uses_chunk_gaps() -> None:
    timer = StreamTimer(sent=0.0)
    for t in (0.1, 0.12, 0.15):
        timer.on_chunk(t, True, None)
    timer.on_chunk(0.16, False, 3)  # only the final usage
    itl, source = timer.itl(3)
    assert source == "chunks"
    assert itl == pytest.approx([0.02, 0.03])


def test_multi_token_chunks_without_continuous_usage_fall_back_to_the_average() -> None:
    timer = StreamTimer(sent=0.0)
    timer.on_chunk(0.1, True, None)
    timer.on_chunk(0.2, True, None)
    timer.on_chunk(0.3, True, None)
    itl, source = timer.itl(9)  # 9 tokens in 3 chunks
    assert source == "average"
    assert itl == pytest.approx([0.2 / 8] * 8)


def test_no_content_means_no_latency() -> None:
    timer = StreamTimer(sent=0.0)
    timer.on_chunk(0.1, False, None)
    assert timer.ttft is None
    assert timer.itl(0) == ([], "none")
    assert timer.tpot(0) is None


def test_single_token_has_ttft_but_no_itl() -> None:
    timer = StreamTimer(sent=1.0)
    timer.on_chunk(1.25, True, 1)
    assert timer.ttft == pytest.approx(0.25)
    assert timer.itl(1) == ([], "usage")
    assert timer.tpot(1) is None
