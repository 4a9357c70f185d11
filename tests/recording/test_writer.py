"""McapRecorder on the sim backend, every bundled config: read back with the ``mcap`` package's
reader, the frames checked against pinocchio's forward kinematics of the attached URDF."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.loop import FixedRateLoop
from hebictl.control.safety import EventKind
from hebictl.errors import RecordingError
from hebictl.hardware.clock import SimClock
from hebictl.recording import schemas
from hebictl.recording.writer import McapRecorder, RecordingSummary

from .helpers import Readback

pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
pin = pytest.importorskip("pinocchio", reason=extra_missing("pinocchio"))

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.cfg.yaml"))
STOP_CYCLES = 20


def record_sim(cfg_path: Path, out: Path, seconds: float = 1.0, rate: float = 200.0,
               pace: float = 0.0, **options) -> tuple[int, RecordingSummary, list[str]]:
    """Move towards the config's home on the sim backend (SimClock), e-stop, run on; returns the
    cycles run, the recorder's summary and the kinds of the arm's safety events."""
    cfg = load_config(cfg_path)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock)
    rec = McapRecorder(out, arm, config_path=cfg.path, **options)
    arm.update()
    arm.set_goal(Goal(arm.dof).add_waypoint(t=None, position=np.array(cfg.user_data["home_position"])))

    def step() -> None:
        rec.cycle_start()
        arm.update()
        arm.send()
        rec.sample()
        if pace:
            time.sleep(pace)

    loop = FixedRateLoop(step, rate, clock, report=rec.loop_stats)
    loop.run(duration=seconds)
    arm.stop(EventKind.ESTOP, "test e-stop")
    for _ in range(STOP_CYCLES):
        clock.sleep_until(clock.now() + 1.0 / rate)
        step()
    arm.close()
    return loop.cycles + STOP_CYCLES, rec.close(), [e.kind.value for e in arm.events.events]


def pin_q(model: pin.Model, names: list[str], q: np.ndarray) -> np.ndarray:
    """Joint positions by name into pinocchio's configuration (continuous joints: cos, sin)."""
    out = pin.neutral(model)
    for name, x in zip(names, q, strict=True):
        j = model.joints[model.getJointId(name)]
        if j.nq == 2:
            out[j.idx_q:j.idx_q + 2] = np.cos(x), np.sin(x)
        else:
            out[j.idx_q] = x
    return out


def world_poses(tf_message) -> dict[str, np.ndarray]:
    """Each child frame's world pose, chaining the message's parent -> child transforms."""
    rel = {}
    for tf in tf_message.transforms:
        T = np.eye(4)
        r = tf.rotation
        T[:3, :3] = pin.Quaternion(r.w, r.x, r.y, r.z).toRotationMatrix()
        T[:3, 3] = tf.translation.x, tf.translation.y, tf.translation.z
        rel[tf.child_frame_id] = (tf.parent_frame_id, T)

    def world(name: str) -> np.ndarray:
        if name not in rel:
            assert name == "world", f"frame {name} has no parent transform"
            return np.eye(4)
        parent, T = rel[name]
        return world(parent) @ T

    return {name: world(name) for name in rel}


@pytest.mark.parametrize("cfg_path", CONFIGS, ids=lambda p: p.name.removesuffix(".cfg.yaml"))
def test_sim_recording_reads_back_with_frames_that_match_pinocchio(cfg_path, tmp_path):
    out = tmp_path / "run.mcap"
    cycles, summary, kinds = record_sim(cfg_path, out)
    run = Readback(out)
    run.check_topics()
    assert run.declared == {t.name for t in schemas.TOPICS if not t.teleop_only}
    assert len(run.messages["/joint_states"]) == len(run.messages["/joint_commands"]) == cycles == summary.written
    assert summary.dropped == 0
    assert run.schema["/tf"] == "foxglove.FrameTransforms" and run.schema["/joint_states"] == "foxglove.JointStates"
    # every safety event of the arm is a log line, in order, ending with the e-stop
    events = [m for _, m in run.messages["/events"] if m.name == "hebictl.safety"]
    assert [e.message.split(" ")[0] for e in events] == kinds and kinds[-1] == "estop"
    # the URDF attachment loads in pinocchio, and the frames are its links, where its kinematics puts them
    urdf = run.attachments[schemas.URDF_ATTACHMENT].decode()
    model = pin.buildModelFromXML(urdf)
    data = model.createData()
    links = {f.name for f in model.frames if f.type == pin.FrameType.BODY} - {"world"}
    assert run.attachments[schemas.CONFIG_ATTACHMENT] == cfg_path.read_bytes()
    joint_names = [j.name for _, js in run.messages["/joint_states"][:1] for j in js.joints]
    t_tf, tf = run.messages["/tf"][-1]
    assert {x.child_frame_id for x in tf.transforms} == links
    q = {t: np.array([j.position for j in js.joints]) for t, js in run.messages["/joint_states"]}[t_tf]
    pin.framesForwardKinematics(model, data, pin_q(model, joint_names, q))
    worst = 0.0
    for name, T in world_poses(tf).items():
        ref = data.oMf[model.getFrameId(name, pin.FrameType.BODY)].homogeneous
        worst = max(worst, float(np.abs(T - ref).max()))
    print(f"{cfg_path.name}: {cycles} cycles, {len(run.messages['/tf'])} /tf messages for {len(links)} links; "
          f"worst |T - pinocchio| = {worst:.2e}")
    assert worst < 1e-9


def test_rotation_starts_self_contained_files(tmp_path):
    """rotate_bytes: the session goes on in numbered files, each with the URDF, the mode and its
    own summary; together they hold every cycle. (By size, not rotate_seconds: a wall-clock
    rotation can come before the first cycle on a loaded machine, leaving a first file without one.)"""
    cycles, summary, _ = record_sim(CONFIGS[0], tmp_path / "s.mcap", seconds=0.5, pace=0.002, flush_interval=0.05,
                                 rotate_bytes=24_000)
    assert len(summary.files) >= 2, summary.files
    assert [f.name for f in summary.files][:2] == ["s-001.mcap", "s-002.mcap"]
    total = 0
    for f in summary.files:
        run = Readback(f)
        assert schemas.URDF_ATTACHMENT in run.attachments and run.messages["/supervisor/mode"], f
        total += len(run.messages["/joint_states"])
    assert total == cycles


def test_a_full_buffer_drops_counts_and_says_so(tmp_path):
    """A writer that cannot keep up loses samples, never the control thread's time: each drop is
    counted, in the summary, in /loop/timing and as a WARNING line on /events."""
    cfg = load_config(CONFIGS[0])
    arm = Arm.from_config(cfg, backend="mock", clock=SimClock())
    rec = McapRecorder(tmp_path / "d.mcap", arm, capacity=4, flush_interval=0.05)
    arm.update()
    for _ in range(2000):  # no pause: the writer thread polls every 10 ms
        rec.sample()
    time.sleep(0.2)
    for _ in range(5):
        rec.sample()
        time.sleep(0.05)
    arm.close()
    summary = rec.close()
    run = Readback(tmp_path / "d.mcap")
    print(f"dropped {summary.dropped} of {summary.cycles} samples (buffer of 4)")
    assert summary.dropped > 0 and summary.written + summary.dropped >= summary.cycles
    assert len(run.messages["/joint_states"]) == summary.written
    warnings = [m.message for _, m in run.messages["/events"] if "dropped" in m.message and m.level == 3]
    assert warnings, "no drop warning on /events"
    assert run.messages["/loop/timing"][-1][1]["dropped"] > 0
    assert run.metadata[schemas.FINAL_METADATA]["dropped"] == str(summary.dropped)


def test_a_path_that_cannot_be_written_is_a_recording_error(tmp_path):
    (tmp_path / "file").write_text("x")
    arm = Arm.from_config(CONFIGS[0], backend="mock", clock=SimClock())
    with pytest.raises(RecordingError, match="cannot record to"):
        McapRecorder(tmp_path / "file" / "run.mcap", arm)
    arm.close()


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")  # the geared
def test_a_model_urdf_cannot_express_records_without_the_3d_view(tmp_path):  # model's unrated joints
    """An HRDF gear ratio has no URDF form: the run is still recorded, without /tf and the URDF, and
    the file says why."""
    from hebictl.formats import load_model_string
    from hebictl.hardware.mock import open_mock

    model = load_model_string('<robot version="1.6.0"><actuator type="X5-4"/>'
                              '<joint axis="rz" gear_ratio="2"/><actuator type="X5-4"/></robot>', "hrdf")
    clock = SimClock()
    arm = Arm(model, open_mock(dof=model.dof, clock=clock, model=model), clock=clock)
    rec = McapRecorder(tmp_path / "geared.mcap", arm)
    for _ in range(10):
        arm.update()
        arm.send()
        rec.sample()
        clock.sleep_until(clock.now() + 0.01)
    arm.close()
    rec.close()
    run = Readback(tmp_path / "geared.mcap")
    empty = {t for t in run.declared if not run.messages[t]}
    assert empty == {schemas.REFERENCE.name, schemas.LOOP_STATS.name}  # no goal set, no FixedRateLoop here
    assert schemas.TF.name not in run.declared and schemas.URDF_ATTACHMENT not in run.attachments
    assert len(run.messages["/joint_states"]) == 10
    assert any("gear_ratio" in m.message and m.level == 3 for _, m in run.messages["/events"])
