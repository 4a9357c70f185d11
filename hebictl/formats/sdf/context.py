"""What one SDFormat read holds: the load's options, the files being included, and what it collects.

The reader is plain functions by concept (documents, worlds and models in
:mod:`~hebictl.formats.sdf.models`, links and inertials, joints, element checks, includes' URIs)
that all take a :class:`ReadContext`; the frame graph of each model lives in its
:class:`~hebictl.formats.sdf.frames.Scope`. Nothing is shared through a base class.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

#: environment variables libsdformat and Gazebo search for ``<include>`` URIs, in this order
_PATH_VARS = ("SDF_PATH", "GZ_SIM_RESOURCE_PATH", "IGN_GAZEBO_RESOURCE_PATH", "GAZEBO_MODEL_PATH")


@dataclass
class ReadContext:
    """One load of an SDFormat file (with everything it includes)."""

    file: str  # the file (or source name) being loaded, for messages about the whole load
    strict: bool = False  # reject what Drake's libsdformat only tolerates, instead of warning
    package_map: dict[str, Path] = field(default_factory=dict)  # package:// names -> folders
    model_paths: list[Path] = field(default_factory=list)  # searched for <include> URIs
    # files being included now (include cycles) and how many were included (limits)
    include_stack: list[Path] = field(default_factory=list)
    include_count: int = 0
    # collected for the model's metadata
    ignored: dict[str, int] = field(default_factory=dict)
    missing_meshes: list[str] = field(default_factory=list)
    # written by hebictl's own SDF writer into the top-level model: the original frames and gravity
    hebictl_frames: list[etree._Element] | None = None
    gravity: np.ndarray | None = None

    @classmethod
    def create(cls, file: str, package_map: Mapping[str, str | Path] | None,
               model_paths: Sequence[str | Path] | None, strict: bool = False) -> ReadContext:
        """The context of a load with these options; ``model_paths`` are followed by the folders of
        the ``SDF_PATH``/``GZ_SIM_RESOURCE_PATH``/... environment variables, as libsdformat does."""
        paths = [Path(p) for p in (model_paths or ())]
        for var in _PATH_VARS:
            paths.extend(Path(p) for p in os.environ.get(var, "").split(os.pathsep) if p)
        return cls(file, strict, {k: Path(v) for k, v in (package_map or {}).items()}, paths)
