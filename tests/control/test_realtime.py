"""Real-time scheduling of the loop thread, against the real OS calls (no mocks).

This machine's tests run as root, so SCHED_FIFO and mlockall can be granted: the granted policy is
read back from the kernel by the loop thread's native id. The refused paths run in a subprocess
that lowers RLIMIT_RTPRIO / RLIMIT_MEMLOCK and drops root (CAP_SYS_NICE and CAP_IPC_LOCK would
override the limits), as an unprivileged service would start.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hebictl.control.loop import FixedRateLoop
from hebictl.control.realtime import CycleGc, RealtimeRequest, how_to_grant, probe
from hebictl.hardware.clock import SimClock

REPO = Path(__file__).resolve().parents[2]
may_fifo = pytest.mark.skipif(not hasattr(os, "sched_setscheduler") or os.geteuid() != 0,
                              reason="needs Linux and root (or CAP_SYS_NICE) to grant SCHED_FIFO")


def _vm_kib(field: str = "VmLck") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def _vm_locked_kib() -> int:
    return _vm_kib("VmLck")


@may_fifo
def test_the_loop_thread_runs_at_sched_fifo_with_memory_locked_and_returns_to_normal():
    """A loop with a realtime request, run on a thread of its own: inside its cycles the kernel
    reports SCHED_FIFO at the asked priority for that thread (by native id), the CPU it was pinned
    to and locked memory; the other threads keep normal scheduling; after the loop the thread is
    back to its previous policy (SCHED_OTHER, or SCHED_IDLE where tools/dev runs this tier at idle
    priority) on its previous CPUs and the memory is unlocked."""
    seen: list[tuple[int, int, set[int], int]] = []
    after: list[tuple[int, set[int]]] = []
    cpu = max(os.sched_getaffinity(0))

    resident: list[int] = [_vm_kib("VmRSS")]

    def step() -> bool:
        tid = threading.get_native_id()
        seen.append((os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority,
                     os.sched_getaffinity(tid), _vm_locked_kib()))
        resident.append(_vm_kib("VmRSS"))
        return len(seen) < 3

    policy = os.sched_getscheduler(0)  # SCHED_OTHER, or SCHED_IDLE under tools/dev's parallel tiers
    loop = FixedRateLoop(step, 100.0, SimClock(), realtime=RealtimeRequest(priority=42, cpu=cpu))
    before = os.sched_getaffinity(0)

    def body() -> None:
        loop.run()
        after.append((os.sched_getscheduler(0), os.sched_getaffinity(0)))

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(300)  # a hang guard: locking a large worker's memory on a loaded machine took over 60 s once
    assert not t.is_alive(), "the loop thread did not finish"
    grant = loop.grant
    assert grant is not None and grant.complete, grant
    assert grant.priority == 42 and grant.memory_locked and grant.cpu == cpu
    assert all(s == (os.SCHED_FIFO, 42, {cpu}, s[3]) and s[3] > 0 for s in seen), seen
    assert os.sched_getscheduler(0) == policy  # this (creating) thread was not changed
    assert after == [(policy, before)]
    assert _vm_locked_kib() == 0
    line = grant.line()
    assert line == f"real-time: SCHED_FIFO priority 42, memory locked, pinned to CPU {cpu}", line
    grew = (max(resident) - resident[0]) / 1024
    print(line, f"; VmLck in the cycle {seen[0][3] / 1024:.0f} MiB, resident {resident[0] / 1024:.0f} MiB before "
          f"the lock, +{grew:.0f} MiB with it")
    # MCL_ONFAULT: the lock covers the whole address space but populates none of it (the full lock made
    # this process 3.4-17 GB resident in a suite run, a sim arm's 561 MB against 209 MB)
    assert grew < 256, (resident, seen[0][3])


def test_off_asks_for_nothing():
    grant = probe(RealtimeRequest(priority=0))
    assert grant.priority == 0 and not grant.memory_locked and grant.complete
    assert grant.line().startswith("real-time: off (--rt-priority 0)")


_REFUSED = r"""
import json, os, resource, sys
from hebictl.control.realtime import RealtimeRequest, grant, rtprio_limit
rtprio, memlock = int(sys.argv[1]), int(sys.argv[2])
try:
    resource.setrlimit(resource.RLIMIT_RTPRIO, (rtprio, rtprio))
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (memlock, memlock))
except ValueError as exc:  # raising a hard limit needs CAP_SYS_RESOURCE (a container may not have it)
    print(json.dumps({"skip": f"cannot set RLIMIT_RTPRIO {rtprio}: {exc}"}))
    sys.exit(0)
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)   # drop root: no CAP_SYS_NICE / CAP_IPC_LOCK any more
g = grant(RealtimeRequest(priority=80, cpu=None))
print(json.dumps({"priority": g.priority, "locked": g.memory_locked, "refusals": list(g.refusals),
                  "line": g.line(), "policy": os.sched_getscheduler(0), "limit": rtprio_limit(),
                  "param": os.sched_getparam(0).sched_priority}))
"""


def _refused(rtprio: int, memlock: int) -> dict:
    r = subprocess.run([sys.executable, "-c", _REFUSED, str(rtprio), str(memlock)], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd="/")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    if "skip" in got:
        pytest.skip(got["skip"])
    return got


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="needs Linux scheduling calls")
def test_refused_without_rtprio_the_loop_runs_normally_and_says_how_to_grant():
    """RLIMIT_RTPRIO 0 and a 64 KiB RLIMIT_MEMLOCK, without root: SCHED_FIFO and mlockall are
    refused by the kernel; the thread stays SCHED_OTHER, and the one line names both refusals and
    the three ways to grant them."""
    got = _refused(0, 64 * 1024)
    print(got["line"])
    assert got["priority"] == 0 and got["policy"] == os.sched_getscheduler(0) and not got["locked"]  # unchanged
    assert any("SCHED_FIFO 80" in r and "RLIMIT_RTPRIO 0" in r for r in got["refusals"]), got
    assert any(r.startswith("mlockall") and "RLIMIT_MEMLOCK 64 KiB" in r for r in got["refusals"]), got
    assert got["line"].startswith("real-time: normal priority (SCHED_OTHER), memory not locked (refused: ")
    for how in ("ulimit -r 80", "setcap cap_sys_nice,cap_ipc_lock+ep", "LimitRTPRIO=80", "LimitMEMLOCK=infinity"):
        assert how in got["line"]


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="needs Linux scheduling calls")
def test_a_lower_rtprio_limit_is_taken_and_the_shortfall_said():
    """RLIMIT_RTPRIO 10 without root (``ulimit -r 10``): priority 80 is refused, 10 is granted,
    read back from the kernel, and the line still says that 80 was asked for."""
    got = _refused(10, 64 * 1024)
    assert got["priority"] == 10 and got["policy"] == os.SCHED_FIFO and got["param"] == 10, got
    assert "SCHED_FIFO priority 10" in got["line"] and "SCHED_FIFO 80" in got["line"]


def test_how_to_grant_names_the_priority():
    text = how_to_grant(55)
    assert "ulimit -r 55" in text and "LimitRTPRIO=55" in text and os.path.realpath(sys.executable) in text


def test_the_garbage_collector_runs_only_between_cycles():
    """With CycleGc, a loop whose cycles make cyclic garbage: no collection starts inside a cycle
    (gc.callbacks see every collection), the young generation is collected in the slack between
    cycles, automatic collection is off inside the cycles, and everything is restored after."""
    inside = {"now": False}
    starts: list[bool] = []
    enabled_in_cycle: list[bool] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            starts.append(inside["now"])

    def step() -> bool:
        inside["now"] = True
        enabled_in_cycle.append(gc.isenabled())
        for _ in range(200):  # cyclic garbage
            a: list = []
            a.append(a)
        inside["now"] = False
        return len(enabled_in_cycle) < 200

    loop = FixedRateLoop(step, 1000.0, SimClock(), realtime=RealtimeRequest(priority=0))
    frozen_before = gc.get_freeze_count()
    gc.callbacks.append(watch)
    try:
        loop.run()
    finally:
        gc.callbacks.remove(watch)
    assert loop.gc is not None and sum(loop.gc.collections) >= 20, loop.gc.collections
    assert starts and not any(starts), "a collection started inside a cycle"
    assert not any(enabled_in_cycle)
    assert gc.isenabled() and gc.get_freeze_count() == frozen_before
    print(f"{len(starts)} collections, all between cycles; by generation {loop.gc.collections}")


def test_no_collection_without_slack():
    """Less than 30 % of a period left to the deadline: nothing is collected, however much is due."""
    cg = CycleGc(0.001)
    cg.begin()
    try:
        for _ in range(2000):
            a: list = []
            a.append(a)
        cg.slack(0.0002)
        assert cg.collections == [0, 0, 0]
        cg.slack(0.0009)
        assert cg.collections[0] + cg.collections[1] + cg.collections[2] == 1
    finally:
        cg.end()
    assert gc.isenabled()
