"""Import hebi-py ``.hebilog`` files into MCAP, so HEBI users look at their logs in the same viewer.

The file is read with hebi-py's own reader (``hebi.util.load_log``); each logged group feedback
becomes one ``/joint_states`` (measured position, velocity, effort) and one ``/joint_commands``
(the commanded ones the modules echo in feedback) message, timed by the feedback's receive time
(the earliest over the modules). A ``.hebilog`` carries no kinematics, so there is no ``/tf``:
record with ``hebictl run --record`` for the 3D view.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
from mcap.writer import CompressionType, Writer

from hebictl.errors import InstallationError, RecordingError
from hebictl.recording import schemas
from hebictl.recording.mcapfile import McapFile
from hebictl.recording.writer import joint_states
from hebictl.version import __version__

COMMIT_BYTES = 8 << 20  # written out every few MiB: a long log never sits in memory


def write_feedback(feedback: Iterable[Any], out: str | Path, modules: int, *, source: str = "") -> int:
    """Write hebi-py group feedback (anything with hebi's ``GroupFeedback`` fields) to ``out``;
    returns the number of feedback samples written."""
    names = tuple(f"module{i + 1}" for i in range(modules))
    count = 0
    file = McapFile(out)  # like a recording: never over a file or through a symlink, 0600
    try:
        writer = Writer(cast(IO[bytes], file.stream), compression=CompressionType.ZSTD)
        writer.start(profile=schemas.PROFILE, library=f"hebictl {__version__}")
        channels = {t.name: schemas.register(writer, t) for t in (schemas.JOINT_STATES, schemas.JOINT_COMMANDS)}
        writer.add_metadata(schemas.RUN_METADATA, {"command": "log convert", "source": source,
                                                   "dof": str(modules), "joint_names": json.dumps(list(names))})
        for fbk in feedback:
            t = float(np.min(fbk.receive_time))
            t_ns = max(0, round(t * 1e9))
            writer.add_message(channels[schemas.JOINT_STATES.name], log_time=t_ns, publish_time=t_ns,
                               data=joint_states(names, t_ns, fbk.position, fbk.velocity, fbk.effort))
            writer.add_message(channels[schemas.JOINT_COMMANDS.name], log_time=t_ns, publish_time=t_ns,
                               data=joint_states(names, t_ns, fbk.position_command, fbk.velocity_command,
                                                 fbk.effort_command))
            count += 1
            if len(file.stream.data) > COMMIT_BYTES:
                writer.flush()
                file.commit()
        writer.add_metadata(schemas.FINAL_METADATA, {"cycles": str(count), "written": str(count), "dropped": "0"})
        writer.flush()
        file.finish(writer)
    finally:
        file.close()
    return count


def convert_hebilog(src: str | Path, out: str | Path) -> int:
    """``hebictl log convert RUN.hebilog --to mcap``: returns the number of feedback samples."""
    try:
        import hebi
    except ImportError as exc:  # pragma: no cover - hebi-py is a core dependency
        raise InstallationError("importing .hebilog files needs hebi-py: pip install hebi-py") from exc
    src = Path(src)
    if not src.is_file():
        raise RecordingError(f"{src}: no such file")
    try:
        log_file = hebi.util.load_log(str(src), load=False)
    except (OSError, RuntimeError) as exc:
        raise RecordingError(f"{src}: not a HEBI log ({exc})") from exc
    return write_feedback(log_file.feedback_iterate, out, log_file.number_of_modules, source=str(src))
