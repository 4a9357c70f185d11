"""Plots of a recorded run: commanded vs. measured position, tracking error and efforts.

Events of an MCAP recording (safety events, recorder notes) are drawn as vertical markers on every
panel and labelled on the top one, so a stop shows where it happened in the traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.control.recorder import Recorder
from hebictl.errors import InstallationError, RecordingError


def plot_recording(rec: Recorder, out: str | Path, title: str = "hebictl run", events: Sequence[Any] = ()) -> Path:
    """Write a PNG (or any matplotlib format by extension) with one column per quantity.

    ``events``: anything with ``time`` (same clock as the recording), ``level`` and ``text``
    (:class:`hebictl.recording.reader.Event`), drawn as markers."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InstallationError("plotting needs matplotlib: pip install 'hebictl[plot]'") from exc
    if len(rec) == 0:
        raise RecordingError("nothing was recorded; cannot plot an empty run")
    t = rec.times - rec.times[0]
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, name in enumerate(rec.joint_names):
        c = colors[j % len(colors)]
        axes[0].plot(t, rec.series("position_command")[:, j], "--", color=c, lw=1)
        axes[0].plot(t, rec.series("position")[:, j], "-", color=c, lw=1, label=name)
        axes[1].plot(t, 1e3 * rec.tracking_error()[:, j], color=c, lw=1, label=name)
        axes[2].plot(t, rec.series("effort_command")[:, j], "--", color=c, lw=1)
        axes[2].plot(t, rec.series("effort")[:, j], "-", color=c, lw=1, label=name)
    err = np.nanmax(np.abs(rec.tracking_error())) if np.isfinite(rec.tracking_error()).any() else float("nan")
    axes[0].set_ylabel("position [rad]\n(dashed: command)")
    axes[1].set_ylabel("tracking error [mrad]")
    axes[1].set_title(f"max |error| = {1e3 * err:.3f} mrad", fontsize=9)
    axes[2].set_ylabel("effort [N·m]\n(dashed: command)")
    axes[2].set_xlabel("time [s]")
    for ev in events:
        x = ev.time - rec.times[0]
        color = "tab:red" if ev.level in ("WARNING", "ERROR", "FATAL") else "tab:gray"
        for ax in axes:
            ax.axvline(x, color=color, lw=0.8, ls=":")
        axes[0].annotate(ev.text.split(":")[0][:40], (x, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                         fontsize=7, color=color, va="top", ha="right")
    axes[0].legend(loc="upper right", fontsize=8, ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
