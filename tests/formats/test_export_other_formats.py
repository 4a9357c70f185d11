"""SKEL, x_xy and OpenRAVE models export through the shared URDF/MJCF/SDF writers and read back the same."""

from __future__ import annotations

import warnings

import pytest

from hebictl.errors import FormatError
from hebictl.formats.mjcf import load_mjcf_string, write_mjcf
from hebictl.formats.sdf import load_sdf_string, write_sdf
from hebictl.formats.urdf import load_urdf_string, write_urdf
from hebictl.model.tree import JointKind
from tests._support.corpus import CORPUS_DIR, load_or_skip

from .model_compare import assert_same_model

#: What a format cannot say, and the words its writer's refusal must contain.
INEXPRESSIBLE = {
    "urdf": ("ball", "scale", "gear_ratio", "free"),
    "mjcf": ("free joint", "top-level", "scale", "gear_ratio", "A + B >= C"),
    "sdf": ("free joint below another link",),
}
WRITERS = {"urdf": (write_urdf, load_urdf_string), "mjcf": (write_mjcf, load_mjcf_string),
           "sdf": (write_sdf, load_sdf_string)}


def _files() -> list:
    if not CORPUS_DIR.is_dir():
        return [pytest.param(None, id="no-corpus")]
    files = []
    for folder, pattern in (("skel", "*.skel"), ("xxy", "*.xml"), ("openrave", "*.xml")):
        files += sorted((CORPUS_DIR / folder).rglob(pattern))
    return [pytest.param(p, id=str(p.relative_to(CORPUS_DIR))) for p in files]


@pytest.mark.corpus
@pytest.mark.parametrize("path", _files())
def test_model_round_trips_through_every_writer(path):
    """Each loadable file writes to URDF, MJCF and SDF (or is refused for a named, inexpressible reason)."""
    model = load_or_skip(path)
    written = 0
    for fmt, (write, read) in WRITERS.items():
        try:
            text = write(model)
        except FormatError as err:
            assert any(word in err.message for word in INEXPRESSIBLE[fmt]), f"{fmt}: {err.message}"
            continue
        options = {}
        if fmt == "sdf" and any(b.parent < 0 and b.joint.kind is JointKind.FREE for b in model.bodies):
            options["floating_base"] = True  # SDF says "free" by leaving a link without a joint
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = read(text, **options)
        if fmt == "urdf":
            back.gravity = model.gravity  # URDF has no gravity element (SKEL worlds are often y-up)
        assert_same_model(model, back)
        written += 1
    assert written >= 1, "SDF (with hebictl's extension elements) can say everything"
