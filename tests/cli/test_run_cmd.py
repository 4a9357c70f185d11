"""`hebictl run`, `check-config` and `plot` as a user runs them: real processes, bundled configs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"


def hebictl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def test_run_homes_follows_a_goal_and_records(tmp_path):
    """run: home, then --goal, then hold; --record and --plot write their files; exit 0."""
    rec, png = tmp_path / "run.npz", tmp_path / "run.png"
    goal = ["0.2", "1.1", "1.6", "2.0", "-1.4", "0.3"]
    r = hebictl("run", str(CONFIG), "--backend", "mock", "--goal", *goal, "--goal-time", "0.5",
                "--hold", "0.2", "--record", str(rec), "--plot", str(png), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "phases=home, goal, hold" in r.stdout
    from hebictl.control.recorder import Recorder

    recording = Recorder.load(rec)
    np.testing.assert_allclose(recording.series("position")[-1], [float(x) for x in goal], atol=1e-6)
    assert png.stat().st_size > 10_000
    p = hebictl("plot", str(rec), "-o", str(tmp_path / "again.png"))
    assert p.returncode == 0 and (tmp_path / "again.png").exists()


@pytest.mark.parametrize("sig, kind", [(signal.SIGINT, "interrupt"), (signal.SIGTERM, "terminate")])
def test_signal_stops_with_hold_until_a_second_signal(sig, kind):
    """SIGINT/SIGTERM during an endless hold: a latched 'hold' stop (never a release), kept until a
    second signal; the command then exits 0."""
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "run", str(CONFIG), "--backend", "mock",
                             "--no-home", "--hold", "inf", "--quiet"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4.0)  # imports, kernel load, some control cycles
        proc.send_signal(sig)
        time.sleep(1.0)
        assert proc.poll() is None, "the first signal must not end the hold"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"{kind} -> stopped" in out and "[hold]" in out and "release" not in out


def test_bad_goal_length_is_a_clear_error():
    """A --goal of the wrong length ends with one error line naming the joints, exit 2, no traceback."""
    r = hebictl("run", str(CONFIG), "--goal", "0", "1", "--quiet")
    assert r.returncode == 2
    assert "--goal needs 6 positions (J1_base" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("config", sorted((REPO / "configs").glob("*.cfg.yaml")), ids=lambda p: p.stem)
def test_check_config_accepts_the_bundled_configs(config):
    """check-config loads config, HRDF and gains and reports them."""
    r = hebictl("check-config", str(config))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"ok: {config}")


def test_check_config_names_file_and_key(tmp_path):
    """A config with an unknown key fails with file and key, exit 2."""
    bad = tmp_path / "bad.cfg.yaml"
    bad.write_text(CONFIG.read_text().replace("version: 1.1", "version: 1.1\nspeed: 3"))
    r = hebictl("check-config", str(bad))
    assert r.returncode == 2 and str(bad) in r.stderr and "speed" in r.stderr
