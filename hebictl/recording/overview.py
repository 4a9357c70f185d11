"""A matplotlib rendering of the shipped Foxglove layout (docs/foxglove-layout.json) for one recording.

Foxglove cannot run everywhere (not on a headless CI machine, nor here), so the same four panels
are drawn from the same topics: the 3D view (the arm's link frames chained from ``/tf`` at a few
instants, seen from the side), the joint position plot (``/joint_states``, commanded dashed from
``/joint_commands``), the supervisor's mode over time (``/supervisor/mode``) and the event log
(``/events``). ``hebictl plot RUN.mcap --layout`` writes it; docs/recording.md shows one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from hebictl.errors import InstallationError, RecordingError
from hebictl.recording import schemas
from hebictl.recording.reader import iter_messages, read_run, recorded_arms


def _world_points(tf_message: Any) -> tuple[dict[str, np.ndarray], dict[str, tuple[str, np.ndarray]]]:
    """Each frame's origin in the world, chaining the message's parent -> child transforms, and
    the parent -> child table itself (frame -> (parent, transform))."""
    rel: dict[str, tuple[str, np.ndarray]] = {}
    for tf in tf_message.transforms:
        T = np.eye(4)
        r = tf.rotation
        T[:3, :3] = Rotation.from_quat([r.x, r.y, r.z, r.w]).as_matrix()
        T[:3, 3] = tf.translation.x, tf.translation.y, tf.translation.z
        rel[tf.child_frame_id] = (tf.parent_frame_id, T)
    cache: dict[str, np.ndarray] = {}

    def world(name: str) -> np.ndarray:
        if name not in rel:
            return np.eye(4)
        if name not in cache:
            parent, T = rel[name]
            cache[name] = world(parent) @ T
        return cache[name]

    return {name: world(name)[:3, 3] for name in rel}, rel


def render_layout(path: str | Path, out: str | Path, snapshots: int = 5) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InstallationError("plotting needs matplotlib: pip install 'hebictl[plot]'") from exc
    run = read_run(path)
    if recorded_arms(run):
        raise RecordingError(f"{path}: a multi-arm recording; --layout draws one arm's (plot it without --layout: "
                             "one figure per arm)")
    topics = {schemas.JOINT_STATES.name, schemas.JOINT_COMMANDS.name, schemas.TF.name, schemas.MODE.name}
    series: dict[str, list] = {t: [] for t in topics}
    for topic, t_ns, msg in iter_messages(path, topics):
        series[topic].append((t_ns * 1e-9, msg))
    if not series[schemas.JOINT_STATES.name]:
        raise RecordingError(f"{path}: no joint states recorded")
    t0 = run.start
    fig = plt.figure(figsize=(14, 8.5))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.0, 1.5), height_ratios=(1.3, 1.0))
    ax3d = fig.add_subplot(grid[0, 0], projection="3d")
    tfs = series[schemas.TF.name]
    colors = plt.cm.viridis(np.linspace(0.1, 0.9, max(1, snapshots)))
    for k, i in enumerate(np.linspace(0, len(tfs) - 1, snapshots).astype(int) if tfs else []):
        t, msg = tfs[i]
        pts, parents = _world_points(msg)
        for child, (parent, _T) in parents.items():
            if parent in pts:
                a, b = pts[parent], pts[child]
                ax3d.plot([a[0], b[0]], [a[1], b[1]], [a[2], b[2]], color=colors[k], lw=2)
        xyz = np.array(list(pts.values()))
        ax3d.scatter(xyz[:, 0], xyz[:, 1], xyz[:, 2], color=colors[k], s=8, label=f"t={t - t0:.2f} s")
    limits = (ax3d.get_xlim3d(), ax3d.get_ylim3d(), ax3d.get_zlim3d())
    ax3d.set_box_aspect([float(b - a) for a, b in limits])  # metres look like metres on every axis
    ax3d.set_title("3D (/tf + /robot_description): link frames")
    ax3d.set_xlabel("x [m]")
    ax3d.set_ylabel("y [m]")
    ax3d.set_zlabel("z [m]")
    ax3d.legend(fontsize=7, loc="upper left")
    ax = fig.add_subplot(grid[0, 1])
    names = [j.name for j in series[schemas.JOINT_STATES.name][0][1].joints]
    t = np.array([x[0] for x in series[schemas.JOINT_STATES.name]]) - t0
    q = np.array([[j.position for j in m.joints] for _, m in series[schemas.JOINT_STATES.name]])
    tc = np.array([x[0] for x in series[schemas.JOINT_COMMANDS.name]]) - t0
    qc = np.array([[j.position for j in m.joints] for _, m in series[schemas.JOINT_COMMANDS.name]])
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, name in enumerate(names):
        ax.plot(t, q[:, j], color=palette[j % len(palette)], lw=1.2, label=name)
        if len(tc):
            ax.plot(tc, qc[:, j], "--", color=palette[j % len(palette)], lw=0.8)
    for e in run.events:
        if e.source == "hebictl.safety":
            ax.axvline(e.time - t0, color="tab:red", ls=":", lw=1)
    ax.set_title("Plot: /joint_states.joints[:].position (dashed: /joint_commands)")
    ax.set_ylabel("position [rad]")
    ax.legend(fontsize=7, ncol=2, loc="best")
    axm = fig.add_subplot(grid[1, 1], sharex=ax)
    modes = series[schemas.MODE.name]
    labels = sorted({m["mode"] for _, m in modes})
    for k, (tm, m) in enumerate(modes):
        end = modes[k + 1][0] if k + 1 < len(modes) else t[-1] + t0
        axm.barh(labels.index(m["mode"]), end - tm, left=tm - t0, height=0.6, color="tab:blue")
    axm.set_yticks(range(len(labels)), labels)
    axm.set_title("State transitions: /supervisor/mode.mode")
    axm.set_xlabel("time [s]")
    axl = fig.add_subplot(grid[1, 0])
    axl.axis("off")
    lines = [f"{e.time - t0:8.3f} s  {e.level:<7} {e.text}"[:84] for e in run.events][-14:]
    axl.text(0.0, 1.0, "Log: /events\n" + "\n".join(lines), family="monospace", fontsize=7.5, va="top")
    fig.suptitle(f"{Path(path).name}: the Foxglove layout's panels drawn with matplotlib")
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
