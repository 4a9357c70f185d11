"""The kernel registry (hebictl.jit.registry): declared signatures are the ones callers pass, and the
jit package stays neutral (it knows no kernel module).

Why the first matters: the warm-up compiles and loads the *declared* signatures; a caller passing
another type (a strided view, a read-only array, an int where a float is declared) would make numba
compile a new specialization in the middle of a control cycle (seconds on a cold cache).
"""

from __future__ import annotations

import ast

import numpy as np
import pytest

from hebictl import jit
from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.hardware import SimClock
from tests._support.paths import REPO_ROOT

pytest.importorskip("mujoco")

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")


def _declared(entry: jit.Kernel) -> set[tuple]:
    from numba.core import sigutils

    return {sigutils.normalize_signature(s)[0] for s in entry.signatures}


@pytest.mark.parametrize("name", CONFIGS)
def test_an_arm_on_the_sim_compiles_only_the_declared_signatures(name):
    """A sim arm of each bundled config: build, hold, a goal (admission, monitors, collision
    world), a stop. Afterwards every kernel of every registered module (model, control, monitors,
    simulator) has compiled exactly its declared signatures: nothing compiled in a cycle."""
    cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], dtype=float)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home)
    try:
        for _ in range(20):
            arm.update()
            arm.send()
        target = home + np.r_[0.2, -0.1, 0.1, np.zeros(arm.dof - 3)]
        arm.set_goal(Goal(arm.dof).add_waypoint(t=0.3, position=target))
        end = clock.now() + 0.4
        while clock.now() < end:
            arm.update()
            arm.send()
        arm.stop()
        for _ in range(20):
            arm.update()
            arm.send()
    finally:
        arm.close()
    checked = []
    for km in jit.registered():
        for entry in km.entries.values():
            if entry.dispatcher is None or not entry.dispatcher.signatures:
                continue
            compiled = set(entry.dispatcher.signatures)
            extra = compiled - _declared(entry)
            assert not extra, f"{entry.key} compiled undeclared signatures {extra}"
            checked.append(entry.key)
    print(f"{name}: {len(checked)} kernels on their declared signatures only")
    assert {"hebictl.model.kernels.gravity", "hebictl.control.cycle_kernels.feedback_faults",
            "sim_backend.actuator.actuator_step"} <= set(checked)


def test_a_collision_query_that_finds_nothing_compiles_nothing():
    """MuJoCo's contact arrays are strided views, except with no contact: an empty array is
    C-contiguous, and numba compiled a second specialization of the collision kernels, in a jog
    cycle, the first time a query found nothing (seen as an undeclared signature in CI). Both
    layouts are declared: the empty contact list of a real MuJoCo model uses one of them."""
    import mujoco

    from hebictl.collision import kernels as ck

    mj = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>")
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    geom, dist = data.contact.geom, data.contact.dist
    assert geom.shape == (0, 2) and geom.flags["C_CONTIGUOUS"]  # what the kernels get with nothing near
    out = np.empty(1)
    ck.pair_gaps(geom, dist, np.zeros((0, 2), np.int32), np.zeros(0), 0, np.full((2, 2), -1, np.int64),
                 np.ones(1), np.zeros(1), out)
    ck.nearest_margins(geom, dist, np.zeros(2, np.bool_), np.zeros(2), 0.0)
    assert out[0] == 1.0  # no contact: the pair is at its margin
    for name in ("pair_gaps", "nearest_margins"):
        entry = next(e for km in jit.registered() for e in km.entries.values()
                     if e.key == f"hebictl.collision.kernels.{name}")
        extra = set(entry.dispatcher.signatures) - _declared(entry)
        assert not extra, f"{entry.key} compiled undeclared signatures {extra}"


def test_the_jit_package_imports_no_other_hebictl_package():
    """hebictl/jit sits below every package that has kernels: stdlib, numba and itself only."""
    allowed_roots = {"numba", "numpy", "__future__"}
    for path in sorted((REPO_ROOT / "hebictl" / "jit").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                root = n.split(".")[0]
                if root == "hebictl":
                    assert n.startswith("hebictl.jit"), f"{path.name} imports {n}"
                else:
                    import sys

                    assert root in allowed_roots or root in sys.stdlib_module_names, f"{path.name} imports {n}"


def test_kernel_declaration_is_checked():
    """A kernel without a signature, or with an unknown cold policy, is refused at declaration."""
    with pytest.raises(ValueError, match="signature"):
        jit.kernel()(lambda x: x)
    with pytest.raises(ValueError, match="cold"):
        jit.kernel("f8", cold="sometimes")(lambda x: x)


def test_a_reloaded_kernel_module_loads_its_kernels_again():
    """importlib.reload runs a kernel module again: its new kernels get dispatchers and load (they
    had none, because the module was marked materialized: preload raised AttributeError)."""
    import importlib

    import sim_backend.firmware as firmware

    jit.preload(firmware.__name__)
    importlib.reload(firmware)
    jit.preload(firmware.__name__)
    km = next(m for m in jit.registered() if m.name == firmware.__name__)
    assert km.entries and all(e.dispatcher is not None and e.dispatcher.signatures for e in km.entries.values())
