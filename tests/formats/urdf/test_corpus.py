"""Every URDF in the corpus against pinocchio (and MuJoCo where it loads the file)."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import FormatError
from hebictl.formats.urdf import load_urdf
from tests._support.corpus import CORPUS_DIR, corpus_path
from tests.formats.references import Mujoco, Pinocchio, ReferenceRejected, print_outcome_counts, random_q

pytest.importorskip("pinocchio")
pytestmark = pytest.mark.corpus

URDF_FILES = sorted(p.relative_to(CORPUS_DIR / "urdf").as_posix()
                    for p in (CORPUS_DIR / "urdf").rglob("*.urdf")) if CORPUS_DIR.is_dir() else ["<no corpus>"]
RESULTS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    """Print the per-outcome counts once the module is done (visible in every pytest run)."""
    yield
    if RESULTS:
        print_outcome_counts(request, "URDF corpus: " + ", ".join(f"{k}={v}" for k, v in sorted(RESULTS.items())))


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(path)


def _compare(model, ref, q, what: str) -> set[str]:
    """Assert every link both know has the same world pose; return the names compared."""
    poses = dict(zip(model.link_names, model.link_poses(q), strict=True))
    ref_poses = ref.link_poses(q)
    common = set(poses) & set(ref_poses)
    for name in common:
        np.testing.assert_allclose(poses[name], ref_poses[name], atol=1e-12, err_msg=f"{what}: link {name}")
    return common


@pytest.mark.parametrize("rel", URDF_FILES)
def test_urdf_matches_references(rel):
    """Link poses (1e-12) and gravity torques (1e-9) equal pinocchio's and MuJoCo's; rejects what pinocchio rejects."""
    path = corpus_path("urdf", rel)
    try:
        pin_ref = Pinocchio(path)
    except ReferenceRejected as exc:
        with pytest.raises(FormatError) as err:
            _load(path)
        assert err.value.file == str(path) and err.value.line is not None, str(err.value)
        RESULTS["rejected by both"] += 1
        print(f"pinocchio: {exc}\nhebictl:   {err.value}")
        return
    model = _load(path)
    pin_ref.bind(model)
    rng = np.random.default_rng(7)
    real = {b.name for b in model.bodies if "synthetic" not in b.metadata}
    for _ in range(3):
        q = random_q(model, rng)
        assert _compare(model, pin_ref, q, "pinocchio") == real
        np.testing.assert_allclose(model.gravity_compensation(q), pin_ref.gravity(q, model.gravity), atol=1e-9)
    RESULTS["agree with pinocchio"] += 1
    try:
        mj_ref = Mujoco(path)
    except ReferenceRejected as exc:
        RESULTS[f"MuJoCo refused ({str(exc).split(':')[1].strip()[:30]})"] += 1
        return
    mj_ref.bind(model)
    # MuJoCo gives a link without <inertial> the mass of its collision shapes; URDF says massless
    guessed = [b.name for b in model.bodies if b.inertia.mass == 0 and b.metadata.get("collisions")]
    for _ in range(2):
        q = random_q(model, rng)
        # MuJoCo fuses links welded to their parent: every body it keeps must be one of ours
        assert _compare(model, mj_ref, q, "MuJoCo") == set(mj_ref.body_names[1:])
        if not guessed:
            g = mj_ref.m.opt.gravity
            np.testing.assert_allclose(model.gravity_compensation(q, gravity=g), mj_ref.gravity(q), atol=1e-9)
    RESULTS["agree with MuJoCo" + (" (poses only: it adds mass to links without <inertial>)" if guessed else "")] += 1
