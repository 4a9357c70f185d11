"""``hebictl app``: HEBI's example configs (ex_AR_kit, ex_teach_repeat, ex_gravity_compensation_toggle)
load and run on the sim from their own files, unchanged, driven by a script; the user errors are one line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests._support.corpus import corpus_path
from tests._support.extras import extra_missing
from tests._support.paths import REPO_ROOT

ARM_CONFIGS = ("hebi", "hebi-python-examples", "kits", "arms", "config")


def _hebictl(*args, timeout=600):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO_ROOT)


def _script(path, duration, presses, pose=True):
    samples = []
    for k in range(int(duration * 60)):
        t = k / 60
        b = [1 if any(button == i + 1 and t0 <= t < t0 + 0.1 for t0, button in presses) else 0 for i in range(8)]
        sample = {"t": t, "buttons": b, "axes": [0.0] * 8}
        if pose:
            sample["pose"] = {"position": [0.03 * math.sin(t), 0.015 * math.sin(2 * t), 0.0],
                              "orientation": [1.0, 0.0, 0.0, 0.0]}
        samples.append(sample)
    path.write_text(json.dumps({"samples": samples}))
    return path


@pytest.fixture
def sim():
    pytest.importorskip("mujoco", reason=extra_missing("mujoco"))


def test_ex_ar_kit_runs_unchanged_on_the_sim(tmp_path, sim):
    cfg = corpus_path(*ARM_CONFIGS, "ex_AR_kit.cfg.yaml")
    script = _script(tmp_path / "ar.json", 6.0, [(1.0, 3), (5.0, 8)])
    r = _hebictl("app", "ar", "--config", str(cfg), "--backend", "sim", "--input", f"script:{script}")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    assert "final state exit" in r.stderr + r.stdout and "targets admitted" in r.stderr + r.stdout


def test_ex_teach_repeat_runs_unchanged_and_its_path_replays(tmp_path, sim):
    cfg = corpus_path(*ARM_CONFIGS, "ex_teach_repeat.cfg.yaml")
    script = _script(tmp_path / "teach.json", 5.0, [(0.5, 1), (1.0, 2), (1.5, 1), (2.0, 3), (4.5, 8)], pose=False)
    saved = tmp_path / "path.json"
    r = _hebictl("app", "teach", "--config", str(cfg), "--backend", "sim", "--input", f"script:{script}",
                 "--path", str(saved))
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    data = json.loads(saved.read_text())
    assert [w["kind"] for w in data["waypoints"]] == ["stop", "flow", "stop"]
    assert len(data["joint_names"]) == 6 and data["waypoints"][0]["time"] == 3  # base_travel_time
    r = _hebictl("app", "repeat", "--config", str(cfg), "--backend", "sim", "--input", f"script:{script}",
                 "--path", str(saved), "--duration", "3")
    assert r.returncode == 0, r.stderr


def test_ex_gravity_compensation_toggle_runs_unchanged(tmp_path, sim):
    cfg = corpus_path(*ARM_CONFIGS, "ex_gravity_compensation_toggle.cfg.yaml")
    # B2 is a toggle on the phone: held down from 0.5 s (on) and released at 1.5 s (off); B1 quits
    samples = [{"t": k / 60, "buttons": [1 if 2.5 <= k / 60 < 2.6 else 0, 1 if 0.5 <= k / 60 < 1.5 else 0, 0, 0, 0,
                                         0, 0, 0], "axes": [0.0] * 8} for k in range(180)]
    script = tmp_path / "g.json"
    script.write_text(json.dumps({"samples": samples}))
    r = _hebictl("app", "gravcomp", "--config", str(cfg), "--backend", "sim", "--input", f"script:{script}")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    assert "final state exit" in r.stderr + r.stdout


def test_user_errors_are_one_line(tmp_path):
    r = _hebictl("app", "ar", str(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"), "--input", "bogus")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--input bogus" in r.stderr, r.stderr
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"samples": [{"t": 0, "buttons": [3] * 8, "axes": [0.0] * 8}]}))
    r = _hebictl("app", "ar", str(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"), "--input", f"script:{bad}")
    assert r.returncode == 2 and "samples[0]" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = _hebictl("app", "repeat", str(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"), "--input", f"script:{bad}")
    assert r.returncode == 2 and "--path" in r.stderr and "Traceback" not in r.stderr, r.stderr
