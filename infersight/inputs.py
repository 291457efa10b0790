"""Operator input files (infersight.yaml, scenario files, web configs): one error type that
lists every problem with its key path, and one way to read YAML and validate it with
pydantic, so each file format only declares its model.

The reader is stricter than YAML: it refuses aliases (a few hundred bytes of nested aliases
expand to a billion values), duplicate keys (YAML keeps the last one silently) and integers
longer than any setting needs, and validation refuses infinities and NaN wherever they
appear. Error messages show a bounded excerpt of a value, never the whole input."""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_SUBPATH = re.compile(r"^([A-Za-z_][\w.\-]*): (.*)$", re.S)

MAX_LISTED_PROBLEMS = 5  # one line stays readable
MAX_MESSAGE = 300  # characters of one problem's message
MAX_KEY = 60  # characters of one key inside a path
MAX_INT_DIGITS = 100  # a YAML integer's characters; Python refuses to parse more than 4300

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 3, 4, 4, 60, 60


def brief(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, built without walking more of the value
    than it shows: an input may be huge, or nest shared references a billion times over."""
    try:
        shown = _REPR.repr(value)
    except ValueError:  # an int with more digits than Python will print
        shown = f"<{type(value).__name__} too long to print>"
    return _cut(shown, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class InputError(ValueError):
    """``problems`` lists (key path, message) pairs; the message is one line that names the file
    and each problem (the first :data:`MAX_LISTED_PROBLEMS`, then how many more), so a log or a
    CI annotation shows all of it."""

    what = "input"

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        listed = [f"{path}: {' '.join(msg.split())}" for path, msg in problems[:MAX_LISTED_PROBLEMS]]
        if len(problems) > MAX_LISTED_PROBLEMS:
            listed.append(f"and {len(problems) - MAX_LISTED_PROBLEMS} more problems")
        super().__init__(f"invalid {self.what} {' '.join(source.split())}: " + "; ".join(listed))


def _path(parts: list[str]) -> str:
    return ".".join(_cut(p, MAX_KEY) for p in parts) or "(root)"


def key_path(*parts: object) -> str:
    """A key path for an error message, each key cut to :data:`MAX_KEY` characters: a key is input too."""
    return _path([str(p) for p in parts])


class SecretValueError(ValueError):
    """A validator's error about a value that may hold a secret: its message is shown, the value is not."""


def problems_from(
    exc: ValidationError, unknown_key_hint: str = "", drop_from_path: re.Pattern[str] | None = None
) -> list[tuple[str, str]]:
    """Pydantic's errors as (key path, message) pairs a user can act on.

    Cross-field validators put ``sub.path: message`` parts, joined by `` ;; ``, in their
    error; those land on the named sub-path. Union and discriminator tags are dropped from
    paths (``drop_from_path``) because they mean nothing to the person editing the file."""
    problems: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"] if not str(p).startswith("function-")]
        if drop_from_path is not None:
            loc = [p for p in loc if not drop_from_path.match(p)]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key" + (f"; {unknown_key_hint}" if unknown_key_hint else "")
        elif err["type"] == "missing":  # its input is the parent mapping: nothing worth echoing
            problems.append((_path(loc), "required"))
            continue
        if isinstance(err.get("ctx", {}).get("error"), SecretValueError):
            problems.append((_path(loc), _cut(msg, MAX_MESSAGE)))
            continue
        value = err.get("input")
        if isinstance(value, dict) and err["type"] not in ("extra_forbidden", "union_tag_invalid"):
            for part in msg.split(" ;; "):
                m = _SUBPATH.match(part)
                problems.append((_path([*loc, m.group(1)] if m else loc), _cut(m.group(2) if m else part, MAX_MESSAGE)))
            continue
        problems.append((_path(loc), f"{_cut(msg, MAX_MESSAGE)} (got {brief(value)})"))
    return list(dict.fromkeys(problems))  # a union reports each branch; keep one line each


def _non_finite(data: Any) -> Iterator[tuple[str, str]]:
    """(key path, message) for each infinity or NaN in parsed data. Pydantic lets them through
    any float field with a lower bound only, and they cannot be written back as JSON."""
    stack: list[tuple[list[str], Any]] = [([], data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            yield _path(path), f"must be a finite number (got {value!r})"
        elif isinstance(value, dict):
            stack.extend(([*path, str(k)], v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(([*path, str(i)], v) for i, v in reversed(list(enumerate(value))))


def validate(
    model: type[M],
    data: Any,
    source: str,
    error: type[InputError],
    *,
    mapping_hint: str = "a mapping",
    unknown_key_hint: str = "",
    drop_from_path: re.Pattern[str] | None = None,
) -> M:
    """``model.model_validate(data)``, raising only ``error``."""
    if not isinstance(data, dict):
        raise error(source, [("(root)", f"must be {mapping_hint}, got {type(data).__name__}")])
    non_finite = list(_non_finite(data))
    if non_finite:
        raise error(source, non_finite)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(source, problems_from(exc, unknown_key_hint, drop_from_path)) from None
    except (TypeError, ArithmeticError) as exc:  # odd YAML scalars that slip past pydantic
        raise error(source, [("(root)", _cut(str(exc), MAX_MESSAGE))]) from None
    except RecursionError:
        raise error(source, [("(root)", "nested too deeply")]) from None


class _Refused(yaml.YAMLError):
    """YAML that parses but that an operator's file never needs."""


class _OperatorLoader(yaml.SafeLoader):
    """SafeLoader without aliases, duplicate keys or integers too long to parse."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                f"line {event.start_mark.line + 1}: YAML aliases (*{_cut(str(event.anchor), MAX_KEY)}) are not "
                "accepted; write the value out in full"
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                duplicate = key in first_line
            except TypeError:  # an unhashable key: SafeLoader's own check names it
                continue
            if duplicate:
                raise _Refused(
                    f"line {line}: duplicate key {brief(key)} (first at line {first_line[key]}); write each key once"
                )
            first_line[key] = line
        return super().construct_mapping(node, deep)

    def construct_bounded_int(self, node: Any) -> Any:
        if len(str(node.value)) > MAX_INT_DIGITS:
            raise _Refused(
                f"line {node.start_mark.line + 1}: a number of {len(str(node.value))} digits is out of range "
                f"(at most {MAX_INT_DIGITS})"
            )
        return self.construct_yaml_int(node)


_OperatorLoader.add_constructor("tag:yaml.org,2002:int", _OperatorLoader.construct_bounded_int)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: where, what, and in which construct."""
    if isinstance(exc, _Refused):
        return str(exc)
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        context = f" ({exc.context})" if exc.context else ""
        return _cut(f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {exc.problem}{context}", 200)
    return _cut("not valid YAML: " + " ".join(str(exc).split()), 200)


def parse_yaml(text: str, error: type[InputError], source: str) -> Any:
    """The parsed YAML of ``text``, or ``error`` naming (on one line) why it was refused."""
    try:
        return yaml.load(text, Loader=_OperatorLoader)  # a SafeLoader, stricter still
    except yaml.YAMLError as exc:
        raise error(source, [("(file)", _yaml_problem(exc))]) from None
    except RecursionError:
        raise error(source, [("(file)", "not valid YAML: nested too deeply")]) from None


MAX_INPUT_FILE_BYTES = 4 << 20


def read_yaml(path: Path, error: type[InputError], source: str | None = None) -> Any:
    """The parsed YAML of a file, or ``error`` naming why it could not be read."""
    source = source or str(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_INPUT_FILE_BYTES + 1)  # a device or a log given by mistake is not read to its end
        if len(raw) > MAX_INPUT_FILE_BYTES:
            too_large = f"larger than {MAX_INPUT_FILE_BYTES >> 20} MiB; these files are a few KiB"
            raise error(source, [("(file)", too_large)])
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(source, [("(file)", f"cannot read: {getattr(exc, 'strerror', None) or exc}")]) from None
    return parse_yaml(text, error, source)
