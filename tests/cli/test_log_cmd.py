"""``hebictl run --record RUN.mcap``, ``hebictl log info``, ``hebictl plot RUN.mcap`` and
``hebictl log convert`` as a user runs them (real processes, the sim backend)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording

from hebictl.recording import schemas
from hebictl.recording.hebilog import write_feedback
from hebictl.recording.reader import load_recorder
from tests.recording.helpers import Readback

pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
pin = pytest.importorskip("pinocchio", reason=extra_missing("pinocchio"))

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"


def hebictl(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=tempfile.gettempdir())


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory) -> tuple[Path, int]:
    """One sim run (home, a goal, a hold) recorded to MCAP; its path and the cycles the CLI counted."""
    out = tmp_path_factory.mktemp("run") / "run.mcap"
    goal = ["0.2", "1.1", "1.6", "2.0", "-1.4", "0.3"]
    # --stop-hold 0: a safety stop ends the run at once (exit 2, with its cause) instead of holding until Ctrl-C;
    # --paced-clock: a loaded machine stretches the sim's time instead of stopping it with a control gap
    r = hebictl("run", str(CONFIG), "--backend", "sim", "--goal", *goal, "--hold", "0.3", "--record", str(out),
                "--quiet", "--stop-hold", "0", "--paced-clock")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    cycles = int(re.search(r"whole run: (\d+) cycles", r.stdout.replace("\n", " ")).group(1))
    assert f"recording: {out} ({cycles} of {cycles} cycles, 0 dropped)" in r.stdout.replace("\n", " ")
    return out, cycles


def test_recorded_sim_run_reads_back(recorded_run):
    out, cycles = recorded_run
    run = Readback(out)
    run.check_topics()
    assert len(run.messages["/joint_states"]) == cycles
    model = pin.buildModelFromXML(run.attachments[schemas.URDF_ATTACHMENT].decode())
    assert model.nv == 6
    meta = run.metadata[schemas.RUN_METADATA]
    assert meta["backend_name"] == "sim" and json.loads(meta["joint_names"])[0] == "J1_base"
    # the last measured position is the goal (within the sim's position loop)
    last = np.array([j.position for j in run.messages["/joint_states"][-1][1].joints])
    np.testing.assert_allclose(last, [0.2, 1.1, 1.6, 2.0, -1.4, 0.3], atol=5e-3)
    # effort plugins: gravity compensation is there, and it is what holds the arm at the end
    efforts = run.messages["/plugins/efforts"][-1][1]["plugins"]
    assert any("grav" in name.lower() for name in efforts), efforts


def test_log_info_lists_topics_counts_and_events(recorded_run, tmp_path):
    out, cycles = recorded_run
    r = hebictl("log", "info", str(out), "--urdf", str(tmp_path / "robot.urdf"))
    assert r.returncode == 0, r.stderr
    assert pin.buildModelFromUrdf(str(tmp_path / "robot.urdf")).nv == 6
    assert "complete; duration" in r.stdout
    assert re.search(rf"/joint_states\s+foxglove.JointStates\s+{cycles}\b", r.stdout), r.stdout
    assert "robot.urdf" in r.stdout
    assert re.search(r"t=\s*[\d.]+ s\s+INFO\s+recording closed", r.stdout), r.stdout
    j = json.loads(hebictl("log", "info", "--json", str(out)).stdout)
    assert j["complete"] and j["topics"]["/joint_states"]["count"] == cycles
    assert set(j["declared_topics"]) == {t.name for t in schemas.TOPICS if not t.teleop_only}


def test_plot_of_an_mcap_recording_writes_a_png(recorded_run, tmp_path):
    out, cycles = recorded_run
    png = tmp_path / "run.png"
    r = hebictl("plot", str(out), "-o", str(png))
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 10_000
    layout = tmp_path / "layout.png"
    r = hebictl("plot", str(out), "--layout", "-o", str(layout))
    assert r.returncode == 0, r.stderr
    assert layout.stat().st_size > 20_000
    rec, events = load_recorder(out)
    assert len(rec) == cycles and any("recording closed" in e.text for e in events)


def test_bad_files_are_one_line_errors(tmp_path):
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap file at all")
    for args in (("log", "info", str(junk)), ("plot", str(junk)), ("log", "convert", str(junk), "--to", "mcap",
                                                                    "-o", str(tmp_path / "o.mcap")),
                 ("log", "info", str(tmp_path / "missing.mcap")),
                 ("run", "--backend", "mock", "--record", str(junk / "run.mcap"), "--quiet")):
        r = hebictl(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("hebictl: error:") and "Traceback" not in r.stderr, r.stderr


def test_a_recording_never_overwrites_and_its_mode_can_share(tmp_path):
    """Issue 33: ``--record`` onto an existing file is a one-line error that leaves the file alone;
    ``--record-mode 0640`` shares with the group; a mode with other bits is refused."""
    import stat

    taken = tmp_path / "taken.mcap"
    taken.write_bytes(b"an earlier run")
    quick = ("--backend", "mock", "--no-home", "--hold", "0", "--quiet", "--paced-clock")
    r = hebictl("run", *quick, "--record", str(taken))
    assert r.returncode == 2 and r.stderr.startswith("hebictl: error:") and "exists" in r.stderr, r.stderr
    assert taken.read_bytes() == b"an earlier run"
    shared = tmp_path / "shared.mcap"
    r = hebictl("run", *quick, "--record", str(shared), "--record-mode", "0640")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
    r = hebictl("run", *quick, "--record", str(tmp_path / "x.mcap"), "--record-mode", "0755")
    assert r.returncode == 2 and "--record-mode 0755" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "x.mcap").exists()


def test_an_npz_recording_never_follows_a_symlink_nor_overwrites_and_is_0600(tmp_path):
    """Issue 33 item 5 for ``--record RUN.npz``: a symlink planted at the name, or a file there, is a
    one-line error before the run (the symlink's target untouched); a new file is 0600 under umask 0
    and loads back."""
    import os
    import stat

    from hebictl.control.recorder import Recorder

    target = tmp_path / "victim"
    target.write_bytes(b"root's file")
    os.chmod(target, 0o600)
    planted = tmp_path / "run.npz"
    planted.symlink_to(target)
    quick = ("--backend", "mock", "--no-home", "--hold", "0.05", "--quiet", "--paced-clock")
    r = hebictl("run", *quick, "--record", str(planted))
    assert r.returncode == 2 and r.stderr.startswith("hebictl: error:") and "symbolic link" in r.stderr, r.stderr
    assert target.read_bytes() == b"root's file" and planted.is_symlink()
    taken = tmp_path / "taken.npz"
    taken.write_bytes(b"an earlier run")
    r = hebictl("run", *quick, "--record", str(taken))
    assert r.returncode == 2 and "exists" in r.stderr and taken.read_bytes() == b"an earlier run", r.stderr
    fresh = tmp_path / "new" / "fresh.npz"
    fresh.parent.mkdir()  # --record's folder must exist (tests/cli/test_run_cmd.py)
    old = os.umask(0)
    try:
        r = hebictl("run", *quick, "--record", str(fresh))
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert len(Recorder.load(fresh).times) > 0
    assert [p.name for p in fresh.parent.iterdir()] == ["fresh.npz"]  # no hidden temporary left


def test_hebi_feedback_converts_to_joint_states(tmp_path):
    """The .hebilog import path with real hebi-py GroupFeedback from its imitation group (hebi-py
    cannot write a .hebilog from an imitation group: start_log raises, so the file reading itself
    is hebi.util.load_log's and untested here)."""
    import hebi

    group = hebi.util.create_imitation_group(3)
    cmd = hebi.GroupCommand(3)
    out = tmp_path / "imported.mcap"
    feedback = []
    for k in range(20):  # fresh objects: get_next_feedback may reuse one
        cmd.position = np.array([0.1, 0.2, 0.3]) * k
        group.send_command(cmd)
        feedback.append(group.get_next_feedback())
    expected = [(f.receive_time.min(), f.position.copy(), f.position_command.copy()) for f in feedback]
    assert write_feedback(feedback, out, 3, source="imitation") == 20
    run = Readback(out)
    run.check_topics(one_per_cycle=False)  # the imitation group's receive times may repeat
    got = run.messages["/joint_states"]
    assert len(got) == 20
    for (t_ns, msg), (t, position, _) in zip(got, expected, strict=True):
        assert abs(t_ns * 1e-9 - t) < 1e-6
        np.testing.assert_allclose([j.position for j in msg.joints], position)
    np.testing.assert_allclose([j.position for j in run.messages["/joint_commands"][-1][1].joints],
                               expected[-1][2])
