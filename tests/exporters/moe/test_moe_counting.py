"""The device-side counting buffer and the host-side totals (CPU tensors; no vLLM)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from infersight.exporters.moe.counting import CounterSet, LayerCounter, LayerKey
from infersight.exporters.moe.transfer import HostReader

KEY = LayerKey("m", "3")


def ids(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.int32)


def per_expert(counter: LayerCounter) -> list[int]:
    return counter.counts[: counter.num_experts].tolist()


def test_add_counts_each_routed_slot_once() -> None:
    c = LayerCounter(num_experts=4, top_k=2, device="cpu", max_rows=8)
    c.add(ids([[0, 1], [1, 3], [1, 0]]))
    assert per_expert(c) == [2, 3, 0, 1]
    assert int(c.counts[c.sink]) == 0


def test_padding_rows_go_to_the_sink_not_to_an_expert() -> None:
    c = LayerCounter(num_experts=4, top_k=2, device="cpu", max_rows=8)
    c.add(ids([[0, 1], [2, 3], [2, 3]]), is_padding=torch.tensor([False, True, True]))
    assert per_expert(c) == [1, 1, 0, 0]
    assert int(c.counts[c.sink]) == 4


def test_out_of_range_ids_never_write_out_of_bounds() -> None:
    c = LayerCounter(num_experts=4, top_k=2, device="cpu", max_rows=8)
    c.add(ids([[7, -1]]))  # a router bug: clamped into [0, sink], never an index error
    assert c.counts.sum().item() == 2
    assert c.counts.shape == (5,)


def test_batches_larger_than_max_rows_still_count() -> None:
    c = LayerCounter(num_experts=2, top_k=1, device="cpu", max_rows=2)
    c.add(torch.zeros((5, 1), dtype=torch.int64))
    assert per_expert(c) == [5, 0]


def test_reset_zeroes_in_place_so_captured_graphs_keep_their_address() -> None:
    c = LayerCounter(num_experts=4, top_k=2, device="cpu", max_rows=8)
    before = c.counts.data_ptr()
    c.add(ids([[0, 1]]))
    c.reset()
    assert c.counts.data_ptr() == before
    assert c.counts.sum().item() == 0


def test_rejects_empty_shapes() -> None:
    with pytest.raises(ValueError, match="num_experts"):
        LayerCounter(num_experts=0, top_k=2, device="cpu", max_rows=8)


@settings(max_examples=50, deadline=None)
@given(
    experts=st.integers(1, 16),
    top_k=st.integers(1, 4),
    data=st.data(),
)
def test_counts_sum_to_real_rows_times_top_k(experts: int, top_k: int, data: st.DataObject) -> None:
    rows = data.draw(st.integers(0, 40))
    routed = data.draw(
        st.lists(st.lists(st.integers(0, experts - 1), min_size=top_k, max_size=top_k), min_size=rows, max_size=rows)
    )
    padding = data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
    c = LayerCounter(experts, top_k, "cpu", max_rows=16)
    t = torch.tensor(routed, dtype=torch.int64).reshape(rows, top_k)
    c.add(t, torch.tensor(padding, dtype=torch.bool))
    real = [r for r, p in zip(routed, padding, strict=True) if not p]
    assert sum(per_expert(c)) == len(real) * top_k
    for e in range(experts):
        assert per_expert(c)[e] == sum(r.count(e) for r in real)


def test_counting_is_traced_into_a_compiled_graph() -> None:
    """torch.compile (as vLLM on CPU) keeps the in-place add: the compiled function counts."""
    c = LayerCounter(num_experts=4, top_k=2, device="cpu", max_rows=16)

    def step(x: torch.Tensor) -> torch.Tensor:
        _, top = torch.topk(x, 2, dim=-1)
        c.add(top)
        return x * 2

    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]])
    compiled(x)
    compiled(x)
    assert per_expert(c) == [2, 2, 2, 2]


def read(counters: CounterSet) -> dict[LayerKey, list[int]]:
    return HostReader().read(counters.counters())


def test_totals_follow_the_device_buffers_in_a_stable_order() -> None:
    s = CounterSet()
    layers = {LayerKey("m", layer): LayerCounter(2, 1, "cpu", 4) for layer in ("10", "2", "mtp.x")}
    for key, counter in layers.items():
        s.register(key, counter)
    layers[LayerKey("m", "2")].add(torch.tensor([[1], [1]]))
    totals = s.totals(read(s))
    assert [t.key.layer for t in totals] == ["2", "10", "mtp.x"]
    assert totals[0].tokens == (0, 2)
    assert totals[0].top_k == 1


def test_re_registered_layer_continues_its_series_upward() -> None:
    s = CounterSet()
    first = LayerCounter(2, 1, "cpu", 4)
    s.register(KEY, first)
    first.add(torch.tensor([[0], [0], [1]]))
    assert s.totals(read(s))[0].tokens == (2, 1)
    second = LayerCounter(2, 1, "cpu", 4)  # the model rebuilt in the same process
    s.register(KEY, second)
    second.add(torch.tensor([[1]]))
    assert s.totals(read(s))[0].tokens == (2, 2)
    assert len(s) == 1


def test_re_registration_with_another_shape_is_refused() -> None:
    s = CounterSet()
    s.register(KEY, LayerCounter(2, 1, "cpu", 4))
    with pytest.raises(ValueError, match="re-registered"):
        s.register(KEY, LayerCounter(3, 1, "cpu", 4))


def test_reset_forgets_everything_counted() -> None:
    s = CounterSet()
    c = LayerCounter(2, 1, "cpu", 4)
    s.register(KEY, c)
    c.add(torch.tensor([[0]]))
    s.reset()
    assert s.totals(read(s))[0].tokens == (0, 0)


def test_readings_of_replaced_or_unknown_layers_are_dropped() -> None:
    s = CounterSet()
    s.register(KEY, LayerCounter(2, 1, "cpu", 4))
    assert s.totals({LayerKey("m", "9"): [1, 2, 0], KEY: [1, 2]}) == []  # unknown key; wrong width


def test_layers_share_one_ones_vector_per_device_and_size() -> None:
    a, b = LayerCounter(4, 2, "cpu", 8), LayerCounter(8, 2, "cpu", 8)
    assert a._ones.data_ptr() == b._ones.data_ptr()
    assert LayerCounter(4, 1, "cpu", 8)._ones.shape == (8,)
