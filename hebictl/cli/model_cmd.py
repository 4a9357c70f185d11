"""``hebictl model info|validate|fk|convert FILE``: inspect and convert robot descriptions."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl.errors import ModelError

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="inspect, check and convert robot description files")
    msub = p.add_subparsers(dest="model_command", required=True, metavar="ACTION")

    info = msub.add_parser("info", help="elements, joints, masses and end effectors of a model")
    info.add_argument("file", type=Path, nargs="?", help="robot file (default: the bundled 6-DoF X-series kit)")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.add_argument("--config", type=Path, metavar="CFG",
                      help="robot config: show the joint limits a run applies (config and model), and its "
                           "model if no FILE is given (default: the model's own limits)")
    info.set_defaults(func=cmd_info)

    val = msub.add_parser("validate", help="exit 0 if the file loads, else print the error (file:line)")
    val.add_argument("file", type=Path)
    val.add_argument("--strict", action="store_true",
                     help="HRDF: also reject the spec violations hebi-py tolerates (otherwise warnings)")
    val.set_defaults(func=cmd_validate)

    fk = msub.add_parser("fk", help="forward kinematics at a configuration")
    fk.add_argument("file", type=Path)
    fk.add_argument("--q", type=float, nargs="*", default=None, help="joint positions [rad or m] (default zeros)")
    fk.add_argument("--frame", default="end_effector", help="output | com | input | end_effector | link")
    fk.add_argument("--json", action="store_true", help="machine-readable output")
    fk.set_defaults(func=cmd_fk)

    conv = msub.add_parser("convert", help="write the model as URDF, MJCF or SDF")
    conv.add_argument("file", type=Path)
    conv.add_argument("--to", required=True, choices=["urdf", "mjcf", "sdf"], help="output format")
    conv.add_argument("-o", "--output", type=Path, help="output file (default: stdout)")
    conv.set_defaults(func=cmd_convert)
    for cmd in (info, val, fk, conv):
        cmd.add_argument("--confine", action="store_true",
                         help="for an untrusted file: refuse file references outside the model's folder "
                              "and --allow-root folders (default: follow them as the format's reference does)")
        cmd.add_argument("--allow-root", action="append", type=Path, default=[], metavar="DIR",
                         help="with --confine, a folder the model's file references may point into, besides "
                              "its own folder (repeatable; e.g. a shared mesh folder)")


def default_kit() -> Path:
    """The bundled kit used when no file is given."""
    from hebictl.resources import bundled_kit

    return bundled_kit()


def load_with_warnings(path: Path, *, strict: bool = False, allowed_roots: list[Path] | None = None,
                       confine: bool = False) -> RobotModel:
    """Load a model, printing each format warning as one ``warning:`` line on stderr.

    ``confine`` (``--confine``) limits its file references to the model's folder and
    ``allowed_roots`` (``--allow-root``), for a file from an untrusted source."""
    from hebictl.formats import load_model

    options: dict[str, Any] = {"strict": True} if strict and supports_strict(path) else {}
    if allowed_roots:
        options["allowed_roots"] = list(allowed_roots)
    if confine:
        options["confine"] = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(path, **options)
    for w in caught:
        tag = strict_tag(w.message, w.category) if supports_strict(path) else ""
        print(f"hebictl: warning: {w.message}{tag}", file=sys.stderr)
    return model


def supports_strict(path: Path) -> bool:
    """Whether the file's reader has a ``strict`` mode (``--strict`` means something for it)."""
    import importlib
    import inspect

    from hebictl.formats import detect_format
    from hebictl.formats.registry import READERS

    module, loader, _ = READERS[detect_format(path)]
    return "strict" in inspect.signature(getattr(importlib.import_module(module), loader)).parameters


def strict_tag(message: Warning | str, category: type[Warning]) -> str:
    """`` [--strict rejects this]`` or `` [--strict allows this: ...]`` for a format warning.

    Readers word what they accept only because ``strict=False`` (a rule the reference library
    bends) with "strict=False" in the message; other format warnings (e.g. an enum in another
    case, which the spec allows) stay warnings under ``--strict``.
    """
    from hebictl.errors import FormatWarning

    if not issubclass(category, FormatWarning):
        return ""
    if "strict=False" in str(message):
        return "  [--strict rejects this]"
    return "  [--strict allows this: the spec permits it]"


def _summary(model: RobotModel) -> dict[str, Any]:
    elements = model.metadata.get("elements", [])
    lo, hi = model.position_limits
    return {
        "file": model.source,
        "format": model.format,
        "name": model.name,
        "dof": model.dof,
        "total_mass_kg": model.total_mass,
        "bodies": len(model.bodies),
        "elements": [{k: v for k, v in e.items() if k in ("kind", "type", "tag", "mass", "line", "file")}
                     for e in elements],
        "joints": [{"name": n, "lower": float(a), "upper": float(b), "max_velocity": float(v),
                    "max_effort": float(e)}
                   for n, a, b, v, e in zip(model.v_names if model.nq == model.nv else model.q_names, lo, hi,
                                            model.max_speeds, model.max_efforts, strict=False)],
        "masses_kg": [float(m) for m in model.masses],
        "end_effectors": model.frame_count("end_effector"),
    }


def config_limits(path: Path) -> tuple[Any, Any, str]:
    """(model, limits, where they come from) as ``hebictl run`` builds them from a robot config."""
    from hebictl.config import load_config
    from hebictl.wiring.assembly import assemble

    cfg = load_config(path)
    parts = assemble(cfg, "mock")
    parts.backend.close()
    return parts.model, parts.limits, f"{cfg.path} (user_data.joint_limits and the model), as hebictl run applies them"


def cmd_info(args: argparse.Namespace) -> int:
    limits = None
    if args.config is not None:
        config_model, limits, source = config_limits(args.config)
        model = config_model if args.file is None else \
            load_with_warnings(args.file, allowed_roots=args.allow_root, confine=args.confine)
        if model.dof != config_model.dof:
            raise ModelError(f"--config {args.config} is for a {config_model.dof}-joint arm, {args.file} has "
                             f"{model.dof} joints")
    else:
        model = load_with_warnings(args.file or default_kit(), allowed_roots=args.allow_root, confine=args.confine)
        lo, hi = model.position_limits
        declared = "" if np.isfinite(lo).any() or np.isfinite(hi).any() else \
            f" ({model.format} declares no position limits: -inf/inf)"
        source = (f"the model file's own{declared}; the limits a run applies come from a robot config: "
                  "hebictl model info --config CFG (or hebictl check-config CFG)")
    s = _summary(model)
    if limits is not None:
        for j, joint in enumerate(s["joints"]):
            joint.update(lower=float(limits.position_min[j]), upper=float(limits.position_max[j]),
                         max_velocity=float(limits.velocity_max[j]), max_acceleration=float(limits.acceleration_max[j]),
                         max_effort=float(limits.effort_max[j]))
    s["limits_from"] = source
    if args.json:
        print(json.dumps(s, indent=2, default=float))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=True)
    console.print(f"[bold]{s['file']}[/bold]  format={s['format']}  dof={s['dof']}  bodies={s['bodies']}  "
                  f"total mass={s['total_mass_kg']:.4f} kg  end effectors={s['end_effectors']}")
    if s["elements"]:
        t = Table(title="Elements", show_lines=False)
        for col in ("#", "kind", "type", "tag", "mass [kg]"):
            t.add_column(col, justify="right" if col in ("#", "mass [kg]") else "left")
        for i, e in enumerate(s["elements"]):
            mass = e.get("mass")
            t.add_row(str(i), str(e.get("kind", "")), str(e.get("type", "") or ""), str(e.get("tag", "") or ""),
                      "" if mass is None else f"{mass:.4f}")
        console.print(t)
    t = Table(title="Joints", caption=f"limits: {s['limits_from']}")
    columns = ["name", "lower", "upper", "max velocity"] + (["max accel."] if limits is not None else []) + \
        ["max effort"]
    for col in columns:
        t.add_column(col, justify="left" if col == "name" else "right")
    for j in s["joints"]:
        row = [j["name"], f"{j['lower']:.4g}", f"{j['upper']:.4g}", f"{j['max_velocity']:.4g}"]
        if limits is not None:
            row.append(f"{j['max_acceleration']:.4g}")
        t.add_row(*row, f"{j['max_effort']:.4g}")
    console.print(t)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    model = load_with_warnings(args.file, strict=args.strict, allowed_roots=args.allow_root, confine=args.confine)
    print(f"ok: {args.file} ({model.format}, {model.dof} DoF, {len(model.bodies)} bodies, "
          f"{model.total_mass:.4f} kg)")
    return 0


def cmd_fk(args: argparse.Namespace) -> int:
    model = load_with_warnings(args.file, allowed_roots=args.allow_root, confine=args.confine)
    q = model.neutral_configuration() if args.q is None else np.array(args.q, dtype=float)
    if q.shape != (model.nq,):
        raise ModelError(f"--q needs {model.nq} values ({', '.join(model.q_names)}), got {q.size}")
    poses = model.forward_kinematics(q, args.frame)
    if args.json:
        print(json.dumps({"q": q.tolist(), "frame": args.frame, "poses": poses.tolist()}))
        return 0
    np.set_printoptions(precision=6, suppress=True)
    for i, T in enumerate(poses):
        print(f"{args.frame}[{i}]:\n{T}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from hebictl.formats import convert

    model = load_with_warnings(args.file, allowed_roots=args.allow_root, confine=args.confine)
    text = convert(model, args.to)
    if args.output:
        args.output.write_text(text)
        print(f"wrote {args.output} ({args.to})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
