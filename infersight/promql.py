"""Small builders that assemble PromQL from catalog entries.

This is the one place expression strings are put together. Every raw metric passes
through :func:`catalog.get`, and renamed metrics expand to ``new or old`` so rules keep
working across vLLM releases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from infersight import catalog
from infersight.durations import Duration

_RE2_META = set("\\.+*?()|[]{}^$")


def number(x: float) -> str:
    """A number as a PromQL literal, without float noise (0.30000000000000004)."""
    return format(x, ".6g")


def quote(value: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def regex_escape(value: str) -> str:
    """Escape RE2 metacharacters so a literal value can sit inside =~ or !~."""
    return "".join("\\" + c if c in _RE2_META else c for c in value)


def alternation(values: Iterable[str]) -> str:
    return "|".join(regex_escape(v) for v in sorted(values))


def le_value(threshold: float) -> str:
    """Match a bucket's ``le`` label however it was written.

    Python's client writes ``1.0``; Prometheus 3 normalises classic-histogram ``le`` to
    ``1`` on ingestion. Accept both so SLIs survive a Prometheus upgrade."""
    text = repr(float(threshold))
    forms = {text}
    if text.endswith(".0"):
        forms.add(text[:-2])
    return "|".join(regex_escape(f) for f in sorted(forms))


def label_matcher(label: str, op: str, value: str) -> str:
    return f"{label}{op}{quote(value)}"


def braces(matchers: Sequence[str]) -> str:
    return "{" + ", ".join(matchers) + "}" if matchers else ""


def _names(metric: str, suffix: str) -> tuple[str, ...]:
    entry = catalog.get(metric)
    if suffix and entry.type is not catalog.MetricType.HISTOGRAM:
        raise ValueError(f"{metric} is a {entry.type}, it has no {suffix} series")
    return tuple(n + suffix for n in entry.all_names)


def _join_or(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def series(metric: str, matchers: Sequence[str] = (), suffix: str = "") -> str:
    """An instant selector; aliases are joined with ``or`` (current name first)."""
    return _join_or([n + braces(matchers) for n in _names(metric, suffix)])


def range_fn(
    fn: str, metric: str, window: Duration | str, matchers: Sequence[str] = (), suffix: str = "", args: str = ""
) -> str:
    """``fn(metric{...}[window])`` (``fn(metric{...}[window], args)`` with ``args``) for each alias,
    joined with ``or``."""
    tail = f", {args}" if args else ""
    return _join_or([f"{fn}({n}{braces(matchers)}[{window}]{tail})" for n in _names(metric, suffix)])


def offset(metric: str, window: Duration | str, matchers: Sequence[str] = ()) -> str:
    """``metric{...} offset window`` for each alias, joined with ``or``."""
    return _join_or([f"{n}{braces(matchers)} offset {window}" for n in _names(metric, "")])


def rate(metric: str, window: Duration | str, matchers: Sequence[str] = (), suffix: str = "") -> str:
    entry = catalog.get(metric)
    if entry.type is catalog.MetricType.GAUGE:
        raise ValueError(f"rate() of gauge {metric} is meaningless; use deriv() or delta()")
    return range_fn("rate", metric, window, matchers, suffix)


def agg(op: str, by: Sequence[str], expr: str) -> str:
    return f"{op} by ({', '.join(by)}) ({expr})" if by else f"{op}({expr})"


def sum_by(by: Sequence[str], expr: str) -> str:
    return agg("sum", by, expr)


def quantile_from_buckets(q: float, by: Sequence[str], bucket_rates: str) -> str:
    """histogram_quantile over ``sum by (le, ...)``, so every quantile is taken per group."""
    return f"histogram_quantile({q}, {sum_by(('le', *by), bucket_rates)})"


def ratio(numerator: str, denominator: str, on: Sequence[str] | None = None) -> str:
    if on is None:
        return f"({numerator})\n/\n({denominator})"
    return f"({numerator})\n/ on ({', '.join(on)})\n({denominator})"


def over_time(fn: str, selector: str, window: Duration | str) -> str:
    """``<fn>_over_time(selector[window])`` over a recorded series or gauge."""
    return f"{fn}_over_time({selector}[{window}])"


def recorded(name: str, matchers: Sequence[str] = ()) -> str:
    """A selector for a recording rule of this bundle (not a raw catalog metric)."""
    return name + braces(matchers)
