"""Jogging: integrate a streamed velocity into the arm's position command, inside its loop.

The bridge drops every accepted jog message into a :class:`JogMailbox` (latest value wins: a
velocity stream has no use for old samples). :class:`JogPlugin` is an arm plugin, so it runs
inside :meth:`Arm.update` right after the feedback read and before the command is clamped and
sent: a new velocity reaches the modules in the same cycle it is picked up, without queueing.
Each cycle it

1. takes the newest sample with the dead-man held (a sample's ``ttl`` is capped at
   :data:`MAX_TTL`; a longer one is refused ``ttl_too_long``, so a silent client stops the arm
   within half a second);
2. turns a Cartesian twist into joint velocities by damped least squares on the end-effector
   Jacobian (:func:`dls_joint_velocity`), and scales the result *uniformly* (the direction kept)
   until the end effector is no faster than commanded and within :data:`MAX_DIRECTION_ERROR` of the
   commanded direction; near a singularity that scale goes to zero: it slows and stops, never
   jumps;
3. scales into the joints' velocity limits (with :data:`SPEED_HEADROOM` for the arm's tracking),
   into the speed each joint can still brake from before its position limit (``sqrt(2 a d)``,
   from the command or the feedback, whichever is nearer the limit) and so that the command never
   runs more than :data:`MAX_LEAD` ahead of the measured position (joint jog per joint, Cartesian
   jog uniformly; a joint at rest takes its position error as sag, not lead);
4. scales linearly by the distance to the arm's own body and its workspace (``distance /
   threshold``: 1 at or beyond the threshold, 0 at contact; only while the motion closes that
   distance; MoveIt Servo's own scale is exponential, this one is not), checked every
   cycle on :mod:`hebictl.collision` (thresholds ``user_data.workspace.slowdown``, default 2 cm self,
   3 cm workspace) from the command and, where the arm sags away from it, from the measured arm;
   a Cartesian jog slowed below :data:`CREEP_FRACTION` stops instead of creeping;
5. slews the commanded velocity toward it (``accel`` [rad/s²] speeding up, :data:`BRAKE_FACTOR`
   times that slowing down), uniformly in Cartesian jog,
6. integrates it into the jog position (clamped at the joint limits) and commands both, with the
   effort of its acceleration fed forward (without it the joints lag by their own inertia while
   speeding up and overshoot after stopping, and the end effector leaves its direction), and the
   gravity of an end-effector mass the arm measured and its model does not know.

After a late cycle (longer than :data:`CATCH_UP` x the loop's nominal period: a stall shorter than the
command lifetime, during which the modules held the last command) the jog goes on from the measured
state, not from its old command: its position restarts where the arm is (plus the sag it learned) and
its speed from the arm's (never above the jog's own), and no cycle integrates more than
:data:`CATCH_UP` periods. Integrating the gap from the old command, the arm caught up at 1.07-1.56x the
commanded end-effector speed after 100-200 ms (sim, every bundled config; tests/teleop/test_jog_stall_sim.py).

:func:`attach` adds the plugin ahead of the plugins that forward the finished command to other
modules (a double shoulder's mirror).

Starting and releasing (dead-man let go or ``ttl`` expired) are decided by the arm thread
(:mod:`hebictl.teleop.runner`) at the start of a cycle; after a release the plugin stops
commanding and the Arm brakes from the jog's last command on its own ramp
(:mod:`hebictl.control.braking`), the same ramp as every other stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.collision.attach import world_of
from hebictl.control.plugins import ArmPlugin
from hebictl.control.safety import ArmState
from hebictl.errors import CommandRejected
from hebictl.model.ik import damped_least_squares
from hebictl.teleop.schema import MAX_JOG_TTL

if TYPE_CHECKING:
    from hebictl.control.arm import Arm
    from hebictl.teleop.schema import JogCommand

#: [s] the longest a jog sample may stay valid: the schema's cap, checked again here for a sample
#: that did not come through the schema (a direct ``offer``)
MAX_TTL = MAX_JOG_TTL
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
#: [s] time constant with which a joint at rest takes its position error as sag (see ``_learn_sag``)
SAG_TIME_CONSTANT = 0.1
#: joint-limit approach decelerates at this fraction of ``accel`` (room for the arm's tracking lag:
#: at 0.5 the r6 base still overran its limit by 12-21 mrad on the sim, at 0.25 by 1.3)
LIMIT_BRAKE_FRACTION = 0.25
#: [m/s²] a jog closing in on a body or the workspace can stop within the distance left at this
#: deceleration (gentle enough for the arm to track: a harder stop makes it bounce)
STOP_DECELERATION = 0.5
#: a Cartesian jog slowed below this fraction of the commanded speed stops (see :meth:`JogPlugin._jog`)
CREEP_FRACTION = 0.03
#: ... and moves again once it would run at this fraction (or the jog restarts)
CREEP_RESUME = 0.25
#: a jog cycle integrates at most this many nominal periods (its jitter; after a stall the jog goes on at
#: its speed instead of catching up: issue 29's bound is 1.05x the commanded end-effector speed)
CATCH_UP = 1.05
#: [rad] an arm this far from its command on any joint is also collision-checked where it is
SAG_CHECK = 0.005
#: [s] the collision check looks this far ahead along the commanded velocity to tell approach from retreat
LOOKAHEAD = 0.02


@dataclass(frozen=True)
class JogSample:
    """One accepted jog message: ``expiry`` [s, arm clock] = receipt time + ttl."""

    index: int
    space: str
    velocity: FloatArray
    deadman: bool
    expiry: float
    seq: int
    client: str


class JogMailbox:
    """Latest accepted jog sample, written by the bridge thread, read by the arm thread.

    A single attribute assignment publishes a sample atomically, so neither side locks."""

    def __init__(self) -> None:
        self.latest: JogSample | None = None
        self._count = 0

    def offer(self, cmd: JogCommand, received: float) -> JogSample:
        """Publish ``cmd`` received at ``received`` [s, arm clock]; a ``ttl`` over :data:`MAX_TTL` is refused."""
        if not cmd.ttl <= MAX_TTL:
            raise CommandRejected("ttl_too_long", f"a jog sample may be valid for at most {MAX_TTL:g} s, this one "
                                                  f"asks {cmd.ttl:g} s; stream samples more often")
        self._count += 1
        sample = JogSample(self._count, cmd.space, cmd.velocity, cmd.deadman, received + cmd.ttl,
                           cmd.envelope.seq, cmd.envelope.client)
        self.latest = sample
        return sample


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


#: plugin types that pass the arm's finished command on to other modules (a double shoulder's
#: second module): the jog must write its command before they run, or they forward the hold the
#: jog replaced (measured on the sim's x7: the mirrored shoulder module held the jog's start while
#: the other moved, and the two stopped fighting each other 56 mrad behind the command)
FORWARDING_PLUGINS = frozenset({"DoubledJointMirror"})


def attach(arm: Arm, jog: JogPlugin) -> None:
    """Add ``jog`` to ``arm``'s plugins ahead of the first :data:`FORWARDING_PLUGINS` one (after the
    effort plugins it builds on, whose dynamics term it replaces; see :meth:`JogPlugin.update`)."""
    arm.add_plugin(jog)
    plugins = arm.plugins
    first = next((i for i, p in enumerate(plugins) if p.type_name in FORWARDING_PLUGINS), None)
    if first is not None:
        plugins.remove(jog)
        plugins.insert(first, jog)


class JogPlugin(ArmPlugin):
    """Drives the arm from a :class:`JogMailbox` while a jog is active (see module doc).

    ``accel`` [rad/s²] per joint (slew limit of the commanded velocity), ``speed_fraction`` of
    each joint's velocity limit a jog may use, ``damping`` [m] of the Cartesian solve."""

    type_name = "TeleopJog"

    def __init__(self, mailbox: JogMailbox, *, accel: ArrayLike = 8.0, speed_fraction: float = 1.0,
                 damping: float = 0.02, max_dt: float = 0.05, name: str = "teleopJog") -> None:
        super().__init__(name, enabled=True)
        self.mailbox = mailbox
        self._accel_in = accel
        self.speed_fraction = float(speed_fraction)
        self.damping = float(damping)
        self.max_dt = float(max_dt)
        self.active = False
        self.position = np.zeros(0)
        self.velocity = np.zeros(0)
        self.sample: JogSample | None = None
        self._target = np.zeros(0)
        #: what the last cycle scaled the jog by: direction, limits, collision (1 = not slowed)
        self.scales = {"direction": 1.0, "limits": 1.0, "collision": 1.0}
        self._arm: Arm | None = None
        self._offset = np.zeros(0)
        self._crept = False

    # narrower than ArmView on purpose: the jog reads the Arm's limits, state and trajectory, which
    # ArmView does not expose; the plugin table attaches it to an Arm only
    def on_associated(self, arm: Arm) -> None:  # type: ignore[override]  # an Arm, not any ArmView (see above)
        n = arm.dof
        accel = np.broadcast_to(np.asarray(self._accel_in, dtype=np.float64), (n,))
        self.accel = np.minimum(accel, MAX_ACCEL)
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self._target = np.zeros(n)
        rated = np.where(np.isfinite(arm.limits.velocity_max), arm.limits.velocity_max, 1.0)
        self._vmax = rated * min(self.speed_fraction, 1.0) * SPEED_HEADROOM
        self._lo, self._hi = arm.limits.position_min, arm.limits.position_max
        self.world = world_of(arm.model)
        self._arm = arm
        self._offset = np.zeros(n)

    # ---------------------------------------------------------------- called by the arm thread
    def start(self, position: ArrayLike, sample: JogSample) -> None:
        """Begin jogging from ``position`` [rad] (the last commanded position) at rest.

        An end-effector load the model does not know is fed forward by the arm in every mode
        (:mod:`hebictl.control.payload_feedforward`), the hold before the jog included, so the arm
        is not sagged away from that command and the jog carries on from it without a step."""
        self.position[:] = position
        self.velocity.fill(0.0)
        self.sample = sample
        self.active = True
        self._crept = False
        self._offset = np.zeros_like(self.position)
        arm = self._arm
        if arm is not None and np.all(np.isfinite(arm.last_feedback.position)):
            self._offset = self.position - arm.last_feedback.position

    def halt(self) -> tuple[FloatArray, FloatArray]:
        """Stop jogging; returns the jog's position and velocity at this moment (to brake from)."""
        self.active = False
        return self.position.copy(), self.velocity.copy()

    # ---------------------------------------------------------------- inside Arm.update
    def update(self, arm: Arm, dt: float) -> bool:  # type: ignore[override]  # an Arm, as on_associated
        if self.active:
            if arm.state is not ArmState.RUNNING or arm.trajectory is not None:
                self.active = False  # something else owns the arm now
                return True
            # no catch-up after a late cycle: the jog goes on from where the arm is now (with its learned sag)
            # and at most a (nominal) period's travel per cycle, whatever the gap (integrating the gap's
            # length, up to max_dt, from the command before it, the arm caught up at up to 1.5x the jog's speed)
            period = arm.nominal_period
            if dt > CATCH_UP * period:
                self._rejoin(arm)
            self._jog(arm, min(dt, self.max_dt, CATCH_UP * period))
        return True

    def _rejoin(self, arm: Arm) -> None:
        """After a late cycle: the jog's position restarts where the arm is measured (plus the sag it
        learned), so the next command is computed from the measured state, not from the command the
        arm could not follow while the loop was away."""
        measured = arm.last_feedback.position
        if np.all(np.isfinite(measured)):
            np.copyto(self.position, np.clip(measured + self._offset, self._lo, self._hi))
        # and from the speed the arm has now (the modules held their last command meanwhile: it slowed),
        # never faster than the jog's own: the slew speeds it up again at ``accel``, no lag to catch up
        v = np.nan_to_num(arm.last_feedback.velocity)
        same_way = v * self.velocity > 0.0
        np.copyto(self.velocity, np.where(same_way, np.sign(v) * np.minimum(np.abs(v), np.abs(self.velocity)), 0.0))

    def _limit_speeds(self, pos: FloatArray, measured: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per joint: the speed it may still have toward its lower and its upper limit and stop there.

        Measured from whichever is nearer the limit, the jog's command or the arm's feedback: an
        arm running ahead of its command (gravity, an unknown payload) starts braking in time."""
        brake = self.accel * LIMIT_BRAKE_FRACTION
        if np.all(np.isfinite(measured)):
            lo_from, hi_from = np.minimum(pos, measured), np.maximum(pos, measured)
        else:
            lo_from, hi_from = pos, pos
        down = np.sqrt(2.0 * brake * np.maximum(lo_from - self._lo, 0.0))
        up = np.sqrt(2.0 * brake * np.maximum(self._hi - hi_from, 0.0))
        return down, up

    def _learn_sag(self, error: FloatArray, measured_velocity: FloatArray, dt: float) -> None:
        """Follow the static part of the position error (command - feedback) on joints at rest.

        A joint whose command and measurement are both still is not lagging: its error is sag (an
        unknown payload's torque over the position loop's stiffness), and that changes with the
        pose. Counted as lead it stalled the jog for good (measured on the sim: the r6 wrist with
        1 kg sagged 77 mrad after 0.5 rad of travel and the jog never moved again)."""
        # a NaN velocity reading counts as still (not >= REST_SPEED), as it did through nan_to_num, at a
        # tenth of the cost (this runs every jog cycle)
        still = (np.abs(self.velocity) < REST_SPEED) & ~(np.abs(measured_velocity) >= REST_SPEED)
        if still.any():
            k = min(1.0, dt / SAG_TIME_CONSTANT)
            self._offset[still] += k * (error[still] - self._offset[still])

    def _collision_scale(self, pos: FloatArray, target: FloatArray, measured: FloatArray) -> float:
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

    def _jog(self, arm: Arm, dt: float) -> None:
        latest = self.mailbox.latest
        if latest is not None and latest is not self.sample and latest.deadman:
            self.sample = latest
        sample = self.sample
        if sample is not None and ((latest is not None and not latest.deadman) or arm.clock.now() > sample.expiry):
            # let go or expired since the runner last looked (it looks before the feedback read, so up
            # to a period ago): slow toward rest in this cycle's command already, the runner's brake
            # takes over at the next; otherwise the stop would start up to two periods after expiry
            sample = None
        target = self._target
        pos = self.position
        cartesian = sample is not None and sample.space != "joint"
        direction = 1.0
        if sample is None:
            target.fill(0.0)
        elif not cartesian:
            np.copyto(target, sample.velocity)
        else:
            J = arm.model.jacobian_end_effector(pos)
            np.copyto(target, dls_joint_velocity(J, sample.velocity, self.damping))
            direction = direction_scale(sample.velocity, J @ target)
            target *= direction
        # into the velocity limits: uniformly (keeps the Cartesian direction)
        peak = float(np.max(np.abs(target) / self._vmax))
        if peak > 1.0:
            target /= peak
        # into what each joint can still brake from before its position limit, and no farther ahead of
        # the arm than MAX_LEAD (an arm that cannot keep up, e.g. lifting an unknown payload, is waited for)
        measured = arm.last_feedback.position
        down, up = self._limit_speeds(pos, measured)
        if np.all(np.isfinite(measured)):
            self._learn_sag(pos - measured, arm.last_feedback.velocity, dt)
            lead = pos - measured - self._offset  # a steady offset (sag under an unknown payload) is no lead
            np.minimum(up, self._vmax * np.clip(1.0 - lead / MAX_LEAD, 0.0, 1.0), out=up)
            np.minimum(down, self._vmax * np.clip(1.0 + lead / MAX_LEAD, 0.0, 1.0), out=down)
        allowed = np.where(target < 0, down, up)
        over = np.abs(target) > allowed
        limits = 1.0
        if over.any():
            if cartesian:
                limits = float(np.min(allowed[over] / np.abs(target[over])))
                target *= limits
            else:
                np.clip(target, -down, up, out=target)
                limits = 0.0 if not np.any(target) else limits
        collision = self._collision_scale(pos, target, measured)
        target *= collision
        overall = direction * limits * collision
        self._crept = cartesian and overall < (CREEP_RESUME if self._crept else CREEP_FRACTION)
        if self._crept:
            # the last of a linear approach (speed proportional to the distance left) is an
            # endless creep, in which the joints' own settling, not the jog, sets the direction:
            # stop instead (at the slew's braking rate, from a speed this small), and stay stopped
            # until the way is clearly open (the arm settling back from its stop is not)
            target.fill(0.0)
        self.scales = {"direction": direction, "limits": limits, "collision": collision}
        previous = self.velocity.copy()
        self._slew(target, dt, uniform=cartesian)
        accel = (self.velocity - previous) / dt if dt > 0.0 else np.zeros_like(previous)
        pos += self.velocity * dt
        at_lo, at_hi = pos <= self._lo, pos >= self._hi
        if at_lo.any() or at_hi.any():
            np.clip(pos, self._lo, self._hi, out=pos)
            self.velocity[(at_lo & (self.velocity < 0)) | (at_hi & (self.velocity > 0))] = 0.0
        cmd = arm.pending_command
        cmd.position[:] = pos
        cmd.velocity[:] = self.velocity
        # feed the jog's own acceleration forward (rigid-body dynamics at the commanded state, less
        # what the arm's DynamicsCompensationEffort added for its idle trajectory state): otherwise
        # the modules find that torque through their position error, i.e. they lag while speeding
        # up and overshoot while stopping, each joint by its own inertia, and the end effector
        # leaves the commanded direction
        cmd.effort += arm.brake_planner.missing_effort((pos, self.velocity, accel), arm.plugins)
        arm.payload_feedforward.accelerate(accel)  # the unknown load's inertia too, fed forward by the arm
        if not math.isfinite(float(pos.sum())):  # never command garbage: fall back to holding
            self.active = False
            cmd.position[:] = arm.last_feedback.position
            cmd.velocity.fill(0.0)

    def _slew(self, target: FloatArray, dt: float, *, uniform: bool) -> None:
        """Move the commanded velocity toward ``target``: ``accel`` speeding up, BRAKE_FACTOR x slowing."""
        v = self.velocity
        dv = target - v
        slowing = (np.abs(target) <= np.abs(v)) & (target * v >= 0)
        step = self.accel * dt * np.where(slowing, BRAKE_FACTOR, 1.0)
        if uniform:
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
            np.multiply(unit, min(size, now + per_unit) if size > now else max(size, now - per_unit), out=v)
        else:
            v += np.clip(dv, -step, step)
