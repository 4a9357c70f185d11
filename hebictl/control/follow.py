"""Leader-follower: one arm (the follower) takes another's (the leader's) joint positions, under one
supervisor, with the leader feeling what the follower touches.

The pieces, each small and testable on its own:

* :class:`JointMap` - which leader joint (and sign, offset) drives each follower joint;
* :class:`FollowPlugin` - an arm plugin on the follower: while active, it moves the follower's
  command toward the mapped leader position, each cycle by at most ``max_relative_target`` [rad]
  (LeRobot's per-step clip), within the joint limits and slowed by the collision world as a jog is;
  the arm then clamps, sends and monitors the command as any other (contact, tracking, limits);
* :class:`HapticPlugin` - an arm plugin on the leader: adds ``gain`` x the follower's external-torque
  estimate (the contact observer's residual, ``arm.monitors.residual``) mapped back through the joint
  map, clipped to ``max_effort``; so the leader is pushed back the way the follower is pushed;
* :class:`LeaderFollower` - the state machine (one table, :data:`TRANSITIONS`: STARTUP, HOMING,
  ALIGNING, IDLE, FOLLOW, DISCONNECTED, EXIT as in HEBI's ``ex_leader_follower.py``) and the group
  supervisor: a fault, stop or e-stop of either arm stops the other with one group event naming the
  cause; nothing resumes by itself; after a fault (an M-stop included) or a stop of following, the
  follower is aligned again (the gate, then a minimum-jerk goal through the arm's admission) before
  it follows.

The alignment gate is GELLO's: a joint further than ``align_threshold`` (0.8 rad) from the leader
refuses to start (the operator brings the leader closer); within it, the follower gets a
minimum-jerk goal to the leader's pose, planned and admitted by :meth:`Arm.set_goal`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.collision.attach import world_of
from hebictl.control.goal import Goal
from hebictl.control.group import ArmGroup, GroupEvent
from hebictl.control.plugins import ArmPlugin
from hebictl.control.safety import ArmState
from hebictl.control.supervisor import Mode
from hebictl.errors import CommandRejected, ConfigError

if TYPE_CHECKING:
    from hebictl.control.arm import Arm

#: [rad] GELLO's gate: no joint may start further than this from the leader
ALIGN_THRESHOLD = 0.8
#: [rad per cycle] the follower's command moves at most this far per cycle (4 rad/s at 200 Hz)
MAX_RELATIVE_TARGET = 0.02
#: [s] the alignment goal's duration per radian of the largest joint error (at least MIN_ALIGN_TIME)
ALIGN_TIME_PER_RAD = 2.0
MIN_ALIGN_TIME = 0.5
#: haptic feedback: leader effort = HAPTIC_GAIN x the follower's external torque, clipped per joint to
#: MAX_HAPTIC_EFFORT [N·m] and to MAX_HAPTIC_FRACTION of the leader joint's rated effort (a wrist module
#: pushed with 10 N·m left its scripted path by 0.22 rad on the sim: the leader must stay movable)
HAPTIC_GAIN = 1.0
MAX_HAPTIC_EFFORT = 10.0
MAX_HAPTIC_FRACTION = 0.25
#: [m/s²] a follow step closing in on a body or the workspace can still stop at this deceleration
STOP_DECELERATION = 0.5


@dataclass(frozen=True)
class JointMap:
    """Follower joint ``j`` = ``signs[j]`` x leader joint ``source[j]`` + ``offsets[j]``."""

    source: tuple[int, ...]
    signs: tuple[float, ...]
    offsets: tuple[float, ...]

    @classmethod
    def identity(cls, dof: int) -> JointMap:
        return cls(tuple(range(dof)), (1.0,) * dof, (0.0,) * dof)

    @classmethod
    def build(cls, leader_dof: int, follower_dof: int, source: Sequence[int] | None = None,
              signs: Sequence[float] | None = None, offsets: Sequence[float] | None = None) -> JointMap:
        """A checked map; without ``source`` the arms need the same joint count."""
        if source is None:
            if leader_dof != follower_dof:
                raise ConfigError(f"the leader has {leader_dof} joints, the follower {follower_dof}: "
                                  "give a joint map (follower joint -> leader joint)", key="joint_map")
            source = range(follower_dof)
        src = tuple(int(s) for s in source)
        if len(src) != follower_dof or any(not 0 <= s < leader_dof for s in src):
            raise ConfigError(f"joint_map: {follower_dof} leader joints in 0..{leader_dof - 1} needed, got {src}",
                              key="joint_map")
        sg = tuple(float(s) for s in (signs if signs is not None else (1.0,) * follower_dof))
        of = tuple(float(o) for o in (offsets if offsets is not None else (0.0,) * follower_dof))
        if len(sg) != follower_dof or len(of) != follower_dof or any(abs(s) != 1.0 for s in sg):
            raise ConfigError("joint_map: one sign (+1/-1) and one offset per follower joint", key="joint_map")
        return cls(src, sg, of)

    def to_follower(self, leader_q: FloatArray) -> FloatArray:
        return np.asarray(self.signs) * leader_q[list(self.source)] + np.asarray(self.offsets)

    def rate_to_follower(self, leader_v: FloatArray) -> FloatArray:
        return np.asarray(self.signs) * leader_v[list(self.source)]

    def torque_to_leader(self, follower_tau: FloatArray, leader_dof: int) -> FloatArray:
        """A follower joint torque on the leader joint that drives it (summed where several do)."""
        out = np.zeros(leader_dof)
        np.add.at(out, list(self.source), np.asarray(self.signs) * follower_tau)
        return out


class FollowPlugin(ArmPlugin):
    """The follower's command steps toward :attr:`target` while :attr:`active` (module doc)."""

    type_name = "LeaderFollow"

    def __init__(self, max_relative_target: float = MAX_RELATIVE_TARGET, name: str = "leaderFollow") -> None:
        super().__init__(name, enabled=True)
        if not max_relative_target > 0.0:
            raise ConfigError(f"max_relative_target must be > 0 rad, got {max_relative_target}",
                              key="max_relative_target")
        self.max_step = float(max_relative_target)
        self.active = False
        self.target = np.zeros(0)
        self.target_velocity = np.zeros(0)
        self.position = np.zeros(0)
        self.velocity = np.zeros(0)
        #: per cycle: how far the clip held the command back from the target [rad, max over joints]
        self.clipped = 0.0
        self._arm: Arm | None = None

    def on_associated(self, arm: Arm) -> None:  # type: ignore[override]  # reads the Arm's limits and model
        n = arm.dof
        self.target, self.target_velocity, self.position = np.zeros(n), np.zeros(n), np.zeros(n)
        self.velocity = np.zeros(n)
        self._arm = arm

    def start(self, position: ArrayLike) -> None:
        """Follow from ``position`` (the follower's command, where the alignment left it)."""
        self.position[:] = np.asarray(position, dtype=np.float64)
        self.target[:] = self.position
        self.target_velocity.fill(0.0)
        self.velocity.fill(0.0)
        self.active = True

    def update(self, arm: Arm, dt: float) -> bool:  # type: ignore[override]  # an Arm, as on_associated
        if not self.active:
            return True
        if arm.state is not ArmState.RUNNING or arm.mode is Mode.BRAKE:
            self.active = False  # a fault or a stop owns the arm now
            return True
        # aim one cycle ahead along the leader's velocity: the command takes effect for the next period,
        # and the leader's sample is already a cycle old (without it the follower lagged 69 mrad at 1.2 rad/s)
        aim = self.target + self.target_velocity * dt
        step = np.clip(aim - self.position, -self.max_step, self.max_step)
        nxt = np.clip(self.position + step, arm.limits.position_min, arm.limits.position_max)
        world = world_of(arm.model)
        if world is not None and dt > 0.0:
            scale = world.approach_scale(self.position, nxt, dt, STOP_DECELERATION)
            nxt = self.position + (nxt - self.position) * scale
        self.clipped = float(np.max(np.abs(self.target - nxt)))
        # the leader's velocity as the feed-forward, within what this cycle's (clipped) step allows
        velocity = np.clip(self.target_velocity, -np.abs(nxt - self.position) / dt, np.abs(nxt - self.position) / dt) \
            if dt > 0.0 else np.zeros_like(nxt)
        accel = (velocity - self.velocity) / dt if dt > 0.0 else np.zeros_like(nxt)
        self.position[:] = nxt
        self.velocity[:] = velocity
        cmd = arm.pending_command
        cmd.position[:] = nxt
        cmd.velocity[:] = velocity
        # the rigid-body torque of the commanded acceleration, fed forward as the jog does (less what the
        # arm's dynamics plugin already added): without it each joint finds it through its position error
        cmd.effort += arm.brake_planner.missing_effort((nxt, velocity, accel), arm.plugins)
        return True


class HapticPlugin(ArmPlugin):
    """Adds :attr:`effort` [N·m] (set each cycle by :class:`LeaderFollower`) to the leader's command."""

    type_name = "LeaderHaptics"

    def __init__(self, name: str = "leaderHaptics") -> None:
        super().__init__(name, enabled=True)
        self.effort = np.zeros(0)

    def on_associated(self, arm: Arm) -> None:  # type: ignore[override]  # an Arm, as FollowPlugin
        self.effort = np.zeros(arm.dof)

    def update(self, arm: Arm, dt: float) -> bool:  # type: ignore[override]
        super().update(arm, dt)
        arm.pending_command.effort += self.enabled_ratio * self.effort
        return True


class FollowState(enum.Enum):
    """The leader-follower's states (HEBI's ``ex_leader_follower.py``)."""

    STARTUP = "startup"            # waiting for both arms' feedback
    HOMING = "homing"              # the follower going to its home pose (if one is given)
    ALIGNING = "aligning"          # the follower's minimum-jerk goal to the leader's pose
    IDLE = "idle"                  # both arms holding; waiting for an operator's follow
    FOLLOW = "follow"              # the follower takes the leader's position each cycle
    DISCONNECTED = "disconnected"  # an arm faulted, stopped or lost: every arm held until clear()
    EXIT = "exit"


class FollowEvent(enum.Enum):
    FEEDBACK = "feedback"          # both arms have fresh feedback
    HOMED = "homed"
    FOLLOW = "follow"              # the operator asks to follow (passes the gate)
    REFUSED = "refused"            # ... the gate refused it
    ALIGNED = "aligned"
    STOP = "stop"                  # the operator stops following
    FAULT = "fault"                # an arm faulted, stopped or stopped answering
    CLEARED = "cleared"            # the operator cleared every arm's fault
    EXIT = "exit"


S, E = FollowState, FollowEvent
#: (state, event) -> next state: the whole machine; any other pair leaves the state as it is
TRANSITIONS: dict[tuple[FollowState, FollowEvent], FollowState] = {
    (S.STARTUP, E.FEEDBACK): S.HOMING,
    (S.HOMING, E.HOMED): S.IDLE,
    (S.IDLE, E.FOLLOW): S.ALIGNING,
    (S.IDLE, E.REFUSED): S.IDLE,
    (S.ALIGNING, E.ALIGNED): S.FOLLOW,
    (S.ALIGNING, E.STOP): S.IDLE,
    (S.FOLLOW, E.STOP): S.IDLE,
    **{(s, E.FAULT): S.DISCONNECTED for s in (S.STARTUP, S.HOMING, S.ALIGNING, S.IDLE, S.FOLLOW)},
    (S.DISCONNECTED, E.CLEARED): S.IDLE,
    **{(s, E.EXIT): S.EXIT for s in S if s is not S.EXIT},
}


@dataclass
class FollowSettings:
    align_threshold: float = ALIGN_THRESHOLD
    max_relative_target: float = MAX_RELATIVE_TARGET
    haptic_gain: float = HAPTIC_GAIN
    max_haptic_effort: float = MAX_HAPTIC_EFFORT
    #: follower home pose (HOMING), or None to skip homing
    home: FloatArray | None = None
    #: [rad] ALIGNING ends when every follower joint is this close to the alignment goal, at rest
    aligned_tolerance: float = 0.02
    extra: dict[str, float] = field(default_factory=dict)


class LeaderFollower:
    """Two arms in one loop: ``step()`` once per cycle updates, supervises, follows and sends both.

    The operator's inputs are :meth:`request_follow`, :meth:`request_stop`, :meth:`clear` and
    :meth:`request_exit`; :attr:`state` and :attr:`events` say what happened."""

    def __init__(self, leader: Arm, follower: Arm, *, joint_map: JointMap | None = None,
                 settings: FollowSettings | None = None, names: tuple[str, str] = ("leader", "follower"),
                 observe: Callable[[], None] | None = None) -> None:
        """``observe``: called each cycle after the leader's update and before the follower's: two arms
        of a multi-arm config (:meth:`hebictl.wiring.multi.MultiArms.observe`) give the follower's
        collision world the leader where it is measured now, so the follower's goals and steps treat
        the leader as the obstacle it is."""
        self.leader, self.follower = leader, follower
        self.observe = observe
        self.map = joint_map or JointMap.build(leader.dof, follower.dof)
        self.settings = settings or FollowSettings()
        self.names = names
        self.state = FollowState.STARTUP
        self.events: list[GroupEvent] = []
        self.follow = FollowPlugin(self.settings.max_relative_target)
        self.haptics = HapticPlugin()
        _insert_before_forwarders(follower, self.follow)
        _insert_before_forwarders(leader, self.haptics)
        # a hand moves the leader: its contact observer sees that hand as an external torque by design,
        # and a hand pushing it down in gravity compensation is what gravcomp_sinking cannot tell from a
        # sinking load; so on the leader both are recorded, never a reason to hold or stop both arms
        # (the follower's own monitors, limits and collision world still bound where it goes)
        leader.monitors.contact.reaction = "event"
        leader.monitors.gravcomp.reaction = "event"
        #: the supervisor across both arms (a fault of either stops both, one event)
        self.group = ArmGroup({names[0]: leader, names[1]: follower})
        self._want_follow = False
        self.cycles = 0

    # ---------------------------------------------------------------- operator inputs
    def request_follow(self) -> None:
        """Align (if the gate allows) and then follow; checked at the next ``step``."""
        self._want_follow = True

    def request_stop(self) -> None:
        if self.state in (S.FOLLOW, S.ALIGNING):
            self.follow.active = False
            self._hold_follower("follow stopped by the operator")
            self._fire(E.STOP, "", "operator stop: holding")
        self._want_follow = False

    def clear(self) -> bool:
        """Clear every arm's fault (an operator's act); IDLE if both arms then run with feedback."""
        if self.state is not S.DISCONNECTED:
            return False
        if not self.group.clear("leader-follower: cleared by the operator; holding where the arm is"):
            self._note("clear_refused", "", "an M-stop is still pressed")
            return False
        self._fire(E.CLEARED, "", "faults cleared: holding; follow again to re-align")
        return True

    def request_exit(self) -> None:
        for name in self.names:
            self.group.hold(name, "leader-follower exits")
        self.follow.active = False
        self._fire(E.EXIT, "", "exit")

    @property
    def arms(self) -> tuple[Arm, Arm]:
        return self.leader, self.follower

    # ---------------------------------------------------------------- the cycle
    def step(self) -> None:
        """One cycle: read both arms, supervise, advance the state machine, command, send both."""
        self.cycles += 1
        self.haptics.effort[:] = self._haptic_effort()
        self.group.update_one(self.names[0])
        if self.observe is not None:
            self.observe()
        if self.state is S.FOLLOW:
            self._following()   # the follower takes the leader's sample of this same cycle
        self.group.update_one(self.names[1])
        self._supervise()
        handler = _HANDLERS.get(self.state)
        if handler is not None:
            handler(self)
        self.group.send()

    def _haptic_effort(self) -> FloatArray:
        if self.state is not S.FOLLOW or not self.follow.active:
            return np.zeros(self.leader.dof)
        tau = self.map.torque_to_leader(self.follower.monitors.residual, self.leader.dof)
        rated = np.where(np.isfinite(self.leader.limits.effort_max), self.leader.limits.effort_max, np.inf)
        lim = np.minimum(self.settings.max_haptic_effort, MAX_HAPTIC_FRACTION * rated)
        return np.clip(self.settings.haptic_gain * tau, -lim, lim)

    def _supervise(self) -> None:
        """The group's rule (every other arm stopped, one event naming the arm and the cause)."""
        if self.state in (S.DISCONNECTED, S.EXIT):
            return
        tripped = self.group.supervise()
        if tripped is not None:
            self.follow.active = False
            self._want_follow = False
            self._fire(E.FAULT, tripped.arm, tripped.detail)

    # ---------------------------------------------------------------- per state
    def _startup(self) -> None:
        if all(self.group.fresh.values()):
            self._fire(E.FEEDBACK, "", "both arms have feedback")
            if self.settings.home is not None:
                self._goal(self.settings.home, "homing")
            else:
                self._fire(E.HOMED, "", "no home pose: holding where the follower is")
                self._hold_follower("no home pose")

    def _homing(self) -> None:
        if self._settled():
            self._hold_follower("homed")
            self._fire(E.HOMED, "follower", "at home")

    def _idle(self) -> None:
        if not self._want_follow:
            return
        self._want_follow = False
        target = self.map.to_follower(self.leader.last_feedback.position)
        err = np.abs(target - self.follower.last_feedback.position)
        j = int(np.argmax(err))
        if err[j] > self.settings.align_threshold:
            self._fire(E.REFUSED, "follower", f"joint {j} ({self.follower.model.joint_names[j]}) is "
                       f"{err[j]:.3f} rad from the leader (gate {self.settings.align_threshold:g} rad): "
                       "bring the leader closer")
            return
        if self._goal(target, "aligning"):
            self._fire(E.FOLLOW, "follower", f"aligning: largest error {err[j]:.3f} rad (joint {j})")

    def _aligning(self) -> None:
        if not self._settled():
            return
        self.follow.start(self.follower.pending_command.position)
        self._fire(E.ALIGNED, "follower", "aligned: following")

    def _following(self) -> None:
        fb = self.leader.last_feedback
        self.follow.target[:] = self.map.to_follower(fb.position)
        self.follow.target_velocity[:] = self.map.rate_to_follower(np.nan_to_num(fb.velocity))

    # ---------------------------------------------------------------- helpers
    def _settled(self) -> bool:
        f = self.follower
        if f.trajectory is None or not f.at_goal:
            return False
        return bool(np.all(np.abs(f.last_feedback.position - f.trajectory.positions[:, -1])
                           <= self.settings.aligned_tolerance))

    def _goal(self, position: FloatArray, why: str) -> bool:
        err = float(np.max(np.abs(position - self.follower.last_feedback.position)))
        duration = max(MIN_ALIGN_TIME, ALIGN_TIME_PER_RAD * err)
        self.group.running(self.names[1])
        try:
            self.follower.set_goal(Goal(self.follower.dof).add_waypoint(t=duration, position=position))
        except CommandRejected as exc:
            self._note("goal_refused", "follower", f"{why}: {exc}")
            self._hold_follower(f"{why} refused")
            return False
        return True

    def _hold_follower(self, why: str) -> None:
        self.group.hold(self.names[1], f"leader-follower: {why}")

    def _fire(self, event: FollowEvent, arm: str, detail: str) -> None:
        nxt = TRANSITIONS.get((self.state, event))
        if nxt is None:
            return
        self._note(event.value, arm, f"{self.state.value} -> {nxt.value}: {detail}")
        self.state = nxt

    def _note(self, kind: str, arm: str, detail: str) -> None:
        self.events.append(GroupEvent(self.follower.clock.now(), kind, arm, detail))


_HANDLERS = {
    S.STARTUP: LeaderFollower._startup,
    S.HOMING: LeaderFollower._homing,
    S.IDLE: LeaderFollower._idle,
    S.ALIGNING: LeaderFollower._aligning,
}

def _insert_before_forwarders(arm: Arm, plugin: ArmPlugin) -> None:
    """Add ``plugin`` ahead of the first plugin that forwards the finished command to other modules
    (its declared ``forwards_command`` capability, a double shoulder's mirror): follow and haptics
    must write before it."""
    arm.add_plugin(plugin)
    first = next((i for i, p in enumerate(arm.plugins) if p.forwards_command), None)
    if first is not None:
        arm.plugins.remove(plugin)
        arm.plugins.insert(first, plugin)
