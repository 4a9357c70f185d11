"""hebi-py, the reference implementation for HRDF models, trajectories and configs."""

from __future__ import annotations

import contextlib
import io
from typing import Any


def import_hebi() -> Any:
    """Import hebi-py without its 'matplotlib not found' chatter on stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        import hebi
    return hebi
