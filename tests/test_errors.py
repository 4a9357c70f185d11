"""hebictl.errors: one root, every class raised somewhere, and the data each error carries."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

import hebictl
from hebictl import errors

ROOT = Path(__file__).resolve().parents[1]
EXCEPTIONS = [c for _, c in inspect.getmembers(errors, inspect.isclass)
              if issubclass(c, BaseException) and not issubclass(c, Warning) and c.__module__ == errors.__name__]
WARNINGS = [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, Warning) and c.__module__ == errors.__name__]


@functools.cache
def _sources() -> tuple[tuple[Path, ast.Module], ...]:
    """Every module of hebictl/ and sim_backend/, parsed once for both checks below (about 2 s)."""
    paths = [*(ROOT / "hebictl").rglob("*.py"), *(ROOT / "sim_backend").rglob("*.py")]
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"))) for path in paths)


def _constructed_names() -> set[str]:
    """Names called anywhere in hebictl/ and sim_backend/ outside errors.py (``Foo(...)``, ``x.Foo(...)``).

    Construction rather than ``raise`` because some errors are built in one place and raised by the
    caller (control/admission.py returns a LimitViolation for the Arm to raise)."""
    names = set()
    for path, tree in _sources():
        if path == ROOT / "hebictl" / "errors.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def _warned_names() -> set[str]:
    """Warning classes passed to warnings.warn or to a helper (any Name argument ending in Warning)."""
    names = set()
    for _, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id.endswith("Warning") and isinstance(node.ctx, ast.Load):
                names.add(node.id)
    return names


def test_every_exception_is_raised_somewhere():
    """No exported class that nothing raises (issue 10: LimitViolation/WatchdogExpired were unused)."""
    used = _constructed_names()
    unused = [c.__name__ for c in EXCEPTIONS if c is not errors.HebictlError and c.__name__ not in used]
    assert not unused, f"exception classes never constructed in hebictl/ or sim_backend/: {unused}"


def test_every_exception_shares_the_root_and_is_exported():
    """One ``except hebictl.HebictlError`` catches them all; each is reachable as ``hebictl.<Name>``."""
    for cls in EXCEPTIONS:
        assert issubclass(cls, errors.HebictlError), cls
        assert getattr(hebictl, cls.__name__) is cls
    assert not hasattr(errors, "WatchdogExpired")


def test_every_area_warning_is_exported_and_under_the_root():
    """Warning classes form one tree (HebictlWarning > FormatWarning > per format; ConfigWarning)."""
    for cls in WARNINGS:
        assert issubclass(cls, errors.HebictlWarning) and getattr(hebictl, cls.__name__) is cls
    per_format = [c for c in WARNINGS if c not in (errors.HebictlWarning, errors.FormatWarning, errors.ConfigWarning)]
    assert all(issubclass(c, errors.FormatWarning) for c in per_format)
    # one class per format with lenient cases; model directives have none (Drake's dmd parser warns
    # about nothing; a file a directives file includes warns with its own format's class)
    assert {c.__name__ for c in per_format} == {"HrdfWarning", "UrdfWarning", "SdfWarning", "MjcfWarning",
                                                "SkelWarning", "XxyWarning", "OpenraveWarning"}
    unused = [c.__name__ for c in per_format if c.__name__ not in _warned_names()]
    assert not unused, f"warning classes nothing in hebictl/ issues (use them or remove them): {unused}"


def test_limit_violation_is_an_out_of_limits_rejection():
    """Handlers of CommandRejected('out_of_limits') keep working; the joint data rides along."""
    err = errors.LimitViolation("waypoint 1: J3 to 2.5 is beyond 2.0", joint="J3", value=2.5, limit=2.0)
    assert isinstance(err, errors.CommandRejected) and err.reason == "out_of_limits"
    assert (err.joint, err.value, err.limit) == ("J3", 2.5, 2.0)
    assert str(err) == "out_of_limits: waypoint 1: J3 to 2.5 is beyond 2.0"


@pytest.mark.parametrize(("err", "text"), [
    (errors.FormatError("bad joint", "arm.urdf", 12), "arm.urdf:12: bad joint"),
    (errors.FormatError("bad joint"), "<string>: bad joint"),
    (errors.ConfigError("not a number", "arm.cfg.yaml", key="gains", line=3), "arm.cfg.yaml:3 [gains]: not a number"),
    (errors.CommandRejected("stopped"), "stopped"),
])
def test_messages_locate_the_problem(err, text):
    """Errors read like compiler diagnostics: file, line, key first."""
    assert str(err) == text
