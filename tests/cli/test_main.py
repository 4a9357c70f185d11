"""hebictl.cli.main: user errors end in one line and an exit code, never a traceback; warnings read well."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hebictl.cli import main, show_warning
from hebictl.errors import ConfigWarning

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "hrdf_kits" / "x-series-6dof.hrdf"


def test_broken_pipe_ends_quietly(monkeypatch, capsys):
    """``hebictl model fk ... | head``: the reader goes away; exit 141, no BrokenPipeError traceback."""
    r, w = os.pipe()
    os.close(r)
    broken = open(w, "w", buffering=1)  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdout", broken)
    try:
        code = main(["model", "fk", str(KIT), "--frame", "link"])
    finally:
        broken.close()
    assert code == 141
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["model", "info", "/nonexistent/arm.hrdf"],
    ["plot", "/nonexistent/run.npz"],
    ["check-config", "/nonexistent/arm.cfg.yaml"],
])
def test_missing_file_is_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hebictl: error: ") and err.count("\n") == 1 and "/nonexistent/" in err


@pytest.mark.parametrize(("module", "argv", "extra"), [
    ("aiomqtt", ["teleop-send", "--broker", "mqtt://127.0.0.1:9", "--arm-id", "a1", "stop"], "teleop"),
    ("matplotlib", ["run", "--plot", "out.png", "--quiet"], "plot"),
])
def test_missing_extra_names_it_in_one_line(module, argv, extra, monkeypatch, capsys, tmp_path):
    """An optional dependency that is not installed: one line naming the extra to install."""
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # import raises ModuleNotFoundError
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"hebictl[{extra}]" in err and err.count("\n") == 1, err
    assert not (tmp_path / "out.png").exists()


def test_warnings_print_as_one_readable_line(capsys):
    """No ``path.py:123: UserWarning:`` prefix and no source line: just the message."""
    show_warning(ConfigWarning("cfg.yaml:8 [user_data.home_positon]: typo?"), ConfigWarning, "/x/config.py", 260)
    show_warning(DeprecationWarning("old"), DeprecationWarning, "/x/y.py", 1)
    assert capsys.readouterr().err == ("hebictl: warning: cfg.yaml:8 [user_data.home_positon]: typo?\n"
                                       "hebictl: warning: DeprecationWarning: old\n")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show_warning
        warnings.warn("hello", ConfigWarning, stacklevel=1)
    assert capsys.readouterr().err == "hebictl: warning: hello\n"


def _run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_version():
    from hebictl import __version__

    r = _run_cli("--version")
    assert r.returncode == 0 and r.stdout == f"hebictl {__version__}\n"


@pytest.mark.parametrize(("argv", "expect"), [
    (["run", "--backend", "foo"], "hebictl: error: run: argument --backend: invalid choice: 'foo'"),
    ([], "hebictl: error: the following arguments are required: COMMAND"),
    (["model", "fk"], "hebictl: error: model fk: the following arguments are required: file"),
    (["teleop-send", "mode", "fly"], "hebictl: error: teleop-send mode: argument mode: invalid choice: 'fly'"),
    (["run", "--hold", "x"], "hebictl: error: run: argument --hold: invalid float value: 'x'"),
    (["teleop-send", "--broker", "http://x", "stop"],
     "hebictl: error: --broker: broker URL scheme must be mqtt:// or mqtts://, got 'http://x'"),
    (["teleop", "--backend", "hebi", "--paced-clock"], "hebictl: error: --paced-clock is for simulated backends"),
    (["teleop", "--bridge-silence", "0.5"],
     "hebictl: error: teleop: argument --bridge-silence: 0.5 s is outside 1-60 s"),
    (["teleop", "--bridge-silence", "inf"],
     "hebictl: error: teleop: argument --bridge-silence: expected seconds, got 'inf'"),
    (["run", "--backend", "hebi-imitation", "--paced-clock"],
     "hebictl: error: --paced-clock is for simulated backends; hebi-imitation runs in real time"),
])
def test_usage_errors_are_one_line(argv, expect):
    """argparse's own errors and the commands' flag errors alike: one `hebictl: error:` line naming the
    flag (never `<config>`), exit 2, no usage block."""
    r = _run_cli(*argv)
    assert r.returncode == 2
    assert r.stderr.startswith(expect) and r.stderr.count("\n") == 1, r.stderr
    assert "usage:" not in r.stderr and "<config>" not in r.stderr and r.stdout == ""


def test_every_help_shows_its_defaults():
    """Every option of every command that has a default says it in its help (backend, hold time, broker,
    timeout, plot output, fk frame, ...), and every option has a help text."""
    from hebictl.cli import build_parser, leaf_parsers

    parser = build_parser()
    checked = 0
    for command in leaf_parsers(parser):
        for action in command._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"{command.prog} {action.option_strings[0]} has no help"
            if action.default not in (None, False, [], argparse.SUPPRESS):
                shown = command._get_formatter()._get_help_string(action)
                assert "default" in shown, f"{command.prog} {action.option_strings[0]}: {shown}"
                checked += 1
    for prog, flag, default in (("hebictl run", "--backend", "mock"), ("hebictl run", "--hold", "2.0"),
                                ("hebictl teleop-send stop", "--broker", "mqtt://127.0.0.1:1883"),
                                ("hebictl teleop-send mode", "--timeout", "3.0"), ("hebictl plot", "--output",
                                                                                   "hebictl-run.png"),
                                ("hebictl model fk", "--frame", "end_effector")):
        command = next(c for c in leaf_parsers(parser) if c.prog == prog)
        assert f"(default: {default})" in " ".join(command.format_help().split()), (prog, flag)
    assert checked >= 15


def test_verbose_is_accepted_after_the_command(capsys):
    """-v works before and after the command (hebictl model validate FILE -v)."""
    assert main(["model", "validate", str(KIT), "-v"]) == 0
    assert main(["-v", "model", "validate", str(KIT)]) == 0


def test_model_info_shows_the_limits_that_apply():
    """Without a config, model info says the limits are the model file's own and where a run's come from;
    with --config it shows the config's limits (the same as check-config prints), finite for the bundled kit."""
    r = _run_cli("model", "info", str(KIT), "--json")
    plain = json.loads(r.stdout)
    assert "hebictl model info --config CFG" in plain["limits_from"]
    assert all(j["lower"] == -math.inf for j in plain["joints"])
    cfg = REPO / "configs" / "x-series-6dof.cfg.yaml"
    r = _run_cli("model", "info", "--config", str(cfg), "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["limits_from"].startswith(str(cfg))
    check = _run_cli("check-config", str(cfg)).stdout
    for j in info["joints"]:
        assert math.isfinite(j["lower"]) and math.isfinite(j["upper"])
        assert f"{j['name']:<16} [{j['lower']:+.3f}, {j['upper']:+.3f}] rad   {j['max_velocity']:.2f} rad/s" in check
    table = _run_cli("model", "info", "--config", str(cfg), env={"COLUMNS": "200"}).stdout
    assert f"limits: {cfg}" in table and "max accel." in table


def test_run_summary_lines_do_not_wrap():
    """The summary keeps each fact on one line, arrays as plain numbers, however narrow the terminal."""
    # --stop-hold 0: a safety stop ends the run at once (exit 2, with its cause) instead of holding until Ctrl-C;
    # --paced-clock: a loaded machine stretches the mock's time instead of stopping it with a control gap
    r = _run_cli("run", "--no-home", "--hold", "0.2", "--quiet", "--stop-hold", "0", "--paced-clock",
                 env={"COLUMNS": "40"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    final = next(line for line in lines if line.startswith("final position [rad]: "))
    assert len(final.split(": ")[1].split()) == 6 and "[" not in final.split(": ")[1]
    loop = next(line for line in lines if line.startswith("loop at "))
    assert re.fullmatch(r"loop at 200 Hz \(paced by the feedback read\), whole run: \d+ cycles; deadline misses "
                        r"\d+, overruns \d+ \(cycles whose own work took longer than a period\), missed cycles \d+",
                        loop), loop
