"""`hebictl model info|validate|fk|convert` against hebi-py's numbers and the file's own errors."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "hrdf_kits" / "x-series-6dof.hrdf"


def hebictl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True, timeout=120,
                          cwd=tempfile.gettempdir())


def test_info_json_matches_hebi(hebi):
    """info --json: dof, masses and total mass equal hebi-py's for the bundled default kit."""
    r = hebictl("model", "info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    ref = hebi.robot_model.import_from_hrdf(str(KIT))
    assert info["dof"] == ref.dof_count
    np.testing.assert_allclose(info["masses_kg"], ref.masses, atol=1e-12)
    assert abs(info["total_mass_kg"] - ref.masses.sum()) < 1e-12
    assert [e["tag"] for e in info["elements"] if e["kind"] == "actuator"] == [j["name"] for j in info["joints"]]


def test_fk_matches_hebi(hebi):
    """fk --json at a configuration: the end-effector pose equals hebi-py's."""
    q = [0.1, 1.0, 1.5, 0.4, -0.3, 0.2]
    r = hebictl("model", "fk", str(KIT), "--q", *map(str, q), "--json")
    assert r.returncode == 0, r.stderr
    ref = hebi.robot_model.import_from_hrdf(str(KIT))
    np.testing.assert_allclose(json.loads(r.stdout)["poses"][0], ref.get_end_effector(np.array(q)), atol=1e-9)


def test_validate_reports_file_and_line(tmp_path):
    """validate: ok line and exit 0 for a good file; file:line: message and exit 2 for a bad one."""
    assert hebictl("model", "validate", str(KIT)).returncode == 0
    bad = tmp_path / "bad.hrdf"
    bad.write_text('<robot version="1.6.0">\n  <actuator type="X5-4"/>\n  <link type="X5" extension="0.3" '
                   'twist="pi pi"/>\n</robot>\n')
    r = hebictl("model", "validate", str(bad))
    assert r.returncode == 2
    assert f"{bad}:3: <link> attribute 'twist'" in r.stderr and "Traceback" not in r.stderr


def test_convert_writes_each_format(tmp_path):
    """convert --to urdf|mjcf|sdf writes a file that hebictl reads back with the same mass."""
    import hebictl as hc

    total = hc.load_model(KIT).total_mass
    for fmt, ext in (("urdf", ".urdf"), ("mjcf", ".xml"), ("sdf", ".sdf")):
        out = tmp_path / f"kit{ext}"
        r = hebictl("model", "convert", str(KIT), "--to", fmt, "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert abs(hc.load_model(out).total_mass - total) < 1e-12


LOWERCASE_ENUM = """<?xml version="1.0" encoding="UTF-8"?>
<robot version="1.2.0">
  <actuator type="x5-9"/>
  <link type="X5" extension="0.3" twist="0"/>
  <actuator type="X5-4"/>
</robot>
"""


def test_validate_says_which_warnings_strict_rejects(tmp_path):
    """A lowercase enum (the spec allows it, with a warning): validate and validate --strict both pass,
    and the warning says that --strict allows it, so a passing --strict is not a surprise."""
    path = tmp_path / "lower.hrdf"
    path.write_text(LOWERCASE_ENUM)
    for extra in ([], ["--strict"]):
        r = hebictl("model", "validate", str(path), *extra)
        assert r.returncode == 0, r.stderr
        assert r.stderr == (f"hebictl: warning: {path}:3: <actuator> attribute 'type': 'x5-9' read as 'X5-9'; "
                            "write enum values in their canonical case  [--strict allows this: the spec permits it]\n")


def test_strict_tag_marks_rule_bending_warnings():
    """Readers say "accepted because strict=False" for what --strict rejects (hrdf/parse.py's convention)."""
    from hebictl.cli.model_cmd import strict_tag
    from hebictl.errors import HrdfWarning

    assert strict_tag("f:1: axis '-rz'; accepted because strict=False", HrdfWarning) == "  [--strict rejects this]"
    assert strict_tag("f:1: enum case", HrdfWarning).startswith("  [--strict allows this")
    assert strict_tag("not a format warning", UserWarning) == ""
