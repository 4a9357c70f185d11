"""Type aliases shared by the whole package: one definition of each, imported everywhere."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
"""A float64 array: positions [rad or m], poses, Jacobians, efforts."""

__all__ = ["FloatArray"]
