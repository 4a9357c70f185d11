"""hebictl.cli.main: user errors end in one line and an exit code, never a traceback; warnings read well."""

from __future__ import annotations

import os
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
