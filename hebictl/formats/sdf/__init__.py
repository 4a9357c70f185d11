"""SDFormat (1.4-1.12): models, nested models, includes and worlds into a RobotModel.

Semantics follow the SDFormat specification as libsdformat implements it, checked side by side
with Drake (which parses SDF through libsdformat) on the corpus in the tests:

* **Frames.** Links, joints, ``<frame>`` elements and nested models are frames; ``<pose
  relative_to>`` and ``<frame attached_to>`` (1.7+) are resolved by
  :mod:`hebictl.formats.sdf.frames`, with the specification's errors for unknown names,
  ``__root__``, self references and cycles. Defaults: a link or nested model is posed in the
  model frame, a frame relative to what it is attached to (default the model frame), a joint
  relative to its child frame; a ``placement_frame`` places that frame instead of the model frame.
* **Versions.** In 1.4 files joint axes of top-level models are expressed in the model frame
  (libsdformat's 1.4→1.5 conversion adds ``use_parent_model_frame``); in 1.5/1.6
  ``use_parent_model_frame=true`` does the same; 1.7+ uses ``xyz/@expressed_in`` (default: the
  joint frame). ``relative_to``/``attached_to``/``canonical_link`` need 1.7+, ``placement_frame``
  1.8+, scoped references ``A::B::frame`` 1.8+, ``merge`` includes and ``rotation_format``/
  ``degrees`` poses 1.9+, ``screw_thread_pitch`` 1.10+, ``inertial/@auto`` 1.11+.
* **Names.** A model file's own links and joints keep their names; nested models prefix theirs
  (``arm::gripper::finger``). A world's models are all loaded with ``<model>::`` prefixes, or
  one of them (``model=``) with names relative to it.
* **Bodies.** Links without ``<inertial>`` weigh SDFormat's default 1 kg with unit inertia (as
  libsdformat and Drake). A link that no joint moves (a "free body" in a simulator) is welded
  to the world at its pose unless ``floating_base=True``, which gives it a free joint named
  after the link whose neutral configuration is that pose (files from hebictl's writer may name
  the joint and its frame in ``hebictl:free_joint``/``hebictl:free_joint_pose``). Links of ``<static>`` models are
  always welded, and static models may only have fixed joints (as Drake requires).
* **Joints.** revolute, continuous, prismatic, fixed and ball map to the kernel's kinds. The
  others become chains of massless bodies with one-DoF joints named ``<joint>_<suffix>``:
  universal and revolute2 → ``_axis1``, ``_axis2`` (revolute about ``axis``, then about ``axis2``
  as it was at zero), screw → ``_rotation`` and ``_translation`` (both along the axis; apply
  ``translation = pitch / 2π · rotation`` yourself, ``pitch`` in metadata ``screw_pitch``
  [m/rev]), gearbox → ``_axis1``, ``_axis2`` (ratio in metadata, not enforced), Drake's planar →
  ``_x``, ``_y``, ``_theta``. Ball joints are quaternions (Drake's are roll-pitch-yaw angles).
  A joint whose origin is off its child link's origin (off the axis for revolute joints) gets
  a massless body at the joint frame, named ``<child>__<joint>``.
* **Limits.** ``lower``/``upper`` at or beyond ±1e16 and negative ``effort``/``velocity`` are
  unbounded (SDFormat's defaults).
* **Includes** of SDF and URDF files resolve ``model://``, ``package://`` (``package_map``),
  ``file://`` and relative URIs against the including file's folder, ``model_paths`` and the
  ``SDF_PATH``/``GZ_SIM_RESOURCE_PATH`` environment variables; a folder is read through its
  ``model.config``. URDF files load through :mod:`hebictl.formats.urdf`.
* **Drake extensions** (``xmlns:drake="http://drake.mit.edu"``): ``drake:joint`` (ball, planar,
  prismatic, revolute, continuous, fixed, screw, universal), ``drake:mimic``, ``drake:gear_ratio``
  and ``drake:rotor_inertia`` (reflected inertia = gear_ratio² · rotor_inertia, in joint metadata and,
  on the one-axis joints Drake actuates — effort limit not 0 — as the joint's ``armature``; a
  screw joint's on its ``_rotation`` coordinate),
  ``drake:acceleration``, ``drake:controller_gains``, ``drake:capsule``/``drake:ellipsoid``
  geometry, ``drake:collision_filter_group``, ``drake:ball_constraint``,
  ``drake:linear_bushing_rpy`` and ``drake:proximity_properties`` are kept as metadata.
* Un-namespaced elements the specification does not define, on the elements that carry
  kinematics (model, link, joint, axis, inertial, include, frame), are errors; other namespaced
  elements are custom elements and ignored. Visuals, collisions and sensors are metadata.
* Frames added: ``"frame"`` (every ``<frame>``, scoped names), ``"model"`` (each model's frame),
  and the standard ``"com"``, ``"output"``, ``"end_effector"`` frames.
"""

from hebictl.errors import SdfWarning
from hebictl.formats.sdf.reader import load_sdf, load_sdf_string
from hebictl.formats.sdf.writer import write_sdf

__all__ = ["SdfWarning", "load_sdf", "load_sdf_string", "write_sdf"]
