"""Exception classes of hebictl.

One root, :class:`HebictlError`, so callers can catch everything hebictl raises on purpose
with one ``except``. Each subclass carries the data needed to act on it (file and line of a
bad robot description, key of a bad config entry, the limit that was hit), not just a string.
"""

from __future__ import annotations

import os


class HebictlError(Exception):
    """Root of every error hebictl raises on purpose."""


class FormatError(HebictlError):
    """A robot description (HRDF, URDF, SDF, MJCF, ...) is ill-formed or unsupported.

    ``file`` and ``line`` locate the offending element where they are known; ``str(err)`` reads
    ``file:line: message`` like a compiler diagnostic.
    """

    def __init__(self, message: str, file: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.file or "<string>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"


class ConfigError(HebictlError):
    """A robot config (YAML) or gains file (XML) is invalid; names the file and the key."""

    def __init__(self, message: str, file: str | os.PathLike[str] | None = None, key: str | None = None,
                 line: int | None = None) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.key = key
        self.line = line
        where = self.file or "<config>"
        if line is not None:
            where = f"{where}:{line}"
        if key:
            where = f"{where} [{key}]"
        super().__init__(f"{where}: {message}")


class ModelError(HebictlError):
    """A model query is invalid (wrong q shape, unknown frame type, ...)."""


class IKFailed(HebictlError):
    """Inverse kinematics did not converge; ``result`` holds the best configuration found."""

    def __init__(self, message: str, result: object | None = None) -> None:
        self.result = result
        super().__init__(message)


class HardwareError(HebictlError):
    """A backend could not be reached, lost a module, or returned unusable feedback."""


class CommandRejected(HebictlError):
    """A command (goal, jog, mode change) was refused; ``reason`` is machine-readable."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class LimitViolation(CommandRejected):
    """A goal asks a joint to go beyond its position limit; refused before any motion.

    A :class:`CommandRejected` with ``reason == "out_of_limits"`` (so existing handlers keep
    working) that also names the joint, the requested value and the limit it crosses. Limits hit
    *while running* never raise: the control loop stops the arm and records a safety event.
    """

    def __init__(self, detail: str, joint: str | None = None, value: float | None = None,
                 limit: float | None = None) -> None:
        self.joint = joint
        self.value = value
        self.limit = limit
        super().__init__("out_of_limits", detail)


class UsageError(HebictlError):
    """A command-line flag has a value the command cannot use; the message starts with the flag
    (``--goal needs 6 positions``), never with a config file it did not come from."""


class TrajectoryError(HebictlError):
    """Waypoints or limits do not define a valid trajectory (names the argument and index)."""


class InstallationError(HebictlError):
    """Something hebictl needs is not installed: the bundled kits/configs (a non-editable
    install), an optional extra (matplotlib for plots) or an external program (mosquitto).
    The message says what to install."""


class RecordingError(HebictlError):
    """A recorded run cannot be used: the file is not a hebictl recording, or nothing was recorded."""


class ClockError(HebictlError):
    """A clock was given an impossible time: non-finite, negative step or spin period."""


class TeleopError(HebictlError):
    """The teleop link failed: the MQTT broker did not start, cannot be reached, or the arm did not answer."""


class StateRejected(TeleopError):
    """A message on an arm's ``state/*`` topic that does not fit :mod:`hebictl.teleop.state_schema`:
    dropped by the viewer, counted and logged with ``reason`` and ``detail``."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


# --------------------------------------------------------------------------- warnings
# Each area warns with its own class so a caller can filter one area (``warnings.simplefilter
# ("error", UrdfWarning)``) or all of them (``HebictlWarning``). A warning means "accepted, as
# the reference library accepts it, but a rule was bent"; ``--strict`` turns format warnings
# into errors.


class HebictlWarning(UserWarning):
    """Root of every warning hebictl issues on purpose."""


class FormatWarning(HebictlWarning):
    """A robot description bends a rule its reference library tolerates; read anyway."""


class HrdfWarning(FormatWarning):
    """A questionable but accepted HRDF construct (e.g. an enum value in non-canonical case)."""


class UrdfWarning(FormatWarning):
    """A URDF construct pinocchio/Drake accept that the URDF spec does not."""


class SdfWarning(FormatWarning):
    """An SDFormat construct Drake/libsdformat accept outside its version's rules."""


class MjcfWarning(FormatWarning):
    """An MJCF construct MuJoCo accepts with a fallback."""


class SkelWarning(FormatWarning):
    """A SKEL construct DART accepts (e.g. a duplicate joint name it renames)."""


class XxyWarning(FormatWarning):
    """An x_xy construct imt-ring accepts."""


class OpenraveWarning(FormatWarning):
    """An OpenRAVE XML construct OpenRAVE accepts."""


class ConfigWarning(HebictlWarning):
    """A robot config or gains file that loads but looks wrong (e.g. a misspelt user_data key)."""
