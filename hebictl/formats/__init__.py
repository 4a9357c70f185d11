"""Robot description readers and writers: the registry that picks one by format.

Each format lives in its own package (:mod:`hebictl.formats.hrdf`, ``urdf``, ``sdf``, ``mjcf``,
``skel``, ``openrave``, ``xxy``, plus the :mod:`~hebictl.formats.directives` module), which exposes
``load_<fmt>(path, **options)`` and ``load_<fmt>_string(text, *, base_dir=None,
source_name="<string>", **options)`` and, where the format can be written, ``write_<fmt>(model,
path)``. This module only decides which one runs, so adding a format is one line in
:data:`~hebictl.formats.registry.READERS` (and ``WRITERS``). Readers are imported on first use:
``import hebictl`` stays fast, and no reader imports this module back.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.errors import FormatError
from hebictl.formats.registry import READERS, WRITERS, detect_format

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

__all__ = ["READERS", "WRITERS", "convert", "detect_format", "load_model", "load_model_string"]

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


def convert(model: RobotModel, fmt: str) -> str:
    """The text of ``model`` written as ``fmt`` ("urdf", "mjcf" or "sdf"; "xml" means MJCF)."""
    key = fmt.lower().lstrip(".")
    if key == "xml":
        key = "mjcf"
    if key not in WRITERS:
        raise FormatError(f"cannot write format {fmt!r}; known: {', '.join(sorted(WRITERS))}")
    module, func = WRITERS[key]
    writer: Callable[..., str] = getattr(importlib.import_module(module), func)
    return writer(model, None)
