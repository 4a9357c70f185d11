"""The one safety path every input source goes through, before any app sees a sample.

Three rules, the same for a phone, the MQTT topic and a replayed recording:

* **Stale input holds.** No sample for longer than the modules' command lifetime (the config's
  ``command_lifetime``, HEBI's 0.25 s) marks the link stale in the first cycle after it runs out;
  the frame says so (``went_stale``) and the app holds the arm in that cycle
  (:meth:`hebictl.inputs.apps.base.App.on_stale`). The hold therefore starts within the lifetime
  plus one control cycle of the last sample.
* **After a reconnect nothing moves until the next enable edge.** The first sample after a stale
  link is a baseline only: it carries no button edges (a button held through the gap is not a
  press), and ``armed`` stays False until the app's enable button goes down (a +1 edge). While not
  armed, every edge but the enable and quit buttons' is dropped. At start-up the first sample is
  compared with every button up, as hebi-py's ``MobileIO`` does (a toggle button already on is a
  press), and motion is armed: the apps start in a state that holds or homes.
* **Every pose target passes the arm's admission** (:class:`PoseGate`): finite, inside the
  Cartesian limits (:class:`CartesianLimits`: a box, the arm's reach, the table of
  ``user_data.workspace``), an inverse-kinematics solution inside the joint limits, clear of the
  arm's own body and its workspace, and then ``Arm.set_goal`` (its collision-aware admission of the
  whole path, speed and effort limits). A refusal keeps the arm on its last admitted goal and is
  counted with its reason.

Link states (one table, :data:`LINK_TRANSITIONS`):

=========  =================================  =========
link       on                                 next
=========  =================================  =========
none       a sample                           live (edges against all-up, armed)
live       a sample                           live
live       no sample for > lifetime           stale (went_stale; not armed)
stale      a sample                           live (baseline, came_back; not armed)
=========  =================================  =========
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.collision.attach import world_of
from hebictl.control.goal import Goal
from hebictl.errors import CommandRejected
from hebictl.inputs.state import CHANNELS, InputState, button_diff, released

if TYPE_CHECKING:
    from hebictl.control.arm import Arm


class Link(Enum):
    NONE = "none"
    LIVE = "live"
    STALE = "stale"


#: (link, a sample arrived) -> next link
LINK_TRANSITIONS: dict[tuple[Link, bool], Link] = {
    (Link.NONE, True): Link.LIVE, (Link.NONE, False): Link.NONE,
    (Link.LIVE, True): Link.LIVE,   # (Link.LIVE, False): LIVE until the lifetime runs out, then STALE
    (Link.STALE, True): Link.LIVE, (Link.STALE, False): Link.STALE,
}

NO_EDGES = (0,) * CHANNELS


@dataclass(frozen=True)
class Frame:
    """What an app gets each control cycle.

    ``state``: the newest sample (None before the first); ``fresh``: it arrived this cycle;
    ``edges``: hebi-py's button diffs of this sample against the previous one (all 0 when not
    fresh, on a baseline, and, while not armed, for every button but enable and quit);
    ``armed``: motion allowed (an enable edge since the last baseline); ``went_stale``: the link
    went stale this cycle; ``came_back``: this sample is the first after no input; ``age`` [s]
    since the newest sample (inf before the first)."""

    now: float
    state: InputState | None
    fresh: bool
    edges: tuple[int, ...]
    armed: bool
    link: Link
    went_stale: bool = False
    came_back: bool = False
    age: float = math.inf

    def edge(self, index: int) -> int:
        """The edge of button ``index`` (1..8, HEBI's numbering)."""
        return self.edges[index - 1]

    def pressed(self, index: int) -> bool:
        """Button ``index`` went down this cycle (``get_button_diff(index) == 1``)."""
        return self.edges[index - 1] == 1


class InputGuard:
    """Applies the link rules of the module docstring to a stream of samples.

    ``lifetime`` [s]: the stale threshold (the config's command lifetime); ``enable``: the app's
    enable button (1..8); ``quit``: its quit button, whose edges pass while not armed."""

    def __init__(self, lifetime: float, enable: int, quit: int | None = None) -> None:
        if not (math.isfinite(lifetime) and lifetime > 0.0):
            raise ValueError(f"the input lifetime must be finite and > 0 s, got {lifetime}")
        self.lifetime = float(lifetime)
        self.enable = int(enable)
        self.quit = quit
        self.link = Link.NONE
        self.armed = False
        self.last: InputState | None = None
        self.stale_count = 0
        self.reconnects = 0

    def step(self, now: float, sample: InputState | None) -> Frame:
        """The frame of this cycle, given the newest sample the source had (None: nothing new)."""
        if sample is None:
            return self._quiet(now)
        came_back = self.link is not Link.LIVE
        previous: InputState | None = self.last
        if self.link is Link.NONE:  # start-up: hebi-py's MobileIO starts from every button up
            previous, self.armed = released(sample.t), True
        elif self.link is Link.STALE:  # a reconnect: a baseline, and no motion before the enable edge
            previous, self.armed = None, False
            self.reconnects += 1
        self.link = LINK_TRANSITIONS[(self.link, True)]
        self.last = sample
        edges = tuple(button_diff(previous, sample, i + 1) for i in range(CHANNELS))
        if not self.armed:
            if edges[self.enable - 1] == 1:
                self.armed = True
            else:
                keep = {self.enable - 1} | ({self.quit - 1} if self.quit is not None else set())
                edges = tuple(e if i in keep else 0 for i, e in enumerate(edges))
        return Frame(now, sample, True, edges, self.armed, self.link, came_back=came_back,
                     age=max(0.0, now - sample.t))

    def _quiet(self, now: float) -> Frame:
        age = now - self.last.t if self.last is not None else math.inf
        went_stale = self.link is Link.LIVE and age > self.lifetime
        if went_stale:
            self.link = Link.STALE
            self.armed = False
            self.stale_count += 1
        else:
            self.link = LINK_TRANSITIONS.get((self.link, False), self.link)
        return Frame(now, self.last, False, NO_EDGES, self.armed, self.link, went_stale=went_stale, age=age)


# ---------------------------------------------------------------------- pose targets
@dataclass(frozen=True)
class CartesianLimits:
    """Where a pose target may put the end effector [m, world frame]: inside the box ``low``..``high``
    and within ``reach`` of ``origin`` (the first joint's position: farther is out of reach anyway,
    and IK would only return its closest miss)."""

    low: tuple[float, float, float]
    high: tuple[float, float, float]
    reach: float
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @classmethod
    def of_arm(cls, arm: Arm, box: tuple[float, ...] | None = None) -> CartesianLimits:
        """The arm's limits: its reach (the sum of the distances between successive output frames at
        the home pose, or zero), and the box ``box`` (x0 y0 z0 x1 y1 z1), else unbounded, with its floor
        raised to the table of ``user_data.workspace`` where there is one."""
        q = np.asarray(arm.user_data.get("home_position", np.zeros(arm.dof)), dtype=np.float64)
        if q.shape != (arm.dof,):
            q = np.zeros(arm.dof)
        frames = arm.model.forward_kinematics(q, frame="output")
        points = np.vstack([frames[:, :3, 3], arm.model.end_effector(q)[:3, 3]])
        reach = float(np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1)))
        origin = points[0]
        lo = np.full(3, -np.inf) if box is None else np.asarray(box[:3], dtype=np.float64)
        hi = np.full(3, np.inf) if box is None else np.asarray(box[3:], dtype=np.float64)
        table = (arm.user_data.get("workspace") or {}).get("table") if isinstance(
            arm.user_data.get("workspace"), dict) else None
        if isinstance(table, dict) and isinstance(table.get("height"), int | float):
            lo[2] = max(lo[2], float(table["height"]))
        return cls((float(lo[0]), float(lo[1]), float(lo[2])), (float(hi[0]), float(hi[1]), float(hi[2])),
                   reach, (float(origin[0]), float(origin[1]), float(origin[2])))

    def check(self, xyz: FloatArray) -> None:
        """Raise ``CommandRejected("outside_workspace")`` naming the bound ``xyz`` breaks."""
        if not np.all(np.isfinite(xyz)):
            raise CommandRejected("not_finite", "the pose target is not finite")
        for i, axis in enumerate("xyz"):
            if xyz[i] < self.low[i] or xyz[i] > self.high[i]:
                raise CommandRejected("outside_workspace", f"target {axis} = {xyz[i]:.4f} m is outside "
                                                           f"[{self.low[i]:.4f}, {self.high[i]:.4f}] m")
        distance = float(np.linalg.norm(xyz - np.asarray(self.origin)))
        if distance > self.reach:
            raise CommandRejected("outside_workspace", f"target is {distance:.4f} m from the base, beyond the "
                                                       f"arm's reach of {self.reach:.4f} m")


@dataclass
class PoseGate:
    """Turns a pose target into an admitted goal, or refuses it with a reason (counted)."""

    arm: Arm
    limits: CartesianLimits
    refused: Counter[str] = field(default_factory=Counter)
    accepted: int = 0
    last_refusal: tuple[str, str] | None = None

    def solve(self, xyz: FloatArray, rotation: FloatArray, seed: FloatArray) -> FloatArray:
        """Joint positions for the pose (position and, on arms with 6 or more joints, orientation; on
        fewer, the tool's z axis where the arm can point it there, else the position alone), inside the
        joint limits and clear of the arm and its workspace."""
        self.limits.check(xyz)
        arm = self.arm
        lo, hi = arm.limits.position_min, arm.limits.position_max
        start = np.clip(np.where(np.isfinite(seed), seed, 0.0), lo, hi)
        kwargs: dict[str, Any] = ({"orientation": rotation} if arm.dof >= 6 else {"tip_axis": rotation[:, 2]})
        result = arm.inverse_kinematics(xyz, start, **kwargs)
        if not result.converged and arm.dof < 6:  # the axis is out of reach there: the position alone
            result = arm.inverse_kinematics(xyz, start)
        if not result.converged:
            raise CommandRejected("ik_failed", f"no joint solution within the joint limits: position error "
                                               f"{result.position_error:.3g} m, orientation error "
                                               f"{result.orientation_error:.3g} rad")
        q = np.asarray(result.q, dtype=np.float64)
        world = world_of(arm.model)
        hit = world.collision(q) if world is not None else None
        if hit is not None:
            what = (f"{-hit.gap * 1000:.1f} mm into each other" if hit.gap < 0
                    else f"{hit.gap * 1000:.1f} mm apart, inside the clearance")
            raise CommandRejected("collision", f"the pose puts {hit.a} and {hit.b} {what}")
        return q

    def goal(self, xyz: FloatArray, rotation: FloatArray, seed: FloatArray, delay: float) -> bool:
        """Set a one-waypoint goal ``delay`` [s] ahead at the pose; False (and the reason counted in
        ``refused``, kept in ``last_refusal``) if any check or the arm's admission refuses it."""
        try:
            q = self.solve(xyz, rotation, seed)
            return self.joints(q, delay)
        except CommandRejected as exc:
            self._refuse(exc)
            return False

    def joints(self, q: FloatArray, delay: float) -> bool:
        """Set a one-waypoint joint goal ``delay`` [s] ahead through the arm's admission."""
        try:
            self.arm.set_goal(Goal(self.arm.dof).add_waypoint(t=delay, position=q))
        except CommandRejected as exc:
            self._refuse(exc)
            return False
        self.accepted += 1
        return True

    def _refuse(self, exc: CommandRejected) -> None:
        self.refused[exc.reason] += 1
        self.last_refusal = (exc.reason, exc.detail)
