"""hebictl.gains against hebi-py's own gains reader (``GroupCommand.read_gains``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import ConfigError
from hebictl.gains import PID_BLOCKS, PID_FIELDS, GroupGains, load_gains
from tests._support.corpus import CORPUS_DIR

HEBI_CORPUS = "hebi"
GAIN_FIELDS = ("control_strategy", *(f"{b}_{f}" for b in PID_BLOCKS for f in PID_FIELDS))


def _corpus_params(pattern: str) -> list:
    """Corpus files as test ids; one placeholder (which skips) when the corpus is absent."""
    root = CORPUS_DIR / HEBI_CORPUS
    files = sorted(root.rglob(pattern)) if root.is_dir() else []
    return [pytest.param(str(f.relative_to(CORPUS_DIR)), id=str(f.relative_to(root))) for f in files] or [
        pytest.param(None, id="corpus-absent")]


def _hebi_command(hebi, size: int):
    """A GroupCommand sized like an imitation group of ``size`` modules (no hardware needed)."""
    group = hebi.util.create_imitation_group(size)
    return hebi.GroupCommand(group.size)


def _assert_same_gains(a, b) -> None:
    """Every gains field of two hebi GroupCommands is identical (NaN equal to NaN)."""
    for name in GAIN_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f"{name}: {x} != {y}"


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "gains.xml"
    path.write_text(textwrap.dedent(body).lstrip("\n"))
    return path


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _corpus_params("*.xml"))
def test_corpus_gains_equal_hebi_read_gains(rel, corpus_dir, hebi):
    """Every corpus gains XML parses to hebi's values, and apply_to reproduces read_gains exactly."""
    path = corpus_dir / rel
    gains = load_gains(path)

    reference = _hebi_command(hebi, gains.width)
    reference.read_gains(str(path))
    assert tuple(reference.control_strategy) == gains.control_strategy
    for block in PID_BLOCKS:
        pid = getattr(gains, block)
        for name in PID_FIELDS:
            ours = getattr(pid, name)
            theirs = getattr(reference, f"{block}_{name}")
            assert ours.shape == (gains.width,)
            # hebi stores float32 (and bool for d_on_error): compare in its type, exactly
            assert np.array_equal(ours.astype(theirs.dtype), theirs, equal_nan=theirs.dtype.kind == "f"), \
                f"{block}/{name}"

    applied = _hebi_command(hebi, gains.width)
    gains.apply_to(applied)
    _assert_same_gains(applied, reference)


@pytest.mark.corpus
def test_width1_file_broadcasts_like_hebi(corpus_dir, hebi):
    """A one-module gains file fills every module of a larger group, as hebi's reader does."""
    path = corpus_dir / HEBI_CORPUS / "hebi-python-examples/kits/arms/config/gains/A-2080-01.xml"
    gains = load_gains(path)
    assert gains.width == 1
    reference = _hebi_command(hebi, 4)
    reference.read_gains(str(path))
    applied = _hebi_command(hebi, 4)
    gains.apply_to(applied)
    _assert_same_gains(applied, reference)
    wide = gains.broadcast_to(4)
    assert wide.width == 4 and wide.control_strategy == (gains.control_strategy[0],) * 4
    np.testing.assert_array_equal(wide.effort.kp, np.full(4, gains.effort.kp[0]))


@pytest.mark.corpus
def test_group_size_mismatch_rejected_like_hebi(corpus_dir, hebi):
    """A 6-module file on a 3-module group is an error in hebi and a ConfigError here."""
    path = corpus_dir / HEBI_CORPUS / "hebi-python-examples/kits/arms/config/gains/A-2085-06.xml"
    with pytest.raises(Exception, match="did not match module count"):
        _hebi_command(hebi, 3).read_gains(str(path))
    with pytest.raises(ConfigError) as err:
        load_gains(path).apply_to(_hebi_command(hebi, 3))
    assert err.value.file == str(path) and err.value.key == "width"


def test_partial_file_replaces_gains_like_hebi(tmp_path, hebi):
    """Gains the file omits are cleared and non-gains fields kept, exactly as read_gains does."""
    path = _write(tmp_path, """
        <group_gains>
          <position>
            <kp>1 2 3</kp>
            <d_on_error>1 0 1</d_on_error>
          </position>
          <effort><max_output>inf -inf nan</max_output></effort>
        </group_gains>
        """)
    gains = load_gains(path)
    assert gains.control_strategy is None
    assert gains.position.present() == ("kp", "d_on_error")
    assert np.all(np.isnan(gains.velocity.kp))

    def prefilled():
        cmd = _hebi_command(hebi, 3)
        cmd.control_strategy = [3, 3, 3]
        cmd.velocity_kp = [0.5, 0.6, 0.7]
        cmd.position_ki = [9.0, 9.0, 9.0]
        cmd.position = [0.1, 0.2, 0.3]
        cmd.mstop_strategy = [2, 2, 2]
        return cmd

    reference, applied = prefilled(), prefilled()
    reference.read_gains(str(path))
    gains.apply_to(applied)
    _assert_same_gains(applied, reference)
    for kept in ("position", "mstop_strategy"):
        np.testing.assert_array_equal(getattr(applied, kept), getattr(reference, kept))
    assert np.isnan(applied.velocity_kp).all()  # cleared, not kept from before


def test_values_are_read_only(tmp_path):
    """GroupGains is a value: its arrays cannot be modified in place."""
    gains = load_gains(_write(tmp_path, "<group_gains><position><kp>1 2</kp></position></group_gains>"))
    assert isinstance(gains, GroupGains)
    with pytest.raises(ValueError, match="read-only"):
        gains.position.kp[0] = 5.0


# (id, file body, expected key, expected line or None, does hebi's read_gains (3 modules) reject it too?)
BAD_GAINS = [
    ("width-mismatch", """
        <group_gains>
          <position>
            <kp>1 2 3</kp>
            <ki>0 0</ki>
          </position>
        </group_gains>""", "position/ki", 4, True),
    ("non-numeric", """
        <group_gains>
          <position>
            <kp>1 abc 3</kp>
          </position>
        </group_gains>""", "position/kp", 3, True),
    ("number-with-junk", """
        <group_gains>
          <velocity><kd>1 2x 3</kd></velocity>
        </group_gains>""", "velocity/kd", 2, False),
    ("malformed-xml", """
        <group_gains>
          <position>
            <kp>1 2 3</kp>
        </group_gains>""", None, 4, True),
    ("empty-file", "", None, 1, True),
    ("unknown-gain", """
        <group_gains>
          <position>
            <k_p>1 2 3</k_p>
          </position>
        </group_gains>""", "position/k_p", 3, False),
    ("safety-param-in-gains", """
        <group_gains>
          <control_strategy>4 4 4</control_strategy>
          <mstop_strategy>1 1 1</mstop_strategy>
        </group_gains>""", "mstop_strategy", 3, False),
    ("wrong-root", "<gains>\n<position><kp>1 2 3</kp></position>\n</gains>", "gains", 1, False),
    ("strategy-out-of-range", """
        <group_gains>
          <control_strategy>4 7 4</control_strategy>
        </group_gains>""", "control_strategy", 2, False),
    ("strategy-name", """
        <group_gains>
          <control_strategy>strategy4 off off</control_strategy>
        </group_gains>""", "control_strategy", 2, True),
    ("d-on-error-not-bool", """
        <group_gains>
          <effort>
            <d_on_error>0 1 2</d_on_error>
          </effort>
        </group_gains>""", "effort/d_on_error", 3, True),
    ("empty-element", """
        <group_gains>
          <position><kp></kp></position>
        </group_gains>""", "position/kp", 2, False),
    ("duplicate-element", """
        <group_gains>
          <position>
            <kp>1 2 3</kp>
            <kp>4 5 6</kp>
          </position>
        </group_gains>""", "position/kp", 4, False),
    ("entity", """
        <!DOCTYPE g [<!ENTITY k "5">]>
        <group_gains>
          <position><kp>&k; 2 3</kp></position>
        </group_gains>""", "position/kp", 3, True),
    ("no-gains", "<group_gains/>", None, 1, False),
]


@pytest.mark.parametrize(("body", "key", "line", "hebi_rejects"),
                         [pytest.param(*row[1:], id=row[0]) for row in BAD_GAINS])
def test_bad_gains_name_file_key_and_line(body, key, line, hebi_rejects, tmp_path, hebi):
    """Bad gains XML raises ConfigError naming the file, the element and the line."""
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_gains(path)
    assert err.value.file == str(path)
    assert err.value.key == key
    assert f"line {line}" in err.value.message
    assert str(path) in str(err.value)
    if hebi_rejects:
        with pytest.raises(Exception):  # noqa: B017 - hebi raises its own HEBI_Exception
            _hebi_command(hebi, 3).read_gains(str(path))


def test_missing_gains_file(tmp_path):
    """A gains path that does not exist is a ConfigError naming it."""
    path = tmp_path / "nope.xml"
    with pytest.raises(ConfigError) as err:
        load_gains(path)
    assert err.value.file == str(path)
