"""PNG plots of one scenario: each panel's series over time (seconds from the scenario's start),
every alert's firing interval drawn as a band on all panels, and the faults as vertical lines.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global state),
and written atomically.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from infersight.output import write_atomic
from infersight.validate.evaluator import RunWindow
from infersight.validate.series import PanelData
from infersight.validate.timeline import AlertInterval

# Colour-blind-safe (Okabe-Ito) colours for alert bands, assigned by alert name in order seen.
BAND_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")


def with_gaps(points: Sequence[tuple[float, float]], t0: float) -> tuple[list[float], list[float]]:
    """x (seconds from ``t0``) and y, with a NaN wherever samples are missing for more than three
    usual steps, so a hole in the data shows as a hole, not as a straight line across it."""
    xs: list[float] = []
    ys: list[float] = []
    steps = sorted(b[0] - a[0] for a, b in itertools.pairwise(points))
    usual = steps[len(steps) // 2] if steps else 0.0
    for k, (t, v) in enumerate(points):
        if k and usual and t - points[k - 1][0] > 3 * usual:
            xs.append((t + points[k - 1][0]) / 2 - t0)
            ys.append(math.nan)
        xs.append(t - t0)
        ys.append(v)
    return xs, ys


def band_colours(intervals: Sequence[AlertInterval]) -> dict[str, str]:
    names = list(dict.fromkeys(i.name for i in intervals if i.fired))
    return {name: BAND_COLOURS[k % len(BAND_COLOURS)] for k, name in enumerate(names)}


def draw_scenario(
    path: Path,
    title: str,
    window: RunWindow,
    panels: Sequence[PanelData],
    intervals: Sequence[AlertInterval],
    faults: Sequence[tuple[str, float]],
) -> None:
    """Write the scenario's PNG; ``faults`` are (name, Unix time) pairs."""
    rows = max(1, len(panels))
    fig = Figure(figsize=(10, 1.9 * rows + 1.2), dpi=96)
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    colours = band_colours(intervals)
    t0, span = window.start, window.end - window.start
    for ax, pd in zip(axes, panels, strict=False):
        for label, points in pd.lines.items():
            if points:
                ax.plot(*with_gaps(points, t0), label=label, linewidth=1.2)
        for i in intervals:
            if i.firing_at is None:
                continue
            end = i.resolved_at if i.resolved_at is not None else window.end
            ax.axvspan(i.firing_at - t0, end - t0, color=colours[i.name], alpha=0.25, linewidth=0)
        for name, at in faults:
            ax.axvline(at - t0, color="#333333", linestyle="--", linewidth=0.9)
            ax.annotate(name, (at - t0, 1.0), xycoords=("data", "axes fraction"), fontsize=7, va="top", ha="left")
        ax.set_title(pd.panel.title, fontsize=9, loc="left")
        ax.set_ylabel(pd.panel.unit, fontsize=8)
        ax.tick_params(labelsize=7)
        if pd.panel.log_scale and any(v > 0 for pts in pd.lines.values() for _, v in pts):
            ax.set_yscale("log")
        if pd.empty:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="#888888")
        elif pd.lines:
            ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
    axes[-1].set_xlim(-5, span)
    axes[-1].set_xlabel("seconds since the scenario started", fontsize=8)
    handles = [Patch(color=c, alpha=0.4, label=f"{name} firing") for name, c in colours.items()]
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(3, len(handles)), fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.06 if handles else 0, 1, 0.97))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    write_atomic(path, buf.getvalue())
