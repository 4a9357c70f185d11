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
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl import limits as _limits
from hebictl.errors import FormatError, HebictlError, ModelError
from hebictl.formats.registry import READERS, WRITERS, detect_format
from hebictl.limits import ReaderLimits

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


def load_model(path: str | Path, format: str | None = None, *, limits: ReaderLimits | None = None,
               confine: bool = False, allowed_roots: Iterable[str | os.PathLike[str]] = (),
               **options: Any) -> RobotModel:
    """Load any supported robot description into a :class:`RobotModel`.

    Reading is bounded by ``limits`` (default: :func:`hebictl.limits.default_limits`). File
    references (includes, meshes) resolve as the format's reference library resolves them,
    ``..`` included; for a file from an untrusted source, ``confine=True`` makes any reference
    outside the model's own folder tree and ``allowed_roots`` an error. Every failure is a
    :class:`FormatError` naming the file.
    """
    lim = limits or _limits.current()
    p = Path(_limits.check_path_text(path, lim, what="model path"))
    if not _limits.exists(p):
        raise FormatError("file not found", p)
    with _limits.reading(limits, [os.path.dirname(os.path.realpath(p)), *allowed_roots], confine=confine):
        return _guarded(lambda: _reader(format or detect_format(p), 0)(p, **options), p)


def load_model_string(text: str, format: str | None = None, *, limits: ReaderLimits | None = None,
                      confine: bool = False, allowed_roots: Iterable[str | os.PathLike[str]] = (),
                      **options: Any) -> RobotModel:
    """Load a robot description from a string (``format`` guessed from the root element if omitted).

    References resolve against ``base_dir=`` (when given); with ``confine=True`` they must stay
    under it or ``allowed_roots``, as for :func:`load_model`.
    """
    base = options.get("base_dir")
    with _limits.reading(limits, [*([base] if base is not None else []), *allowed_roots], confine=confine):
        return _guarded(lambda: _reader(format or detect_format(text=text), 1)(text, **options),
                        options.get("source_name"))


def _guarded(load: Callable[[], RobotModel], file: str | Path | None) -> RobotModel:
    """Run a reader; any exception that is not a hebictl error is a reader bug, reported as one.

    The readers check what they read at the place that knows the rule (file and line in the
    message); this is the last line of defence so a caller never sees a ``RecursionError`` or
    ``numpy.linalg.LinAlgError`` from a file a stranger wrote. The cause stays attached.
    """
    try:
        # every reader checks its results are finite and says which element overflowed; numpy's
        # floating-point warnings on the way (an inertia of 1e308**2) are not for the user
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return load()
    except ModelError as exc:  # a rule of the model itself (e.g. a physical bound), found while building it
        raise FormatError(str(exc), file) from exc
    except HebictlError:
        raise
    except Exception as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise FormatError(f"could not read the file ({type(exc).__name__}: {text}); this is a bug in hebictl's "
                          "reader, please report it with the file", file) from exc


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
