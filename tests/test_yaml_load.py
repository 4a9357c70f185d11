"""hebictl.yaml_load and load_config against hostile YAML: every failure a ConfigError with file and line, fast."""

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

HEADER = "version: 1.1\nfamilies: Arm\nnames: [J1]\n"


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
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_config(path, require_files=False)
    assert time.monotonic() - start < 5.0
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
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(levels=12, width=12))
    start = time.monotonic()
    with pytest.raises(ConfigError, match="max_yaml_alias_nodes"):
        load_yaml(path)
    assert time.monotonic() - start < 1.0


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
    start = time.thread_time()  # the claim is about work (never walking the 9**10 leaves), so CPU time
    text = describe(shared)
    assert time.thread_time() - start < 0.1 and len(text) < 200
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
    parsed (ReaderLimits.max_yaml_bytes, 128 KiB: 40x the largest HEBI or Drake file), in well under 0.5 s."""
    path = tmp_path / "big.cfg.yaml"
    path.write_text(_waypoint_config(1024 * 1024))
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"over the limit of 131072 bytes \(ReaderLimits.max_yaml_bytes\)") as info:
        load_config(path, require_files=False)
    elapsed = time.perf_counter() - start
    print(f"\n1 MiB config refused in {elapsed * 1e3:.1f} ms: {info.value.message}")
    assert info.value.file == str(path)
    assert elapsed < 0.5


def test_a_config_at_the_size_limit_parses_once_with_libyaml(tmp_path: Path) -> None:
    """The largest config allowed loads, parsed once by libyaml's C parser, with every value intact; timed
    against PyYAML's pure-Python SafeLoader on the same text (same run: the machine's load cancels out)."""
    text = _waypoint_config(limits.default_limits().max_yaml_bytes - 100)
    path = tmp_path / "limit.cfg.yaml"
    path.write_text(text)
    start = time.perf_counter()
    cfg = load_config(path, require_files=False)
    ours = time.perf_counter() - start
    rows = cfg.user_data["waypoints"]
    assert len(rows) == text.count("    - [") and rows[-1] == [0.1234, 0.5, -1.25, 0.75, 1.5, -0.125]
    start = time.perf_counter()
    assert yaml.load(text, Loader=yaml.SafeLoader)["user_data"]["waypoints"] == rows
    pure = time.perf_counter() - start
    print(f"\n{len(text) / 1024:.0f} KiB config: load_config {ours * 1e3:.0f} ms, pure-Python yaml.load "
          f"{pure * 1e3:.0f} ms (x{pure / ours:.1f}); libyaml: {yaml.__with_libyaml__}")
    if yaml.__with_libyaml__:
        assert ours < pure  # the old reader parsed twice in pure Python: about 2 x pure
    assert ours < 5.0


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
