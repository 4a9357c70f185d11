"""Real-time scheduling for the control loop's thread, as ros2_control's ``realtime_tools`` asks for it.

A robot PC is not idle. On a loaded machine a normal-priority thread waits in the run queue behind
every busy process, and a cycle that wakes late can outlast the modules' command lifetime. Linux
gives a thread a fixed real-time priority (``SCHED_FIFO``): it then runs as soon as it is runnable,
ahead of every normal thread. Three more things keep the cycle's time its own:

* **locked memory** (``mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)``): no page the process
  uses is swapped out, so the cycle never waits on a page fault to disk. ``MCL_ONFAULT`` (Linux 4.4)
  locks pages as they are touched instead of populating every mapping at once: address space that is
  reserved and never used (thread stacks, allocator arenas, JIT reservations) stays unpopulated. The
  full lock made a sim arm's process 561 MB resident against 209 MB with it, and a test process that
  had imported the reference libraries 3.4-17 GB; a kernel without it gets the full lock;
* **the garbage collector out of the cycle** (:class:`CycleGc`): the heap built during set-up is
  frozen (``gc.freeze``), automatic collection is off while the loop runs, and the young
  generation is collected in a cycle's slack time, never at an allocation inside the cycle;
* **CPU affinity** (optional): the loop thread pinned to one core, e.g. one isolated with
  ``isolcpus``.

None of this is granted to every process. :func:`grant` asks for each on the calling thread and
reports what it got in a :class:`RealtimeGrant`, whose :meth:`~RealtimeGrant.line` says it in one
line, with how to grant what was refused (``RLIMIT_RTPRIO``, ``setcap``, systemd). A refusal is
never an error: the loop runs at normal priority, as before.

Threads inherit their creator's scheduling: :func:`grant` is called on the loop thread once the
process's other threads (MQTT, recorder, live view) exist, and :func:`release` puts the thread back
to normal scheduling before the run's summary and files are written.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import gc
import os
import resource
import sys
from dataclasses import dataclass, field
from typing import Any

#: ``--rt-priority`` default: high, but below the kernel's own threaded interrupts and watchdogs (99)
DEFAULT_PRIORITY = 80
#: mlockall(2) flags (linux/mman.h)
MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT = 1, 2, 4


@dataclass(frozen=True)
class RealtimeRequest:
    """What the loop thread asks for. ``priority``: SCHED_FIFO priority 1..99, 0 = normal scheduling
    (and nothing else asked for either); ``cpu``: pin the loop thread to this CPU, None = any;
    ``lock_memory``: mlockall the process (with a priority only)."""

    priority: int = DEFAULT_PRIORITY
    cpu: int | None = None
    lock_memory: bool = True

    @property
    def off(self) -> bool:
        return self.priority <= 0 and self.cpu is None


@dataclass(frozen=True)
class RealtimeGrant:
    """What the loop thread got. ``priority`` 0: normal scheduling (SCHED_OTHER)."""

    requested: RealtimeRequest
    priority: int = 0
    memory_locked: bool = False
    cpu: int | None = None
    refusals: tuple[str, ...] = ()
    #: the loop thread's native id (``os.sched_getscheduler(native_id)`` reads its policy)
    native_id: int = 0
    previous_cpus: frozenset[int] = field(default_factory=frozenset)
    #: the thread's scheduling policy before the grant (SCHED_OTHER, or SCHED_IDLE/SCHED_BATCH where the
    #: process was started so): :func:`release` restores it
    previous_policy: int = os.SCHED_OTHER

    @property
    def complete(self) -> bool:
        """Everything asked for was granted."""
        return not self.refusals

    def line(self) -> str:
        """One line for the operator: what was granted, and how to grant what was not."""
        req = self.requested
        if req.off:
            return "real-time: off (--rt-priority 0): the control loop runs at normal priority"
        got = [f"SCHED_FIFO priority {self.priority}" if self.priority else "normal priority (SCHED_OTHER)"]
        if req.priority > 0:
            got.append("memory locked" if self.memory_locked else "memory not locked")
        if self.cpu is not None:
            got.append(f"pinned to CPU {self.cpu}")
        text = "real-time: " + ", ".join(got)
        if self.refusals:
            text += f" (refused: {'; '.join(self.refusals)}); to grant it: {how_to_grant(req.priority)}"
        return text

    def as_status(self) -> dict[str, Any]:
        """The teleop status topic's ``realtime`` object."""
        return {"policy": "SCHED_FIFO" if self.priority else "SCHED_OTHER", "priority": self.priority,
                "requested_priority": self.requested.priority, "memory_locked": self.memory_locked,
                "cpu": self.cpu, "complete": self.complete}


def how_to_grant(priority: int) -> str:
    """The three usual ways to let a process have real-time priority and locked memory."""
    p = max(priority, 1)
    return (f"`ulimit -r {p}; ulimit -l unlimited` (or /etc/security/limits.conf rtprio/memlock), "
            f"`sudo setcap cap_sys_nice,cap_ipc_lock+ep {os.path.realpath(sys.executable)}`, "
            f"or systemd `LimitRTPRIO={p}` `LimitMEMLOCK=infinity`")


def rtprio_limit() -> int:
    """The soft RLIMIT_RTPRIO: the highest SCHED_FIFO priority an unprivileged thread may take."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_RTPRIO)
    return 99 if soft == resource.RLIM_INFINITY else int(soft)


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _set_fifo(priority: int) -> tuple[int, str | None]:
    """SCHED_FIFO at ``priority`` on the calling thread, else at RLIMIT_RTPRIO if that is lower but > 0."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return priority, None
    except OSError as exc:
        limit = rtprio_limit()
        why = f"SCHED_FIFO {priority}: {exc.strerror} (RLIMIT_RTPRIO {limit}, no CAP_SYS_NICE)"
        if 0 < limit < priority:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(limit))
                return limit, why
            except OSError:
                pass
        return 0, why


def _lock_memory() -> str | None:
    libc = _libc()
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) == 0:
        return None
    err = ctypes.get_errno()
    if err == errno.EINVAL and libc.mlockall(MCL_CURRENT | MCL_FUTURE) == 0:   # a kernel before 4.4
        return None
    err = ctypes.get_errno() if err == errno.EINVAL else err
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    limit = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"
    return f"mlockall: {os.strerror(err)} (RLIMIT_MEMLOCK {limit}, no CAP_IPC_LOCK)"


def _pin(cpu: int) -> tuple[int | None, str | None]:
    try:
        os.sched_setaffinity(0, {cpu})
        return cpu, None
    except (OSError, ValueError) as exc:
        have = sorted(os.sched_getaffinity(0))
        return None, f"CPU {cpu}: {getattr(exc, 'strerror', None) or exc} (this process may use CPUs {have})"


def lock_memory(request: RealtimeRequest) -> tuple[bool, str | None]:
    """mlockall the process if ``request`` asks for it (with a priority): (locked, why not). Locking
    takes a while (it walks every mapping; the full lock of a kernel without MCL_ONFAULT faulted in
    the sim's 550 MB in 0.4 s on an idle machine): done ahead of the loop
    (:meth:`~hebictl.control.loop.FixedRateLoop.prepare`), not between a feedback read and the first
    command."""
    if request.priority <= 0 or not request.lock_memory:
        return False, None
    why = _lock_memory()
    return why is None, why


def grant(request: RealtimeRequest, memory: tuple[bool, str | None] | None = None) -> RealtimeGrant:
    """Ask for ``request`` on the calling thread; what was refused is named, never raised.
    ``memory``: what :func:`lock_memory` already got (None: lock now)."""
    import threading

    previous = frozenset(os.sched_getaffinity(0))
    policy = os.sched_getscheduler(0)
    refusals: list[str] = []
    cpu = None
    if request.cpu is not None:
        cpu, why = _pin(request.cpu)
        refusals += [why] if why else []
    priority, locked = 0, False
    if request.priority > 0:
        priority, why = _set_fifo(request.priority)
        refusals += [why] if why else []
        locked, why = memory if memory is not None else lock_memory(request)
        refusals += [why] if why else []
    return RealtimeGrant(request, priority, locked, cpu, tuple(refusals), threading.get_native_id(), previous,
                         policy)


def release(granted: RealtimeGrant) -> None:
    """Back to normal scheduling on the calling thread, memory unlocked, the previous CPUs."""
    if granted.priority:
        os.sched_setscheduler(0, granted.previous_policy, os.sched_param(0))
    if granted.memory_locked:
        _libc().munlockall()
    if granted.cpu is not None and granted.previous_cpus:
        os.sched_setaffinity(0, granted.previous_cpus)


def probe(request: RealtimeRequest) -> RealtimeGrant:
    """What a loop thread of this process would be granted (``check-config``): asked for on a
    short-lived thread, then released."""
    import threading

    out: list[RealtimeGrant] = []

    def ask() -> None:
        got = grant(request)
        release(got)
        out.append(got)

    t = threading.Thread(target=ask, name="hebictl-rt-probe")
    t.start()
    t.join()
    return out[0]


class CycleGc:
    """Keeps Python's garbage collector out of the cycle.

    :meth:`begin` (after set-up) collects once, freezes what survives (``gc.freeze``: the model,
    the backend, the arm, never collected again) and turns automatic collection off, so no
    allocation inside a cycle triggers a collection. :meth:`slack` is called between cycles with
    the time left to the next deadline: the young generation (objects made since) is collected
    there when it has grown and there is time, the older ones more rarely with more time. :meth:`end`
    restores what was there before."""

    #: collect the young generation once it holds this many objects (CPython's own threshold)
    YOUNG = 700
    #: share of a period that must be left for a young (older) collection in the slack
    YOUNG_SLACK, OLD_SLACK = 0.3, 0.6

    def __init__(self, period: float) -> None:
        self.period = period
        self.collections = [0, 0, 0]
        self._was_enabled = True
        self._active = False

    @staticmethod
    def prefreeze() -> None:
        """The long part of :meth:`begin` (a full collection of the set-up's heap and freezing it),
        ahead of the loop; :meth:`begin` then only collects and freezes what came since."""
        gc.collect()
        gc.freeze()

    def begin(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.collect()
        gc.freeze()
        gc.disable()
        self._active = True

    def slack(self, remaining: float) -> None:
        """Collect what is due if ``remaining`` [s] to the next deadline leaves time for it."""
        if not self._active or remaining < self.YOUNG_SLACK * self.period:
            return
        young, middle, old = gc.get_count()
        if young < self.YOUNG:
            return
        generation = 0
        if remaining >= self.OLD_SLACK * self.period and middle >= 10:
            generation = 2 if old >= 10 else 1  # CPython's own ratios between the generations
        gc.collect(generation)
        self.collections[generation] += 1

    def end(self) -> None:
        if not self._active:
            return
        self._active = False
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()
