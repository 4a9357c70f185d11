"""Run imt-ring (the x_xy format's own library) on one x_xy XML file and print what the tests compare, as JSON.

Usage: ref_xxy.py FILE... < request.json > answer.json, run with the .venv-ref/ring interpreter
(tools/ref_envs.sh makes it; imt-ring pulls JAX and numpy 2, so it cannot share the main venv).
Several files share one process (importing JAX and ring takes seconds); the answer maps each file
name given to its result.

Request: {"random": N, "seed": S}. Answer: the system's gravity, per link its name, parent,
joint type, q/qd slices, mass, the joint parameters ring drew at load (seed 1: the axes of rr,
rr_imp and rsaddle joints) and, for the zero configuration (identity quaternions) and N random
ones, ring's own ``q``, ``forward_kinematics_transforms`` (base->link, ring's convention: ``pos``
of the link origin in base coordinates and the *passive* quaternion ``rot``) and
``inverse_dynamics`` at ``qd = qdd = 0`` after forward kinematics. Or {"error": message}.
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    request = json.loads(sys.stdin.read() or "{}")
    print(json.dumps({path: one_file(path, request) for path in sys.argv[1:]}))


def one_file(path: str, request: dict) -> dict:
    import ring
    from ring.algorithms import dynamics, kinematics

    try:
        system = ring.System.create(path)
    except Exception as exc:  # the reference's own refusal is the answer
        return {"error": f"{type(exc).__name__}: {exc}"}
    qmap, dmap = system.idx_map("q"), system.idx_map("d")
    params = system.links.joint_params
    links = []
    for i, name in enumerate(system.link_names):
        entry = {"name": name, "parent": int(system.link_parents[i]), "type": system.link_types[i],
                 "q": [qmap[name].start, qmap[name].stop], "qd": [dmap[name].start, dmap[name].stop],
                 "mass": float(np.asarray(system.links.inertia.mass[i]).reshape(-1)[0])}
        for typ, p in params.items():
            if typ != "default" and system.link_types[i] == typ:
                entry["joint_params"] = {k: np.asarray(v[i]).tolist() for k, v in p.items()}
        links.append(entry)
    rng = np.random.default_rng(int(request.get("seed", 0)))
    configs = []
    for k in range(1 + int(request.get("random", 0))):
        q = np.zeros(system.q_size())
        for i, name in enumerate(system.link_names):
            sl, typ = qmap[name], system.link_types[i]
            if k:
                q[sl] = rng.uniform(-1.2, 1.2, sl.stop - sl.start)
            if typ in ("free", "spherical", "cor"):
                quat = rng.normal(size=4) if k else np.array([1.0, 0, 0, 0])
                q[sl.start:sl.start + 4] = quat / np.linalg.norm(quat)
        x, updated = kinematics.forward_kinematics_transforms(system, q)
        tau = dynamics.inverse_dynamics(updated, np.zeros(system.qd_size()), np.zeros(system.qd_size()))
        configs.append({"q": q.tolist(), "pos": np.asarray(x.pos).tolist(), "rot": np.asarray(x.rot).tolist(),
                        "tau": np.asarray(tau).tolist()})
    return {"gravity": np.asarray(system.gravity).tolist(), "links": links, "configs": configs}


if __name__ == "__main__":
    main()
