"""HRDF: HEBI Robot Description Format 1.0.0–1.6.0 into a :class:`RobotModel`.

Why a reader of our own: hebictl must load HEBI kits without libhebi, and must say precisely
what is wrong with a bad file (file, line, attribute, column) where libhebi says "Unable to add
link at position 3". The spec is hebi-hrdf's FORMAT.md/GRAMMAR.md/CHANGELOG.md; where the spec
is silent we do what hebi-py 2.16.1 does, where hebi-py accepts what the spec forbids we follow
the spec (see ``tests/formats/hrdf/test_errors.py`` for the list).

Two stages, both public:

* :func:`parse_hrdf` / :func:`parse_hrdf_string` read and validate the XML (versions, elements,
  attributes, value grammars, includes, tags, ``<output>`` trees, interface compatibility) into
  an :class:`HrdfDocument` of :class:`HrdfElement` values;
* :func:`build_model` turns a document into a model through
  :class:`~hebictl.model.builder.ModelBuilder`, with the physical data of built-in elements from
  :mod:`hebictl.formats.hrdf.library`.

Model layout, chosen so the frames match hebi-py's exactly (same counts, same order):

* every element gets one ``input`` frame; every element but ``<joint>`` one ``com`` frame;
  one ``output`` frame per output interface; ``<end-effector>`` (and the implicit one of
  version <= 1.1.0 files, appended to the end of the chain) one ``end_effector`` frame at its
  output. Elements are numbered depth-first in document order with includes expanded in place;
  input/com/end-effector frames follow that order, output frames are depth-first too, output
  ``k`` of an element coming right before the subtree attached to it.
* an actuator is a fixed housing body (library mass/inertia) plus a massless output body on a
  revolute joint (placement = library output frame at q = 0, axis = library joint axis); a
  ``<joint>`` is a massless body on a revolute/prismatic joint of ``scale = 1/gear_ratio``; any
  other element is one fixed body. ``<rigid-body mesh_path=...>`` adds a ``mesh`` frame.
* joint names: the element's tag when it has a non-empty one, else ``J<k>_<type>`` (``k`` = 1-based
  degree-of-freedom index, ``type`` the actuator type or joint axis, e.g. ``J1_X8-9``,
  ``J4_rz``); a generated name that clashes with a tag gets a ``_2``, ``_3``... suffix.
* the robot's ``rot``/``trans`` are the model's base transform (hebi-py's ``base_frame``).
* ``model.metadata``: ``version``, ``description``, ``files`` (every file read) and
  ``elements``, one record per element in element order (see :func:`build_model`).
"""

from hebictl.errors import HrdfWarning
from hebictl.formats.hrdf.assemble import build_model, load_hrdf, load_hrdf_string
from hebictl.formats.hrdf.grammar import HEBI_PI
from hebictl.formats.hrdf.parse import parse_hrdf, parse_hrdf_string
from hebictl.formats.hrdf.spec import VERSIONS, HrdfDocument, HrdfElement, HrdfOutput

__all__ = ["HEBI_PI", "VERSIONS", "HrdfDocument", "HrdfElement", "HrdfOutput", "HrdfWarning", "build_model",
           "load_hrdf", "load_hrdf_string", "parse_hrdf", "parse_hrdf_string"]
