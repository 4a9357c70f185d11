"""x_xy XML, the format of imt-ring (formerly x_xy): bodies, joints and geoms.

The reader is :mod:`hebictl.formats.xxy.reader`.
"""

from hebictl.errors import XxyWarning
from hebictl.formats.xxy.reader import load_xxy, load_xxy_string

__all__ = ["XxyWarning", "load_xxy", "load_xxy_string"]
