"""Errors for an operator's input file (web config, scenario): every problem with its key path."""

from __future__ import annotations


class InputFileError(ValueError):
    """``problems`` lists (key path, message) pairs; the message names the file and each problem."""

    what = "file"

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {path}: {msg}" for path, msg in problems)
        super().__init__(f"invalid {self.what} {source}:\n{lines}")
