#!/usr/bin/env python3
"""Run Drake's inverse dynamics on robot description files and print it as JSON (a test reference).

Usage: ``ref_drake_dynamics.py [--samples N] [--seed S] FILE...`` (or ``-``: names on stdin).
Loads each file as :mod:`ref_drake` does (free bodies welded at their default pose), then at
``N`` random states (q, v, vdot in Drake's coordinates) reports each body's world pose,
``CalcInverseDynamics`` with no applied forces (M·vdot + C·v, reflected rotor inertia included)
and ``CalcGravityGeneralizedForces``; plus each joint (as :mod:`ref_drake`, with acceleration
limits) and each actuator (joint, rotor inertia, gear ratio, PD gains when it has them).
The plant has a SceneGraph, so visual and collision geometry is parsed and checked as well
(``--no-geometry``: not, for files whose meshes are not at hand).

A separate script from ref_drake.py because it needs Drake's velocities and accelerations as
well, and because reflected inertia is the point of it: Drake only applies it to joints a
transmission (URDF) or a non-zero effort limit (SDF) actuates.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
from ref_drake import _describe, _random_q, _weld_free_bodies  # same folder (sys.path[0])


def run_one(path: str, samples: int, seed: int, geometry: bool = True) -> dict[str, Any]:
    from pydrake.geometry import SceneGraph
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import MultibodyPlant
    from pydrake.multibody.tree import MultibodyForces

    plant = MultibodyPlant(0.0)
    scene_graph = SceneGraph()  # must outlive the plant's use of it
    if geometry:
        plant.RegisterAsSourceForSceneGraph(scene_graph)  # so Drake parses (and checks) geometry too
    try:
        Parser(plant).AddModels(path)
        _weld_free_bodies(plant)
        plant.Finalize()
    except Exception as exc:  # Drake raises RuntimeError/ValueError
        return {"ok": False, "error": str(exc).strip()}
    joints = _describe(plant)
    for info, ji in zip(joints, plant.GetJointIndices(), strict=True):
        j = plant.get_joint(ji)
        info["acceleration_upper"] = [float(a) for a in j.acceleration_upper_limits()]
    actuators = []
    for ai in plant.GetJointActuatorIndices():
        a = plant.get_joint_actuator(ai)
        info = {"name": a.name(), "joint": plant.GetModelInstanceName(a.joint().model_instance()) + "::"
                + a.joint().name(), "rotor_inertia": a.default_rotor_inertia(),
                "gear_ratio": a.default_gear_ratio(), "effort_limit": a.effort_limit()}
        if a.has_controller():
            gains = a.get_controller_gains()
            info["controller_gains"] = {"p": gains.p, "d": gains.d}
        actuators.append(info)
    context = plant.CreateDefaultContext()
    bodies = []
    for bi in range(1, plant.num_bodies()):
        b = plant.get_body(type(plant.world_body().index())(bi))
        bodies.append((plant.GetModelInstanceName(b.model_instance()) + "::" + b.name(), b))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples):
        q = _random_q(plant, joints, rng)
        v = rng.uniform(-2.0, 2.0, plant.num_velocities())
        vdot = rng.uniform(-3.0, 3.0, plant.num_velocities())
        plant.SetPositions(context, q)
        plant.SetVelocities(context, v)
        poses = {name: plant.EvalBodyPoseInWorld(context, b).GetAsMatrix4().tolist() for name, b in bodies}
        tau_id = plant.CalcInverseDynamics(context, vdot, MultibodyForces(plant))
        tau_g = plant.CalcGravityGeneralizedForces(context)
        out.append({"q": q.tolist(), "v": v.tolist(), "vdot": vdot.tolist(), "poses": poses,
                    "tau_id": tau_id.tolist(), "tau_g": tau_g.tolist()})
    return {"ok": True, "joints": joints, "actuators": actuators, "nq": plant.num_positions(),
            "nv": plant.num_velocities(), "samples": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-geometry", action="store_true",
                    help="no SceneGraph: skip visuals/collisions (and the mesh files they name)")
    args = ap.parse_args(argv)
    files = args.files
    if files == ["-"]:
        files = [line.strip() for line in sys.stdin if line.strip()]
    import logging

    logging.getLogger("drake").setLevel(logging.ERROR)
    json.dump({f: run_one(f, args.samples, args.seed, not args.no_geometry) for f in files}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
