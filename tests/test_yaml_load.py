"""hebictl.yaml_load and load_config against hostile YAML: every failure a ConfigError with file and line, fast.

"Fast" is counted as work, not timed (a wall-clock bound measures the machine's other processes as
much as the parser): the Python calls a load makes (:func:`tests._support.work.python_calls`) and the
bytes it reads (:func:`tests._support.work.thread_reads`). Expanding an alias bomb or parsing a
128 KiB file in pure Python takes millions of calls; each refusal here takes at most a few
tens of thousands. Wall times are printed as figures only.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from hebictl import limits
from hebictl.config import load_config
from hebictl.errors import ConfigError, FormatError
from hebictl.yaml_load import StrictLoader, describe, load_yaml
from tests._support.work import python_calls, thread_reads

HEADER = "version: 1.1\nfamilies: Arm\nnames: [J1]\n"
#: Python calls a hostile config's refusal may make (the most, the 200-level block nesting: ~3,300; the
#: alias bomb below, expanded, would be 9**9 = 387 million nodes; a 5 KiB config loads in ~20,000)
REFUSAL_CALLS = 20_000


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


# (id, text, expected substring of the message, expected line or None)
HOSTILE = [
    ("deep-flow", HEADER + "user_data: " + "[" * 5000 + "]" * 5000 + "\n", "nesting deeper", 4),
    ("deep-block", HEADER + "user_data:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 200)), "nesting", None),
    ("alias-bomb", HEADER + "user_data:\n" + "".join("  " + ln + "\n" for ln in _bomb().splitlines()),
     "alias", None),
    ("bad-float-tag", HEADER + "feedback_frequency: !!float x\n", "float", 4),
    ("bad-int-tag", HEADER + "feedback_frequency: !!int abc\n", "int", 4),
    ("5000-digit-int", HEADER + "feedback_frequency: " + "9" * 5000 + "\n", "", 4),
    ("10**400", HEADER + "feedback_frequency: 1" + "0" * 400 + "\n", "out of range", 4),
    ("huge-negative-in-list", HEADER + "user_data: {x: [-1" + "0" * 400 + "]}\n", "out of range", 4),
    ("bad-timestamp", HEADER + "user_data: {t: !!timestamp 2020-99-99}\n", "timestamp", 4),
    ("binary", HEADER + "user_data: {b: !!binary 'a'}\n", "", 4),
    ("python-object", HEADER + "user_data: !!python/object:os.system {}\n", "", 4),
    ("tab-indent", HEADER + "user_data:\n\t- x\n", "", 5),
    ("nul-in-text", HEADER + "user_data: {a: \"\0\"}\n", "", 4),
    ("bad-merge", HEADER + "user_data: {<<: 3}\n", "", 4),
    ("recursive-alias", HEADER + "user_data: &a {x: *a}\n", "recursive alias", 4),
    ("libyaml-depth", HEADER + "user_data: " + "[" * 1500 + "]" * 1500 + "\n", "ReaderLimits.max_yaml_depth", 4),
]


@pytest.mark.parametrize(("text", "match", "line"), [pytest.param(*r[1:], id=r[0]) for r in HOSTILE])
def test_hostile_yaml_is_a_config_error_with_file_and_line(tmp_path: Path, text: str, match: str,
                                                          line: int | None) -> None:
    path = tmp_path / "arm.cfg.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, require_files=False)  # (a first call imports the readers: not counted below)
    calls, again = python_calls(lambda: load_config(path, require_files=False))
    print(f"refused after {calls} Python calls: {info.value.message[:100]}")
    assert isinstance(again, ConfigError) and again.message == info.value.message
    assert calls < REFUSAL_CALLS
    assert info.value.file == str(path)
    assert match in str(info.value)
    if line is not None:
        assert info.value.line == line or f"line {line}" in info.value.message
    assert len(str(info.value)) < 1000  # nothing huge echoed


def test_alias_within_budget_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("base: &b {kp: 1, kd: 2}\nx: *b\ny: {<<: *b, kp: 3}\n")
    assert load_yaml(path) == {"base": {"kp": 1, "kd": 2}, "x": {"kp": 1, "kd": 2}, "y": {"kp": 3, "kd": 2}}


def test_alias_bomb_refused_quickly_even_alone(tmp_path: Path) -> None:
    """A 12**12-node bomb (8.9e12 nodes expanded) is refused after work linear in its few hundred
    distinct nodes: the same number of calls, within a few, as a 4-level one."""
    counts = {}
    for levels in (4, 12):
        path = tmp_path / f"bomb{levels}.yaml"
        path.write_text(_bomb(levels=levels, width=12))
        with pytest.raises(ConfigError, match="max_yaml_alias_nodes"):
            load_yaml(path)
        counts[levels], error = python_calls(lambda: load_yaml(path))  # noqa: B023 - called at once
        assert isinstance(error, ConfigError) and "max_yaml_alias_nodes" in error.message
    print(f"alias bombs refused after {counts} Python calls (levels: calls)")
    assert counts[12] < 2_000 and counts[12] <= counts[4] + 200


def test_limits_apply_and_error_class_chosen(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("a: [[[1]]]\n")
    with limits.reading(limits.ReaderLimits(max_yaml_depth=3)), pytest.raises(FormatError, match="max_yaml_depth"):
        load_yaml(path, error=FormatError)
    with limits.reading(limits.ReaderLimits(max_yaml_bytes=5)), pytest.raises(ConfigError, match="max_yaml_bytes"):
        load_yaml(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"a: 1\nb: \xff\xfe\n")
    with pytest.raises(ConfigError, match="UTF-8") as info:
        load_yaml(path)
    assert info.value.line == 2


@pytest.mark.parametrize("path", ["/dev/zero", "a\0b.yaml", "x" * 5000 + ".yaml"])
def test_hostile_config_paths(path: str) -> None:
    with pytest.raises(ConfigError):
        load_config(path)


def test_fifo_config_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "cfg.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="FIFO"):
        load_config(fifo)


@pytest.mark.parametrize("value", ["a\\0b.hrdf", "x" * 5000 + ".hrdf", "/" + "/".join(["d" * 300] * 3)])
def test_hostile_paths_inside_config(tmp_path: Path, value: str) -> None:
    path = tmp_path / "arm.cfg.yaml"
    path.write_text(HEADER + f'hrdf: "{value}"\n')
    for require in (True, False):
        with pytest.raises(ConfigError) as info:
            load_config(path, require_files=require)
        assert info.value.key == "hrdf" and len(str(info.value)) < 1000


def test_describe_is_bounded() -> None:
    shared: list[object] = ["x"] * 9
    for _ in range(9):
        shared = [shared] * 9  # 9**10 leaves if walked
    calls, _ = python_calls(lambda: describe(shared))  # never walking the 9**10 leaves
    text = describe(shared)
    assert calls < 1_000 and len(text) < 200, calls
    assert "digits" in describe(10**5000)
    assert describe(None) == "nothing (null)"


def test_loader_is_safe() -> None:
    with pytest.raises(yaml.YAMLError):
        yaml.load("!!python/object/apply:os.system ['true']", Loader=StrictLoader)


def _waypoint_config(size: int) -> str:
    """A config of about ``size`` bytes: the header and a long user_data list of 6-joint waypoints."""
    head = HEADER.replace("names: [J1]", "names: [J1, J2, J3, J4, J5, J6]") + "user_data:\n  waypoints:\n"
    row = "    - [0.1234, 0.5, -1.25, 0.75, 1.5, -0.125]\n"
    return head + row * ((size - len(head)) // len(row))


def test_a_1_mib_config_is_refused_at_once_by_its_size(tmp_path: Path) -> None:
    """Issue 23: a 1 MiB config took 25 s in pure Python. It is now refused by its size before a byte is
    parsed (ReaderLimits.max_yaml_bytes, 128 KiB: 40x the largest HEBI or Drake file): no parse (a few
    hundred Python calls, where parsing it takes millions), and of the file only the 64 KiB head that
    tells a robot description given as a config is read (all of it was read for that, until this test)."""
    path = tmp_path / "big.cfg.yaml"
    path.write_text(_waypoint_config(1024 * 1024))
    with pytest.raises(ConfigError, match=r"over the limit of 131072 bytes \(ReaderLimits.max_yaml_bytes\)") as info:
        load_config(path, require_files=False)  # (a first call imports the readers: not counted below)
    assert info.value.file == str(path)
    start = time.perf_counter()
    with thread_reads() as read:
        calls, error = python_calls(lambda: load_config(path, require_files=False))
    elapsed = time.perf_counter() - start
    print(f"\n1 MiB config refused after {calls} Python calls, {read.bytes} bytes read ({elapsed * 1e3:.1f} ms): "
          f"{info.value.message}")
    assert isinstance(error, ConfigError) and "max_yaml_bytes" in error.message
    assert calls < 2_000
    assert read.bytes <= 65536 + 1024 or not read.known  # the head, and nothing of the rest


def test_a_config_at_the_size_limit_parses_once_with_libyaml(tmp_path: Path) -> None:
    """The largest config allowed loads, parsed once by libyaml's C parser, with every value intact. Its
    work is counted against PyYAML's pure-Python SafeLoader on the same text (Python calls: the same on
    any machine, however loaded; on a 16 KiB cut of it, as the counts grow with the rows and
    profiling the pure parser of the whole file takes 9 s; the wall times are printed)."""
    text = _waypoint_config(limits.default_limits().max_yaml_bytes - 100)
    path = tmp_path / "limit.cfg.yaml"
    path.write_text(text)
    start = time.perf_counter()
    cfg = load_config(path, require_files=False)
    whole_s = time.perf_counter() - start
    rows = cfg.user_data["waypoints"]
    assert rows == [[0.1234, 0.5, -1.25, 0.75, 1.5, -0.125]] * text.count("    - [")  # the rows written
    cut = _waypoint_config(16 * 1024)
    path.write_text(cut)
    ours, error = python_calls(lambda: load_config(path, require_files=False))
    assert error is None
    pure, error = python_calls(lambda: yaml.load(cut, Loader=yaml.SafeLoader))
    assert error is None
    print(f"\n{len(text) / 1024:.0f} KiB config loaded in {whole_s * 1e3:.0f} ms; on {len(cut) / 1024:.0f} KiB of it "
          f"load_config made {ours} Python calls, pure-Python yaml.load {pure} (x{pure / ours:.1f}); "
          f"libyaml: {yaml.__with_libyaml__}")
    if yaml.__with_libyaml__:
        assert ours < pure / 2  # no pure-Python parse (the old reader parsed twice in pure Python: 2 x pure)


def test_key_lines_come_from_the_kept_parse(tmp_path: Path) -> None:
    """An error's line is found from the node graph kept by the load, not by parsing the file again."""
    from hebictl import yaml_load

    path = tmp_path / "arm.cfg.yaml"
    path.write_text(HEADER + "feedback_frequency: -5\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, require_files=False)
    assert (info.value.key, info.value.line) == ("feedback_frequency", 4)
    kept = yaml_load.composed(path)
    assert kept is yaml_load.composed(path) and kept is not None
    path.write_text(HEADER + "\nfeedback_frequency: -5\n")  # changed on disk: read again
    assert yaml_load.key_line(path, "feedback_frequency") == 5
