"""tools/dev's apt step on a busy machine: it waits for another apt-get's lock, saying so, instead of
failing with apt's raw "Could not get lock" (exit 100).

The real dpkg lock is shared with everything else on the machine, so the test runs tools/dev's own
``apt_get`` function (cut from the script, not a copy) against an ``apt-get`` on PATH that reports the
lock held twice, as apt does, and then succeeds; and against one that fails for another reason.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _functions() -> str:
    """log(), APT_LOCK_WAIT, APT_LOCK_POLL and apt_get() as written in tools/dev."""
    text = (REPO / "tools" / "dev").read_text(encoding="utf-8")
    log = re.search(r"^log\(\) \{.*?\}$", text, re.M | re.S)
    apt = re.search(r"^APT_LOCK_WAIT=.*?^\}$", text, re.M | re.S)
    assert log and apt, "tools/dev lost log() or apt_get()"
    return log.group(0) + "\n" + apt.group(0) + "\n"


def _run(tmp_path: Path, fake: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text("#!/bin/bash\n" + fake)
    (bin_dir / "apt-get").chmod(0o755)
    script = _functions() + 'apt_get "" install -y -qq libmosquitto-dev\necho "rc=$?"\n'
    # the retries 0.2 s apart instead of 5 s (the same loop; the test waited 10 s for two retries)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "COUNT": str(tmp_path / "count"),
           "HEBICTL_APT_LOCK_POLL": "0.2"}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, env=env,
                          timeout=60)


@pytest.mark.timeout(60)
def test_apt_waits_for_a_busy_lock_with_a_message(tmp_path: Path) -> None:
    out = _run(tmp_path, 'n=$(cat "$COUNT" 2>/dev/null || echo 0); echo $((n+1)) > "$COUNT"\n'
                         'echo "args: $*" >> "$COUNT.args"\n'
                         'if [ "$n" -lt 2 ]; then echo "E: Could not get lock /var/lib/dpkg/lock-frontend. '
                         'It is held by process 4321 (apt-get)" >&2; exit 100; fi\n')
    assert out.returncode == 0 and out.stdout.strip() == "rc=0", out.stderr
    assert "another apt-get/dpkg holds the package lock (held by process 4321 (apt-get)); waiting up to 300s" \
        in out.stderr
    assert out.stderr.count("holds the package lock") == 1  # said once, not per retry
    assert "Could not get lock" not in out.stderr
    calls = (tmp_path / "count.args").read_text().splitlines()
    assert calls == ["args: -o DPkg::Lock::Timeout=300 install -y -qq libmosquitto-dev"] * 3


def test_apt_reports_other_failures_at_once(tmp_path: Path) -> None:
    out = _run(tmp_path, 'echo "E: Unable to locate package libmosquitto-dev" >&2; exit 100\n')
    assert out.returncode == 100
    assert "E: Unable to locate package libmosquitto-dev" in out.stderr
    assert "apt-get install -y -qq libmosquitto-dev failed (exit 100)" in out.stderr
    assert "waiting" not in out.stderr
