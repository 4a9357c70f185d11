"""``hebictl log info RUN.mcap``, ``hebictl log recover CRASHED.mcap -o FIXED.mcap`` and
``hebictl log convert RUN.hebilog --to mcap``.

``info`` prints what a recording holds (topics with their schema, message count and rate, the
duration, the recorder's counts, attachments, and every event with its time since the start); a
recording cut short (the process was killed) is read to its last complete record and says so,
with the ``recover`` command that gives it a summary. ``recover`` writes that complete copy
(hebictl.recording.recover). ``convert`` imports a hebi-py log through ``hebi.util.load_log``
(docs/recording.md).
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from hebictl.errors import RecordingError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("log", help="inspect MCAP recordings, import HEBI logs")
    lsub = p.add_subparsers(dest="log_command", required=True, metavar="ACTION")
    info = lsub.add_parser("info", help="topics, counts, duration and events of a recording")
    info.add_argument("recording", type=Path, help="an .mcap file written by hebictl run/teleop --record")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.add_argument("--urdf", type=Path, metavar="FILE", help="also write the recording's URDF attachment to FILE "
                                                               "(for a 3D panel URDF layer that reads a file)")
    info.set_defaults(func=cmd_info)
    rec = lsub.add_parser("recover", help="write a complete copy (summary, index, footer) of a recording cut short")
    rec.add_argument("recording", type=Path, help="an .mcap file whose recorder was killed (or any MCAP file)")
    rec.add_argument("-o", "--output", type=Path, help="the new file (default: RECORDING-recovered.mcap; never "
                                                       "overwritten)")
    rec.set_defaults(func=cmd_recover)
    conv = lsub.add_parser("convert", help="convert a hebi-py .hebilog to MCAP (opens in Foxglove)")
    conv.add_argument("log", type=Path, help="a .hebilog file (hebi-py's group.start_log)")
    conv.add_argument("--to", required=True, choices=["mcap"], help="the format to write (required; only mcap)")
    conv.add_argument("-o", "--output", type=Path, help="output file (default: the log's name with .mcap)")
    conv.set_defaults(func=cmd_convert)


def cmd_info(args: argparse.Namespace) -> int:
    from hebictl.recording import schemas
    from hebictl.recording.reader import read_run, recorded_arms

    run = read_run(args.recording)
    if args.urdf is not None:
        if schemas.URDF_ATTACHMENT not in run.attachments:
            raise RecordingError(f"{args.recording}: no {schemas.URDF_ATTACHMENT} attachment")
        args.urdf.write_bytes(run.attachments[schemas.URDF_ATTACHMENT])
    start = run.start
    summary = run.metadata.get(schemas.FINAL_METADATA, {})
    if args.json:
        print(json.dumps({
            "file": str(run.path), "complete": run.complete, "needs_recovery": not run.complete,
            "truncated_at": run.error or None,
            "duration": run.duration,
            "topics": {t: {"schema": run.schema_of.get(t, ""), "count": run.counts[t]} for t in sorted(run.counts)},
            "declared_topics": sorted(run.schema_of), "attachments": sorted(run.attachments),
            "metadata": run.metadata,
            "events": [{"time": e.time - start, "level": e.level, "source": e.source, "text": e.text,
                        **({"arm": e.arm} if e.arm else {})} for e in run.events]}, indent=2))
        return 0
    print(f"{run.path}: {_state(run)}; duration {run.duration:.3f} s")
    meta = run.metadata.get(schemas.RUN_METADATA, {})
    if meta:
        print(f"  recorded by {meta.get('command', 'hebictl')} on {meta.get('backend_name', meta.get('backend', '?'))}"
              f": model {meta.get('model', '?')} ({meta.get('dof', '?')} joints), clock {meta.get('clock', '?')}")
    if summary:
        print(f"  recorder: {summary.get('written', '?')} of {summary.get('cycles', '?')} cycles written, "
              f"{summary.get('dropped', '?')} items dropped")
    arms = recorded_arms(run)
    if arms:
        print(f"  arms: {', '.join(arms)} (each one's topics under /NAME; group events on /group/events)")
    print(f"  {'topic':<24} {'schema':<28} {'messages':>9} {'rate [Hz]':>10}")
    for topic in sorted(run.schema_of):
        n = run.counts[topic]
        span = (run.last[topic] - run.first[topic]) * 1e-9 if n else 0.0
        rate = f"{(n - 1) / span:.1f}" if n > 1 and span > 0 else "-"
        print(f"  {topic:<24} {run.schema_of[topic]:<28} {n:>9} {rate:>10}")
    if run.attachments:
        print("  attachments: " + ", ".join(f"{k} ({len(v)} bytes)" for k, v in sorted(run.attachments.items())))
    print(f"  events: {len(run.events)}")
    for e in run.events:
        print(f"    t={e.time - start:9.3f} s  {e.level:<7} {f'[{e.arm}] ' if e.arm else ''}{e.text}")
    return 0


def _state(run: Any) -> str:
    """Closed, recovered, or cut short with the command that fixes it."""
    from hebictl.recording.reader import RECOVERED_METADATA

    if run.complete and RECOVERED_METADATA in run.metadata:
        how = run.metadata[RECOVERED_METADATA]
        return (f"complete (recovered by hebictl log recover from {how.get('source', '?')}, which was "
                f"{how.get('source_ended', 'cut short')})")
    if run.complete:
        return "complete"
    where = f" (stopped at: {run.error})" if run.error else ""
    return (f"cut short: its recorder did not close it (killed?); read to its last complete record{where}. "
            f"For a file with a summary, run `hebictl log recover {shlex.quote(str(run.path))} -o FIXED.mcap`")


def cmd_recover(args: argparse.Namespace) -> int:
    from hebictl.recording.recover import recover

    out = args.output or args.recording.with_name(f"{args.recording.stem}-recovered.mcap")
    r = recover(args.recording, out)
    span = (f", {r.span:.3f} s of recording (log time {r.first_ns * 1e-9:.3f} to {r.last_ns * 1e-9:.3f} s)"
            if r.first_ns is not None and r.last_ns is not None else "")
    print(f"wrote {out}: {r.messages} messages on {len(r.topics)} topics{span}, {r.attachments} attachments, "
          f"{r.metadata} metadata records")
    if r.skipped:
        print(f"  {r.skipped} messages skipped: their channel was never declared")
    print(f"  the source was {r.ended}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from hebictl.recording.hebilog import convert_hebilog

    out = args.output or args.log.with_suffix(".mcap")
    if out.resolve() == args.log.resolve():
        raise RecordingError(f"{out}: the output would overwrite the input")
    n = convert_hebilog(args.log, out)
    print(f"wrote {out} ({n} feedback samples)")
    return 0
