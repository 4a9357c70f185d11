#!/usr/bin/env python3
"""Run Drake on robot description files and print what it computes, as JSON (a test reference).

Usage: ``ref_drake.py [--samples N] [--seed S] FILE...`` (or file names on stdin, one a line,
with ``-``). For each file: Drake's ``Parser.AddModels``; every body no joint moves is welded to
the world at its default pose (hebictl's ``floating_base=False``); ``Finalize``; then ``N``
random configurations with each body's world pose (``EvalBodyPoseInWorld``, scoped names
``instance::body``) and ``CalcGravityGeneralizedForces`` (gravity (0, 0, -9.81)). A file Drake
refuses gets ``{"ok": false, "error": ...}``.

It runs in its own process (tests call it through ``subprocess``) so Drake's native libraries
never share a process with pinocchio or MuJoCo, and one crash costs one batch, not the session.
Files named ``*.dmd.yaml`` are loaded as Drake model directives (``ProcessModelDirectives``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np


def _describe(plant: Any) -> list[dict[str, Any]]:
    out = []
    for ji in plant.GetJointIndices():
        j = plant.get_joint(ji)
        inst = plant.GetModelInstanceName(j.model_instance())
        info: dict[str, Any] = {"name": f"{inst}::{j.name()}", "type": j.type_name(),
                                "q0": j.position_start(), "nq": j.num_positions(),
                                "v0": j.velocity_start(), "nv": j.num_velocities(),
                                "parent": plant.GetModelInstanceName(j.parent_body().model_instance()) + "::"
                                + j.parent_body().name(),
                                "child": plant.GetModelInstanceName(j.child_body().model_instance()) + "::"
                                + j.child_body().name()}
        if j.type_name() == "screw":
            info["screw_pitch"] = j.screw_pitch()
        if j.num_positions() == 1:
            info["lower"] = float(j.position_lower_limits()[0])
            info["upper"] = float(j.position_upper_limits()[0])
        out.append(info)
    return out


def _weld_free_bodies(plant: Any) -> None:
    children = {plant.get_joint(ji).child_body().index() for ji in plant.GetJointIndices()}
    world = plant.world_body().index()
    for bi in range(plant.num_bodies()):
        body = plant.get_body(type(world)(bi))
        if body.index() == world or body.index() in children:
            continue
        X_WB = plant.GetDefaultFloatingBaseBodyPose(body)
        plant.WeldFrames(plant.world_frame(), body.body_frame(), X_WB)


def _random_q(plant: Any, joints: list[dict[str, Any]], rng: np.random.Generator) -> np.ndarray:
    q = np.zeros(plant.num_positions())
    for j in joints:
        s, n = j["q0"], j["nq"]
        if j["type"] == "ball_rpy":
            q[s:s + 3] = rng.uniform(-math.pi, math.pi), rng.uniform(-1.4, 1.4), rng.uniform(-math.pi, math.pi)
        elif n:
            q[s:s + n] = rng.uniform(-math.pi, math.pi, n)
    return q


def run_one(path: str, samples: int, seed: int, packages: dict[str, str] | None = None) -> dict[str, Any]:
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import MultibodyPlant

    plant = MultibodyPlant(0.0)
    parser = Parser(plant)
    for name, folder in (packages or {}).items():
        if parser.package_map().Contains(name):  # e.g. Drake's built-in (remote) drake_models
            parser.package_map().Remove(name)
        parser.package_map().Add(name, folder)
    try:
        if path.endswith(".dmd.yaml"):
            from pydrake.multibody.parsing import LoadModelDirectives, ProcessModelDirectives

            ProcessModelDirectives(LoadModelDirectives(path), plant, parser)
        else:
            parser.AddModels(path)
        _weld_free_bodies(plant)
        plant.Finalize()
    except Exception as exc:  # Drake raises RuntimeError/ValueError/SystemExit-free exceptions
        return {"ok": False, "error": str(exc).strip()}
    context = plant.CreateDefaultContext()
    joints = _describe(plant)
    bodies = []
    for bi in range(1, plant.num_bodies()):
        b = plant.get_body(type(plant.world_body().index())(bi))
        bodies.append((plant.GetModelInstanceName(b.model_instance()) + "::" + b.name(), b))
    rng = np.random.default_rng(seed)
    out_samples = []
    for k in range(samples):
        q = plant.GetDefaultPositions() if k == 0 else _random_q(plant, joints, rng)
        plant.SetPositions(context, q)
        poses = {name: plant.EvalBodyPoseInWorld(context, b).GetAsMatrix4().tolist() for name, b in bodies}
        tau = plant.CalcGravityGeneralizedForces(context)
        out_samples.append({"q": list(map(float, q)), "poses": poses, "tau_g": list(map(float, tau))})
    masses = {name: float(b.default_mass()) for name, b in bodies}
    return {"ok": True, "joints": joints, "nq": plant.num_positions(), "nv": plant.num_velocities(),
            "masses": masses, "samples": out_samples}


def time_loads(path: str, budget_s: float, packages: dict[str, str] | None = None) -> dict[str, Any]:
    """Median wall time [ms] of Parser.AddModels + Finalize on a fresh plant (a benchmark reference)."""
    import statistics
    import time

    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import MultibodyPlant

    def load() -> None:
        plant = MultibodyPlant(0.0)
        parser = Parser(plant)
        for name, folder in (packages or {}).items():
            if parser.package_map().Contains(name):
                parser.package_map().Remove(name)
            parser.package_map().Add(name, folder)
        parser.AddModels(path)
        plant.Finalize()

    try:
        load()
    except Exception as exc:
        return {"ok": False, "error": str(exc).strip()}
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < 5 or (time.perf_counter() - start < budget_s and len(samples) < 200):
        t = time.perf_counter()
        load()
        samples.append((time.perf_counter() - t) * 1e3)
    return {"ok": True, "median_ms": statistics.median(samples), "runs": len(samples)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--samples", type=int, default=3, help="configurations per file (the first is Drake's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time", type=float, default=0.0, metavar="SECONDS",
                    help="benchmark instead: median load time per file within about SECONDS each")
    ap.add_argument("--package", action="append", default=[], metavar="NAME=FOLDER",
                    help="package:// name for Drake's package map (repeatable)")
    args = ap.parse_args(argv)
    files = args.files
    if files == ["-"]:
        files = [line.strip() for line in sys.stdin if line.strip()]
    import logging

    logging.getLogger("drake").setLevel(logging.ERROR)
    packages = dict(p.split("=", 1) for p in args.package)
    if args.time > 0:
        result = {f: time_loads(f, args.time, packages) for f in files}
    else:
        result = {f: run_one(f, args.samples, args.seed, packages) for f in files}
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
