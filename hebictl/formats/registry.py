"""The format tables: which format a file is in, and which module reads or writes each format.

Data and detection only: the modules are named as strings and imported by
:mod:`hebictl.formats` on first use, so a reader that loads other files (model directives) can
use these tables without importing the loader that imports it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from hebictl.errors import FormatError
from hebictl.limits import read_regular_file

#: format name -> (module, file loader, string loader)
READERS: Final[dict[str, tuple[str, str, str]]] = {
    "hrdf": ("hebictl.formats.hrdf", "load_hrdf", "load_hrdf_string"),
    "urdf": ("hebictl.formats.urdf", "load_urdf", "load_urdf_string"),
    "sdf": ("hebictl.formats.sdf", "load_sdf", "load_sdf_string"),
    "mjcf": ("hebictl.formats.mjcf", "load_mjcf", "load_mjcf_string"),
    "skel": ("hebictl.formats.skel", "load_skel", "load_skel_string"),
    "xxy": ("hebictl.formats.xxy", "load_xxy", "load_xxy_string"),
    "openrave": ("hebictl.formats.openrave", "load_openrave", "load_openrave_string"),
    "directives": ("hebictl.formats.directives", "load_directives", "load_directives_string"),
}

#: format name -> (module, writer) for :func:`convert` (``hebictl model convert FILE --to FMT``)
WRITERS: Final[dict[str, tuple[str, str]]] = {
    "urdf": ("hebictl.formats.urdf", "write_urdf"),
    "mjcf": ("hebictl.formats.mjcf", "write_mjcf"),
    "sdf": ("hebictl.formats.sdf", "write_sdf"),
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
            text = read_regular_file(path, what="robot description", head=65536)
    if text is None:
        raise FormatError("cannot tell the format: give a path or the text", path)
    head = text.encode() if isinstance(text, str) else text
    # blank out declarations and comments but keep their newlines, so offsets still give lines
    body = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>", lambda c: b"\n" * c.group().count(b"\n"), head,
                  flags=re.S)
    m = _ROOT_RE.search(body)
    if m is None:
        raise FormatError("no XML root element found; expected HRDF, URDF, SDF, MJCF, SKEL, x_xy or OpenRAVE",
                          path, 1)
    line = body.count(b"\n", 0, m.start()) + 1
    root = m.group(1).decode("utf-8", "replace").split(":")[-1]
    if root == "robot":
        # HRDF and URDF share <robot>: URDF robots carry name=, HRDF robots version= (1.0.0 may
        # have neither; then URDF's <link name=...> children tell them apart)
        tag = body[m.start():body.find(b">", m.start()) + 1]
        if re.search(rb"\bname\s*=", tag):
            return "urdf"
        if re.search(rb"\bversion\s*=", tag):
            return "hrdf"
        return "urdf" if re.search(rb"<link\s+name\s*=", body) else "hrdf"
    root_fmt = _ROOTS.get(root) or _ROOTS.get(root.lower())
    if root_fmt is None:
        if root in ("Robot", "KinBody", "Environment"):
            return "openrave"
        raise FormatError(f"unknown robot description root element <{root}>; expected HRDF <robot>, URDF <robot "
                          "name=...>, <sdf>, <mujoco>, <skel>, <x_xy>, OpenRAVE <Robot>/<KinBody>/<Environment>", path,
                          line)
    return root_fmt
