"""MuJoCo's warnings reach Python logging and leave no MUJOCO_LOG.TXT in the working directory.

Runs in a child process: the test session itself redirects MuJoCo's log file (tests/conftest.py),
and a user's process starts with MuJoCo's defaults, which is what this checks.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import logging, sys
import numpy as np
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stdout)
import sim_backend  # noqa: F401  (the import installs the routing)
import mujoco
m = mujoco.MjModel.from_xml_string(
    '<mujoco><worldbody><body><joint/><geom size="0.1"/></body></worldbody></mujoco>')
d = mujoco.MjData(m)
d.qpos[0] = np.nan          # MuJoCo: "Nan, Inf or huge value in QPOS ..." warning
mujoco.mj_step(m, d)
print("warnings counted:", d.warning[mujoco.mjtWarning.mjWARN_BADQPOS].number)
"""


def test_mujoco_warning_is_logged_not_written_to_the_cwd(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "warnings counted: 1" in out.stdout  # MuJoCo did raise the warning
    assert "WARNING sim_backend.mujoco: MuJoCo: Nan, Inf or huge value in QPOS" in out.stdout, out.stdout
    assert list(tmp_path.iterdir()) == [], "MuJoCo left files in the working directory"


def test_a_configured_log_file_is_left_alone(tmp_path: Path) -> None:
    """An application that chose a log file (as tests/conftest.py does) keeps it."""
    mujoco = pytest.importorskip("mujoco")
    if not hasattr(mujoco, "MjLogConfig"):
        pytest.skip("MuJoCo < 3.4 has no log configuration")
    child = ("import mujoco\ncfg = mujoco.MjLogConfig.get(); cfg.logfile = 'mine.txt'; cfg.set()\n"
             "import sim_backend\ncfg = mujoco.MjLogConfig.get(); print(cfg.logfile, cfg.logto_file)\n")
    out = subprocess.run([sys.executable, "-c", child], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["mine.txt", "True"]
