"""Collision model of an arm and its workspace: shapes, the workspace from the config, MuJoCo queries.

* :mod:`~hebictl.collision.shapes` - the shape type every source produces;
* :mod:`~hebictl.collision.hrdf` - an HRDF arm's shapes from its element types (one table);
* :mod:`~hebictl.collision.files` - URDF/SDF/MJCF collision geometry kept by the readers;
* :mod:`~hebictl.collision.workspace` - ``user_data.workspace`` of a robot config;
* :mod:`~hebictl.collision.world` - :class:`CollisionWorld`, distances at a joint position;
* :mod:`~hebictl.collision.path` - checking a trajectory along its whole path.
"""

from hebictl.collision.shapes import Shape
from hebictl.collision.workspace import Workspace, workspace_from
from hebictl.collision.world import CollisionWorld, Proximity

__all__ = ["CollisionWorld", "Proximity", "Shape", "Workspace", "workspace_from"]
