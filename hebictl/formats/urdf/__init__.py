"""URDF: links, joints, inertials and frames into a :class:`RobotModel`.

Semantics follow the ROS URDF specification as implemented by urdfdom (which pinocchio, ROS and
MoveIt use), checked side by side with pinocchio and MuJoCo in the tests:

* The root link is welded to the world (``floating_base=True`` puts a free joint, named
  ``root_joint`` like pinocchio's, between the world and the root link).
* A link without ``<inertial>`` is massless. Inertia tensors are given in the ``<inertial>``
  origin's axes and stored rotated into the link axes.
* Joint origins are ``xyz`` + fixed-axis ``rpy`` (``R = Rz(yaw) Ry(pitch) Rx(roll)``); the axis
  (default ``1 0 0``, normalised) is in the joint frame. ``continuous`` joints are unbounded
  revolute joints with one coordinate (pinocchio uses cos/sin instead).
* ``planar`` joints become a chain of two massless bodies and the child: prismatic along ``u``,
  prismatic along ``v`` and revolute about the plane normal ``n`` (the joint axis), with
  coordinates ``<joint>_x``, ``<joint>_y``, ``<joint>_theta``. ``u`` is the coordinate axis least
  aligned with ``n`` projected onto the plane, ``v = n × u`` (for ``n = z``: x, y).
* ``floating`` joints are free joints (``x y z qw qx qy qz`` relative to the joint origin).
* ``<mimic>`` is kept in the joint's metadata; kinematics treat mimic joints as independent
  coordinates (as pinocchio 2 does) — apply ``q[j] = multiplier * q[leader] + offset`` yourself.
* ``<visual>``, ``<collision>``, materials and transmissions are kept as metadata. Mesh file
  names (``package://``, ``file://`` or relative) are resolved where possible; missing meshes are
  reported in ``model.metadata["missing_meshes"]`` and one warning, never an error.
* Drake's un-namespaced ``<frame name link xyz rpy>`` becomes a frame of kind ``"frame"``.
  Drake's extensions (:mod:`hebictl.formats.urdf.drake`, checked against Drake 1.51):
  ``<drake:joint>`` ball (quaternion), universal (``_axis1`` about x, ``_axis2`` about y: Drake
  ignores the axis), screw (``_rotation``, ``_translation``; ``drake:screw_thread_pitch`` in
  metadata ``screw_pitch``) and planar (also the standard spelling: plane from the axis as Drake
  does, damping one or three values); ``<limit drake:acceleration>`` → joint metadata
  ``max_acceleration``; a SimpleTransmission's ``<actuator>`` ``drake:rotor_inertia``,
  ``drake:gear_ratio``, ``drake:controller_gains`` → joint metadata and, as Drake applies them
  (one-DoF joint, effort limit not 0), ``Joint.armature`` = gear_ratio² · rotor_inertia (a screw's
  on ``_rotation``); ``<mimic>``/``<drake:mimic>`` metadata; ``drake:capsule``/``drake:ellipsoid``
  shapes, ``drake:proximity_properties`` and ``drake:declare_convex`` in visual/collision metadata
  (inertia stays the explicit ``<inertial>``); collision filter groups, ball constraints, bushings,
  tendon constraints and spring-dampers in ``model.metadata["drake"]``. Other namespaced
  elements and ``<gazebo>`` are ignored with a warning; ``xacro:`` elements are an error.
* Frames added: ``"com"`` (one per link with mass, at its centre of mass, link axes),
  ``"output"`` and ``"end_effector"`` (the frames of leaf links, in body order). A file written
  by :func:`hebictl.formats.urdf.writer.write_urdf` carries ``<hebictl:frame>`` elements instead,
  which restore the original frames exactly.
* Bodies (and so coordinates) follow the file's joint order when it lists parents first (files
  written by hebictl do), else depth-first with children in file order, like pinocchio.
* Limits written as ±1.7976931348623157e308 (the largest double, which hebictl's writer uses
  for "unbounded" because URDF has no infinity) read back as ±inf.
"""

from hebictl.errors import UrdfWarning
from hebictl.formats.urdf.reader import load_urdf, load_urdf_string
from hebictl.formats.urdf.writer import write_urdf

__all__ = ["UrdfWarning", "load_urdf", "load_urdf_string", "write_urdf"]
