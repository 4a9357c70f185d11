"""What one URDF read holds: its file and folders, the package map, and what it collects for the model.

The reader is plain functions by concept (links and their meshes, joints and transmissions, the
tree, the document) that all take a :class:`ReadContext`; nothing is shared through a base class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from hebictl.errors import FormatError, UrdfWarning
from hebictl.formats._xml import HEBICTL_NS, line_of, local_name, namespace
from hebictl.formats.lenient import bend

_XACRO_NS = ("http://ros.org/wiki/xacro", "http://www.ros.org/wiki/xacro")


@dataclass
class ReadContext:
    """One parse of one URDF document."""

    file: str
    base_dir: Path | None  # relative mesh paths resolve here
    strict: bool = False  # reject what pinocchio only tolerates, instead of warning
    package_map: dict[str, Path] = field(default_factory=dict)  # package:// names -> folders
    #: the base folder and its parents: a package:// name may be one of them
    ancestors: tuple[Path, ...] = ()
    resolved: dict[str, Path | None] = field(default_factory=dict)  # mesh URI -> file (None: not found)
    # collected for the model's metadata and warnings
    missing_meshes: list[str] = field(default_factory=list)
    outside_meshes: list[str] = field(default_factory=list)  # confined load: found outside the allowed folders
    ignored: dict[str, int] = field(default_factory=dict)
    drake_notes: list[str] = field(default_factory=list)  # extensions Drake would skip (and so do we)

    @classmethod
    def create(cls, file: str, base_dir: Path | None, package_map: Mapping[str, Path] | None,
               strict: bool = False) -> ReadContext:
        ancestors = () if base_dir is None else (base_dir, *base_dir.parents)
        return cls(file, base_dir, strict, {k: Path(v) for k, v in (package_map or {}).items()}, ancestors)

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        return FormatError(message, self.file, line_of(elem))

    def ignore(self, key: str) -> None:
        """Count an element hebictl (like pinocchio) does not read, for one warning at the end."""
        self.ignored[key] = self.ignored.get(key, 0) + 1

    def note_extension(self, el: etree._Element) -> None:
        """Count an element of another namespace as ignored; a xacro macro is an error."""
        ns = namespace(el)
        if ns in _XACRO_NS or (el.prefix == "xacro"):
            raise self.fail(f"<{el.prefix}:{local_name(el)}> is a xacro macro: expand the file with xacro first", el)
        if ns == HEBICTL_NS:
            return
        self.ignore(f"<{el.prefix or ns}:{local_name(el)}>")

    def bend(self, message: str, elem: etree._Element | None) -> None:
        """Read what pinocchio (urdfdom) reads, with a warning; an error when strict.

        ``stacklevel`` counts the calls from ``warnings.warn`` up to :func:`load_urdf`: lenient.bend,
        this method, links.inertial, links.read_link, reader._read_elements, reader.read_robot."""
        bend(self.strict, message, self.file, line_of(elem), UrdfWarning, "pinocchio", stacklevel=7)
