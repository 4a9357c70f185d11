#!/usr/bin/env python3
"""A watchdog for a pytest run that ``tools/dev test`` waits on: a stalled run fails with a report
instead of hanging until CI's time limit.

Why: CI's clean-clone run of 16ed9ce hung with two tests of the parallel tiers outstanding (one per
xdist worker) until the job's 5,400 s ran out, and its log said nothing about why. A hang that
pytest-timeout cannot end (a process stopped or starved of CPU runs no SIGALRM handler; a
controller that never tells its workers to shut down has no test running at all) must still end,
and say what every process was doing.

How: the run's processes touch a heartbeat file at every test report (``tests/_support/watch.py``,
set up by ``tests/conftest.py`` when ``HEBICTL_TEST_HEARTBEAT`` is set). When no report has come
for ``--stall`` seconds (longer than pytest-timeout's 600 s per test, so a single slow test is
pytest-timeout's to end), this prints every process of the run's process group (state, scheduling
class, nice, CPU time, kernel wait channel), the Python stacks of its pytest processes (each
registered ``faulthandler`` on SIGUSR1, writing into ``--stacks``), and the machine's busiest
processes. Then:

* processes of the group that are stopped (state T) are resumed once (SIGCONT) and the watch goes
  on: a stop nobody resumes is the one kind of stall that can end well;
* otherwise the group gets SIGINT (pytest's KeyboardInterrupt runs the tests' finally blocks and
  writes its report), then SIGKILL after ``--grace`` seconds, and this exits 1.

``--normal-priority`` is the one other thing it does, for ``tools/dev`` once the realtime lanes are
done: the run's threads back to normal priority (:func:`normal_priority`), then exit.

The browser rig's deliberate pauses of the group (``tests/_support/quiet.py``: SIGSTOP while it
measures a latency) last seconds, far below the stall. It exits 0 as soon as the watched process is
gone. Only the standard library: it runs before and beside the test venv's packages, and reads
Linux's /proc (elsewhere it only waits).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
CLASSES = {0: "TS", 1: "FF", 2: "RR", 3: "B", 5: "IDL", 6: "DLN"}


@dataclass(frozen=True)
class Proc:
    """One process as /proc/<pid>/stat and friends describe it."""

    pid: int
    ppid: int
    pgid: int
    state: str
    nice: int
    policy: int
    cpu_s: float
    wchan: str
    args: str

    def row(self, recent: float) -> str:
        """One line of the report; ``recent``: its CPU share (%) over the report's window."""
        cls = CLASSES.get(self.policy, str(self.policy))
        return (f"{self.pid:>7} {self.ppid:>7} {self.pgid:>7} {self.state:>2} {cls:>3} {self.nice:>3} "
                f"{self.cpu_s:>8.1f} {recent:>5.0f} {self.wchan[:22]:<22} {self.args[:140]}")


HEADER = (f"{'PID':>7} {'PPID':>7} {'PGID':>7} {'ST':>2} {'CLS':>3} {'NI':>3} {'CPU[s]':>8} {'%CPU':>5} "
          f"{'WCHAN':<22} COMMAND")
#: seconds between the report's two looks at the machine (the stacks are written meanwhile)
WINDOW = 2.0


def read_proc(pid: int, ticks: float) -> Proc | None:
    """The process ``pid``, or None once it is gone (a race with its exit is normal here)."""
    base = PROC / str(pid)
    try:
        stat = (base / "stat").read_text()
        raw_args = (base / "cmdline").read_bytes()
        wchan = (base / "wchan").read_text().strip() if (base / "wchan").exists() else ""
    except OSError:
        return None
    name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
    # fields after the name, from 3 (state): ppid 4, pgrp 5, utime 14, stime 15, nice 19, policy 41
    args = " ".join(raw_args.decode(errors="replace").replace("\0", " ").split()) or f"[{name}]"
    return Proc(pid=pid, ppid=int(rest[1]), pgid=int(rest[2]), state=rest[0], nice=int(rest[16]),
                policy=int(rest[38]), cpu_s=(int(rest[11]) + int(rest[12])) / ticks, wchan=wchan or "-",
                args=args)


def processes() -> dict[int, Proc]:
    ticks = float(os.sysconf("SC_CLK_TCK"))
    found = (read_proc(int(p.name), ticks) for p in PROC.iterdir() if p.name.isdigit())
    return {p.pid: p for p in found if p is not None}


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent's ``wait`` counts as gone); only its stat
    line is read, as this is asked every ``--poll`` seconds."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def normal_priority(pgid: int) -> None:
    """Every thread of the group's processes back to SCHED_OTHER at nice 0 (``--normal-priority``).

    The parallel tiers run at idle priority only to leave the CPU to the realtime lanes; once those
    are done, ``tools/dev`` lifts them, as idle priority could then only let something else on the
    machine starve them. Best effort: lowering a nice value needs root (or CAP_SYS_NICE), and a
    process may end meanwhile."""
    for proc in processes().values():
        if proc.pgid != pgid:
            continue
        try:
            tasks = [int(task.name) for task in (PROC / str(proc.pid) / "task").iterdir()]
        except OSError:
            continue   # ended meanwhile
        for tid in tasks:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, 0)


def report(pgid: int, stacks: Path | None, stalled_s: float) -> list[Proc]:
    """Print the state of the group, its Python stacks and the machine's busiest processes over a
    :data:`WINDOW` (a starved run shows who took the CPU); returns the group as it was at the start."""
    before = processes()
    group = [p for p in before.values() if p.pgid == pgid]
    asked = ask_for_stacks(group, stacks) if stacks is not None else []
    time.sleep(WINDOW)
    after = processes()

    def recent(p: Proc) -> float:
        return 100.0 * (p.cpu_s - before[p.pid].cpu_s) / WINDOW if p.pid in before else 0.0

    out = sys.stderr
    print(f"\nwatch_tier: no test reported for {stalled_s:.0f} s; process group {pgid} "
          f"(%CPU over the next {WINDOW:.0f} s):", file=out)
    print(HEADER, file=out)
    for p in sorted(group, key=lambda p: p.pid):
        now = after.get(p.pid, p)
        print(p.row(recent(now)), file=out)
    busiest = sorted((p for p in after.values() if p.pgid != pgid and recent(p) >= 1.0), key=lambda p: -recent(p))
    if busiest:
        print("the machine's processes outside the group that used the CPU over the same window:", file=out)
        print(HEADER, file=out)
        for p in busiest[:10]:
            print(p.row(recent(p)), file=out)
    else:
        print("no process outside the group used more than 1% of a CPU over the same window", file=out)
    for proc, path in asked:
        text = path.read_text(errors="replace").strip()
        print(f"--- Python stacks of pytest process {proc.pid} ({proc.args[:80]})", file=out)
        print(text or f"(nothing written: it did not run its handler within {WINDOW:.0f} s)", file=out)
    out.flush()
    return group


def ask_for_stacks(group: list[Proc], stacks: Path) -> list[tuple[Proc, Path]]:
    """Ask every pytest process of the group for its Python stacks (faulthandler on SIGUSR1: each
    registered itself as ``<pid>.txt`` in ``stacks``). A stopped one would write only once resumed:
    it is named as stopped instead."""
    members = {p.pid: p for p in group}
    asked = []
    for path in sorted(stacks.glob("*.txt")):
        proc = members.get(int(path.stem) if path.stem.isdigit() else -1)
        if proc is None:
            continue
        if proc.state in {"T", "t"}:
            print(f"watch_tier: pytest process {proc.pid} is stopped: no stack from it", file=sys.stderr)
            continue
        try:
            os.kill(proc.pid, signal.SIGUSR1)
            asked.append((proc, path))
        except ProcessLookupError:
            pass
    return asked


def kill_group(pgid: int, leader: int, grace: float) -> None:
    """SIGINT (pytest reports and cleans up), then SIGKILL what is left after ``grace`` seconds."""
    for sig in (signal.SIGCONT, signal.SIGINT):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
    end = time.monotonic() + grace
    while time.monotonic() < end and alive(leader):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def last_beat(beat: Path, since: float) -> float:
    try:
        return max(since, beat.stat().st_mtime)
    except FileNotFoundError:
        return since


def watch(pid: int, pgid: int, beat: Path, stacks: Path | None, stall: float, grace: float, poll: float) -> int:
    """Watch until ``pid`` is gone (0) or its group stalled and was stopped (1)."""
    since = time.time()
    resumed = False
    while alive(pid):
        age = time.time() - last_beat(beat, since)
        if age < stall:
            time.sleep(min(poll, stall - age + 0.05))
            continue
        group = report(pgid, stacks, age)
        stopped = [p.pid for p in group if p.state in {"T", "t"}]
        if stopped and not resumed:
            print(f"watch_tier: {len(stopped)} process(es) of the group were stopped ({stopped}), and nothing "
                  "resumed them: SIGCONT, and watching on", file=sys.stderr, flush=True)
            os.killpg(pgid, signal.SIGCONT)
            resumed, since = True, time.time()
            beat.touch()
            continue
        print(f"watch_tier: stopping the run (SIGINT, then SIGKILL after {grace:.0f} s)", file=sys.stderr,
              flush=True)
        kill_group(pgid, pid, grace)
        return 1
    return 0


#: [s] how long a run started just before the watchdog may take to make its own process group
GROUP_WAIT = 30.0


def own_group(pid: int, wait: float) -> int | None:
    """The process group of ``pid`` once it leads one (the parallel tiers make theirs as their first
    step, so for a moment after the start they are still in their starter's), or its group as it is
    after ``wait`` seconds; None if it ended."""
    end = time.monotonic() + wait
    while True:
        try:
            pgid = os.getpgid(pid)
        except ProcessLookupError:
            return None
        if pgid == pid or time.monotonic() >= end:
            return pgid
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pid", type=int, required=True, help="the pytest run to watch (its group's leader)")
    parser.add_argument("--beat", type=Path, help="the heartbeat file its test reports touch (required to watch)")
    parser.add_argument("--stacks", type=Path, help="where its pytest processes write their stacks on SIGUSR1")
    parser.add_argument("--stall", type=float, default=720.0, help="seconds without a test report [720]")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds between SIGINT and SIGKILL [30]")
    # how often it looks: reading one /proc file; tools/dev waits for it to see the run end
    parser.add_argument("--poll", type=float, default=0.5, help=argparse.SUPPRESS)
    parser.add_argument("--group-wait", type=float, default=GROUP_WAIT, help=argparse.SUPPRESS)
    parser.add_argument("--normal-priority", action="store_true",
                        help="instead of watching: lift the run's process group to normal priority, and exit")
    args = parser.parse_args(argv)
    if not args.normal_priority and args.beat is None:
        parser.error("--beat is required to watch a run")
    if not PROC.is_dir():
        return 0
    if args.normal_priority:
        with contextlib.suppress(ProcessLookupError):
            normal_priority(os.getpgid(args.pid))
        return 0
    pgid = own_group(args.pid, wait=args.group_wait)
    if pgid is None:
        return 0   # it ended first
    if pgid == os.getpgid(0):
        parser.error(f"process {args.pid} is in this watchdog's own process group: it would stop itself")
    return watch(args.pid, pgid, args.beat, args.stacks, args.stall, args.grace, args.poll)


if __name__ == "__main__":
    sys.exit(main())
