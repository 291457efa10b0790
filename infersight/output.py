"""Deterministic serialisation and atomic writes.

Same input, same bytes: YAML keys keep the order the builders give, multi-line PromQL is
written as literal blocks, JSON is sorted and indented. Files are written to a temporary
name in the same directory and renamed, so a reader never sees half a file.

A file gets the mode the umask gives any new file (0666 less the umask); a file that holds a
secret (a webhook URL, a password) is 0600 whatever the umask.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        # Literal blocks cannot carry trailing spaces on a line; strip them so the style sticks.
        data = "\n".join(line.rstrip() for line in data.split("\n"))
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_representer)


def comment(header: str) -> str:
    """``header`` as ``#`` comment lines (YAML, and dcgm-exporter's counters CSV)."""
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())


def dump_yaml(data: Any, header: str = "") -> str:
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
    return comment(header) + body


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


PLAIN_MODE = 0o666  # the kernel takes the umask off at creation, as for any file a tool creates
SECRET_MODE = 0o600
_TEMP_NAME_TRIES = 100


def _create_temporary(path: Path, mode: int) -> tuple[int, Path]:
    """A new, empty, exclusively created file beside ``path``. (tempfile.mkstemp always makes 0600,
    which would then need a chmod that either ignores the umask or has to read it.)"""
    for _ in range(_TEMP_NAME_TRIES):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path} after {_TEMP_NAME_TRIES} tries")


def write_atomic(path: Path, content: str | bytes, *, secret: bool = False) -> None:
    """Write via a temporary file in the same directory, then rename over the target.
    ``secret``: the file is readable by its owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, tmp = _create_temporary(path, SECRET_MODE if secret else PLAIN_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
