"""Run DART's SkelParser (dartpy) on one SKEL file and print what the tests compare, as JSON.

Usage: ref_skel.py FILE < request.json > answer.json, run with the .venv-ref/dart interpreter
(tools/ref_envs.sh makes it). One file per process: dartpy segfaults on some files (missing
meshes), and the caller turns a crash into a skip reason.

Request: {"positions": {"<skeleton>": [[DART positions], ...]}} and/or {"random": N, "seed": S}
(its initial configuration, then N random ones of every mobile skeleton, coordinates uniform in
[-1.2, 1.2]; immobile skeletons stay at their initial one); skeletons not named stay at their
initial positions. Answer: world gravity, and per skeleton its DoF names, joints (name, type,
first DoF index, DoF count), bodies (name, parent joint, mass, local COM, moment of inertia) and,
per requested configuration, every body's world transform and ``getGravityForces()``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main() -> None:
    import dartpy as dart

    path = str(Path(sys.argv[1]).resolve())
    request = json.loads(sys.stdin.read() or "{}")
    world = dart.utils.SkelParser.readWorld(path)
    if world is None:
        print(json.dumps({"error": "SkelParser.readWorld returned None"}))
        return
    out: dict = {"gravity": world.getGravity().tolist(), "time_step": world.getTimeStep(), "skeletons": []}
    for i in range(world.getNumSkeletons()):
        s = world.getSkeleton(i)
        name = s.getName()
        joints = []
        for k in range(s.getNumJoints()):
            j = s.getJoint(k)
            joints.append({"name": j.getName(), "type": j.getType(), "ndof": j.getNumDofs(),
                           "index": int(j.getIndexInSkeleton(0)) if j.getNumDofs() else -1})
        bodies = []
        for k in range(s.getNumBodyNodes()):
            b = s.getBodyNode(k)
            I = b.getInertia()
            bodies.append({"name": b.getName(), "joint": b.getParentJoint().getName(), "mass": I.getMass(),
                           "com": np.asarray(I.getLocalCOM()).tolist(), "moment": np.asarray(I.getMoment()).tolist()})
        entry = {"name": name, "mobile": s.isMobile(), "dofs": [s.getDof(k).getName() for k in range(s.getNumDofs())],
                 "initial": np.asarray(s.getPositions()).tolist(), "joints": joints, "bodies": bodies,
                 "poses": [], "gravity_forces": []}
        configs = list(request.get("positions", {}).get(name, []))
        if request.get("random"):
            n = int(request["random"])
            initial = np.asarray(s.getPositions()).tolist()
            rng = np.random.default_rng(int(request.get("seed", 0)) + i)
            moving = s.isMobile() and s.getNumDofs() > 0
            configs = [initial] + (rng.uniform(-1.2, 1.2, (n, s.getNumDofs())).tolist() if moving else [initial] * n)
        entry["positions"] = configs
        for q in configs:
            s.setPositions(np.asarray(q, dtype=np.float64))
            entry["poses"].append([np.asarray(s.getBodyNode(k).getWorldTransform().matrix()).tolist()
                                   for k in range(s.getNumBodyNodes())])
            entry["gravity_forces"].append(np.asarray(s.getGravityForces()).tolist())
        out["skeletons"].append(entry)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
