"""Per-request latency from the moments stream chunks arrived (a pure computation, no I/O).

- TTFT: send -> the first chunk that carries content (a chat stream's opening role-only chunk
  does not count).
- ITL: from token counts, not chunk gaps. A server may pack several tokens into one chunk; with
  ``stream_options.continuous_usage_stats`` every chunk carries ``usage.completion_tokens``, and a
  chunk that adds d tokens after a gap g contributes d inter-token latencies of g/d. Without it,
  when the final usage equals the number of content chunks each chunk is one token; otherwise the
  request's average (first -> last token over its tokens) is used. ``itl_source`` says which.
- TPOT: (last token - first token) / (completion tokens - 1).
- e2e: send -> end of stream.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Literal

ItlSource = Literal["usage", "chunks", "average", "none"]


@dataclass
class StreamTimer:
    """Fed one call per stream chunk, in arrival order; times are seconds on one monotonic clock."""

    sent: float
    first_content: float | None = None
    last_token: float | None = None
    content_chunks: int = 0
    _usage_points: list[tuple[float, int]] = field(default_factory=list)  # (time, cumulative tokens)
    _chunk_times: list[float] = field(default_factory=list)  # content chunk arrivals
    _usage_broken: bool = False

    def on_chunk(self, t: float, has_content: bool, completion_tokens: int | None) -> None:
        if has_content:
            self.content_chunks += 1
            self._chunk_times.append(t)
            if self.first_content is None:
                self.first_content = t
            self.last_token = t
        if completion_tokens is None:
            if has_content:
                self._usage_broken = True  # a content chunk without usage: counts are not continuous
            return
        prev = self._usage_points[-1][1] if self._usage_points else 0
        if completion_tokens > prev:
            self._usage_points.append((t, completion_tokens))
            if self.first_content is not None:
                self.last_token = t

    def itl(self, completion_tokens: int | None) -> tuple[list[float], ItlSource]:
        """Inter-token latencies after the first content chunk, one per token."""
        if self.first_content is None:
            return [], "none"
        points = [(t, n) for t, n in self._usage_points if t >= self.first_content]
        if points and not self._usage_broken:
            out: list[float] = []
            for (t0, n0), (t1, n1) in itertools.pairwise(points):
                out.extend([(t1 - t0) / (n1 - n0)] * (n1 - n0))
            return out, "usage"
        if completion_tokens is not None and completion_tokens == self.content_chunks:
            times = self._chunk_times
            return [b - a for a, b in itertools.pairwise(times)], "chunks"
        if completion_tokens and completion_tokens > 1 and self.last_token is not None:
            return [(self.last_token - self.first_content) / (completion_tokens - 1)] * (
                completion_tokens - 1
            ), "average"
        return [], "none"

    @property
    def first_chunk_tokens(self) -> int | None:
        """Tokens that arrived with the first content chunk (they have no ITL of their own); None
        when the stream's usage does not say."""
        if self.first_content is None or self._usage_broken:
            return None
        return next((n for t, n in self._usage_points if t >= self.first_content), None)

    @property
    def ttft(self) -> float | None:
        return None if self.first_content is None else self.first_content - self.sent

    def tpot(self, completion_tokens: int | None) -> float | None:
        if self.first_content is None or self.last_token is None or not completion_tokens or completion_tokens < 2:
            return None
        return (self.last_token - self.first_content) / (completion_tokens - 1)
