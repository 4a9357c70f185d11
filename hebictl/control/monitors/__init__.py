"""Execution monitoring: every cycle, is the arm doing what it is commanded to?

One module per monitor (contact, tracking, payload/model mismatch, delivery, control gap, IMU,
late feedback, damp sinking, double-shoulder mirror), each reporting
:class:`~hebictl.control.monitors.finding.Finding` values that the Arm reacts to; the
:class:`~hebictl.control.monitors.suite.MonitorSuite` runs them. Thresholds, reactions and the
reasoning behind them: docs/monitors.md.
"""

from hebictl.control.monitors.finding import Finding
from hebictl.control.monitors.payload import Payload
from hebictl.control.monitors.suite import MonitorSuite, goal_status

__all__ = ["Finding", "MonitorSuite", "Payload", "goal_status"]
