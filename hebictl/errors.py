"""Exception classes of hebictl.

One root, :class:`HebictlError`, so callers can catch everything hebictl raises on purpose
with one ``except``. Each subclass carries the data needed to act on it (file and line of a
bad robot description, key of a bad config entry, the limit that was hit), not just a string.
"""

from __future__ import annotations

from pathlib import Path


class HebictlError(Exception):
    """Root of every error hebictl raises on purpose."""


class FormatError(HebictlError):
    """A robot description (HRDF, URDF, SDF, MJCF, ...) is ill-formed or unsupported.

    ``file`` and ``line`` locate the offending element where they are known; ``str(err)`` reads
    ``file:line: message`` like a compiler diagnostic.
    """

    def __init__(self, message: str, file: str | Path | None = None, line: int | None = None) -> None:
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

    def __init__(self, message: str, file: str | Path | None = None, key: str | None = None,
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


class LimitViolation(HebictlError):
    """A joint position, velocity or effort limit was violated."""

    def __init__(self, message: str, joint: str | None = None, value: float | None = None,
                 limit: float | None = None) -> None:
        self.joint = joint
        self.value = value
        self.limit = limit
        super().__init__(message)


class HardwareError(HebictlError):
    """A backend could not be reached, lost a module, or returned unusable feedback."""


class WatchdogExpired(HardwareError):
    """No fresh command or feedback arrived within the watchdog period."""


class CommandRejected(HebictlError):
    """A command (goal, jog, mode change) was refused; ``reason`` is machine-readable."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class TrajectoryError(HebictlError):
    """Waypoints or limits do not define a valid trajectory (names the argument and index)."""
