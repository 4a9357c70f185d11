"""MuJoCo's messages go to Python logging, not to a MUJOCO_LOG.TXT in the user's working directory.

MuJoCo reports a warning (an unstable simulation, a NaN in the state) by appending it to
``MUJOCO_LOG.TXT`` in the process's current directory and printing it, unless a warning handler
is installed (``mju_user_warning``). ``hebictl run --backend sim`` from a project folder must not
leave that file behind, and the operator should see the warning where hebictl's own log lines
go. So the simulator installs a handler that logs each warning on the ``sim_backend.mujoco``
logger (MuJoCo warns once per kind until the data is reset), and, where MuJoCo has a log
configuration (``MjLogConfig``, MuJoCo >= 3.4) still pointing at the default relative file, turns
the file off. A handler or log file someone else configured (a test suite, an application) is
left alone. Errors need nothing: the Python bindings raise them as exceptions.
"""

from __future__ import annotations

import logging

import mujoco

log = logging.getLogger("sim_backend.mujoco")
_DEFAULT_LOGFILE = "MUJOCO_LOG.TXT"


def _warn(message: str) -> None:
    log.warning("MuJoCo: %s", message.strip())


def route_mujoco_messages() -> None:
    """Install the handler and turn off the default log file (idempotent; see module docstring)."""
    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_warn)
    log_config = getattr(mujoco, "MjLogConfig", None)
    if log_config is not None:
        cfg = log_config.get()
        if cfg.logto_file and cfg.logfile == _DEFAULT_LOGFILE:
            cfg.logto_file = False
            cfg.set()
