"""Robot description readers and writers, chosen by file extension or root element.

Each reader module exposes ``load_<fmt>(path, **options)`` and ``load_<fmt>_string(text, *,
base_dir=None, source_name="<string>", **options)``; this module only decides which one runs,
so adding a format is one line in :data:`READERS`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.errors import FormatError

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

#: format name -> (module, file loader, string loader)
READERS: dict[str, tuple[str, str, str]] = {
    "hrdf": ("hebictl.formats.hrdf", "load_hrdf", "load_hrdf_string"),
    "urdf": ("hebictl.formats.urdf", "load_urdf", "load_urdf_string"),
    "sdf": ("hebictl.formats.sdf", "load_sdf", "load_sdf_string"),
    "mjcf": ("hebictl.formats.mjcf", "load_mjcf", "load_mjcf_string"),
    "skel": ("hebictl.formats.skel", "load_skel", "load_skel_string"),
    "xxy": ("hebictl.formats.xxy", "load_xxy", "load_xxy_string"),
    "openrave": ("hebictl.formats.openrave", "load_openrave", "load_openrave_string"),
    "directives": ("hebictl.formats.directives", "load_directives", "load_directives_string"),
}

_EXTENSIONS = {".hrdf": "hrdf", ".urdf": "urdf", ".sdf": "sdf", ".world": "sdf", ".mjcf": "mjcf",
               ".skel": "skel", ".dmd.yaml": "directives"}
_ROOTS = {"robot": None, "sdf": "sdf", "mujoco": "mjcf", "skel": "skel", "x_xy": "xxy",
          "kinbody": "openrave", "robot_openrave": "openrave", "environment": "openrave"}
_ROOT_RE = re.compile(rb"<\s*([A-Za-z_][\w.:-]*)[\s>/]")


def detect_format(path: str | Path | None = None, text: str | bytes | None = None) -> str:
    """Format name for a file: by extension first, then by the XML root element."""
    if path is not None:
        name = str(path).lower()
        for ext, fmt in _EXTENSIONS.items():
            if name.endswith(ext):
                return fmt
        if text is None:
            try:
                text = Path(path).read_bytes()[:65536]
            except OSError as exc:
                raise FormatError(f"cannot read file: {exc.strerror}", path) from exc
    if text is None:
        raise FormatError("cannot tell the format: give a path or the text", path)
    head = text.encode() if isinstance(text, str) else text
    body = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>", b"", head, flags=re.S)
    m = _ROOT_RE.search(body)
    if m is None:
        raise FormatError("no XML root element found; expected HRDF, URDF, SDF, MJCF, SKEL, x_xy or OpenRAVE",
                          path)
    root = m.group(1).decode().split(":")[-1]
    if root == "robot":
        # HRDF and URDF share <robot>: URDF robots carry name=, HRDF robots version= (1.0.0 may
        # have neither; then URDF's <link name=...> children tell them apart)
        tag = body[m.start():body.find(b">", m.start()) + 1]
        if re.search(rb"\bname\s*=", tag):
            return "urdf"
        if re.search(rb"\bversion\s*=", tag):
            return "hrdf"
        return "urdf" if re.search(rb"<link\s+name\s*=", body) else "hrdf"
    fmt = _ROOTS.get(root) or _ROOTS.get(root.lower())
    if fmt is None:
        if root in ("Robot", "KinBody", "Environment"):
            return "openrave"
        raise FormatError(f"unknown robot description root element <{root}>; expected HRDF <robot>, URDF <robot "
                          "name=...>, <sdf>, <mujoco>, <skel>, <x_xy>, OpenRAVE <Robot>/<KinBody>/<Environment>", path)
    return fmt


def _reader(fmt: str, which: int) -> Callable[..., RobotModel]:
    try:
        module, *loaders = READERS[fmt]
    except KeyError:
        raise FormatError(f"unknown format {fmt!r}; known: {', '.join(sorted(READERS))}") from None
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise FormatError(f"reading {fmt} is not supported yet") from None
        raise
    return getattr(mod, loaders[which])


def load_model(path: str | Path, format: str | None = None, **options: Any) -> RobotModel:
    """Load any supported robot description into a :class:`RobotModel`."""
    p = Path(path)
    if not p.exists():
        raise FormatError("file not found", p)
    return _reader(format or detect_format(p), 0)(p, **options)


def load_model_string(text: str, format: str | None = None, **options: Any) -> RobotModel:
    """Load a robot description from a string (``format`` guessed from the root element if omitted)."""
    return _reader(format or detect_format(text=text), 1)(text, **options)
