"""The opt-in per-test cost report (``pytest --cost-report FILE``): where the suite's minutes go.

Wall time alone is useless on a loaded machine (another process's load shows up as this test's
time), so each test's cost is split into what it *computes* and what it *waits for*:

* ``cpu``: CPU seconds of the test process (``time.process_time``) plus those of the child
  processes it started and reaped (``resource.getrusage(RUSAGE_CHILDREN)``: ``hebictl`` CLI runs,
  mosquitto, browsers), over setup, call and teardown, fixtures included (a module- or
  session-scoped fixture's set-up is charged to the first test that needs it);
* ``wait``: ``wall - cpu``, i.e. sleeps, polls, timeouts and the time a child takes that runs
  beside the test. On a quiet machine the CPU figure bounds what parallel workers can share, the
  wait is what a serial (realtime) run pays in full;
* memory: ``rss_mb``, the test process's resident set after the test (what it left behind: a module
  rig, a leak), and ``peak_rise_mb``, how far the test raised the process's peak resident set
  (``ru_maxrss``): the test that made a worker big, whatever freed it later. A 2-core CI machine
  has a few GB; one worker of 17 GB was found this way.

Under pytest-xdist each worker measures its own tests and ships the figures in the test report
(``user_properties``), so the controller writes one file for the whole run: a tab-separated table
sorted by CPU, and prints the top ten by CPU and by wait. While
the run goes, ``FILE.partial`` gets one line per finished test (a run stopped half-way still tells).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: the key of the figures in a test report's ``user_properties``
PROPERTY = "hebictl_cost"


def _peak_mb() -> float:
    """This process's peak resident set so far [MB] (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mb() -> float:
    """This process's resident set now [MB] (0 where /proc is absent)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * resource.getpagesize() / 1e6


def _children_cpu() -> float:
    """CPU seconds (user + system) of every terminated and reaped child of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Cost:
    """One test's figures, summed over its setup, call and teardown phases."""

    wall: float = 0.0
    cpu: float = 0.0
    child_cpu: float = 0.0
    worker: str = ""
    rss_mb: float = 0.0        # after the last phase
    peak_rise_mb: float = 0.0  # how far the test raised the process's peak resident set

    @property
    def total_cpu(self) -> float:
        return self.cpu + self.child_cpu

    @property
    def wait(self) -> float:
        return max(0.0, self.wall - self.total_cpu)


@dataclass(eq=False)  # hashable by identity: pluggy keeps its plugins in sets
class CostRecorder:
    """The pytest plugin: measures each phase in the process that runs it and collects the
    figures from every report (its own, or those xdist workers send) into one table."""

    path: Path | None
    worker: str = "main"
    costs: dict[str, Cost] = field(default_factory=dict)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        _, cpu0, child0 = item.stash.get(_PHASE_START, (time.perf_counter(), time.process_time(), _children_cpu()))
        outcome = yield
        report = outcome.get_result()
        report.user_properties.append((PROPERTY, {
            "wall": call.duration, "cpu": time.process_time() - cpu0, "child_cpu": _children_cpu() - child0,
            "worker": self.worker, "rss_mb": _rss_mb(),
            "peak_rise_mb": _peak_mb() - item.stash.get(_TEST_PEAK, _peak_mb()),
        }))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        item.stash[_TEST_PEAK] = _peak_mb()
        item.stash[_PHASE_START] = (time.perf_counter(), time.process_time(), _children_cpu())
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        item.stash[_PHASE_START] = (time.perf_counter(), time.process_time(), _children_cpu())
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        item.stash[_PHASE_START] = (time.perf_counter(), time.process_time(), _children_cpu())
        yield

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, figures in report.user_properties:
            if key != PROPERTY or not isinstance(figures, dict):
                continue
            cost = self.costs.setdefault(report.nodeid, Cost())
            cost.wall += float(figures["wall"])
            cost.cpu += float(figures["cpu"])
            cost.child_cpu += float(figures["child_cpu"])
            cost.worker = str(figures["worker"])
            cost.rss_mb = float(figures.get("rss_mb", 0.0))
            cost.peak_rise_mb = max(cost.peak_rise_mb, float(figures.get("peak_rise_mb", 0.0)))
            if report.when == "teardown" and self.path is not None:
                # one line per finished test as it ends, so a run stopped half-way still tells
                with self._partial_path().open("a", encoding="utf-8") as partial:
                    partial.write(self._row(report.nodeid, cost) + "\n")

    def _partial_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".partial")

    @staticmethod
    def _row(nodeid: str, c: Cost) -> str:
        return (f"{nodeid}\t{c.worker}\t{c.wall:.3f}\t{c.cpu:.3f}\t{c.child_cpu:.3f}\t{c.wait:.3f}"
                f"\t{c.rss_mb:.0f}\t{c.peak_rise_mb:.0f}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.path is None or not self.costs:  # an xdist worker: its controller writes the table
            return
        rows = sorted(self.costs.items(), key=lambda kv: kv[1].total_cpu, reverse=True)
        lines = ["test\tworker\twall_s\tcpu_s\tchild_cpu_s\twait_s\trss_mb\tpeak_rise_mb"]
        lines += [self._row(nodeid, c) for nodeid, c in rows]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._partial_path().unlink(missing_ok=True)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.path is None or not self.costs:
            return
        costs = list(self.costs.items())
        tr = terminalreporter
        tr.section("cost report")
        wall = sum(c.wall for _, c in costs)
        cpu = sum(c.total_cpu for _, c in costs)
        wait = sum(c.wait for _, c in costs)
        tr.write_line(f"{len(costs)} tests: wall {wall:.1f} s, cpu {cpu:.1f} s "
                      f"(children {sum(c.child_cpu for _, c in costs):.1f} s), wait {wait:.1f} s -> {self.path}")
        for title, key in (("cpu", lambda c: c.total_cpu), ("wait", lambda c: c.wait)):
            tr.write_line(f"top by {title}:")
            for nodeid, c in sorted(costs, key=lambda kv: key(kv[1]), reverse=True)[:10]:
                tr.write_line(f"  {key(c):7.2f} s  (wall {c.wall:6.2f}, cpu {c.total_cpu:6.2f})  {nodeid}")
        tr.write_line("top by peak memory rise (the test that made its worker big):")
        for nodeid, c in sorted(costs, key=lambda kv: kv[1].peak_rise_mb, reverse=True)[:10]:
            tr.write_line(f"  {c.peak_rise_mb:7.0f} MB  (worker {c.worker} {c.rss_mb:.0f} MB after it)  {nodeid}")


_PHASE_START = pytest.StashKey[tuple[float, float, float]]()
_TEST_PEAK = pytest.StashKey[float]()  # the process's peak resident set [MB] before the test's setup


def add_option(parser: pytest.Parser) -> None:
    """Register ``--cost-report FILE``."""
    parser.addoption("--cost-report", metavar="FILE", default=None,
                     help="write each test's wall, CPU (own + children) and wait seconds and its memory (resident "
                          "set after it, rise of the peak) to FILE (tab-separated, sorted by CPU) and print "
                          "the top ten by CPU, by wait and by peak memory rise")


def configure(config: pytest.Config) -> None:
    """Register the recorder when ``--cost-report`` is given: on the controller (which writes the
    table) and on each xdist worker (which gets the same options, and only measures)."""
    path = config.getoption("--cost-report")
    if path is None:
        return
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None:
        config.pluginmanager.register(CostRecorder(None, worker=str(worker_input["workerid"])), "hebictl-cost")
    else:
        config.pluginmanager.register(CostRecorder(Path(path)), "hebictl-cost")
