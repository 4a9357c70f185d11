"""The ``hebictl`` command line: ``hebictl model info|validate|fk|convert``, ``run``, ``check-config``, ...

Each command group lives in its own module and registers its sub-parser here; errors of the
package (:class:`hebictl.errors.HebictlError`) end the command with a one-line message and a
non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from hebictl.cli.output import ensure_streams, say
from hebictl.errors import ConfigError, HebictlError
from hebictl.version import __version__

#: optional dependency (top-level import name) -> the extra that installs it
EXTRAS: dict[str, str] = {"mujoco": "sim", "aiomqtt": "teleop", "paho": "teleop", "matplotlib": "plot",
                          "websockets": "panel", "mcap": "record", "mcap_protobuf": "record",
                          "foxglove_schemas_protobuf": "record", "google": "record", "foxglove": "live",
                          "pyarrow": "dataset"}

#: modules that each define ``register(subparsers)``; missing ones (features not built yet) are skipped
COMMAND_MODULES = ("hebictl.cli.model_cmd", "hebictl.cli.run_cmd", "hebictl.cli.teleop_cmd",
                   "hebictl.cli.panel_cmd", "hebictl.cli.log_cmd", "hebictl.cli.app_cmd",
                   "hebictl.cli.follow_cmd")


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows every option's default (``(default: mock)``), unless the text already says it
    or there is none to show (None, False, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return text
        if isinstance(default, float) and default == float("inf"):
            return f"{text} (default: inf)"
        return f"{text} (default: %(default)s)"


class HebictlParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line, ``hebictl: error: COMMAND: ...``, exit 2
    (argparse's default prints the usage block first), and whose help shows the defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("hebictl").strip()
        say(f"hebictl: error: {where + ': ' if where else ''}{message} (see {self.prog} --help)")
        self.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = HebictlParser(prog="hebictl", description="Controller for HEBI Robotics arms.")
    parser.add_argument("--version", action="version", version=f"hebictl {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=HebictlParser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    for command in leaf_parsers(parser):  # -v also after the command (hebictl run CONFIG -v)
        if command is not parser:
            command.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                                 help="more log output (-vv for debug)")
    return parser


def leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser that ends a command line (``run``, ``model info``, ``teleop-send mode``, ...)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    return [leaf for a in subs for p in dict.fromkeys(a.choices.values()) for leaf in leaf_parsers(p)]


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """Warnings as one readable line (``hebictl: warning: file:line [key]: ...``), never Python's
    two-line ``path.py:123: UserWarning: ...`` form with a source line."""
    prefix = "" if issubclass(category, UserWarning) else f"{category.__name__}: "
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing sensible left to do
        print(f"hebictl: warning: {prefix}{message}", file=sys.stderr if file is None else file)


def error_text(exc: HebictlError) -> str:
    """The one-line message of an error; a config error without a line gets the YAML line of its key."""
    if isinstance(exc, ConfigError) and exc.line is None and exc.file and exc.key and \
            exc.file.endswith((".yaml", ".yml")):
        from hebictl.config import yaml_key_line

        line = yaml_key_line(exc.file, exc.key)
        if line is not None:
            return str(ConfigError(exc.message, file=exc.file, key=exc.key, line=line))
    return str(exc)


def missing_extra(exc: ModuleNotFoundError, command: str | None) -> str | None:
    """One line naming the extra to install when an optional dependency is missing, else None."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (f"hebictl: error: 'hebictl {command}' needs the optional dependency {top!r}: "
            f"pip install 'hebictl[{extra}]' (in this repository: tools/dev demo installs it)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; user errors end with one line on stderr and a non-zero code, never a traceback.

    Exit codes: 0 ok, 1 the command ran but reports a failure, 2 an error (bad file, config,
    missing extra, unreachable device), 130 Ctrl-C, 141 the reader of stdout went away (``| head``).
    """
    ensure_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("numba").setLevel(logging.WARNING)  # -vv: hebictl's debug lines, not the compiler's
    warnings.showwarning = show_warning
    try:
        return int(args.func(args) or 0)
    except HebictlError as exc:
        say(f"hebictl: error: {error_text(exc)}")
        return 2
    except ModuleNotFoundError as exc:
        message = missing_extra(exc, args.command)
        if message is None:
            raise
        say(message)
        return 2
    except BrokenPipeError:
        # the reader closed the pipe (hebictl model fk ... | head): stop quietly; stdout goes to
        # devnull so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        where = f": {exc.filename}" if exc.filename else ""
        say(f"hebictl: error: {exc.strerror or exc}{where}")
        return 2
    except KeyboardInterrupt:
        say("hebictl: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
