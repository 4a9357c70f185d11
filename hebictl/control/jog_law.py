"""The jog's command law: a streamed joint velocity or Cartesian twist made into a position command.

Moved here from the teleop jog plugin so that the jog is a mode of the arm like the others
(:class:`hebictl.control.modes.Jogging`, ``arm.mode == "jog"``): the Arm asks the mode for its
command every cycle, the teleop side only streams samples (:mod:`hebictl.teleop.jog`). Each cycle
the law (:meth:`JogLaw.step`)

1. takes the newest sample with the dead-man held (a released or expired one slows toward rest in
   this cycle's command already; the stream's owner brakes the arm at the next);
2. turns a Cartesian twist into joint velocities by damped least squares on the end-effector
   Jacobian (:func:`dls_joint_velocity`), and scales the result *uniformly* (the direction kept)
   until the end effector is no faster than commanded and within :data:`MAX_DIRECTION_ERROR` of the
   commanded direction; near a singularity that scale goes to zero: it slows and stops, never jumps;
3. scales into the joints' velocity limits (with :data:`SPEED_HEADROOM` for the arm's tracking),
   into the speed each joint can still brake from before its position limit (``sqrt(2 a d)``, from
   the command or the feedback, whichever is nearer the limit) and so that the command never runs
   more than :data:`MAX_LEAD` ahead of the measured position (joint jog per joint, Cartesian jog
   uniformly; a joint at rest takes its position error as sag, not lead);
4. scales linearly by the distance to the arm's own body and its workspace (``distance /
   threshold``: 1 at or beyond the threshold, 0 at contact; only while the motion closes that
   distance), checked every cycle on :mod:`hebictl.collision` (thresholds
   ``user_data.workspace.slowdown``, default 2 cm self, 3 cm workspace) from the command and, where
   the arm sags away from it, from the measured arm; a Cartesian jog slowed below
   :data:`CREEP_FRACTION` stops instead of creeping. (MoveIt Servo's scale is exponential; this
   one is linear, and bounded by :data:`STOP_DECELERATION`.)
5. slews the commanded velocity toward it (``accel`` [rad/s²] speeding up, rounded off over
   :data:`SETTLE_TIME` before the target speed, :data:`BRAKE_FACTOR` times that slowing down),
   uniformly in Cartesian jog;
6. integrates it into the jog position (clamped at the joint limits) and writes both; the Arm feeds
   the jog's acceleration forward (:meth:`JogLaw.step` returns it).

After a late cycle (longer than :data:`CATCH_UP` x the loop's nominal period) the jog goes on from
the measured state, not from its old command: its position restarts where the arm is (plus the sag
it learned) and its speed from the arm's (never above the jog's own), and no cycle integrates more
than :data:`CATCH_UP` periods (tests/teleop/test_jog_sim.py, test_no_catch_up_after_a_stall). Until
the arm is back up to the jog's speed (:data:`PACE`, at most :data:`REJOIN_TIME`) the position keeps
restarting where the arm is: the modules held the old command through the gap and the arm swings back
from it for a few cycles (measured: the x5 base at -0.37x the jog's speed), and the lag a command
running on from there built was caught up at up to 1.14x the commanded end-effector speed afterwards
(joint jog after a 200 ms stall; 1.04x at most with it, every config: tests/teleop/test_jog_speed_sim.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.collision.attach import world_of
from hebictl.model.ik import damped_least_squares

if TYPE_CHECKING:
    from hebictl.control.modes.jog import Jogging
    from hebictl.control.safety import Limits
    from hebictl.hardware.base import Command
    from hebictl.model.robot import RobotModel

#: [rad] the Cartesian jog's end effector keeps within this of the commanded direction (issue: 10°)
MAX_DIRECTION_ERROR = np.deg2rad(5.0)
#: [rad] below this direction error the Cartesian jog runs at full speed; it fades to 0 at the max
FULL_SPEED_DIRECTION_ERROR = np.deg2rad(2.0)
#: slowing down may use this many times ``accel`` (stopping before a limit or a contact)
BRAKE_FACTOR = 3.0
#: a jog commands at most this fraction of the allowed speed: the arm's tracking runs up to ~15 %
#: ahead of its command (measured on the sim with a 1 kg unknown payload), and must stay <= 1.05x rated
SPEED_HEADROOM = 0.85
#: [rad/s²] the jog's slew rate is capped here whatever the runner asks (a faster ramp overshoots)
MAX_ACCEL = 3.0
#: [rad] the jog's command runs at most this far ahead of the measured position (it slows from 0 lead)
MAX_LEAD = 0.05
#: [rad/s] a joint commanded and measured slower than this is at rest: its position error is sag
REST_SPEED = 0.02
#: [s] time constant with which a joint at rest takes its position error as sag (see ``learn_sag``)
SAG_TIME_CONSTANT = 0.1
#: joint-limit approach decelerates at this fraction of ``accel`` (room for the arm's tracking lag:
#: at 0.5 the r6 base still overran its limit by 12-21 mrad on the sim, at 0.25 by 1.3)
LIMIT_BRAKE_FRACTION = 0.25
#: [m/s²] a jog closing in on a body or the workspace can stop within the distance left at this
#: deceleration (gentle enough for the arm to track: a harder stop makes it bounce)
STOP_DECELERATION = 0.5
#: a Cartesian jog slowed below this fraction of the commanded speed stops (see :meth:`JogLaw.step`)
CREEP_FRACTION = 0.03
#: ... and moves again once it would run at this fraction (or the jog restarts)
CREEP_RESUME = 0.25
#: a jog cycle integrates at most this many nominal periods (its jitter; after a stall the jog goes on at
#: its speed instead of catching up: issue 29's bound is 1.05x the commanded end-effector speed)
CATCH_UP = 1.05
#: [rad] an arm this far from its command on any joint is also collision-checked where it is
SAG_CHECK = 0.005
#: [s] speeding up, the last of the slew to the target speed is rounded off (an exponential approach
#: with this time constant): the position servo lags a ramp and caught the lag up at its end (measured
#: on the sim, Cartesian jog from rest: x5 1.065x, x6 1.054x the commanded end-effector speed; 0.999x,
#: 1.009x with it; tests/teleop/test_jog_speed_sim.py)
SETTLE_TIME = 0.03
#: ... but never slower than this fraction of ``accel``: the target speed is reached, in a finite time
SETTLE_FLOOR = 0.02
#: after a late cycle the arm counts as caught up once its measured speed along the jog is this close
#: (a fraction of the command's) to the jog's commanded speed
PACE = 0.1
#: [s] ... and for at most this long after the late cycle the jog's position restarts where the arm is
#: every cycle until then (see :meth:`JogLaw.step`)
REJOIN_TIME = 0.2
#: [s] the collision check looks this far ahead along the commanded velocity to tell approach from retreat
LOOKAHEAD = 0.02


@dataclass(frozen=True)
class JogSample:
    """One accepted jog sample: ``space`` ``joint`` (``velocity`` [rad/s] per joint) or Cartesian
    (a twist [m/s, rad/s]); ``expiry`` [s, arm clock] = receipt time + ttl; ``index`` counts samples."""

    index: int
    space: str
    velocity: FloatArray
    deadman: bool
    expiry: float
    seq: int
    client: str


class JogStream(Protocol):
    """Where the jog's samples come from (the teleop mailbox: latest sample wins)."""

    @property
    def latest(self) -> JogSample | None: ...


def dls_joint_velocity(jacobian: ArrayLike, twist: ArrayLike, damping: float) -> FloatArray:
    """Joint velocities ``J^T (J J^T + λ² I)^-1 twist`` (damped least squares).

    ``jacobian`` (6, n) world-frame [linear; angular], ``twist`` [vx vy vz m/s, wx wy wz rad/s],
    ``damping`` λ [m]: near a singularity the solution trades accuracy for bounded joint speed
    instead of blowing up (λ = 0 gives the pseudo-inverse solution)."""
    return damped_least_squares(jacobian, twist, damping * damping)


def direction_scale(commanded: FloatArray, achieved: FloatArray) -> float:
    """How much of a Cartesian velocity to keep: 0..1, so the achieved end-effector velocity is no
    faster than commanded and fades to 0 as its direction error grows from
    :data:`FULL_SPEED_DIRECTION_ERROR` to :data:`MAX_DIRECTION_ERROR` (linear and angular parts
    each; a part commanded zero may be achieved only as a small side effect)."""
    scale = 1.0
    for cmd, got in ((commanded[:3], achieved[:3]), (commanded[3:], achieved[3:])):
        nc, ng = float(np.linalg.norm(cmd)), float(np.linalg.norm(got))
        if nc < 1e-9:
            continue
        if ng < 1e-12:
            return 0.0
        scale = min(scale, nc / ng)
        angle = math.acos(max(-1.0, min(1.0, float(cmd @ got) / (nc * ng))))
        if angle > FULL_SPEED_DIRECTION_ERROR:
            fade = (MAX_DIRECTION_ERROR - angle) / (MAX_DIRECTION_ERROR - FULL_SPEED_DIRECTION_ERROR)
            scale = min(scale, max(0.0, fade))
    return scale


class JogLaw:
    """The jog's settings on one arm (model, limits, collision world) and its per-cycle step.

    ``accel`` [rad/s²] per joint (slew limit of the commanded velocity, capped at :data:`MAX_ACCEL`),
    ``speed_fraction`` of each joint's velocity limit a jog may use, ``damping`` [m] of the Cartesian
    solve, ``max_dt`` [s] the longest cycle integrated."""

    def __init__(self, model: RobotModel, limits: Limits, *, accel: ArrayLike = 8.0, speed_fraction: float = 1.0,
                 damping: float = 0.02, max_dt: float = 0.05) -> None:
        n = model.dof
        self.model = model
        self.limits = limits
        self.accel = np.minimum(np.broadcast_to(np.asarray(accel, dtype=np.float64), (n,)), MAX_ACCEL)
        self.speed_fraction = float(speed_fraction)
        self.damping = float(damping)
        self.max_dt = float(max_dt)
        rated = np.where(np.isfinite(limits.velocity_max), limits.velocity_max, 1.0)
        self.vmax = rated * min(self.speed_fraction, 1.0) * SPEED_HEADROOM
        self.world = world_of(model)

    def step(self, jog: Jogging, now: float, dt: float, period: float, measured: FloatArray,
             measured_velocity: FloatArray, cmd: Command) -> FloatArray | None:
        """Advance ``jog`` by one cycle and write its position and velocity into ``cmd``; returns the
        commanded acceleration (for the Arm's feed-forward), None if the result is not finite.

        No catch-up after a late cycle: the jog goes on from where the arm is now (with its learned
        sag) and at most a (nominal) period's travel per cycle, whatever the gap (integrating the gap's
        length, up to max_dt, from the command before it, the arm caught up at up to 1.5x the jog's speed)."""
        if dt > CATCH_UP * period:
            self.rejoin(jog, measured, measured_velocity)
            jog.rejoin_until = now + REJOIN_TIME
        elif now < jog.rejoin_until:
            self.anchor(jog, measured, self.behind(jog, measured_velocity))
        dt = min(dt, self.max_dt, CATCH_UP * period)
        target = self.target_velocity(jog, now, measured, measured_velocity, dt)
        previous = jog.velocity.copy()
        self.slew(jog.velocity, target, dt, uniform=jog.cartesian)
        accel = (jog.velocity - previous) / dt if dt > 0.0 else np.zeros_like(previous)
        pos = jog.position
        pos += jog.velocity * dt
        lo, hi = self.limits.position_min, self.limits.position_max
        at_lo, at_hi = pos <= lo, pos >= hi
        if at_lo.any() or at_hi.any():
            np.clip(pos, lo, hi, out=pos)
            jog.velocity[(at_lo & (jog.velocity < 0)) | (at_hi & (jog.velocity > 0))] = 0.0
        cmd.position[:] = pos
        cmd.velocity[:] = jog.velocity
        return accel if math.isfinite(float(pos.sum())) else None

    def rejoin(self, jog: Jogging, measured: FloatArray, measured_velocity: FloatArray) -> None:
        """After a late cycle: the jog's position restarts where the arm is measured (plus the sag it
        learned), and its speed from the arm's (the modules held their last command meanwhile: it
        slowed), never faster than the jog's own: the slew speeds it up again at ``accel``.

        A Cartesian jog keeps its direction and takes the arm's speed along its twist, measured at
        the end effector: the joints of an arm that ran into its held command swing (r6: the wrist
        moving against the jog while the shoulder goes on), so a per-joint speed bends the joint
        velocity away from the twist, and the next slew's snap back to it fed forward an
        acceleration that drove the end effector to 1.20x the commanded speed (1.04x this way)."""
        self.anchor(jog, measured)
        v = np.nan_to_num(measured_velocity)
        if jog.cartesian:
            J = self.model.jacobian_end_effector(jog.position)
            wanted = J @ jog.velocity
            norm = float(wanted @ wanted)
            along = float((J @ v) @ wanted) / norm if norm > 0.0 else 0.0
            jog.velocity *= min(max(along, 0.0), 1.0)
            return
        same_way = v * jog.velocity > 0.0
        np.copyto(jog.velocity, np.where(same_way, np.sign(v) * np.minimum(np.abs(v), np.abs(jog.velocity)), 0.0))

    def anchor(self, jog: Jogging, measured: FloatArray, joints: FloatArray | bool = True) -> None:
        """The jog's position restarts where the arm is measured (plus the sag it learned), on ``joints``
        (a mask; all by default)."""
        if np.all(np.isfinite(measured)):
            anchored = np.clip(measured + jog.offset, self.limits.position_min, self.limits.position_max)
            np.copyto(jog.position, anchored, where=np.asarray(joints, dtype=bool))

    def behind(self, jog: Jogging, measured_velocity: FloatArray) -> FloatArray | bool:
        """The joints whose command restarts where the arm is while it catches up after a late cycle:
        the arm's measured speed along the jog's target is below 1 - :data:`PACE` of the command's (or
        negative). Per jogged joint in a joint jog (the others keep their command: re-anchored as they
        swung from the gap, they drifted on); all joints or none in a Cartesian jog (measured at the end
        effector)."""
        if not np.all(np.isfinite(measured_velocity)):
            return False
        if not jog.cartesian:
            sign = np.sign(jog.target)
            return (sign != 0.0) & (measured_velocity * sign < (1.0 - PACE) * jog.velocity * sign)
        J = self.model.jacobian_end_effector(jog.position)
        way = J @ jog.target
        return float((J @ measured_velocity) @ way) < (1.0 - PACE) * float((J @ jog.velocity) @ way)

    def target_velocity(self, jog: Jogging, now: float, measured: FloatArray, measured_velocity: FloatArray,
                        dt: float) -> FloatArray:
        """The velocity this cycle slews toward: the sample's, solved, scaled into the limits, the lead
        and the collision slow-down (steps 1-4 of the module doc); ``jog.scales`` says by how much."""
        sample = jog.take(now)
        target = jog.target
        pos = jog.position
        direction = 1.0
        if sample is None:
            target.fill(0.0)
        elif not jog.cartesian:
            np.copyto(target, sample.velocity)
        else:
            J = self.model.jacobian_end_effector(pos)
            np.copyto(target, dls_joint_velocity(J, sample.velocity, self.damping))
            direction = direction_scale(sample.velocity, J @ target)
            target *= direction
        peak = float(np.max(np.abs(target) / self.vmax))  # into the velocity limits, uniformly
        if peak > 1.0:
            target /= peak
        limits = self.limit_scale(jog, target, measured, measured_velocity, dt)
        collision = self.collision_scale(pos, target, measured)
        target *= collision
        overall = direction * limits * collision
        jog.crept = jog.cartesian and overall < (CREEP_RESUME if jog.crept else CREEP_FRACTION)
        if jog.crept:
            # the last of a linear approach (speed proportional to the distance left) is an endless creep,
            # in which the joints' own settling, not the jog, sets the direction: stop instead (at the
            # slew's braking rate, from a speed this small), and stay stopped until the way is clearly open
            target.fill(0.0)
        jog.scales = {"direction": direction, "limits": limits, "collision": collision}
        return target

    def limit_scale(self, jog: Jogging, target: FloatArray, measured: FloatArray, measured_velocity: FloatArray,
                    dt: float) -> float:
        """Scale ``target`` (in place) into what each joint can still brake from before its position
        limit, and no farther ahead of the arm than :data:`MAX_LEAD` (an arm that cannot keep up, e.g.
        lifting an unknown payload, is waited for). Returns the Cartesian jog's uniform scale."""
        pos = jog.position
        down, up = self.limit_speeds(pos, measured)
        if np.all(np.isfinite(measured)):
            jog.learn_sag(pos - measured, measured_velocity, dt)
            lead = pos - measured - jog.offset  # a steady offset (sag under an unknown payload) is no lead
            np.minimum(up, self.vmax * np.clip(1.0 - lead / MAX_LEAD, 0.0, 1.0), out=up)
            np.minimum(down, self.vmax * np.clip(1.0 + lead / MAX_LEAD, 0.0, 1.0), out=down)
        allowed = np.where(target < 0, down, up)
        over = np.abs(target) > allowed
        if not over.any():
            return 1.0
        if jog.cartesian:
            scale = float(np.min(allowed[over] / np.abs(target[over])))
            target *= scale
            return scale
        np.clip(target, -down, up, out=target)
        return 0.0 if not np.any(target) else 1.0

    def limit_speeds(self, pos: FloatArray, measured: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per joint: the speed it may still have toward its lower and its upper limit and stop there.

        Measured from whichever is nearer the limit, the jog's command or the arm's feedback: an
        arm running ahead of its command (gravity, an unknown payload) starts braking in time."""
        brake = self.accel * LIMIT_BRAKE_FRACTION
        if np.all(np.isfinite(measured)):
            lo_from, hi_from = np.minimum(pos, measured), np.maximum(pos, measured)
        else:
            lo_from, hi_from = pos, pos
        down = np.sqrt(2.0 * brake * np.maximum(lo_from - self.limits.position_min, 0.0))
        up = np.sqrt(2.0 * brake * np.maximum(self.limits.position_max - hi_from, 0.0))
        return down, up

    def collision_scale(self, pos: FloatArray, target: FloatArray, measured: FloatArray) -> float:
        """The linear slow-down (1 at the threshold, 0 at contact) for every pair closing in, and never
        faster than the arm can stop within the distance left at :data:`STOP_DECELERATION`.

        From the command and, where the arm is more than :data:`SAG_CHECK` away from it, also from
        the measured position: an arm sagging under a payload the model does not know is nearer the
        table than its command (measured on the sim: x6 with 1 kg, 43 mm; checked from the command
        alone it stopped 21 mm below the table)."""
        world = self.world
        if world is None or not np.any(target):
            return 1.0
        scale = world.approach_scale(pos, pos + target * LOOKAHEAD, LOOKAHEAD, STOP_DECELERATION)
        if scale > 0.0 and np.all(np.isfinite(measured)) and float(np.max(np.abs(pos - measured))) > SAG_CHECK:
            scale = min(scale, world.approach_scale(measured, measured + target * LOOKAHEAD, LOOKAHEAD,
                                                    STOP_DECELERATION))
        return scale

    def slew(self, v: FloatArray, target: FloatArray, dt: float, *, uniform: bool) -> None:
        """Move the commanded velocity ``v`` (in place) toward ``target``: ``accel`` speeding up (no
        more than ``1/SETTLE_TIME`` of what is left per second: the end of the ramp is rounded off),
        BRAKE_FACTOR x slowing."""
        dv = target - v
        slowing = (np.abs(target) <= np.abs(v)) & (target * v >= 0)
        step = self.accel * dt * np.where(slowing, BRAKE_FACTOR, 1.0)
        if not uniform:  # per joint; speeding up is rounded off over SETTLE_TIME before the target speed
            step = np.where(slowing, step, np.minimum(step, np.maximum(np.abs(dv) * min(1.0, dt / SETTLE_TIME),
                                                                       SETTLE_FLOOR * step)))
            v += np.clip(dv, -step, step)
            return
        # Cartesian: the velocity always points the way the current solve says (which met the
        # direction check); only its size slews. Reversing first slows the old direction to rest.
        size = float(np.linalg.norm(target))
        if size < 1e-12 or float(v @ target) < 0.0:
            ratio = float(np.max(np.abs(dv) / step))
            v += dv / ratio if ratio > 1.0 else dv
            return
        unit = target / size
        now = float(v @ unit)  # the current speed along the new direction
        per_unit = float(np.min(step / np.maximum(np.abs(unit), 1e-12)))  # joint accel <= accel (or brake)
        if size > now:  # speeding up: ``accel``, rounded off over SETTLE_TIME before the target speed
            up = now + min(per_unit, max((size - now) * min(1.0, dt / SETTLE_TIME), SETTLE_FLOOR * per_unit))
            np.multiply(unit, min(size, up), out=v)
        else:
            np.multiply(unit, max(size, now - per_unit), out=v)
