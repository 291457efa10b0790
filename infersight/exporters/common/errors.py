"""Errors for an operator's input file (web config, scenario): every problem with its key path."""

from __future__ import annotations

from infersight.inputs import InputError


class InputFileError(InputError):
    """``problems`` lists (key path, message) pairs; the message names the file and each problem."""

    what = "file"
