"""Operator input files (infersight.yaml, scenario files, web configs): one error type that
lists every problem with its key path, and one way to read YAML and validate it with
pydantic, so each file format only declares its model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_SUBPATH = re.compile(r"^([A-Za-z_][\w.\-]*): (.*)$", re.S)


class InputError(ValueError):
    """``problems`` lists (key path, message) pairs; the message names the file and each problem."""

    what = "input"

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {path}: {msg}" for path, msg in problems)
        super().__init__(f"invalid {self.what} {source}:\n{lines}")


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
            problems.append((".".join(loc) or "(root)", "required"))
            continue
        value = err.get("input")
        if isinstance(value, dict) and err["type"] not in ("extra_forbidden", "union_tag_invalid"):
            for part in msg.split(" ;; "):
                m = _SUBPATH.match(part)
                path = ".".join([*loc, m.group(1)] if m else loc)
                problems.append((path or "(root)", m.group(2) if m else part))
            continue
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        problems.append((".".join(loc) or "(root)", f"{msg} (got {shown})"))
    return list(dict.fromkeys(problems))  # a union reports each branch; keep one line each


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
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(source, problems_from(exc, unknown_key_hint, drop_from_path)) from None
    except (TypeError, ArithmeticError) as exc:  # odd YAML scalars that slip past pydantic
        raise error(source, [("(root)", str(exc))]) from None


def read_yaml(path: Path, error: type[InputError], source: str | None = None) -> Any:
    """The parsed YAML of a file, or ``error`` naming why it could not be read."""
    source = source or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(source, [("(file)", f"cannot read: {getattr(exc, 'strerror', None) or exc}")]) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(source, [("(file)", f"not valid YAML: {exc}")]) from None
