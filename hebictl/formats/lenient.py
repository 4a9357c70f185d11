"""Read leniently, validate strictly: one way for every reader to bend a rule its reference library bends.

A file that the format's reference library (hebi-py, pinocchio/urdfdom, libsdformat/Drake, MuJoCo,
DART...) loads should load here too, or users cannot open the files they already have; but a
validator must be able to say the file breaks the rule. So each such place calls :func:`bend`:
by default it warns with the file and line and the reader goes on as the reference does; with
``strict=True`` it is a :class:`~hebictl.errors.FormatError`. The wording "accepted because
strict=False" is what ``hebictl validate`` keys on to mark a warning "--strict rejects this".
"""

from __future__ import annotations

import warnings

from hebictl.errors import FormatError, FormatWarning


def bend(strict: bool, message: str, file: str | None, line: int | None, category: type[FormatWarning],
         reference: str, *, stacklevel: int = 3) -> None:
    """Accept what ``reference`` accepts with a warning naming ``file:line``, or reject it when ``strict``."""
    if strict:
        raise FormatError(f"{message} ({reference} accepts this; load with strict=False to do the same)", file, line)
    where = f"{file}:{line}" if line is not None else f"{file}"
    warnings.warn(f"{where}: {message}; accepted because strict=False", category, stacklevel=stacklevel)
