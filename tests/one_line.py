"""What every bad-input test asks of a command's error output: one line, and no traceback."""

from __future__ import annotations


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]
