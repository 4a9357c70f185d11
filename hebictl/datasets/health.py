"""When a frame is taken, and whether an episode's timing and safety make it worth keeping.

A dataset's rows are meant to be evenly spaced at ``fps`` (LeRobot writes ``timestamp =
frame_index / fps``), but the control loop that feeds them can be late: a loaded machine, a
starved process. The sampler takes one frame per slot of the nominal grid from a faster loop and
counts the slots it had to skip; the verdict then says whether the episode's real rate was close
enough to the nominal one (ALOHA re-records an episode whose mean rate is under 42 of 50 Hz) and
how many safety events happened, so training can leave unhealthy episodes out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: ALOHA's rule: an episode whose mean loop rate is under 42 of 50 Hz is recorded again
ALOHA_MIN_RATE_FRACTION = 42.0 / 50.0
#: a capture this close before its slot counts as on time (float round-off of t0 + k / fps)
SLOT_EPS_S = 1e-9


class FrameSampler:
    """One frame per slot ``t0 + k / fps`` out of calls at any (faster) rate, on the caller's clock.

    ``offer(t)`` answers whether the caller should record a frame at ``t``. A call later than one
    whole slot skips the slots it passed (each a deadline miss) instead of recording a burst of
    frames to catch up, so the frames stay one per slot and the misses show in the verdict.
    """

    def __init__(self, fps: float, t0: float) -> None:
        if not fps > 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self.period = 1.0 / float(fps)
        self.t0 = float(t0)
        self.slot = 0
        self.misses = 0
        self.capture_times: list[float] = []

    def offer(self, t: float) -> bool:
        """True if a frame is due at ``t`` (the caller then records it), counting skipped slots."""
        due = self.t0 + self.slot * self.period
        if t < due - SLOT_EPS_S:
            return False
        late_slots = math.floor((t - due + SLOT_EPS_S) / self.period)
        self.misses += late_slots
        self.slot += late_slots + 1
        self.capture_times.append(float(t))
        return True


@dataclass(frozen=True)
class EpisodeHealth:
    """An episode's verdict: ``healthy`` unless one of ``reasons`` says why not."""

    frames: int
    mean_rate_hz: float
    min_rate_hz: float
    deadline_misses: int
    safety_events: int
    healthy: bool
    reasons: tuple[str, ...]


def judge_episode(capture_times: Sequence[float], fps: float, *, deadline_misses: int, safety_events: int,
                  min_rate_fraction: float = ALOHA_MIN_RATE_FRACTION,
                  unhealthy_on_safety: bool = False) -> EpisodeHealth:
    """The verdict on one episode from its frames' capture times (ALOHA's mean-rate rule).

    The mean rate is ``(frames - 1) / (last - first)``, i.e. one over the mean interval, as ALOHA
    computes it. Safety events are reported; they make the episode unhealthy only with
    ``unhealthy_on_safety`` (a contact can be part of the task).
    """
    t = np.asarray(capture_times, dtype=float)
    min_rate = min_rate_fraction * float(fps)
    rate = (t.size - 1) / float(t[-1] - t[0]) if t.size >= 2 and t[-1] > t[0] else 0.0
    reasons: list[str] = []
    if t.size < 2:
        reasons.append(f"{t.size} frame(s): too short to judge")
    elif rate < min_rate:
        reasons.append(f"mean rate {rate:.1f} Hz < {min_rate:.1f} Hz ({min_rate_fraction:.2f} of {fps:g})")
    if unhealthy_on_safety and safety_events:
        reasons.append(f"{safety_events} safety event(s)")
    return EpisodeHealth(frames=int(t.size), mean_rate_hz=float(rate), min_rate_hz=float(min_rate),
                         deadline_misses=int(deadline_misses), safety_events=int(safety_events),
                         healthy=not reasons, reasons=tuple(reasons))
