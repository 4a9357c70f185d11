"""MJCF (MuJoCo XML): bodies, joints, geom-derived inertia and sites into a RobotModel.

What it follows (checked side by side with MuJoCo's own compiler in the tests):

* ``<compiler>``: ``angle`` (**degrees by default**), ``eulerseq``, ``inertiafromgeom``,
  ``inertiagrouprange``, ``autolimits``, ``boundmass``/``boundinertia``, ``balanceinertia``,
  ``settotalmass``, ``discardvisual``, ``alignfree``, ``meshdir``/``assetdir``; ``<option
  gravity>`` and ``<flag gravity="disable">`` (gravity becomes zero).
* ``<default>`` classes cascade (nested classes copy their parent's values, then override);
  an element uses its ``class``, else the nearest ``childclass`` of an enclosing body/frame,
  else ``main``. ``<freejoint>`` takes no defaults.
* Orientation: ``quat`` (w x y z), ``axisangle``, ``euler`` (with ``eulerseq``: lower case =
  moving axes, upper case = fixed axes), ``xyaxes``, ``zaxis``; ``fromto`` on geoms and sites.
* ``<include>`` (path relative to the including file, then to the main file), ``<frame>``
  (joints inside frames have their anchor and axis moved too), ``<replicate>`` (copy ``i``
  posed by the ``i``-th power of its offset/euler, names suffixed with ``sep`` and a
  zero-padded index) and ``<attach>`` of a body, a frame or a whole ``<model>`` asset (names
  prefixed; ``<compiler conflict="error">`` refuses differing options, ``"merge"`` differing
  gravity) are expanded in document order, as MuJoCo numbers them.
* Joints: ``hinge``, ``slide``, ``ball``, ``free`` with ``pos``, ``axis``, ``range``, ``ref``,
  ``springref``, ``damping``, ``frictionloss``, ``armature``; with ``autolimits`` (the default)
  only a ``range`` with ``range[0] < range[1]`` limits a joint. hebictl coordinates equal MuJoCo's
  ``qpos`` (a hinge with ``ref`` reaches the file's pose at ``q = ref``; ``ref`` is in the joint
  metadata). A body with several joints, or a hinge/ball whose ``pos`` is off the body origin,
  becomes a chain of massless bodies named ``<body>__<joint>``; the last body of the chain
  carries the MuJoCo body's name, inertia, geoms and sites. A free body's file pose is its
  default pose (metadata ``default_position``/``default_quaternion``), like MuJoCo's ``qpos0``;
  with ``align``/``alignfree`` its frame moves to the principal axes MuJoCo picks.
* Inertia: ``<inertial>`` (``diaginertia`` or ``fullinertia``), else the body's geoms (sphere,
  capsule, cylinder, ellipsoid, box, height field as MuJoCo's box, mesh and sdf-with-mesh) with
  ``density`` (default 1000 kg/m³) or ``mass``. Mesh inertia needs the mesh data (inline
  ``vertex``/``face`` or an STL/OBJ file; vertices rounded to single precision as MuJoCo stores
  them): MuJoCo's default ``legacy`` algorithm, ``exact`` and ``convex`` are reproduced; a missing
  mesh file is an error only when inertia must come from it. Builtin meshes (``builtin="sphere"``,
  ``supersphere``, ``supertorus``, ``hemisphere``, ``cone``, ``wedge``) are generated as MuJoCo does
  (:mod:`hebictl.formats.mjcf.builtin_meshes`); a mesh geom with ``mass="0"`` adds nothing, whatever its
  mesh. Meshes a plugin computes (MuJoCo's SDF plugins run marching cubes in compiled code),
  ``plate`` meshes (shell inertia), primitives fitted to meshes and ``shellinertia`` are not
  supported where inertia needs them.
* Actuators (``motor``, ``position``, ``velocity``, ``general``, ...) acting on a joint are kept
  in the joint metadata; their force bounds (``|gear| * forcerange``, or ``|gear| * ctrlrange`` for
  motors; summed over the joint's actuators) and the joint's ``actuatorfrcrange`` bound
  ``max_effort``.
* Unnamed bodies, joints and sites are named ``body<i>``, ``joint<i>``, ``site<i>`` with MuJoCo's
  index ``i``. Sites become frames of kind ``"site"``; frames ``"com"``, ``"output"`` and
  ``"end_effector"`` are added as for URDF (see :func:`hebictl.formats.building.add_standard_frames`),
  unless the file was written by hebictl's MJCF writer, whose ``<custom>`` text restores the
  original frames.
* ``<flexcomp>`` becomes the bodies MuJoCo makes of it: one per unpinned vertex, named
  ``<name>_<vertex>``, with slide joints (:mod:`hebictl.formats.mjcf.flexcomp`; types from files and
  interpolated dofs are not supported). The flex itself (elasticity, edges, contacts) only acts in
  simulation and is not represented. ``<composite>`` is not supported: a clear FormatError.
  Tendons, equality constraints, contacts, sensors, visuals and cameras do not change kinematics
  or gravity and are ignored.
"""

from hebictl.errors import MjcfWarning
from hebictl.formats.mjcf.document import FRAMES_TEXT, JOINTS_TEXT
from hebictl.formats.mjcf.reader import load_mjcf, load_mjcf_string
from hebictl.formats.mjcf.writer import write_mjcf

__all__ = ["FRAMES_TEXT", "JOINTS_TEXT", "MjcfWarning", "load_mjcf", "load_mjcf_string", "write_mjcf"]
