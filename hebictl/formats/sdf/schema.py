"""Which un-namespaced children and attributes SDFormat allows on the elements hebictl interprets.

The specification rejects unknown elements outside a namespace (custom elements must be
namespaced, ``<my_ns:thing>``): a misspelt ``<inertail>`` would otherwise silently make a link
weigh the default 1 kg. Only the elements that carry kinematics or dynamics are checked; the
lists are the union over SDFormat 1.4-1.12 (taken from the specification's element files), with
the elements that later versions removed limited to the versions that had them.
"""

from __future__ import annotations

#: element -> allowed un-namespaced child elements (any version)
CHILDREN: dict[str, frozenset[str]] = {
    "model": frozenset({"static", "self_collide", "allow_auto_disable", "include", "model", "enable_wind", "frame",
                        "pose", "link", "joint", "plugin", "gripper", "model_state"}),
    "link": frozenset({"gravity", "enable_wind", "self_collide", "kinematic", "must_be_base_link", "velocity_decay",
                       "frame", "pose", "inertial", "collision", "visual", "sensor", "projector", "audio_sink",
                       "audio_source", "battery", "light", "particle_emitter"}),
    "joint": frozenset({"parent", "child", "pose", "gearbox_ratio", "gearbox_reference_body", "thread_pitch",
                        "screw_thread_pitch", "axis", "axis2", "physics", "frame", "sensor"}),
    "axis": frozenset({"xyz", "dynamics", "limit", "use_parent_model_frame", "initial_position", "mimic"}),
    "limit": frozenset({"lower", "upper", "effort", "velocity", "stiffness", "dissipation"}),
    "dynamics": frozenset({"damping", "friction", "spring_reference", "spring_stiffness"}),
    "inertial": frozenset({"mass", "pose", "inertia", "frame", "density", "auto_inertia_params", "fluid_added_mass"}),
    "inertia": frozenset({"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}),
    "include": frozenset({"uri", "pose", "name", "static", "placement_frame", "plugin", "namespace", "model_state"}),
    "frame": frozenset({"pose"}),
}

#: element -> allowed un-namespaced attributes
ATTRIBUTES: dict[str, frozenset[str]] = {
    "model": frozenset({"name", "canonical_link", "placement_frame", "namespace"}),
    "link": frozenset({"name"}),
    "joint": frozenset({"name", "type"}),
    "frame": frozenset({"name", "attached_to"}),
    "inertial": frozenset({"auto"}),
    "include": frozenset({"merge"}),
    "pose": frozenset({"relative_to", "rotation_format", "degrees", "frame"}),
}

#: (parent, child) -> (first, last) SDFormat version that has the child
VERSIONED: dict[tuple[str, str], tuple[tuple[int, int], tuple[int, int]]] = {
    ("axis", "use_parent_model_frame"): ((1, 5), (1, 6)),
    ("axis", "initial_position"): ((1, 6), (1, 8)),
    ("axis", "mimic"): ((1, 11), (1, 99)),
    ("joint", "screw_thread_pitch"): ((1, 10), (1, 99)),
    ("model", "canonical_link"): ((1, 7), (1, 99)),
    ("model", "placement_frame"): ((1, 8), (1, 99)),
    ("include", "placement_frame"): ((1, 8), (1, 99)),
    ("include", "merge"): ((1, 9), (1, 99)),
    ("frame", "attached_to"): ((1, 7), (1, 99)),
    ("pose", "relative_to"): ((1, 7), (1, 99)),
    ("pose", "rotation_format"): ((1, 9), (1, 99)),
    ("pose", "degrees"): ((1, 9), (1, 99)),
    ("inertial", "auto"): ((1, 11), (1, 99)),
}


def allowed(parent: str, child: str, version: tuple[int, int], attribute: bool = False) -> bool | None:
    """Whether ``child`` may appear in ``parent`` in ``version`` (None: parent is not checked)."""
    table = ATTRIBUTES if attribute else CHILDREN
    names = table.get(parent)
    if names is None:
        return None
    if child not in names:
        return False
    span = VERSIONED.get((parent, child))
    return span is None or span[0] <= version <= span[1]


def versions_of(parent: str, child: str) -> str:
    """Human-readable version range of a versioned element, for error messages."""
    span = VERSIONED.get((parent, child))
    if span is None:
        return "any version"
    lo, hi = span
    if hi[1] >= 99:
        return f"SDFormat {lo[0]}.{lo[1]} and later"
    return f"SDFormat {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}"
