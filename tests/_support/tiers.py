"""The suite's three tiers and the rule that puts each test in one (tests/conftest.py marks them).

``unit`` and ``reference`` tests run under pytest-xdist on every core, at idle CPU priority;
``realtime`` ones run serially beside them, because a second worker at their own priority would
change what they measure (an idle-priority one only takes the CPU they leave), in two lanes: the
mostly-waiting broker tests (:data:`BROKER_LANE_MODULES`) beside the processes and wall-clock runs;
and the ``exclusive`` few (:data:`EXCLUSIVE_MODULES`) alone, after everything else. So a
test is ``realtime`` only if it asserts a wall-clock bound or drives a real broker, browser or
process whose outcome depends on the wall clock (signals, a real-time loop, timeouts): that tier's
wall time is paid in full, the others' CPU time is shared by the workers. Modules are listed whole
only where every test in them is like that; otherwise the single tests are named, so a module's
simulated-clock and in-process tests still run in parallel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support.paths import TESTS_DIR

#: fixtures that start a real broker, browser or timed process: their tests are ``realtime``
REALTIME_FIXTURES = frozenset({"broker", "secure_broker", "acl_broker", "make_server", "panel", "page", "browser"})
#: test modules (relative to tests/) whose every test asserts wall-clock timing or drives processes,
#: brokers or browsers with signals and timeouts a second worker would disturb
REALTIME_MODULES = frozenset({
    "hardware/test_clock.py", "panel/test_panel_e2e.py", "teleop/test_clock.py", "teleop/test_teleop_cli.py",
    "panel/test_panel_mobile_io_e2e.py",  # a browser, a broker and two teleop processes stopped by signals
    "teleop/test_broker_plugin.py", "recording/test_crash.py", "teleop/test_teleop_security.py",
    "teleop/test_lease_rabbitmq.py",
    # signals to real-time `hebictl run` processes after fixed sleeps: in the parallel tier a loaded
    # core made their control loop miss its 250 ms command lifetime (control_gap stop) or time out
    "cli/test_signals.py",
    # tools/dev's watchdog against real process groups that beat, stall and stop on 1 s timescales
    "test_watch_tier.py",
})
#: single tests with a wall-clock bound, or a real-time process run whose outcome a second worker
#: could change, in modules that are otherwise unit tests (simulated clocks, in-process checks, or
#: subprocesses that only check their output: those run in parallel); ``module::function`` covers
#: every parameter of the function
REALTIME_TESTS = frozenset({
    # mlockall of the whole test process and SCHED_FIFO on a loop thread: at the parallel tiers' idle
    # priority, locking a busy worker's memory did not finish within the test's 60 s join once
    "control/test_realtime.py::test_the_loop_thread_runs_at_sched_fifo_with_memory_locked_and_returns_to_normal",
    "hardware/test_base.py::test_read_write_fit_a_1khz_loop",
    "sim_backend/test_modules.py::test_bundled_double_shoulder_runs_on_the_sim",
    "cli/test_main.py::test_run_summary_lines_do_not_wrap",
    "test_limits.py::test_dev_zero_refused_without_reading",
    # `0.18 <= wall < 0.5` on the monotonic clock; the other tests of the module run on a SimClock
    "sim_backend/test_backend.py::test_real_time_with_the_monotonic_clock",
    # the safety matrix's in-process scenarios run on the simulated clock (parallel); these drive
    # `hebictl run` / `hebictl teleop` processes and a broker on the wall clock
    "sim_backend/test_safety_matrix.py::test_teleop_through_a_broker",
    "sim_backend/test_safety_matrix.py::test_signal_to_hebictl_run_holds_the_arm",
    "sim_backend/test_safety_matrix.py::test_signal_to_hebictl_teleop_holds_the_arm",
    # signals to a running `hebictl run`, run statistics that count real-time cycles, and runs paced by
    # the wall clock that must reach their goal (a late loop stops the arm: control_gap); the
    # module's check-config runs and refusals before anything moves run in parallel
    "cli/test_run_cmd.py::test_run_homes_follows_a_goal_and_records",
    "cli/test_run_cmd.py::test_run_goal_at_the_rated_limit_is_accepted_and_followed",
    "cli/test_run_cmd.py::test_an_error_during_the_run_brakes_holds_and_writes_everything",
    "cli/test_run_cmd.py::test_signal_stops_with_hold_until_a_second_signal",
    "cli/test_run_cmd.py::test_signal_with_stop_hold_exits_after_holding",
    "cli/test_run_cmd.py::test_one_sigterm_brakes_holds_and_exits_with_the_summary",
    "cli/test_run_cmd.py::test_run_summary_covers_the_whole_run",
    "cli/test_run_cmd.py::test_run_loop_statistics_separate_waiting_work_and_misses",
    "cli/test_run_cmd.py::test_a_safety_stop_on_a_quiet_run_is_said_and_the_hold_ends_with_stop_hold",
    # one real-time sim run recorded with no dropped cycle and ended by any safety stop (a late loop
    # on a shared core would be one), shared by the module's readers
    "cli/test_log_cmd.py::test_recorded_sim_run_reads_back",
    "cli/test_log_cmd.py::test_log_info_lists_topics_counts_and_events",
    "cli/test_log_cmd.py::test_plot_of_an_mcap_recording_writes_a_png",
    # hebi-py's imitation group runs on the wall clock: a lookup timeout, a goal reached within 5 s,
    # a `hebictl run` on it
    "hardware/test_hebi_backend.py::test_lookup_without_modules_fails_within_timeout",
    "hardware/test_hebi_backend.py::test_hebi_py_pattern_update_then_set_goal_on_imitation",
    "hardware/test_hebi_backend.py::test_hebictl_run_on_hebi_imitation_exits_0",
    # hostile YAML refused within a wall-clock bound (the other tests of the module check errors only)
    "test_yaml_load.py::test_hostile_yaml_is_a_config_error_with_file_and_line",
    "test_yaml_load.py::test_alias_bomb_refused_quickly_even_alone",
    "test_yaml_load.py::test_describe_is_bounded",
    "test_yaml_load.py::test_a_1_mib_config_is_refused_at_once_by_its_size",
    "test_yaml_load.py::test_a_config_at_the_size_limit_parses_once_with_libyaml",
})
#: test modules that compare against a reference library on files written by others
REFERENCE_PREFIXES = ("formats/",)
#: realtime modules that need the machine to themselves: ``tools/dev test`` runs the rest of the
#: realtime tier beside the idle-priority parallel tiers, and these afterwards, alone. The panel's
#: end-to-end rig (Chromium with up to 300 sessions, a broker, two arms) bounds the e-stop at 200 ms
#: from press to status: with the parallel tiers beside it, 2 of 20 presses took 191 and 674 ms
EXCLUSIVE_MODULES = frozenset({
    "panel/test_panel_e2e.py",
    # a SIGKILL's loss of recording (0.5 s flush interval, 1 s bar): beside the first lane's processes a
    # CI run measured 1.79 s, a starved recorder rather than a lost flush
    "recording/test_crash.py",
    # a jog flood from a second account (a process that takes a core) while the arm's control gaps are counted
    "teleop/test_teleop_security.py",
    # a 3-node RabbitMQ cluster (three Erlang VMs) started and frozen on loopback: ~75 s of both cores
    "teleop/test_lease_rabbitmq.py",
    # the Mobile IO emulator in headless Chromium beside two teleop processes (sim and mock): in the first lane
    # beside the CLI processes, the sim arm's jog app once never left its homing (held, no error) in 60 s
    "panel/test_panel_mobile_io_e2e.py",
})
#: realtime modules whose tests run as a second serial lane beside the first (``tools/dev test``):
#: in-process teleop servers on mock or paced arms, panel servers and brokers, that mostly wait on the
#: broker (42 s of wall time, 12 s of CPU). What they time (a jog's ttl, an ack, a reconnect) has tens
#: of milliseconds of slack, which the first lane's processes leave them on two cores; the first lane
#: keeps the CLI processes, the signals and the sim runs on the wall clock, which each want a core of
#: their own for seconds. Only their realtime tests are in the lane (the modules' others run in parallel)
BROKER_LANE_MODULES = frozenset({
    "teleop/test_teleop_broker.py", "teleop/test_teleop_hostile.py", "teleop/test_teleop_gripper.py",
    "teleop/test_teleop_resilience.py", "teleop/test_description.py", "teleop/test_broker_identity.py",
    "teleop/test_state_schema.py", "teleop/test_broker_plugin.py", "teleop/test_connection.py",
    "cli/test_teleop_send.py", "panel/test_server.py", "panel/test_security.py",
})


def _rel(item: pytest.Item) -> str:
    return Path(str(item.path)).resolve().relative_to(TESTS_DIR).as_posix() if item.path else ""


def is_exclusive(item: pytest.Item) -> bool:
    """Whether ``item`` runs alone, after everything else (:data:`EXCLUSIVE_MODULES`, or marked ``exclusive``)."""
    if item.get_closest_marker("exclusive") is not None:
        return True
    return _rel(item) in EXCLUSIVE_MODULES


def is_broker_lane(item: pytest.Item) -> bool:
    """Whether a realtime ``item`` runs in the second lane (:data:`BROKER_LANE_MODULES`)."""
    return _rel(item) in BROKER_LANE_MODULES


def tier_of(item: pytest.Item) -> str:
    """The tier of a test: ``realtime`` (wall clock, real broker/browser/processes: run serially),
    ``reference`` (a reference library or the corpus) or ``unit``; an explicit marker wins."""
    for tier in ("realtime", "reference", "unit"):
        if item.get_closest_marker(tier) is not None:
            return tier
    rel = _rel(item)
    names = set(getattr(item, "fixturenames", ()))
    test = f"{rel}::{getattr(item, 'originalname', item.name)}"
    if (item.get_closest_marker("broker") is not None or names & REALTIME_FIXTURES or rel in REALTIME_MODULES
            or test in REALTIME_TESTS):
        return "realtime"
    if item.get_closest_marker("corpus") is not None or "corpus_dir" in names or rel.startswith(REFERENCE_PREFIXES):
        return "reference"
    return "unit"
