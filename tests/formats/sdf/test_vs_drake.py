"""SDF files loaded by hebictl and by Drake side by side: validity, link poses, gravity torques.

Drake (which parses SDFormat through libsdformat) runs in a subprocess (tools/ref_drake.py) on
every SDF file of the corpus in one batch per session; hebictl loads the same files. Files Drake
accepts must load in hebictl with the same bodies, link poses to 1e-12 and gravity torques to
1e-9 at random configurations; files Drake rejects as invalid must be rejected by hebictl with a
FormatError. The few files where the two differ on validity for reasons outside the
specification are listed in ``VALIDITY_DIFFERENCES`` with the reason.

Conventions bridged (see hebictl.formats.sdf): free bodies are welded to the world in both;
Drake's ball joints are roll-pitch-yaw angles with angular velocity in the parent frame (hebictl:
quaternion, velocity in the child frame); universal joints are two revolute coordinates
``<joint>_axis1``/``_axis2``; screw joints are ``_rotation`` + ``_translation`` with
translation = pitch/2π · rotation; planar joints ``_x``, ``_y``, ``_theta``; Drake's generalized
gravity forces are minus hebictl's gravity compensation.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from hebictl.errors import FormatError
from hebictl.model.robot import RobotModel
from tests.formats.sdf.drake_reference import compare, prefix_for, run_drake

#: corpus file (relative to corpus/sdf) -> why hebictl and Drake disagree on its validity
VALIDITY_DIFFERENCES = {
    "gazebosim__sdformat/test/sdf/joint_complete.sdf":
        "SDFormat 1.6 file using <axis><initial_position> (valid in 1.6-1.8); Drake converts to 1.12, "
        "where the element no longer exists, and rejects it",
    "gazebosim__sdformat/test/sdf/inertial_invalid.sdf":
        "negative mass: hebictl rejects it, Drake's libsdformat only warns and Drake keeps the link",
    "gazebosim__sdformat/test/sdf/box_plane_low_friction_test.world":
        "Drake refuses the .world file extension; the content is a valid world",
    "gazebosim__sdformat/test/sdf/world_complete.sdf":
        "Drake fails internally on the world's <actor> (\"must never use ParserConfig::GlobalConfig\")",
    "gazebosim__sdformat/test/integration/model/model_for_world_merge_include.sdf":
        "<include><uri>test_model</uri> names a model folder beside the file: hebictl reads its model.config, "
        "Drake only resolves package:// and model:// URIs through a package map",
    "gazebosim__sdformat/test/sdf/resolve_uris.sdf":
        "<include><uri>shapes.sdf</uri> beside the file: hebictl resolves it relative to the including file, "
        "Drake does not",
}


def _corpus_files(corpus: Path) -> list[Path]:
    root = corpus / "sdf"
    return sorted([*root.rglob("*.sdf"), *root.rglob("*.world")])


@pytest.fixture(scope="session")
def drake_corpus(corpus_dir: Path) -> dict[str, Any]:
    """Drake's verdict and samples on every corpus SDF file (one subprocess per session)."""
    files = _corpus_files(corpus_dir)
    if not files:
        pytest.skip("no SDF files in the corpus")
    return run_drake(files, inputs_under=corpus_dir / "sdf")


def _load(path: Path) -> RobotModel:
    from hebictl.formats.sdf import load_sdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_sdf(path)


def test_corpus_validity_and_kinematics(corpus_dir: Path, drake_corpus: dict[str, Any]) -> None:
    """Every corpus file Drake accepts loads in hebictl and agrees; every file it rejects is rejected."""
    root = corpus_dir / "sdf"
    counts = {"drake_ok": 0, "agree": 0, "both_reject": 0, "documented": 0}
    failures = []
    for f, ref in drake_corpus.items():
        rel = str(Path(f).relative_to(root))
        try:
            model = _load(Path(f))
            err = None
        except FormatError as exc:
            model, err = None, exc
        if rel in VALIDITY_DIFFERENCES:
            counts["documented"] += 1
            if (model is None) == (not ref["ok"]):
                failures.append(f"{rel}: listed as a validity difference but hebictl and Drake now agree")
            continue
        if not ref["ok"]:
            if model is not None:
                failures.append(f"{rel}: Drake rejects ({ref['error'][:150]}) but hebictl loads it")
            else:
                counts["both_reject"] += 1
                assert err is not None and err.message, rel
            continue
        counts["drake_ok"] += 1
        if model is None:
            failures.append(f"{rel}: Drake loads it, hebictl says {err}")
            continue
        try:
            compare(model, ref, prefix_for(model))
            counts["agree"] += 1
        except (AssertionError, KeyError) as exc:
            failures.append(f"{rel}: {str(exc)[:300]}")
    print(f"SDF corpus vs Drake: {counts}")
    assert not failures, "\n".join(failures)
