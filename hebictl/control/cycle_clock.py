"""The control cycle's time as the Arm sees it: :class:`CycleClock`.

Why its own object: every mode's command depends on how long this cycle is (``dt``), what the
loop's usual period is (the rate limiter's step bound, a jog's step, a blind brake's lead) and
how old the last fresh sample is (whether the measured state may anchor a mode). Those were eight
Arm fields updated in three places; here one ``tick`` per cycle updates them, the same way
whether the cycle read a sample or waited in vain.
"""

from __future__ import annotations

__all__ = ["FRESH_S", "CycleClock"]

#: [s] a sample this old or younger is the arm's present state (this cycle's or the one before)
FRESH_S = 0.05


class CycleClock:
    """This cycle's time ``now`` and length ``dt``, the loop's ``nominal`` period, the rate
    limiter's period ``rate_dt``, and the last fresh sample: whether one came (``have_feedback``),
    its ``sequence`` number and when it came (``fresh_time``)."""

    __slots__ = ("_long_cycles", "dt", "fresh_time", "have_feedback", "nominal", "now", "rate_dt", "sequence")

    def __init__(self, now: float, nominal: float) -> None:
        self.now = now
        self.dt = 0.0
        #: [s] the loop's usual period (an average that ignores gaps): the rate limiter's step bound
        self.nominal = nominal
        self.rate_dt = 0.0
        self._long_cycles = 0  # consecutive cycles longer than 1.5 x the nominal period
        self.have_feedback = False
        self.sequence = -1
        self.fresh_time = now

    def tick(self, now: float, timeout: float | None = None) -> None:
        """Advance to the cycle at ``now``: ``dt`` and the nominal period, an average of the cycle
        periods. A cycle over 1.5 x it is a gap (a stall: the rate limiter counts it as one
        nominal period) unless three come in a row: then the loop runs slower (a slower rate) and
        that is the new period. ``timeout``: the cycle's read waited this long for feedback in
        vain; the cycle may take that much longer, and leaves the average alone."""
        dt = max(now - self.now, 0.0)
        self.dt = dt
        self.now = now
        nom = self.nominal
        if timeout is not None:
            self.rate_dt = min(dt, nom + timeout)
            return
        if 0.0 < dt <= 1.5 * nom:
            self.nominal = 0.95 * nom + 0.05 * dt
            self._long_cycles = 0
        elif dt > 0.0:
            self._long_cycles += 1
            if self._long_cycles >= 3:
                self.nominal, self._long_cycles = dt, 0
        self.rate_dt = min(dt, self.nominal)  # the rate limiter's period

    def sampled(self, now: float) -> None:
        """A fresh, finite sample came at ``now``."""
        self.have_feedback = True
        self.fresh_time = now

    def fresh(self, at: float | None = None, within: float = FRESH_S) -> bool:
        """The last sample is at most ``within`` old at ``at`` (default: this cycle's time)."""
        age = (self.now if at is None else at) - self.fresh_time
        return self.have_feedback and 0.0 <= age <= within
