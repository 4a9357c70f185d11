"""The execution monitors of one arm, run every cycle: :class:`MonitorSuite`.

The Arm calls :meth:`MonitorSuite.after_read` once per fresh sample, after its own feedback
checks (M-stop, limits) and before it computes the command, and :meth:`MonitorSuite.after_send`
after each write; it hands every :class:`~hebictl.control.monitors.finding.Finding` to
``Arm.react(kind, detail, reaction)``. The suite keeps what monitors share: the momentum
observer's residual (contact and model mismatch), the mirror's effort (the observer's torque on
a double shoulder), the feedback age, the payload estimate. Thresholds and reactions come from
``user_data.safety.monitors`` (:data:`hebictl.control.settings.MONITOR_DEFAULTS`); the table in
docs/monitors.md is checked against them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.monitors import kernels
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.contact import ContactMonitor
from hebictl.control.monitors.damp import DampSinkingMonitor
from hebictl.control.monitors.delivery import CommandDeliveryMonitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.monitors.gap import ControlGapMonitor
from hebictl.control.monitors.gravcomp import GravcompSinkingMonitor
from hebictl.control.monitors.imu import ImuMonitor
from hebictl.control.monitors.latency import LatencyMonitor
from hebictl.control.monitors.mirror import MirrorMonitor
from hebictl.control.monitors.observer import SETTLE_S, MomentumObserver
from hebictl.control.monitors.payload import (
    ModelMismatchMonitor,
    payload_efforts,
    payload_torque_direction,
    payload_uncertainty,
)
from hebictl.control.monitors.timing import SampleClock, SampleTiming
from hebictl.control.monitors.tracking import TrackingMonitor
from hebictl.control.plugins import DoubledJointMirror, GravityCompensationEffort
from hebictl.control.safety import ArmState, Limits
from hebictl.control.settings import monitor_settings
from hebictl.hardware.base import Command, Feedback

__all__ = ["CHECK_PERIOD_S", "MonitorSuite", "goal_status"]

#: [s] the checks beyond gap and age run at most this often (250 Hz): every sample at the bundled
#: configs' 200 Hz, every 4th at 1 kHz. The observer's bandwidth (``observer_gain`` 60 rad/s,
#: ~10 Hz) and the 50 ms detection target need no more, and a 1 kHz loop keeps its budget.
CHECK_PERIOD_S = 0.004
#: the observer judges intervals whose joints all move at most this x their rated speed: commanded
#: motion stays below rated (admission, the jog, the brakes), an unpowered fall goes well past it
OBSERVED_SPEED = 1.25


class MonitorSuite:
    """Every monitor of one arm (see the module docstring)."""

    def __init__(self, model: Any, limits: Limits, *, feedback_frequency: float, command_lifetime: float,
                 settings: dict[str, dict[str, Any]] | None = None, plugins: Any = (),
                 measures_effort: bool = True) -> None:
        """``measures_effort``: the backend's effort feedback is what the joints exert (sim, real
        modules). Where it only echoes the command (mock, hebi's imitation group), every
        acceleration would look like an external torque, so contact detection stays disarmed."""
        s = settings if settings is not None else monitor_settings({})
        self.measures_effort = bool(measures_effort)
        self.settings = s
        self.model = model
        n = model.dof
        self.gravity_plugin = next((p for p in plugins if isinstance(p, GravityCompensationEffort)), None)
        mirror = next((p for p in plugins if isinstance(p, DoubledJointMirror)), None)
        c = s["contact"]
        rotor = c["motor_time_constant"] * np.where(np.isfinite(limits.effort_max / limits.velocity_max),
                                                    limits.effort_max / limits.velocity_max, 0.0)
        if mirror is not None:  # a double shoulder: the mirror module's rotor turns with the joint too
            rotor[mirror.index] *= 2.0
        #: the judged samples' own timestamps (the observer integrates over their intervals)
        self.clock = SampleClock(max(1.0 / feedback_frequency if feedback_frequency > 0 else 0.01, CHECK_PERIOD_S))
        self.observer = MomentumObserver(model, c["observer_gain"], rotor)
        self.contact = ContactMonitor(c, limits.effort_max)
        self.observer.late_widening = c["late_widening"] * self.contact.threshold
        self.mismatch = ModelMismatchMonitor(s["model_mismatch"])
        self.delivery = CommandDeliveryMonitor(s["command_lost"], n)
        self.gap = ControlGapMonitor(s["control_gap"], command_lifetime)
        self.latency = LatencyMonitor(s["feedback_late"], feedback_frequency)
        self.tracking = TrackingMonitor(s["tracking_error"], self.clock)
        self.damp = DampSinkingMonitor(s["damp_sinking"])
        self.gravcomp = GravcompSinkingMonitor(s["gravcomp_sinking"])
        self.gravcomp.residual = self.observer.r
        self.mirror = MirrorMonitor(s["mirror_lost"], mirror) if mirror is not None else None
        self.imu = ImuMonitor(s["imu_implausible"], self.gravity_plugin) if self.gravity_plugin is not None else None
        # before the observer: timing, sensors, delivery; after it: what needs the residual or state
        self.every: list[Monitor] = [self.gap, self.latency]
        self.first: list[Monitor] = [self.delivery] + [m for m in (self.imu, self.mirror) if m is not None]
        self.last = [self.tracking, self.damp, self.gravcomp]
        self.sending: list[Monitor] = [m for m in (self.delivery, self.mirror) if m is not None]
        #: [rad/s per joint] beyond this measured speed the observer does not judge an interval
        #: (:data:`OBSERVED_SPEED` x rated): see :meth:`_judge`
        self.judged_speed = OBSERVED_SPEED * np.where(np.isfinite(limits.velocity_max), limits.velocity_max, np.inf)
        self.too_fast = False  # the previous judged sample was beyond it
        self.tau = np.zeros(n)
        self.widen = np.zeros(n)  # [N·m] the payload's share of the contact bound's widening, filtered
        self.widen_all = np.zeros(n)  # [N·m] the residual's bound's widening: payload and late cycles
        self.widen_on = np.zeros(n)  # [N·m] the re-baselined residual's: payload and on-time effort changes
        self.carried = 0.0  # [kg] the estimated unknown load the observer models
        self.last_time: float | None = None
        self._payload: Any = None
        self.findings: list[Finding] = []  # every finding so far (bounded), for tests and reports

    # ------------------------------------------------------------------ what the arm shows
    @property
    def residual(self) -> FloatArray:
        """External joint torque estimate [N·m]: the observer's residual, payloads modelled (:mod:`.observer`)."""
        return self.contact.external

    @property
    def feedback_age(self) -> float:
        """[s] age of the last sample (0 where the backend's clocks cannot tell)."""
        return self.latency.age

    @property
    def payload_estimate(self) -> dict[str, Any] | None:
        return self.mismatch.estimate

    @property
    def commands_delivered(self) -> bool:
        return self.delivery.delivered

    def gravity(self) -> FloatArray:
        p = self.gravity_plugin
        return p.gravity if p is not None else self.model.gravity

    # ------------------------------------------------------------------ per cycle
    def after_read(self, arm: Any, fb: Feedback, now: float) -> list[Finding]:
        """Every fresh sample: the control gap and the feedback age. At most every
        :data:`CHECK_PERIOD_S` of the samples' own time (every sample at 200 Hz and below): the
        rest, on the sample's timing (:mod:`.timing`)."""
        dt = 0.0 if self.last_time is None else now - self.last_time
        self.last_time = now
        timing = self.clock.stamp(fb, now)
        out = self._run(self.every, arm, fb, now, dt)
        if timing.known and timing.interval < CHECK_PERIOD_S - 1e-9 and not out:
            return out  # (1 kHz: the next checks cover this interval)
        self.clock.commit(timing)
        self._check(arm, fb, now, timing, out)
        if out:
            self._keep(out)
        return out

    def _check(self, arm: Any, fb: Feedback, now: float, timing: SampleTiming, out: list[Finding]) -> None:
        """The checks beyond gap and age, in their order, on a committed sample; findings go to
        ``out``. A finding that changes the arm's mode ends them."""
        out += self._run(self.first, arm, fb, now, timing.interval)
        if any(f.reaction != "event" for f in out):
            # the arm changes mode on these: what the later monitors would judge (the command, the
            # residual under it) is about to be replaced, so they wait for the next sample
            self.restart()
            return
        payload = arm.payload
        if payload is not self._payload:
            self._payload = payload
            self.mismatch.reset_extra()
            self.restart()
        if self._judge(arm, fb, now, timing, payload, out):
            return
        out += self._run(self.last, arm, fb, now, timing.interval)

    @staticmethod
    def _run(monitors: list[Monitor], arm: Any, fb: Feedback, now: float, interval: float) -> list[Finding]:
        """The findings of ``monitors`` on this sample, in their order."""
        out: list[Finding] = []
        for m in monitors:
            f = m.after_read(arm, fb, now, interval)
            if f is not None:
                out.append(f)
        return out

    def restart(self) -> None:
        """Start the observer, and the timing it integrates over, afresh at the next sample."""
        self.observer.restart()
        self.clock.restart()
        self.widen.fill(0.0)
        self.carried = 0.0
        self.too_fast = False

    def _judge(self, arm: Any, fb: Feedback, now: float, timing: SampleTiming, payload: Any,
               out: list[Finding]) -> bool:
        """The observer, contact and model mismatch on a sample whose timing is known; their
        findings go to ``out``. True when a contact reaction ends this cycle's checks."""
        observer = self.observer
        if not timing.known and observer.valid:
            return False  # no newer than the last judged sample: nothing to integrate over
        g = self.gravity()
        tau = self.tau
        np.copyto(tau, fb.effort)
        # an interval with a joint beyond what the actuators reach under command (an unpowered fall
        # after a control gap, an arm swung by hand) is not judged: at 2-3x rated speed the model's
        # discrete momentum balance over one interval is off by tens of N·m (x7's shoulder, 2.3x
        # rated in the second cycle after an 800 ms gap: 11.5 N·m against 2.2 with nothing touched);
        # the observer restarts on the next interval within it. Commanded motion never gets there.
        fast = kernels.any_beyond(fb.velocity, self.judged_speed)
        skip, self.too_fast = fast or self.too_fast, fast
        if self.mirror is not None and self.plugin_mirrors():
            other = self.mirror.effort_at(timing.time, 0.5 * self.clock.nominal)
            skip = skip or not math.isfinite(other)  # no mirror sample of this moment: not judged
            tau[self.mirror.plugin.index] += other if math.isfinite(other) else self.mirror.joint_effort
        declared = payload.mass if payload is not None else 0.0
        if payload is not None:
            tau -= payload_efforts(self.model, fb.position, payload, g)
        estimated = self.mismatch.unapplied_mass()
        self.gravcomp.load = max(estimated, 0.0) + declared  # (gravity compensation carries neither)
        static, fresh = self._carry_estimate(fb.position, g, estimated)
        observer.point_mass = max(estimated, 0.0) + declared
        observer.track_load = kernels.all_below(arm.pending_command.velocity, 1e-3)  # a rest may start
        valid = observer.update(fb.position, fb.velocity, tau, g, timing.interval, late=timing.late, skip=skip)
        if static is not None and estimated > 0.0:  # the load let go of: judged before contact, which
            # the same change trips
            f = self.mismatch.let_go(observer.r_on, static, valid and not skip and observer.since_late >= SETTLE_S)
            if f is not None:
                out.append(f)
        if valid:
            self.contact.armed = self.measures_effort and self.mismatch.rested_once
            widen = self._widening(fb, g, estimated, declared, fresh)
            np.add(widen, observer.slack, out=self.widen_all)
            np.add(widen, observer.slack_on, out=self.widen_on)
            f = self.contact.check(arm, fb, now, observer.r, self.widen_all, observer.r_on, self.widen_on)
            if f is not None:
                out.append(f)
                if f.reaction != "event":
                    return True
        settled = valid and not skip and observer.load_ok and observer.since_late >= SETTLE_S
        f = self.mismatch.check(arm, fb, timing.interval, observer.r, observer.load_dir, settled, self.contact.latched,
                                g)
        if f is not None:
            out.append(f)
        return False

    def _carry_estimate(self, q: FloatArray, g: FloatArray, estimated: float) -> tuple[FloatArray | None, bool]:
        """The estimated load's weight added to this sample's efforts (``self.tau``), as if the modules
        held it; a new estimate (at rest) the observer takes over. Returns the torque per kg of
        end-effector load at ``q`` (None while nothing is or was estimated) and whether the estimate is
        new this sample."""
        if estimated == 0.0 and self.carried == 0.0:
            return None, False
        static = payload_torque_direction(self.model, q, g)
        self.tau += estimated * static
        if estimated == self.carried:
            return static, False
        self.observer.take_load(estimated - self.carried, static)
        self.carried = estimated
        return static, True

    def _widening(self, fb: Feedback, g: FloatArray, estimated: float, declared: float,
                  fresh: bool = False) -> FloatArray:
        """[N·m per joint] the payload's share of the contact bound's widening: its uncertainty,
        filtered like the residual it bounds (what a late cycle explains, the observer's
        ``slack`` and ``slack_on``, the caller adds). ``fresh``: the observer
        took a new estimate over this sample, which steps the residual to the load modelled at
        once, so the uncertainty of that load counts in full at once too (filtered up from its
        old value, rosie-t's elbow residual stepped to 3.59 N·m against a bound still at 2.11)."""
        observer = self.observer
        widen = self.widen
        alpha = 0.0 if fresh else observer.alpha
        widen *= alpha
        if estimated != 0.0 or declared != 0.0:
            widen += (1.0 - alpha) * self._payload_uncertainty(fb, g, estimated, declared)
        return widen

    def _payload_uncertainty(self, fb: Feedback, g: FloatArray, estimated: float, declared: float) -> FloatArray:
        """[N·m per joint] what the payloads the observer models may exert beyond it
        (:func:`.payload.payload_uncertainty`). A positive estimate is a load known to σ = the
        larger of ``payload_mass_uncertainty`` x its mass and the spread of the per-sample masses
        over its rest. A negative one is no load
        (the feed-forward carries none): a torque the model lacks that the end-effector fit only
        partly matches (rosie-t's 7 N·m gas spring on the shoulder read as -1.10 kg and, taken over,
        left 3.59 N·m on the elbow that had none), so its whole share may be misattributed (σ = |m|)
        and, being no mass, it has no centre of mass off the end effector (no lever term)."""
        c = self.settings["contact"]
        q, accel, lever = fb.position, self.observer.accel, c["payload_lever"]
        if estimated >= 0.0:
            m = self.mismatch
            sigma = max(c["payload_mass_uncertainty"] * estimated, m.spread) if estimated else 0.0
            return payload_uncertainty(self.model, q, g, accel, estimated + declared, sigma, lever)
        u = payload_uncertainty(self.model, q, g, accel, 0.0, -estimated, 0.0)
        if declared:
            u += payload_uncertainty(self.model, q, g, accel, declared, 0.0, lever)
        return u

    def plugin_mirrors(self) -> bool:
        """The mirror module's effort is known this cycle (it answered)."""
        return self.mirror is not None and np.isfinite(self.mirror.joint_effort)

    def before_send(self, cmd: Command) -> None:
        """Mark the command about to be written, so its echo can be told from the previous one's."""
        self.delivery.before_send(cmd)
        if self.mirror is not None:
            self.mirror.before_send()

    def after_send(self, arm: Any, ok: bool, cmd: Command) -> list[Finding]:
        out: list[Finding] = []
        for m in self.sending:
            f = m.after_send(arm, ok, cmd)
            if f is not None:
                out.append(f)
        if out:
            self._keep(out)
        return out

    def _keep(self, findings: list[Finding]) -> None:
        self.findings.extend(findings)
        del self.findings[:-200]


def goal_status(arm: Any) -> str:
    """Why the arm is or is not at its goal, in one line (for the teleop status and logs)."""
    if arm.state is ArmState.STOPPED:
        cause = next((e for e in reversed(arm.events.events) if e.state is ArmState.STOPPED), None)
        return f"stopped ({cause.kind.value}: {cause.detail})" if cause is not None else "stopped"
    traj = arm.trajectory
    if traj is None:
        return "hold" if arm.state is ArmState.HOLD else "no goal"
    if arm.at_goal:
        return "reached"
    fb = arm.last_feedback
    if arm.goal_progress < 1.0:
        return "moving"
    err = np.abs(fb.position - traj.positions[:, -1])
    j = int(np.argmax(err))
    why = f"not reached: joint {j} ({arm.model.joint_names[j]}) is {err[j]:.3f} rad from its goal"
    est = getattr(arm, "payload_estimate", None)
    if est is not None and abs(est.get("extra_mass_kg", 0.0)) >= 0.05:
        why += (f"; model mismatch: about {est['extra_mass_kg']:.2f} kg at the end effector the model does not "
                "know (Arm.set_payload)")
    elif not bool(np.all(np.abs(np.nan_to_num(fb.velocity)) <= arm.safety.at_goal_velocity_tolerance)):
        why += "; still moving"
    return why
