"""Demonstrations recorded as LeRobot v3.0 datasets, written with pyarrow (no torch, no lerobot).

:class:`~hebictl.datasets.lerobot_v3.LeRobotWriter` keeps episodes (start, stop, discard,
re-record) and writes LeRobot's v3.0 layout; :class:`~hebictl.datasets.health.FrameSampler` takes
frames at the dataset's rate out of a faster control loop and judges each episode's health
(ALOHA's rule: a mean rate under 42/50 of the nominal one is unhealthy). See docs/datasets.md.
"""

from hebictl.datasets.health import EpisodeHealth, FrameSampler, judge_episode
from hebictl.datasets.lerobot_v3 import CODEBASE_VERSION, Frame, LeRobotWriter, SavedEpisode

__all__ = ["CODEBASE_VERSION", "EpisodeHealth", "Frame", "FrameSampler", "LeRobotWriter", "SavedEpisode",
           "judge_episode"]
