"""hebictl.config against hebi-py's ``hebi.config.load_config`` and ``hebi.arm.create_from_config``."""

from __future__ import annotations

import inspect
import os
import re
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.config import (
    COMMON_PLUGIN_KEYS,
    KNOWN_PLUGINS,
    PluginConfig,
    RobotConfig,
    gains_file,
    load_config,
)
from hebictl.errors import ConfigError, ConfigWarning
from hebictl.gains import load_gains
from tests._support.corpus import CORPUS_DIR

HEBI_CORPUS = "hebi"
ARM_CONFIGS = "hebi-python-examples/kits/arms/config"


def _corpus_params(pattern: str) -> list:
    """Corpus files as test ids; one placeholder (which skips) when the corpus is absent."""
    root = CORPUS_DIR / HEBI_CORPUS
    files = sorted(root.rglob(pattern)) if root.is_dir() else []
    return [pytest.param(str(f.relative_to(CORPUS_DIR)), id=str(f.relative_to(root))) for f in files] or [
        pytest.param(None, id="corpus-absent")]


def _hebi_defaults(hebi) -> tuple[float, float]:
    """hebi.arm.create's defaults: feedback frequency (Hz), command lifetime (ms)."""
    params = inspect.signature(hebi.arm.create).parameters
    return float(params["control_frequency"].default), float(params["command_lifetime"].default)


def _assert_matches_hebi(ours: RobotConfig, theirs, hebi) -> None:
    """Every field of our config equals hebi's load_config result, resolved as hebi resolves it."""
    frequency, lifetime_ms = _hebi_defaults(hebi)
    assert ours.version == theirs.version
    assert ours.names == tuple(theirs.names)
    expected_families = theirs.families * len(theirs.names) if len(theirs.families) == 1 else theirs.families
    assert ours.families == tuple(expected_families)
    assert ours.hrdf == (Path(theirs.hrdf).resolve() if theirs.hrdf is not None else None)
    assert ours.gains == {role: Path(p).resolve() for role, p in theirs.gains.items()}
    assert ours.folder == Path(theirs.config_location).resolve()
    assert ours.feedback_frequency == (float(theirs.feedback_frequency)
                                       if theirs.feedback_frequency is not None else frequency)
    # seconds, as in the YAML (create_from_config multiplies by 1000 for hebi.arm.create's ms)
    assert ours.command_lifetime == (float(theirs.command_lifetime)
                                     if theirs.command_lifetime is not None else lifetime_ms / 1000.0)
    assert ours.user_data == (theirs.user_data or {})
    raw_plugins = theirs.plugins or []
    assert len(ours.plugins) == len(raw_plugins)
    for plugin, raw in zip(ours.plugins, raw_plugins, strict=True):
        assert plugin.type == raw["type"]
        assert plugin.enabled == raw.get("enabled", True)
        assert plugin.ramp_time == float(raw.get("ramp_time", 0.0))
        assert plugin.name == raw.get("name", _hebi_default_names(hebi).get(raw["type"]))
        assert plugin.params == {k: v for k, v in raw.items() if k not in ("type", "name", "enabled",
                                                                            "ramp_time")}


def _hebi_referenced_files(theirs) -> list[tuple[str, str]]:
    """(key, path) of every file hebi's config points at, in the order hebictl checks them."""
    refs = [("hrdf", theirs.hrdf)] if theirs.hrdf is not None else []
    return refs + [(f"gains.{role}", p) for role, p in theirs.gains.items()]


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _corpus_params("*.cfg.yaml"))
def test_corpus_configs_agree_with_hebi(rel, corpus_dir, hebi):
    """Each corpus config loads with the same fields as hebi's, or fails where hebi (or its files) fail."""
    path = corpus_dir / rel
    try:
        theirs = hebi.config.load_config(str(path))
    except Exception:
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert err.value.file == str(path.resolve())
        return

    missing = [(key, p) for key, p in _hebi_referenced_files(theirs) if not os.path.isfile(p)]
    missing_model = [(key, p) for key, p in missing if not key.startswith("gains")]
    if missing_model:  # hebi's loader does not look; hebi.arm.create_from_config would fail on it
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert (err.value.file, err.value.key) == (str(path.resolve()), missing_model[0][0])
        assert "file not found" in err.value.message
        ours = load_config(path, require_files=False)
    elif missing:  # only gains files (HEBI's Daisy config): loads as in hebi-py; sending them is one error
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConfigWarning)
            ours = load_config(path)
        role = missing[0][0].removeprefix("gains.")
        with pytest.raises(ConfigError, match="file not found") as err:
            gains_file(ours, role)
        assert (err.value.file, err.value.key) == (str(path.resolve()), missing[0][0])
    else:
        ours = load_config(path)
    _assert_matches_hebi(ours, theirs, hebi)


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _corpus_params("*.cfg.yaml"))
def test_corpus_configs_fit_their_model_and_gains(rel, corpus_dir, hebi):
    """check_against passes with hebi's DoF count of the HRDF and the default gains file."""
    path = corpus_dir / rel
    cfg = load_config(path, require_files=False)
    if cfg.hrdf is None or not cfg.hrdf.is_file():
        pytest.skip(f"{rel}: HRDF {cfg.hrdf} is not in the corpus")
    try:
        dof = hebi.robot_model.import_from_hrdf(str(cfg.hrdf)).dof_count
    except RuntimeError as exc:
        pytest.skip(f"hebi-py cannot import {cfg.hrdf.name}: {exc}")
    default = cfg.gains.get("default")
    gains = load_gains(default) if default is not None and default.is_file() else None
    cfg.check_against(dof, gains)
    with pytest.raises(ConfigError) as err:
        cfg.check_against(dof + 1, None)
    assert err.value.key == "names"


def _hebi_create_from_config_blocks(hebi) -> dict[str, str]:
    """Source of each ``plugin['type'] == ...`` branch of hebi.arm.create_from_config."""
    source = inspect.getsource(hebi.arm.create_from_config)
    parts = re.split(r"plugin\['type'\] == '(\w+)'", source)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _hebi_default_names(hebi) -> dict[str, str]:
    return {type_: re.search(r"plugin\.get\('name', '(\w+)'\)", body).group(1)
            for type_, body in _hebi_create_from_config_blocks(hebi).items()}


def test_plugin_registry_matches_hebi_create_from_config(hebi):
    """KNOWN_PLUGINS lists exactly hebi's plugin types, their default names and the keys they read."""
    blocks = _hebi_create_from_config_blocks(hebi)
    assert set(KNOWN_PLUGINS) == set(blocks)
    for type_, body in blocks.items():
        read = set(re.findall(r"plugin(?:\.get\()?\[?'(\w+)'", body)) - COMMON_PLUGIN_KEYS
        assert set(KNOWN_PLUGINS[type_].params) == read, type_
        assert KNOWN_PLUGINS[type_].default_name == _hebi_default_names(hebi)[type_]


def test_plugin_defaults_match_hebi(hebi, tmp_path):
    """Registry defaults equal the defaults hebi's plugin classes and create_from_config use."""
    from hebi._internal.plugins import DoubledJointMirror, GravCompEffortPlugin

    path = _write(tmp_path, BASE + "plugins:\n  - type: GravityCompensationEffort\n")
    plugin = load_config(path).plugins[0]
    grav = inspect.signature(GravCompEffortPlugin.__init__).parameters
    np.testing.assert_array_equal(np.reshape(plugin.param("imu_rotation_offset"), (3, 3)),
                                  grav["imu_rotation_offset"].default)
    assert plugin.param("imu_feedback_index") == grav["imu_feedback_index"].default
    assert plugin.param("imu_frame_index") == grav["imu_frame_index"].default
    assert plugin.name == "gravComp" and plugin.enabled is True and plugin.ramp_time == 0.0
    mirror = PluginConfig("DoubledJointMirror", "d", params={"index": 1})
    assert mirror.param("mirror") == inspect.signature(DoubledJointMirror.__init__).parameters["mirror"].default
    with pytest.raises(KeyError):
        plugin.param("kp")


# ------------------------------------------------------------------ small configs in tmp_path

BASE = textwrap.dedent("""\
    version: 1.1
    families: Arm
    names: [J1, J2, J3]
    hrdf: model.hrdf
    gains: gains.xml
    """)


def _write(tmp_path: Path, text: str, files: tuple[str, ...] = ("model.hrdf", "gains.xml")) -> Path:
    """Write a config and empty stand-ins for the files it references (only existence is checked)."""
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    path = tmp_path / "robot.cfg.yaml"
    path.write_text(text)
    return path


def test_paths_resolve_like_hebi(tmp_path, hebi):
    """Relative hrdf/gains resolve against the YAML's folder, absolute ones stay; strings mean 'default'."""
    other = tmp_path / "elsewhere" / "grip.xml"
    sub = tmp_path / "cfg"
    sub.mkdir()
    path = _write(sub, textwrap.dedent(f"""\
        version: 1.0
        families: [Arm, Arm]
        names: [J1, J2]
        hrdf: ../shared/model.hrdf
        gains: {{default: g/arm.xml, gripper: {other}}}
        user_data: {{layout: layouts/a.json}}
        """), files=("../shared/model.hrdf", "g/arm.xml", "../elsewhere/grip.xml"))
    ours = load_config(path)
    _assert_matches_hebi(ours, hebi.config.load_config(str(path)), hebi)
    assert ours.hrdf == tmp_path / "shared" / "model.hrdf"
    assert ours.gains["gripper"] == other
    assert ours.resolve(ours.user_data["layout"]) == sub / "layouts" / "a.json"

    single = load_config(_write(tmp_path, BASE))
    _assert_matches_hebi(single, hebi.config.load_config(str(tmp_path / "robot.cfg.yaml")), hebi)
    assert single.families == ("Arm",) * 3 and set(single.gains) == {"default"}


def test_unknown_plugin_type_is_an_error_with_a_suggestion(tmp_path, hebi):
    """hebi-py silently skips a type it does not know, so a misspelt GravityCompensationEffort would run
    the arm without gravity compensation: hebictl refuses it, naming file, line, key and the likely type."""
    path = _write(tmp_path, BASE + "plugins:\n  - {type: FancyNewPlugin, name: f, stiffness: 3}\n"
                                   "  - type: GravityCompensationEfort\n")
    with pytest.raises(ConfigError, match="unknown plugin type 'FancyNewPlugin'") as err:
        load_config(path)
    assert (err.value.key, err.value.line) == ("plugins[0].type", 7)
    assert "did you mean" not in str(err.value)
    path.write_text(path.read_text().replace("  - {type: FancyNewPlugin, name: f, stiffness: 3}\n", ""))
    with pytest.raises(ConfigError, match="did you mean 'GravityCompensationEffort'") as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}:7 [plugins[0].type]: ")
    assert [p["type"] for p in hebi.config.load_config(str(path)).plugins] == ["GravityCompensationEfort"]


def test_unknown_plugin_key_lists_the_real_allowed_keys(tmp_path):
    """``ramp_tme`` in a GravityCompensationEffort: the error suggests ramp_time and lists every allowed
    key (the common ones and the type's own), not only the type's imu_* parameters."""
    path = _write(tmp_path, BASE + "plugins:\n  - type: GravityCompensationEffort\n    ramp_tme: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert (err.value.key, err.value.line) == ("plugins[0].ramp_tme", 8)
    assert "did you mean 'ramp_time'?" in text
    assert ("allowed: enabled, imu_feedback_index, imu_frame_index, imu_rotation_offset, name, ramp_time, type"
            in text)


@pytest.mark.parametrize(("user_data", "key", "line"), [
    ("  home_position: [0, 1, 2, 3]\n", "user_data.home_position", 7),
    ("  ik_seed_pos: [0, 1]\n", "user_data.ik_seed_pos", 7),
    ("  home_position: 0.5\n", "user_data.home_position", 7),
    ("  joint_limits:\n    position_max: [1, 2]\n", "user_data.joint_limits.position_max", 8),
    ("  home_position: [0, 1, x]\n", "user_data.home_position[2]", 7),
])
def test_per_joint_vectors_must_match_the_module_count(tmp_path, user_data, key, line):
    """home_position, IK seeds and joint limits need one value per module name (limits: or one for all)."""
    path = _write(tmp_path, BASE + "user_data:\n" + user_data)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert (err.value.key, err.value.line, err.value.file) == (key, line, str(path))


def test_per_joint_vectors_of_the_right_length_load(tmp_path):
    path = _write(tmp_path, BASE + "user_data:\n  home_position: [0, 1, 2]\n  ik_seed_pos: [0, 1, 2]\n"
                                   "  joint_limits: {velocity_max: [1], position_max: [1, 2, 3]}\n")
    assert load_config(path).user_data["home_position"] == [0, 1, 2]


def test_suspicious_user_data_key_warns_with_file_line_and_suggestion(tmp_path):
    """``home_positon`` would silently skip homing: a ConfigWarning names it; user_data stays free-form."""
    path = _write(tmp_path, BASE + "user_data:\n  my_notes: hello\n  home_positon: [0, 1, 2]\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = load_config(path)
    assert [w.category for w in caught] == [ConfigWarning]
    assert str(caught[0].message) == (f"{path}:8 [user_data.home_positon]: user_data key 'home_positon' is not one "
                                      "hebictl reads (did you mean 'home_position'?); as written it is ignored")
    assert cfg.user_data == {"my_notes": "hello", "home_positon": [0, 1, 2]}


def test_unknown_top_level_key_suggests(tmp_path):
    path = _write(tmp_path, BASE + "feedback_frequncy: 100\n")
    with pytest.raises(ConfigError, match="did you mean 'feedback_frequency'") as err:
        load_config(path)
    assert err.value.line == 6


def test_unknown_version_warns(tmp_path):
    """A version other than 1.0/1.1 loads (hebi does not check) but warns."""
    with pytest.warns(ConfigWarning, match="version 2.0"):
        cfg = load_config(_write(tmp_path, BASE.replace("1.1", "2.0")))
    assert cfg.version == "2.0"


CHECK_PLUGINS = BASE + textwrap.dedent("""\
    plugins:
      - {type: EffortOffset, offset: [0, -7, 0]}
      - {type: DoubledJointMirror, group_family: Arm, group_name: J2B, index: 2}
    """)


@pytest.mark.parametrize(("dof", "width", "key"), [
    (4, None, "names"),
    (3, 2, "gains.default"),
])
def test_check_against_names_the_mismatch(dof, width, key, tmp_path):
    """check_against reports name count and gains width against the model, by key and line."""
    path = _write(tmp_path, CHECK_PLUGINS)
    if width is not None:
        (tmp_path / "gains.xml").write_text(f"<group_gains><position><kp>{' 1' * width}</kp></position>"
                                            "</group_gains>")
    cfg = load_config(path)
    with pytest.raises(ConfigError) as err:
        cfg.check_against(dof, load_gains(tmp_path / "gains.xml") if width else None)
    assert (err.value.file, err.value.key) == (str(path), key)
    assert err.value.line == {"names": 3, "gains.default": 5}[key]


@pytest.mark.parametrize(("old", "new", "key"), [
    ("[0, -7, 0]", "[0, -7]", "plugins[0].offset"),
    ("index: 2", "index: 3", "plugins[1].index"),
])
def test_per_joint_plugin_parameters_fit_the_module_count(tmp_path, old, new, key):
    """EffortOffset offsets (one per joint, or one) and the DoubledJointMirror index fit the names, at load."""
    load_config(_write(tmp_path, CHECK_PLUGINS)).check_against(3, None)
    path = _write(tmp_path, CHECK_PLUGINS.replace(old, new))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.key == key


IMPEDANCE = "  - type: ImpedanceController\n    gains_in_end_effector_frame: true\n"

# (id, config text, files to create, expected key, expected text in message, does hebi's load_config
# reject it too?). Rows hebi accepts are ones hebi.arm.create_from_config or the robot would trip on.
BAD_CONFIGS = [
    ("unknown-key", BASE + "waypoints: [1, 2]\n", None, "waypoints", "unknown key", True),
    ("missing-names", BASE.replace("names: [J1, J2, J3]\n", ""), None, "names", "missing", True),
    ("missing-version", BASE.replace("version: 1.1\n", ""), None, "version", "missing", True),
    ("names-not-strings", BASE.replace("[J1, J2, J3]", "[J1, 2, J3]"), None, "names[1]", "string", False),
    ("names-empty", BASE.replace("[J1, J2, J3]", "[]"), None, "names", "empty", False),
    ("families-names-mismatch", BASE.replace("families: Arm", "families: [A, B]"), None, "families",
     "2 families for 3 names", False),
    ("duplicate-module", BASE.replace("[J1, J2, J3]", "[J1, J2, J1]"), None, "names[2]", "twice", False),
    ("missing-hrdf-file", BASE, ("gains.xml",), "hrdf", "file not found", False),
    ("hrdf-null", BASE.replace("hrdf: model.hrdf", "hrdf:"), None, "hrdf", "file path", True),
    ("gains-wrong-type", BASE.replace("gains: gains.xml", "gains: [a.xml]"), None, "gains", "mapping", True),
    ("frequency-not-number", BASE + "feedback_frequency: fast\n", None, "feedback_frequency", "number",
     False),
    ("frequency-negative", BASE + "feedback_frequency: -5\n", None, "feedback_frequency", "positive", False),
    ("lifetime-bool", BASE + "command_lifetime: true\n", None, "command_lifetime", "number", False),
    ("bad-yaml", BASE + "plugins: [\n  - type: X\n", None, None, "line 7, column 3", True),
    ("bad-yaml-indent", "version: 1.1\nnames: [J1]\n  families: Arm\n", None, None, "line 3", True),
    ("duplicate-yaml-key", BASE + "names: [J4]\n", None, None, "line 6", False),
    ("top-level-list", "- version: 1.1\n", None, None, "mapping", True),
    ("empty-file", "", None, None, "empty", True),
    ("user-data-list", BASE + "user_data: [1, 2]\n", None, "user_data", "mapping", False),
    ("plugins-not-list", BASE + "plugins: {type: EffortOffset}\n", None, "plugins", "list", True),
    ("plugin-no-type", BASE + "plugins:\n  - {name: gc}\n", None, "plugins[0].type", "no type", False),
    ("plugin-type-not-string", BASE + "plugins:\n  - {type: 3}\n", None, "plugins[0].type", "int", False),
    ("plugin-unknown-param", BASE + "plugins:\n  - {type: GravityCompensationEffort, gain: 2}\n", None,
     "plugins[0].gain", "unknown key for a GravityCompensationEffort plugin", False),
    ("plugin-enabled-not-bool", BASE + "plugins:\n  - {type: EndEffectorWrench, enabled: maybe}\n", None,
     "plugins[0].enabled", "true or false", False),
    ("plugin-ramp-negative", BASE + "plugins:\n  - {type: EndEffectorWrench, ramp_time: -1}\n", None,
     "plugins[0].ramp_time", ">= 0", False),
    ("impedance-missing-frame-flag", BASE + "plugins:\n  - {type: ImpedanceController, kp: [1,1,1,1,1,1],"
     " kd: [1,1,1,1,1,1]}\n", None, "plugins[0].gains_in_end_effector_frame", "requires", False),
    ("impedance-kp-length", BASE + "plugins:\n" + IMPEDANCE + "    kp: [1, 1, 1, 1, 1]\n    kd: [1,1,1,1,1,1]\n",
     None, "plugins[0].kp", "6 numbers", False),
    ("impedance-kd-non-numeric", BASE + "plugins:\n" + IMPEDANCE + "    kp: [1,1,1,1,1,1]\n"
     "    kd: [1, 1, x, 1, 1, 1]\n", None, "plugins[0].kd[2]", "number", False),
    ("mirror-negative-index", BASE + "plugins:\n  - {type: DoubledJointMirror, group_family: A, "
     "group_name: B, index: -1}\n", None, "plugins[0].index", ">= 0", False),
    ("mirror-two-modules", BASE + "plugins:\n  - {type: DoubledJointMirror, group_family: A, "
     "group_name: [B, C], index: 1}\n", None, "plugins[0].group_name", "one module", False),
    ("overtorque-limit-missing", BASE + "plugins:\n  - {type: GravityCompensationEffort}\n"
     "  - {type: OvertorqueFaultMonitor}\n", None, "plugins[1].base_torque_error_limit", "requires", False),
    ("plugin-name-twice", BASE + "plugins:\n  - {type: EffortOffset, name: x, offset: 1}\n"
     "  - {type: EndEffectorWrench, name: x}\n", None, "plugins[1].name", "twice", False),
]


@pytest.mark.parametrize(("text", "files", "key", "message", "hebi_rejects"),
                         [pytest.param(*row[1:], id=row[0]) for row in BAD_CONFIGS])
def test_bad_configs_name_file_and_key(text, files, key, message, hebi_rejects, tmp_path, hebi):
    """Bad configs raise ConfigError naming the file and the key (or the YAML line)."""
    path = _write(tmp_path, text, files if files is not None else ("model.hrdf", "gains.xml"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.file == str(path)
    assert err.value.key == key
    assert message in err.value.message
    assert str(path) in str(err.value)
    if hebi_rejects:
        with pytest.raises(Exception):  # noqa: B017 - hebi raises KeyError/ValueError/TypeError/YAMLError
            hebi.config.load_config(str(path))


def test_missing_config_file(tmp_path):
    """A config path that does not exist is a ConfigError naming it."""
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "absent.cfg.yaml")
    assert err.value.file == str(tmp_path / "absent.cfg.yaml")


def test_corpus_arm_config_values(corpus_dir):
    """A known kit config reads to the values written in it (command lifetime in seconds)."""
    cfg = load_config(corpus_dir / HEBI_CORPUS / ARM_CONFIGS / "A-2085-06G.cfg.yaml")
    assert cfg.names[0] == "J1_base" and len(cfg.names) == 6
    assert cfg.feedback_frequency == 100.0 and cfg.command_lifetime == 0.25
    assert set(cfg.gains) == {"default", "gripper"}
    impedance = cfg.plugin("ImpedanceController")
    assert impedance is not None and impedance.enabled is False and impedance.ramp_time == 5.0
    assert impedance.params["kp"] == [50, 50, 50, 0, 0, 0]
    assert cfg.plugin("EffortOffset").name == "gasSpringCompensation"


# --------------------------------------------------------------------------- issue 23: checks in a user's order
REPO = Path(__file__).resolve().parents[1]


def _bundled_copy(tmp_path: Path, name: str = "x-series-6dof") -> Path:
    """configs/<name>.cfg.yaml and what it references, copied so a test can edit it."""
    import shutil

    shutil.copytree(REPO / "configs", tmp_path / "configs")
    shutil.copytree(REPO / "hrdf_kits", tmp_path / "hrdf_kits")
    return tmp_path / "configs" / f"{name}.cfg.yaml"


@pytest.mark.parametrize("drop", [(), ("home_position", "ik_seed_pos"),
                                  ("home_position", "ik_seed_pos", "joint_limits", "position_min", "position_max")])
def test_a_seventh_name_for_a_six_joint_model_names_names_first(tmp_path, drop):
    """Issue 23: with 7 names for a 6-joint HRDF the error was about home_position (or joint_limits):
    every per-joint list is sized for the robot, so the list that disagrees with it is names."""
    path = _bundled_copy(tmp_path)
    lines = [ln for ln in path.read_text().splitlines()
             if not any(ln.strip().startswith(f"{key}:") for key in drop)]
    text = "\n".join(lines).replace('names: ["J1_base"', 'names: ["J0_extra", "J1_base"')
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.key == "names"
    assert err.value.message == "7 module names, but the model has 6 joints"
    assert err.value.line == 5


def test_a_list_that_disagrees_with_right_names_is_still_named(tmp_path):
    """With names matching the model, a short per-joint list is the one blamed."""
    path = _bundled_copy(tmp_path)
    path.write_text(path.read_text().replace("home_position: [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]",
                                             "home_position: [0.0, 1.2, 1.8, 2.2, -1.57]"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.key == "user_data.home_position"


@pytest.mark.parametrize("fmt", ["HRDF", "URDF"])
def test_a_robot_description_given_as_config_says_what_to_do(tmp_path, fmt):
    """Issue 23: an HRDF given to check-config gave "YAML error: mapping values are not allowed here"."""
    from hebictl.formats import convert, load_model

    src = REPO / "hrdf_kits/x-series-6dof.hrdf"
    if fmt == "URDF":  # the bundled kit written as URDF
        src = tmp_path / "arm.urdf"
        src.write_text(convert(load_model(REPO / "hrdf_kits/x-series-6dof.hrdf"), "urdf"))
    for path in (src, tmp_path / f"renamed-{fmt}.cfg.yaml"):
        if path != src:
            path.write_bytes(src.read_bytes())  # the content tells, whatever the name
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert err.value.message == (f"this is a robot description ({fmt}), not a config; "
                                     f"try `hebictl model validate {path.resolve()}`")


def test_check_config_prints_one_line_for_a_missing_gains_file(tmp_path, capsys):
    """Issue 23: a missing gains file printed a warning that the config loads, then an error."""
    from hebictl.cli import main

    path = _bundled_copy(tmp_path)
    path.write_text(path.read_text().replace('default: "gains/x-series-6dof.xml"', 'default: "gains/gone.xml"'))
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"hebictl: error: {path}:9 [gains.default]: file not found: ")


# --------------------------------------------------------------------------- issue 23: HEBI's Rosie layout
@pytest.mark.corpus
def test_rosie_config_reaching_two_folders_up_agrees_with_hebi(tmp_path, corpus_dir, hebi):
    """HEBI's robot-config: rosie/config/A-2160-01_X-Rosie.cfg.yaml names hrdf/Rosie.hrdf, which includes
    ../../../arms/config/hrdf/A-2085-06.hrdf, and gains ../../arms/config/gains/A-2085-06.xml (the corpus
    kit files, copied into that layout). The config agrees with hebi.config.load_config, and the model it
    names with hebi's import_from_hrdf; check-config builds it."""
    from hebictl.cli import main
    from hebictl.formats import load_model
    from hebictl.formats.hrdf.grammar import HEBI_PI
    from tests._support.hebi_py import ROSIE_TOP, compare_with_hebi

    kit = corpus_dir / HEBI_CORPUS / ARM_CONFIGS
    root = tmp_path / "robot-config"
    (root / "arms/config/hrdf").mkdir(parents=True)
    (root / "arms/config/gains").mkdir(parents=True)
    (root / "arms/config/hrdf/A-2085-06.hrdf").write_bytes((kit / "hrdf/A-2085-06.hrdf").read_bytes())
    (root / "arms/config/gains/A-2085-06.xml").write_bytes((kit / "gains/A-2085-06.xml").read_bytes())
    (root / "rosie/config/hrdf").mkdir(parents=True)
    (root / "rosie/config/hrdf/Rosie.hrdf").write_text(ROSIE_TOP)
    path = root / "rosie/config/A-2160-01_X-Rosie.cfg.yaml"
    path.write_text(textwrap.dedent("""\
        version: 1.0
        families: ["Rosie"]
        names: ["J1_base", "J2_shoulder", "J3_elbow", "J4_wrist1", "J5_wrist2", "J6_wrist3"]
        hrdf: "hrdf/Rosie.hrdf"
        gains:
          default: "../../arms/config/gains/A-2085-06.xml"
        user_data:
          home_position: [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]
        plugins:
          - type: GravityCompensationEffort
            name: gravComp
            enabled: true
            ramp_time: 5
        """))
    ours = load_config(path)
    _assert_matches_hebi(ours, hebi.config.load_config(str(path)), hebi)
    h = hebi.robot_model.import_from_hrdf(str(ours.hrdf), warning_callback=lambda w: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same 1.6.0 version in both files: nothing to bend
        model = load_model(ours.hrdf, pi=HEBI_PI)
    compare_with_hebi(model, h)
    assert model.dof == 6
    assert main(["check-config", str(path)]) == 0
