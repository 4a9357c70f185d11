"""DART's SKEL format (``<skel><world>``): skeletons, bodies, joints and shapes.

The reader is :mod:`hebictl.formats.skel.reader`; shapes and their inertia are in :mod:`~hebictl.formats.skel.shapes`.
"""

from hebictl.errors import SkelWarning
from hebictl.formats.skel.reader import load_skel, load_skel_string

__all__ = ["SkelWarning", "load_skel", "load_skel_string"]
