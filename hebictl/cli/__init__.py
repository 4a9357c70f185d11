"""The ``hebictl`` command line: ``hebictl model info|validate|fk|convert``, ``run``, ``check-config``, ...

Each command group lives in its own module and registers its sub-parser here; errors of the
package (:class:`hebictl.errors.HebictlError`) end the command with a one-line message and a
non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from hebictl.errors import HebictlError

#: modules that each define ``register(subparsers)``; missing ones (features not built yet) are skipped
COMMAND_MODULES = ("hebictl.cli.model_cmd", "hebictl.cli.run_cmd", "hebictl.cli.teleop_cmd",
                   "hebictl.cli.panel_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hebictl", description="Controller for HEBI Robotics arms.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except HebictlError as exc:
        print(f"hebictl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hebictl: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
