"""The readers' structure (issue 22): one read context per load, plain functions, no reader class hierarchy.

The URDF, SDF and MJCF readers keep what a load accumulates in a ``ReadContext`` dataclass made
per load (``<fmt>/context.py``) and are otherwise plain functions by concept. Two things follow and
are checked here: no class of ``hebictl/formats`` derives from another class of ``hebictl/formats``
(a mixin chain sharing state through ``self`` is what the read context replaced), and nothing a
load counts or names leaks into the next load.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import warnings

import pytest

from hebictl.errors import UrdfWarning
from hebictl.formats.mjcf import load_mjcf_string
from hebictl.formats.urdf import load_urdf_string
from tests._support.paths import REPO_ROOT

FORMATS_DIR = REPO_ROOT / "hebictl" / "formats"


def _classes() -> list[tuple[str, ast.ClassDef]]:
    out = []
    for path in sorted(FORMATS_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out += [(path.relative_to(REPO_ROOT).as_posix(), node) for node in ast.walk(tree)
                if isinstance(node, ast.ClassDef)]
    return out


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else ""


def _derived(classes: list[tuple[str, ast.ClassDef]]) -> list[str]:
    """``file:line class Name(Base)`` for each class whose base is one of ``classes``."""
    defined = {node.name for _, node in classes}
    return [f"{rel}:{node.lineno} class {node.name}({_base_name(b)})" for rel, node in classes for b in node.bases
            if _base_name(b) in defined]


def test_no_class_of_formats_derives_from_another_one():
    classes = _classes()
    bad = _derived(classes)
    print(f"\n{len(classes)} classes in hebictl/formats, {len(bad)} derive from another one of them")
    assert not bad, "reader state belongs in a read context, not in base classes:\n" + "\n".join(bad)


def test_the_rule_sees_a_mixin_chain():
    """The shape the MJCF reader had: _Reader(ActuatorReader) -> ActuatorReader(MassReader) -> ..."""
    tree = ast.parse("class DocumentReader:\n    pass\n\n\nclass MassReader(DocumentReader):\n    pass\n\n\n"
                     "class _Reader(m.MassReader, Exception):\n    pass\n")
    classes = [("x.py", node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    assert _derived(classes) == ["x.py:5 class MassReader(DocumentReader)", "x.py:9 class _Reader(MassReader)"]


@pytest.mark.parametrize("fmt", ["urdf", "sdf", "mjcf"])
def test_each_stateful_reader_has_one_read_context_dataclass(fmt):
    context = importlib.import_module(f"hebictl.formats.{fmt}.context")
    assert dataclasses.is_dataclass(context.ReadContext)
    fields = {f.name for f in dataclasses.fields(context.ReadContext)}
    assert "file" in fields, fields  # every message names the file being read


MJCF_UNNAMED = """<mujoco><worldbody>
  <body pos="0 0 1"><joint/><geom size="0.1"/><site/></body>
  <body pos="1 0 1"><joint/><geom size="0.1"/></body>
</worldbody></mujoco>"""


def test_mjcf_names_restart_with_each_load():
    """MuJoCo numbers unnamed bodies, joints and sites across one model; the numbering lives in the
    read context, so a second load of the same text gives the same names (not body3, joint2, ...)."""
    first = load_mjcf_string(MJCF_UNNAMED)
    second = load_mjcf_string(MJCF_UNNAMED)
    print("\nbodies:", first.link_names, "joints:", first.joint_names, "sites:", first.frame_names("site"))
    assert first.link_names == second.link_names == ("body1", "body2")
    assert first.joint_names == second.joint_names == ("joint0", "joint1")
    assert first.frame_names("site") == second.frame_names("site") == ("site0",)


URDF_IGNORED = """<robot name="r"><link name="a"/><link name="b"><mystery/></link>
<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint><gazebo/></robot>"""


def test_urdf_counts_restart_with_each_load():
    """Ignored elements are counted per load: the second load reports the same counts as the first."""
    messages = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_urdf_string(URDF_IGNORED)
        messages.append([str(w.message) for w in caught if issubclass(w.category, UrdfWarning)])
        assert model.metadata["ignored_elements"] == {"<gazebo>": 1, "<link><mystery>": 1}
    print("\n" + "\n".join(messages[1]))
    assert messages[0] == messages[1] == ["<string>: ignored elements: <gazebo> x1, <link><mystery> x1"]
