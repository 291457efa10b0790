"""Results on disk: ``results.json`` (run metadata and summary) and ``requests.csv`` (one row per
request sent), both written atomically so a reader never sees half a file, even after Ctrl-C.
Neither holds prompt or completion text."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from infersight.loadgen.records import RequestRecord
from infersight.output import dump_json, write_atomic

RESULTS_JSON = "results.json"
REQUESTS_CSV = "requests.csv"


class ResultsLocationError(ValueError):
    """The results folder cannot be created or written."""


class ResultsWriteError(OSError):
    """Writing the results failed after the run (the folder changed under it, the disk filled)."""


def check_results_dir(out_dir: Path) -> None:
    """Raise ResultsLocationError unless ``out_dir`` is, or can be created as, a writable folder.

    Called before any load is sent, so a run is never sent only to fail at the end. It creates
    nothing: a run refused later (a target that does not answer) leaves no empty folder behind.
    """
    existing = out_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == out_dir else f" ({existing} is a file)"
        raise ResultsLocationError(f"{out_dir} is not a folder{where}; give a folder, new or existing")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ResultsLocationError(f"{out_dir} cannot be written ({existing} is not writable)")


CSV_COLUMNS = (
    "index",
    "stage",
    "scheduled_s",
    "sent_s",
    "lag_ms",
    "status",
    "error",
    "error_type",
    "ttft_s",
    "itl_mean_s",
    "itl_max_s",
    "itl_source",
    "first_chunk_tokens",
    "tpot_s",
    "e2e_s",
    "prompt_tokens_planned",
    "prompt_tokens",
    "completion_tokens",
    "trace_id",
)


def _num(value: float | None, digits: int = 6) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def csv_text(records: Sequence[RequestRecord], stage_names: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in sorted(records, key=lambda r: r.index):
        lag = r.lag
        writer.writerow(
            [
                r.index,
                stage_names[r.stage],
                _num(r.scheduled),
                _num(r.sent),
                _num(None if lag is None else lag * 1000, 3),
                "" if r.status is None else r.status,
                r.error or "",
                r.error_type or "",
                _num(r.ttft),
                _num(sum(r.itl) / len(r.itl) if r.itl else None),
                _num(max(r.itl) if r.itl else None),
                r.itl_source,
                "" if r.first_chunk_tokens is None else r.first_chunk_tokens,
                _num(r.tpot),
                _num(r.e2e),
                r.prompt_tokens_planned,
                "" if r.prompt_tokens is None else r.prompt_tokens,
                "" if r.completion_tokens is None else r.completion_tokens,
                r.trace_id or "",
            ]
        )
    return buf.getvalue()


def write_results(
    out_dir: Path, run: dict[str, Any], records: Sequence[RequestRecord], stage_names: Sequence[str]
) -> tuple[Path, Path]:
    """Write both files; the CSV first, so results.json (the file readers look for) names a complete set."""
    csv_path, json_path = out_dir / REQUESTS_CSV, out_dir / RESULTS_JSON
    try:
        write_atomic(csv_path, csv_text(records, stage_names))
        write_atomic(json_path, dump_json(run))
    except OSError as exc:
        raise ResultsWriteError(f"results not written to {out_dir}: {exc.strerror or exc}") from None
    return json_path, csv_path
