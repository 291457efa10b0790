"""Find where config values land in the build's output, so the jsonnet mixin can expose them.

The generators are Python; jsonnet cannot re-run them. What jsonnet *can* do honestly is put a
config value wherever the Python build prints it. This module proves, for each numeric or
duration setting and each selector (a list of PromQL label matchers), that this is exactly how
the setting reaches the output:

1. build with the setting replaced by a sentinel, a value whose printed form appears nowhere
   else (``0.73015``, ``300007ms``; for a selector three matchers of an unused label,
   ``infersight_sentinel_a="b", infersight_sentinel_a="c", infersight_sentinel_a="a"``);
2. turn every occurrence of the sentinel into a reference to the setting (a template);
3. check the template against the real build: each reference must print the real value in one
   of the forms the generators use (``repr``, ``.6g``, ``x*100`` as ``.6g``, ``1 - x`` as a
   number, a duration's text, matchers joined as inside ``{...}``) and everything else must be
   identical.

A setting that reaches the output any other way (converted to bytes, deciding how many rules
exist, a bucket boundary, ...) fails step 3 and is not exposed: changing it needs a Python
rebuild. The check runs per pack builder (one pack's rules, alerts or dashboards), all settings at once
first; a failure blames the settings printed where the output differs and retries the rest, and
halves the group only when nothing can be blamed. A setting rejected by any builder is exposed by none.

A builder may reject a sentinel with ValueError (its own validation of a value); that rejects the
setting. Any other exception is a bug in the builder and stops the trace (TraceError): hiding it
as "not exposed" would silently shrink the mixin.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from pydantic import BaseModel

from infersight import promql
from infersight.config import Config, ConfigError, parse_config
from infersight.durations import Duration

# Settings that are not thresholds: the time-scale divisor, and bucket boundaries (which the
# SLI matchers print in several forms at once).
EXCLUDED_PREFIXES: tuple[tuple[str, ...], ...] = (("time_scale",), ("buckets",))
# Lists of PromQL label matchers (config.Selectors): the builders print them inside {...}.
MATCHER_PREFIXES: tuple[tuple[str, ...], ...] = (("selectors",),)
# The label name of a selector's sentinel matchers; never a real label, and free of digits so no
# number sentinel can be found inside it.
SENTINEL_LABEL = "infersight_sentinel_"
_SENTINEL_NAME = re.compile(SENTINEL_LABEL + "[a-z]+")

Path = tuple[str | int, ...]
Value = float | int | str | tuple[str, ...]  # durations as text, matchers as a tuple


class TraceError(RuntimeError):
    """A builder failed in a way no setting's value explains: a bug to fix, not a setting to hide."""


@dataclass(frozen=True)
class Leaf:
    """One numeric, duration or matcher-list setting of the config."""

    path: Path
    kind: str  # "float" | "int" | "duration" | "matchers"
    value: Value  # durations as their text, e.g. "5m"; matchers as a tuple of strings

    @property
    def key(self) -> str:
        """The dotted path, as infersight.yaml errors print it: ``slo.burn_windows.0.factor``."""
        return ".".join(str(p) for p in self.path)


@dataclass(frozen=True)
class Ref:
    """A setting's value at one place of the output, printed with ``fmt``."""

    key: str
    fmt: str  # a FORMATS name for text; "number" or "complement" (1 - x) for a JSON number


@dataclass(frozen=True)
class Text:
    """A string of the output with settings inside it."""

    parts: tuple[str | Ref, ...]


def _number(v: Value) -> float:
    if isinstance(v, tuple):
        raise TypeError(f"expected a number, got the matchers {v}")
    return float(v)


def _matchers(v: Value) -> str:
    """Matchers as infersight.promql.braces prints them between the braces."""
    if not isinstance(v, tuple | list):
        raise TypeError(f"expected a list of matchers, got {v!r}")
    return ", ".join(v)


# How the generators print settings inside text; the jsonnet library mirrors these by name.
FORMATS: dict[str, Callable[[Value], str]] = {
    "repr": lambda v: repr(_number(v)),
    "g6": lambda v: format(_number(v), ".6g"),
    "pct": lambda v: format(_number(v) * 100, ".6g"),
    "int": lambda v: str(int(_number(v))),
    "duration": str,
    # A duration as seconds, where PromQL needs a number (promql.number: format(seconds, ".6g")).
    "seconds_g6": lambda v: promql.number(Duration.parse(str(v)).total_seconds),
    "matchers": _matchers,
}
_KIND_FORMATS = {
    "float": ("repr", "g6"),
    "int": ("int",),
    "duration": ("duration", "seconds_g6"),
    "matchers": ("matchers",),
}


def _under(path: Path, prefixes: tuple[tuple[str, ...], ...]) -> bool:
    return any(path[: len(p)] == p for p in prefixes)


def leaves(cfg: Config) -> list[Leaf]:
    """Every float, int, duration and selector setting, in model order."""
    out: list[Leaf] = []

    def walk(value: Any, path: Path) -> None:
        if _under(path, EXCLUDED_PREFIXES):
            return
        if _under(path, MATCHER_PREFIXES) and isinstance(value, list):
            out.append(Leaf(path, "matchers", tuple(value)))
        elif isinstance(value, BaseModel):
            for name, info in type(value).model_fields.items():
                walk(getattr(value, name), (*path, info.alias or name))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, str(k)))
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, (*path, i))
        elif isinstance(value, Duration):
            out.append(Leaf(path, "duration", str(value)))
        elif isinstance(value, bool):
            return
        elif isinstance(value, int):
            out.append(Leaf(path, "int", value))
        elif isinstance(value, float) and math.isfinite(value):
            out.append(Leaf(path, "float", value))

    walk(cfg, ())
    return out


def _candidates(leaf: Leaf, n: int) -> Iterator[Value]:
    """Sentinels for the n-th setting: printed forms unique to it, the same under repr and .6g.
    A selector's sentinel is three matchers in neither sorted nor reverse order, so a builder that
    prints only some of them, reorders them or joins them differently is caught."""
    if leaf.kind == "matchers":
        label = SENTINEL_LABEL + _letters(n)
        yield tuple(f'{label}="{v}"' for v in "bca")
    elif leaf.kind == "float":
        base = 0.73 + n * 0.00007 + 0.00001  # five significant digits
        for exp in (0, 1, 2, -1, 3, -2):
            yield float(f"{base * 10**exp:.5g}")
    elif leaf.kind == "int":
        yield 973000 + n
    else:
        ms = Duration.parse(str(leaf.value)).ms
        for offset in (n + 1, -(n + 1), 1000 * n + 7):
            if ms + offset > 0 and (ms + offset) % 1000:
                yield str(Duration(ms + offset))


def _letters(n: int) -> str:
    """n as letters (0 -> "a", 26 -> "ba"): a label-name suffix without digits."""
    out = ""
    while True:
        n, digit = divmod(n, 26)
        out = chr(ord("a") + digit) + out
        if not n:
            return out


def _config_value(value: Any) -> Any:
    """A setting as the config model holds it (matchers are a list there)."""
    return list(value) if isinstance(value, tuple) else value


def _set(data: Any, path: Path, value: Any) -> None:
    for p in path[:-1]:
        data = data[p]
    data[path[-1]] = _config_value(value)


def _blamed_by(problems: Sequence[tuple[str, str]], keys: Sequence[str]) -> set[str]:
    """The settings a validation error may be about (one path is a prefix of the other)."""
    hit = set()
    for where, _ in problems:
        for key in keys:
            if where == "(root)" or key == where or key.startswith(where + ".") or where.startswith(key + "."):
                hit.add(key)
    return hit


def valid_sentinels(cfg: Config, chosen: Sequence[Leaf]) -> dict[str, Value]:
    """A sentinel per setting such that all of them together pass validation; settings with no
    valid candidate (a latency threshold must be a bucket boundary) are left out."""
    candidates = {leaf.key: list(_candidates(leaf, i)) for i, leaf in enumerate(chosen)}
    by_key = {leaf.key: leaf for leaf in chosen}
    attempt = dict.fromkeys(by_key, 0)
    while True:
        data = cfg.model_dump(mode="json", by_alias=True)
        active = [k for k, i in attempt.items() if i < len(candidates[k])]
        for key in active:
            _set(data, by_key[key].path, candidates[key][attempt[key]])
        try:
            parse_config(data, "<sentinels>")
        except ConfigError as exc:
            blamed = _blamed_by(exc.problems, active)
            if not blamed:
                raise AssertionError(f"sentinels invalid for an unknown reason: {exc}") from None
            for key in blamed:
                attempt[key] += 1
            continue
        return {k: candidates[k][attempt[k]] for k in active}


def with_values(cfg: Config, updates: dict[Path, Any]) -> Config:
    """``cfg`` with some settings replaced, without re-validation (the values were validated)."""
    tree: dict[Any, Any] = {}
    for path, value in updates.items():
        node = tree
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = value

    def apply(obj: Any, sub: Any) -> Any:
        if not isinstance(sub, dict):
            return Duration.parse(sub) if isinstance(obj, Duration) else _config_value(sub)
        if isinstance(obj, BaseModel):
            names = {info.alias or name: name for name, info in type(obj).model_fields.items()}
            return obj.model_copy(update={names[k]: apply(getattr(obj, names[k]), v) for k, v in sub.items()})
        copy: Any = list(obj) if isinstance(obj, list) else dict(obj)
        for k, v in sub.items():
            copy[k] = apply(copy[k], v)
        return copy

    result: Config = apply(cfg, tree)
    return result


_CONVERSIONS = (1, 1000, 1 / 60, 1 / 3600, 1024, 1024**2, 1 / 1024, 1 / 1024**2)


@lru_cache(maxsize=4096)
def _signatures(kind: str, value: Value) -> frozenset[str]:
    if kind == "matchers":
        return frozenset()  # a matcher is found by its sentinel label instead (_SENTINEL_NAME)
    x = Duration.parse(str(value)).ms / 1000 if kind == "duration" else _number(value)
    forms = {format(x * m, ".6g") for m in _CONVERSIONS} | {str(value)}
    return frozenset(re.sub(r"\D", "", f).lstrip("0") for f in forms)


_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?:ms)?(?!\d)")  # a number, or a duration in ms
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


@dataclass
class _Walk:
    """One comparison of a sentinel build against the real build."""

    sentinels: dict[str, tuple[Leaf, Value]]
    differs: bool = False  # the template does not reproduce the real build
    suspects: set[str] = field(default_factory=set)  # settings that may explain the difference
    seen: set[str] = field(default_factory=set)  # settings whose sentinel appeared
    template: Any = None  # the result of walk()

    def __post_init__(self) -> None:
        self.tokens: dict[str, tuple[str, str]] = {}  # printed sentinel -> (key, "" or "pct")
        self.numbers: dict[float, tuple[str, str]] = {}
        # key -> digit strings of the sentinel and of common conversions of it (to bytes, seconds,
        # minutes), so a difference caused by a derived value is blamed on the right setting.
        self.signatures: dict[str, tuple[str, ...]] = {}
        self.labels: dict[str, str] = {}  # a selector sentinel's label name -> key
        for key, (leaf, s) in self.sentinels.items():
            if leaf.kind == "matchers":
                printed = _matchers(s)
                self.tokens[printed] = (key, "")
                self.labels.update(dict.fromkeys(_SENTINEL_NAME.findall(printed), key))
            else:
                self.tokens[str(s)] = (key, "")
            if leaf.kind == "float":
                self.tokens[FORMATS["pct"](s)] = (key, "pct")
                self.numbers[_number(s)] = (key, "number")
                self.numbers[1 - _number(s)] = (key, "complement")
            elif leaf.kind == "int":
                self.numbers[_number(s)] = (key, "number")
            # A conversion that prints the real value the same way tells nothing: drop it.
            sigs = _signatures(leaf.kind, s) - _signatures(leaf.kind, leaf.value)
            self.signatures[key] = tuple(sorted(sig for sig in sigs if len(sig) >= 3))
        self.tokens.update(self._seconds_tokens())
        # Selectors are found whole, the longest first; they hold no digits, so no number overlaps.
        printed_selectors = sorted((t for t, (key, _) in self.tokens.items() if key in self.labels.values()), key=len)
        self.selector_tokens = re.compile("|".join(re.escape(t) for t in reversed(printed_selectors)))

    def _seconds_tokens(self) -> dict[str, tuple[str, str]]:
        """Durations' sentinels printed in seconds (seconds_g6), where that form tells them apart:
        six digits can round a sentinel's offset away (6h and a millisecond print 21600, as 6h
        does), and a form that two settings, another token or the real value share would bind a
        literal number to a setting."""
        forms: dict[str, list[str]] = {}
        for key, (leaf, s) in self.sentinels.items():
            if leaf.kind == "duration":
                shown = FORMATS["seconds_g6"](s)
                if shown != FORMATS["seconds_g6"](leaf.value) and shown not in self.tokens:
                    forms.setdefault(shown, []).append(key)
        return {shown: (keys[0], "") for shown, keys in forms.items() if len(keys) == 1}

    def blame(self, node: Any) -> None:
        """Record a difference inside ``node``; suspect every setting printed (plainly or
        recognisably) there."""
        self.differs = True
        if isinstance(node, dict):
            for v in node.values():
                self.blame(v)
        elif isinstance(node, list):
            for v in node:
                self.blame(v)
        elif isinstance(node, str):
            self.suspects.update(self.tokens[node[a:b]][0] for a, b in self._spans(node))
            self._blame_derived(node)
        elif isinstance(node, int | float) and not isinstance(node, bool) and float(node) in self.numbers:
            self.suspects.add(self.numbers[float(node)][0])

    def _blame_derived(self, text: str) -> None:
        """Suspect settings whose sentinel shows up converted (e.g. MiB printed as bytes, one
        matcher of a selector printed alone)."""
        numbers = {re.sub(r"\D", "", n).lstrip("0") for n in _ANY_NUMBER.findall(text)}
        self.suspects.update(k for k, sigs in self.signatures.items() if numbers.intersection(sigs))
        self.suspects.update(self.labels[n] for n in _SENTINEL_NAME.findall(text) if n in self.labels)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Where sentinels are printed in ``text``, in order: numbers, and selectors whole."""
        spans = [m.span() for m in _NUMBER.finditer(text) if m.group() in self.tokens]
        spans += [m.span() for m in self.selector_tokens.finditer(text)] if self.labels else []
        return sorted(spans)

    def walk(self, built: Any, real: Any) -> Any:
        """The template of ``built`` (a sentinel build), checked against ``real``."""
        if type(built) is type(real) and built == real:
            return real
        if isinstance(built, dict) and isinstance(real, dict) and list(built) == list(real):
            return {k: self.walk(v, real[k]) for k, v in built.items()}
        if isinstance(built, list) and isinstance(real, list):
            return self._list(built, real)
        if isinstance(built, str) and isinstance(real, str):
            text = self._text(built, real)
            if isinstance(text, Text):
                return text
            if text is not None:  # the reference where the text stopped matching
                self.differs = True
                self.suspects.add(text)
                self._blame_derived(built)
                return real
        elif isinstance(built, int | float) and not isinstance(built, bool) and float(built) in self.numbers:
            ref = self._number(float(built), real)
            if ref is not None:
                return ref
        self.blame(built)
        return real

    def _list(self, built: list[Any], real: list[Any]) -> list[Any]:
        """Lists pair up element by element; when their lengths differ (a setting changed how many
        rules or queries exist), equal elements anchor the pairing and the built elements left
        over are blamed, so the setting that added them is the one suspected."""
        if len(built) == len(real):
            return [self.walk(b, r) for b, r in zip(built, real, strict=True)]
        self.differs = True
        before = len(self.suspects)
        fingerprint = [json.dumps(x, sort_keys=True) for x in built], [json.dumps(x, sort_keys=True) for x in real]
        matcher = difflib.SequenceMatcher(None, *fingerprint, autojunk=False)
        for tag, b1, b2, r1, r2 in matcher.get_opcodes():
            if tag in ("replace", "delete", "insert"):
                paired = min(b2 - b1, r2 - r1)
                for i in range(paired):
                    self.walk(built[b1 + i], real[r1 + i])
                for extra in built[b1 + paired : b2]:
                    self.blame(extra)
        if len(self.suspects) == before:
            self.blame(built)  # nothing extra to blame: suspect whatever the list prints
        return real

    def _number(self, built: float, real: Any) -> Ref | None:
        key, fmt = self.numbers[built]
        self.seen.add(key)
        value = _number(self.sentinels[key][0].value)
        if isinstance(real, bool) or not isinstance(real, int | float):
            return None
        return Ref(key, fmt) if float(real) == (value if fmt == "number" else 1 - value) else None

    def _text(self, built: str, real: str) -> Text | str | None:
        """``built`` with its sentinels as references, when that reproduces ``real``; otherwise
        the key of the reference where they part, or None when no reference is to blame."""
        spans = self._spans(built)
        if not spans:
            return None
        bounds = [0, *(x for span in spans for x in span), len(built)]
        literals = [built[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]
        if not real.startswith(literals[0]):
            return None
        parts: list[str | Ref] = [literals[0]] if literals[0] else []
        pos = len(literals[0])
        for i, (start, end) in enumerate(spans):
            key, hint = self.tokens[built[start:end]]
            self.seen.add(key)
            literal = literals[i + 1]
            # The value runs to where the next literal resumes; the last literal ends the text.
            if i == len(spans) - 1:
                stop = len(real) - len(literal) if real.endswith(literal) else -1
            else:
                stop = real.find(literal, pos) if literal else -1
            fmt = self._format(key, hint, real[pos:stop]) if stop > pos else None
            if fmt is None:
                return key
            parts.append(Ref(key, fmt))
            if literal:
                parts.append(literal)
            pos = stop + len(literal)
        return Text(tuple(parts)) if pos == len(real) else self.tokens[built[spans[-1][0] : spans[-1][1]]][0]

    def _format(self, key: str, hint: str, shown: str) -> str | None:
        leaf = self.sentinels[key][0]
        names = ("pct",) if hint == "pct" else _KIND_FORMATS[leaf.kind]
        return next((n for n in names if FORMATS[n](leaf.value) == shown), None)


def render(tmpl: Any, values: dict[str, Value]) -> Any:
    """The template with settings filled in: what the jsonnet mixin evaluates to."""
    if isinstance(tmpl, dict):
        return {k: render(v, values) for k, v in tmpl.items()}
    if isinstance(tmpl, list):
        return [render(v, values) for v in tmpl]
    if isinstance(tmpl, Text):
        return "".join(p if isinstance(p, str) else FORMATS[p.fmt](values[p.key]) for p in tmpl.parts)
    if isinstance(tmpl, Ref):
        value = _number(values[tmpl.key])
        return value if tmpl.fmt == "number" else 1 - value
    return tmpl


def refs(tmpl: Any) -> set[str]:
    """Keys of every setting the template references."""
    if isinstance(tmpl, dict):
        return set().union(*(refs(v) for v in tmpl.values()))
    if isinstance(tmpl, list):
        return set().union(*(refs(v) for v in tmpl))
    if isinstance(tmpl, Text):
        return {p.key for p in tmpl.parts if isinstance(p, Ref)}
    if isinstance(tmpl, Ref):
        return {tmpl.key}
    return set()


@dataclass(frozen=True)
class Traced:
    templates: dict[str, Any]  # builder name -> its output with settings as Ref/Text nodes
    settings: tuple[Leaf, ...]  # the settings referenced anywhere, in config order


class _TracedBuilder:
    """Tracing of one pack builder (say, the gpu alerts) against the real build."""

    def __init__(self, name: str, build: Callable[[Config], Any], cfg: Config, sentinels: dict[str, Value]):
        self.build, self.cfg, self.sentinels = build, cfg, sentinels
        self.name = name
        self.real = build(cfg)
        self.accepted: list[Leaf] = []
        self.rejected: set[str] = set()
        self.template: Any = self.real

    def attempt(self, chosen: Sequence[Leaf]) -> _Walk:
        cfg = with_values(self.cfg, {leaf.path: self.sentinels[leaf.key] for leaf in chosen})
        w = _Walk({leaf.key: (leaf, self.sentinels[leaf.key]) for leaf in chosen})
        try:
            built = self.build(cfg)
        except ValueError:  # the builder's own validation rejects a value: some of them are to blame
            w.differs = True
            return w
        except Exception as exc:
            keys = ", ".join(leaf.key for leaf in chosen)
            raise TraceError(
                f"mixin trace: pack builder {self.name} raised {type(exc).__name__}: {exc} when built with sentinel"
                f" values for [{keys}]; a builder must build any valid config or reject a value with ValueError"
            ) from exc
        w.template = w.walk(built, self.real)
        return w

    def solve(self, group: list[Leaf]) -> None:
        """Accept the part of ``group`` that, on top of what is accepted, reproduces the build."""
        if not group:
            return
        w = self.attempt([*self.accepted, *group])
        if not w.differs:
            self.accepted.extend(group)
            self.template = w.template
            return
        if len(group) == 1:
            self.rejected.add(group[0].key)
            return
        guilty = [leaf for leaf in group if leaf.key in w.suspects]
        innocent = [leaf for leaf in group if leaf.key not in w.suspects]
        if not guilty or not innocent:  # nothing tells them apart: halve
            innocent, guilty = group[: len(group) // 2], group[len(group) // 2 :]
        self.solve(innocent)
        self.solve(guilty)


def trace(cfg: Config, builder_names: Sequence[str], run_builder: Callable[[str, Config], Any]) -> Traced:
    """Template each pack builder's output over every setting that reaches it verbatim."""
    return _trace(cfg.model_dump_json(by_alias=True), tuple(builder_names), run_builder)


@lru_cache(maxsize=8)
def _trace(cfg_json: str, builder_names: tuple[str, ...], run_builder: Callable[[str, Config], Any]) -> Traced:
    cfg = parse_config(json.loads(cfg_json), "<config>")
    all_leaves = leaves(cfg)
    sentinels = valid_sentinels(cfg, all_leaves)
    traceable = [leaf for leaf in all_leaves if leaf.key in sentinels]
    builders = [_TracedBuilder(name, partial(run_builder, name), cfg, sentinels) for name in builder_names]
    for builder in builders:
        first = builder.attempt(traceable)
        # Only settings that show up in this builder's output are tried in it; the blameless ones
        # first. A builder that could not build at all shows nothing: try every setting.
        shown = first.seen | first.suspects if first.template is not None else {leaf.key for leaf in traceable}
        if not first.differs:
            builder.accepted, builder.template = [leaf for leaf in traceable if leaf.key in shown], first.template
            continue
        builder.solve([leaf for leaf in traceable if leaf.key in shown - first.suspects])
        builder.solve([leaf for leaf in traceable if leaf.key in shown & first.suspects])
    # A setting rejected anywhere is exposed nowhere: re-template the builders that accepted it.
    rejected = set().union(*(b.rejected for b in builders))
    while True:
        for builder in builders:
            if any(leaf.key in rejected for leaf in builder.accepted):
                keep = [leaf for leaf in builder.accepted if leaf.key not in rejected]
                builder.accepted, builder.template = [], builder.real
                builder.solve(keep)
        newly = set().union(*(b.rejected for b in builders)) - rejected
        if not newly:
            break
        rejected |= newly
    used = set().union(*(refs(b.template) for b in builders))
    return Traced({b.name: b.template for b in builders}, tuple(leaf for leaf in all_leaves if leaf.key in used))
