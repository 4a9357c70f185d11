"""Reference libraries (pinocchio, MuJoCo) run side by side with hebictl on the same files.

Each reference is bound to a hebictl model: it maps hebictl's coordinates to its own (by joint
name — continuous joints are cos/sin in pinocchio, quaternions x y z w, MuJoCo's free-joint
linear velocity is in world axes) and answers with hebictl's ordering, so a test compares two
arrays directly. Nothing here computes kinematics itself.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind


class ReferenceRejected(Exception):
    """The reference library refused the file; ``str()`` is its message."""


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence C++ libraries that print to file descriptor 2 (urdfdom does)."""
    fd = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(fd, 2)
            os.close(fd)


def random_q(model: RobotModel, rng: np.random.Generator) -> np.ndarray:
    """Random coordinates: angles/positions in [-pi, pi], unit quaternions for ball/free joints."""
    q = rng.uniform(-np.pi, np.pi, model.nq)
    for i in model.joint_bodies:
        kind = model.bodies[i].joint.kind
        s = model.coordinate_index(i)[0]
        if kind is JointKind.BALL:
            q[s:s + 4] = Rotation.random(random_state=int(rng.integers(1 << 30))).as_quat(scalar_first=True)
        elif kind is JointKind.FREE:
            q[s + 3:s + 7] = Rotation.random(random_state=int(rng.integers(1 << 30))).as_quat(scalar_first=True)
    return q


def _joint_slices(model: RobotModel) -> dict[str, tuple[JointKind, int, int]]:
    """hebictl joint name -> (kind, q start, v start)."""
    return {model.bodies[i].joint.name: (model.bodies[i].joint.kind, *model.coordinate_index(i))
            for i in model.joint_bodies}


# ---------------------------------------------------------------------------- pinocchio
class Pinocchio:
    """pinocchio's URDF parser and algorithms for one file (fixed base unless ``floating``)."""

    def __init__(self, path: str | Path | None = None, xml: str | None = None, floating: bool = False) -> None:
        import pinocchio as pin

        self.pin = pin
        args = (pin.JointModelFreeFlyer(),) if floating else ()
        try:
            with quiet_stderr():
                self.m = (pin.buildModelFromUrdf(str(path), *args) if path is not None
                          else pin.buildModelFromXML(xml, *args))
        except (ValueError, RuntimeError) as exc:
            raise ReferenceRejected(str(exc)) from None
        self.d = self.m.createData()

    def bind(self, model: RobotModel) -> None:
        """Map hebictl's coordinates onto pinocchio's joints (planar joints as x, y, theta)."""
        self.model = model
        js = _joint_slices(model)
        self.q_map: list[tuple[str, int, int, str]] = []  # (pin shortname, pin idx_q, hebictl q idx, extra)
        m = self.m
        # continuous joints (revolute unbounded, aligned or not): two coordinates cos, sin for one velocity
        self.unbounded = {j.shortname() for j in m.joints[1:] if j.nq == 2 and j.nv == 1}
        for jid in range(1, m.njoints):
            name = m.names[jid]
            jm = m.joints[jid]
            short = jm.shortname()
            if short == "JointModelPlanar":
                self.q_map.append((short, jm.idx_q, js[f"{name}_x"][1], name))
            elif name in js:
                self.q_map.append((short, jm.idx_q, js[name][1], name))
            elif name == "root_joint":
                self.q_map.append((short, jm.idx_q, js["root_joint"][1], name))
            else:
                raise AssertionError(f"pinocchio joint {name!r} has no hebictl counterpart")

    def q(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros(self.m.nq)
        for short, iq, ih, _ in self.q_map:
            if short in self.unbounded:  # continuous: cos, sin
                out[iq:iq + 2] = np.cos(q[ih]), np.sin(q[ih])
            elif short == "JointModelFreeFlyer":
                out[iq:iq + 3] = q[ih:ih + 3]
                w, x, y, z = q[ih + 3:ih + 7]
                out[iq + 3:iq + 7] = x, y, z, w
            elif short == "JointModelPlanar":
                # hebictl: x, y (parent axes), theta
                out[iq:iq + 4] = q[ih], q[ih + 1], np.cos(q[ih + 2]), np.sin(q[ih + 2])
            else:
                out[iq] = q[ih]
        return out

    def link_poses(self, q: np.ndarray) -> dict[str, np.ndarray]:
        """World pose of every link pinocchio knows, by name."""
        pin = self.pin
        pin.framesForwardKinematics(self.m, self.d, self.q(q))
        out = {}
        for fid, f in enumerate(self.m.frames):
            if f.type == pin.FrameType.BODY:
                out[f.name] = self.d.oMf[fid].homogeneous.copy()
        return out

    def gravity(self, q: np.ndarray, gravity: np.ndarray) -> np.ndarray:
        """Generalized gravity in hebictl's velocity order."""
        pin = self.pin
        self.m.gravity.linear = np.asarray(gravity, dtype=float)
        tau = pin.computeGeneralizedGravity(self.m, self.d, self.q(q))
        out = np.zeros(self.model.nv)
        js = _joint_slices(self.model)
        for jid in range(1, self.m.njoints):
            jm = self.m.joints[jid]
            name = self.m.names[jid]
            short = jm.shortname()
            if short == "JointModelPlanar":
                # pinocchio's planar velocity is (vx, vy) in the rotated frame; hebictl's x, y in the joint frame
                theta = q[js[f"{name}_theta"][1]]
                c, s = np.cos(theta), np.sin(theta)
                fx, fy = tau[jm.idx_v], tau[jm.idx_v + 1]
                out[js[f"{name}_x"][2]] = c * fx - s * fy
                out[js[f"{name}_y"][2]] = s * fx + c * fy
                out[js[f"{name}_theta"][2]] = tau[jm.idx_v + 2]
            else:
                iv = js[name][2]
                out[iv:iv + jm.nv] = tau[jm.idx_v:jm.idx_v + jm.nv]
        return out


# ---------------------------------------------------------------------------- MuJoCo
class Mujoco:
    """MuJoCo's compiler and smooth dynamics for one MJCF (or URDF) file or string."""

    def __init__(self, path: str | Path | None = None, xml: str | None = None) -> None:
        import mujoco

        self.mj = mujoco
        try:
            self.m = (mujoco.MjModel.from_xml_path(str(path)) if path is not None
                      else mujoco.MjModel.from_xml_string(xml))
        except (ValueError, RuntimeError) as exc:
            raise ReferenceRejected(str(exc)) from None
        self.d = mujoco.MjData(self.m)

    def names(self, objtype: int, count: int) -> list[str]:
        return [self.mj.mj_id2name(self.m, objtype, i) or "" for i in range(count)]

    def bind(self, model: RobotModel, unnamed: str = "{kind}{id}") -> None:
        """Map by names; MuJoCo objects without a name are called ``unnamed.format(kind=, id=)``."""
        mj = self.mj
        self.model = model
        js = _joint_slices(model)
        self.joints = []  # (mj joint id, hebictl kind, hebictl q idx, hebictl v idx)
        for jid, name in enumerate(self.names(mj.mjtObj.mjOBJ_JOINT, self.m.njnt)):
            key = name or unnamed.format(kind="joint", id=jid)
            if key not in js:
                raise AssertionError(f"MuJoCo joint {key!r} has no hebictl counterpart; hebictl has {list(js)[:8]}")
            self.joints.append((jid, *js[key]))
        if len(self.joints) != len(js):
            extra = set(js) - {self.names(mj.mjtObj.mjOBJ_JOINT, self.m.njnt)[j[0]] or unnamed.format(
                kind="joint", id=j[0]) for j in self.joints}
            raise AssertionError(f"hebictl has joints MuJoCo lacks: {sorted(extra)[:8]}")
        self.body_names = [n or unnamed.format(kind="body", id=i)
                           for i, n in enumerate(self.names(mj.mjtObj.mjOBJ_BODY, self.m.nbody))]
        self.site_names = [n or unnamed.format(kind="site", id=i)
                           for i, n in enumerate(self.names(mj.mjtObj.mjOBJ_SITE, self.m.nsite))]

    def set_q(self, q: np.ndarray) -> None:
        qpos = self.m.qpos0.copy()
        for jid, kind, iq, _ in self.joints:
            a = self.m.jnt_qposadr[jid]
            qpos[a:a + kind.nq] = q[iq:iq + kind.nq]
        self.d.qpos[:] = qpos
        self.d.qvel[:] = 0.0
        self.d.ctrl[:] = 0.0 if self.m.nu else self.d.ctrl
        self.d.act[:] = 0.0 if self.m.na else self.d.act

    def forward(self, q: np.ndarray) -> None:
        """mj_forward at ``q`` without constraints: poses and bias forces do not depend on them, and random
        poses of many small bodies (flex vertices) would make contacts overflow MuJoCo's arena."""
        self.set_q(q)
        saved = self.m.opt.disableflags
        self.m.opt.disableflags = saved | int(self.mj.mjtDisableBit.mjDSBL_CONSTRAINT)
        try:
            self.mj.mj_forward(self.m, self.d)
        finally:
            self.m.opt.disableflags = saved

    def link_poses(self, q: np.ndarray) -> dict[str, np.ndarray]:
        """World pose of every MuJoCo body (world excluded), by name."""
        self.forward(q)
        out = {}
        for i in range(1, self.m.nbody):
            T = np.eye(4)
            T[:3, :3] = self.d.xmat[i].reshape(3, 3)
            T[:3, 3] = self.d.xpos[i]
            out[self.body_names[i]] = T
        return out

    def site_poses(self, q: np.ndarray) -> dict[str, np.ndarray]:
        self.forward(q)
        out = {}
        for i in range(self.m.nsite):
            T = np.eye(4)
            T[:3, :3] = self.d.site_xmat[i].reshape(3, 3)
            T[:3, 3] = self.d.site_xpos[i]
            out[self.site_names[i]] = T
        return out

    def gravity(self, q: np.ndarray) -> np.ndarray:
        """``qfrc_bias`` at rest (gravity only) in hebictl's velocity order and conventions."""
        mj = self.mj
        saved = self.m.opt.disableflags
        self.m.opt.disableflags = saved & ~int(mj.mjtDisableBit.mjDSBL_GRAVITY)
        try:
            self.forward(q)
        finally:
            self.m.opt.disableflags = saved
        out = np.zeros(self.model.nv)
        for jid, kind, _, iv in self.joints:
            a = self.m.jnt_dofadr[jid]
            f = self.d.qfrc_bias[a:a + kind.nv].copy()
            if kind is JointKind.FREE:
                # MuJoCo: linear part in world axes; hebictl (pinocchio): in the body's axes
                R = self.d.xmat[self.m.jnt_bodyid[jid]].reshape(3, 3)
                f[:3] = R.T @ f[:3]
            out[iv:iv + kind.nv] = f
        return out

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """``mj_inverse``'s ``qfrc_inverse`` for hebictl's (q, qd, qdd), in hebictl's velocity order.

        Only rigid-body dynamics, armature and gravity (as the file configures it) remain: constraints
        (contacts, equalities, limits, frictionloss) and passive forces (springs, dampers, gravcomp, fluid)
        are disabled, and so is discrete-time inversion. Free joints: hebictl's linear velocity is in the
        body's axes and its acceleration is the derivative of that (pinocchio's convention), MuJoCo's is in
        world axes, so ``v_mj = R v`` and ``a_mj = R (a + w x v)``; the force's linear part comes back as
        ``R^T f``.
        """
        mj = self.mj
        self.set_q(q)
        mj.mj_kinematics(self.m, self.d)  # body orientations, for the free joints' world axes
        for jid, kind, _, iv in self.joints:
            a = self.m.jnt_dofadr[jid]
            v, dv = qd[iv:iv + kind.nv].copy(), qdd[iv:iv + kind.nv].copy()
            if kind is JointKind.FREE:
                R = self.d.xmat[self.m.jnt_bodyid[jid]].reshape(3, 3)
                dv[:3] = R @ (dv[:3] + np.cross(v[3:], v[:3]))
                v[:3] = R @ v[:3]
            self.d.qvel[a:a + kind.nv], self.d.qacc[a:a + kind.nv] = v, dv
        off = mj.mjtDisableBit
        saved = self.m.opt.disableflags, self.m.opt.enableflags
        self.m.opt.disableflags = saved[0] | int(off.mjDSBL_CONSTRAINT | off.mjDSBL_SPRING | off.mjDSBL_DAMPER)
        self.m.opt.enableflags = saved[1] & ~int(mj.mjtEnableBit.mjENBL_INVDISCRETE)
        try:
            mj.mj_inverse(self.m, self.d)
        finally:
            self.m.opt.disableflags, self.m.opt.enableflags = saved
        if self.d.qfrc_passive.any() or self.d.qfrc_constraint.any() or self.d.efm_active:
            raise AssertionError("MuJoCo still applied passive or constraint forces in mj_inverse")
        out = np.zeros(self.model.nv)
        for jid, kind, _, iv in self.joints:
            a = self.m.jnt_dofadr[jid]
            f = self.d.qfrc_inverse[a:a + kind.nv].copy()
            if kind is JointKind.FREE:
                f[:3] = self.d.xmat[self.m.jnt_bodyid[jid]].reshape(3, 3).T @ f[:3]
            out[iv:iv + kind.nv] = f
        return out

    def mass_properties(self) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """Per body name: mass [kg], centre of mass and inertia about it in body axes."""
        out = {}
        for i in range(1, self.m.nbody):
            R = np.eye(3)
            self.mj.mju_quat2Mat(R.reshape(-1), self.m.body_iquat[i])
            I = R @ np.diag(self.m.body_inertia[i]) @ R.T
            out[self.body_names[i]] = (float(self.m.body_mass[i]), self.m.body_ipos[i].copy(), I)
        return out


def print_outcome_counts(request: Any, line: str) -> None:
    """Write ``line`` (a corpus module's per-outcome counts) to the terminal once the module is done,
    outside pytest's capture, so it shows in every run."""
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if tr is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            tr.write_line("")
            tr.write_line(line)
