"""OpenRAVE XML (``<Environment>``, ``<Robot>``, ``<KinBody>``).

The reader is :mod:`hebictl.formats.openrave.reader`; masses and inertia are in :mod:`~hebictl.formats.openrave.mass`.
"""

from hebictl.errors import OpenraveWarning
from hebictl.formats.openrave.reader import load_openrave, load_openrave_string

__all__ = ["OpenraveWarning", "load_openrave", "load_openrave_string"]
