"""Seeds and deterministic mutators for the reader fuzz suite (robot files, configs, gains, meshes).

Every mutation is a pure function of ``(seed bytes, random.Random)``, so a run is reproduced
exactly from its seed number; a finding is reported with the seed file, the mutator names and
the input index, and :func:`make_case` rebuilds the same bytes.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Robot-description suffixes load_model reads, plus configs and gains (loaded by their own readers).
SUFFIXES = (".hrdf", ".urdf", ".sdf", ".world", ".xml", ".skel", ".mjcf", ".dmd.yaml", ".cfg.yaml")

#: Values an attacker or a careless editor would put in a numeric attribute.
EXTREME = ["1e308", "-1e308", "nan", "NaN", "inf", "-inf", "1e300", "-1e300", "", " ", "²", "٣", "1e-320",
           "0", "-0", "-1", "1e400", "99999999999999999999", "9" * 400, "1 2 3 4 5 6 7 8 9 10", "pi", "0x10",
           "1,5", "1e200", "-1e200", "1e200 1e200 1e200", "nan nan nan", "1e308 1e308 1e308",
           "1e300 13 1", "100000000", "4294967297", "-2147483649", "1" * 5000, "true", "\u00a0", "0 0 0"]
#: Values for attributes and elements that name files.
HOSTILE_PATHS = ["/dev/zero", "/dev/urandom", "/etc/passwd", "../../../../../../etc/passwd", "/proc/self/mem",
                 "/dev/stdin", ".", "..", "/", "a" * 300, "a/" * 3000, "file:///etc/passwd", "model:///dev/zero",
                 "package://../../../etc/passwd", "http://127.0.0.1:9/x", "\u202e.stl", "x.stl/"]
_PATH_ATTRS = re.compile(rb'\b(file|filename|uri|href|meshdir|assetdir|texturedir|path|mesh|include)\s*=\s*"[^"]*"')
_ATTR = re.compile(rb'(\b[\w:.-]+\s*=\s*")([^"<]*)(")')
_TEXT = re.compile(rb">([^<>]{1,200})<")
_ELEMENT = re.compile(rb"<([A-Za-z_][\w:.-]*)\b[^<>]*/>")
_URI_TEXT = re.compile(rb"<(uri|filename|include|file)>([^<]*)</")


@dataclass(frozen=True)
class Seed:
    """A file to mutate: ``fuzzed`` is rewritten, ``load`` is what the reader opens (same file, or
    the model that references a fuzzed mesh); ``kind`` picks the loader."""

    fuzzed: Path
    load: Path
    kind: str  # "model", "config", "gains", "mesh"


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".cfg.yaml"):
        return "config"
    if path.parent.name == "gains" or "gains" in name:
        return "gains"
    return "model"


def collect_seeds(corpus: Path | None, extra: Path | None = None) -> list[Seed]:
    """Corpus files plus the bundled kits/configs (and synthetic mesh seeds in ``extra``), sorted."""
    roots = [REPO / "hrdf_kits", REPO / "configs"]
    if corpus is not None and corpus.is_dir():
        roots.append(corpus)
    seeds: list[Seed] = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.name.lower().endswith(SUFFIXES) and p.name != "SOURCES.tsv":
                if p.suffix == ".xml" and b"<group_gains" in p.read_bytes()[:2000]:
                    seeds.append(Seed(p, p, "gains"))
                else:
                    seeds.append(Seed(p, p, _kind(p)))
    if extra is not None:
        seeds.extend(mesh_seeds(extra))
    return seeds


CUBE_OBJ = b"""# unit cube
v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1
f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\nf 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\nf 4 1 5\nf 4 5 8
"""
CUBE_STL = b"solid cube\n" + b"".join(
    b"facet normal 0 0 0\n outer loop\n" + b"".join(b"  vertex %s\n" % v for v in tri) + b" endloop\nendfacet\n"
    for tri in [(b"0 0 0", b"1 1 0", b"1 0 0"), (b"0 0 0", b"0 1 0", b"1 1 0"), (b"0 0 1", b"1 0 1", b"1 1 1"),
                (b"0 0 0", b"1 0 0", b"0 0 1"), (b"0 0 0", b"0 0 1", b"0 1 0"), (b"1 0 0", b"1 1 0", b"1 0 1")]
) + b"endsolid cube\n"
MESH_MJCF = b"""<mujoco model="meshes">
  <asset><mesh name="cube" file="cube.obj"/><mesh name="cubestl" file="cube.stl" scale="0.1 0.1 0.1"/></asset>
  <worldbody><body name="b"><joint name="j" type="hinge" axis="0 0 1"/>
    <geom type="mesh" mesh="cube" density="1000"/>
    <body name="c" pos="0 0 1"><joint name="k" type="hinge" axis="0 1 0"/><geom type="mesh" mesh="cubestl"/></body>
  </body></worldbody>
</mujoco>
"""
MESH_URDF = b"""<robot name="m"><link name="base"/>
<joint name="j" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
<link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
<collision><geometry><mesh filename="cube.obj" scale="1 1 1"/></geometry></collision></link></robot>
"""


def mesh_seeds(folder: Path) -> list[Seed]:
    """Synthetic seeds for the mesh loaders (the corpus holds no meshes): a cube in OBJ and STL,
    referenced by an MJCF (mass from the mesh volume) and a URDF."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("cube.obj", CUBE_OBJ), ("cube.stl", CUBE_STL), ("meshes.xml", MESH_MJCF),
                       ("meshes.urdf", MESH_URDF)):
        (folder / name).write_bytes(data)
    mj, ur = folder / "meshes.xml", folder / "meshes.urdf"
    return [Seed(mj, mj, "model"), Seed(ur, ur, "model"), Seed(folder / "cube.obj", mj, "mesh"),
            Seed(folder / "cube.stl", mj, "mesh"), Seed(folder / "cube.obj", ur, "mesh")]


# --------------------------------------------------------------------------- mutators
Mutator = Callable[[bytes, random.Random], bytes]


def _pick(pattern: re.Pattern[bytes], data: bytes, rng: random.Random) -> re.Match[bytes] | None:
    matches = list(pattern.finditer(data, 0, 400_000))
    return rng.choice(matches) if matches else None


def byte_flips(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if buf:
            i = rng.randrange(len(buf))
            buf[i] = rng.choice([buf[i] ^ (1 << rng.randrange(8)), rng.randrange(256), ord(rng.choice("<>\"&'/="))])
    return bytes(buf)


def attribute_extreme(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        m = _pick(_ATTR, data, rng)
        if m is None:
            return data
        data = data[:m.start(2)] + rng.choice(EXTREME).encode() + data[m.end(2):]
    return data


def number_tokens(data: bytes, rng: random.Random) -> bytes:
    """Replace a few numbers anywhere (attributes, element text, YAML, OBJ/STL) with extremes."""
    nums = list(re.finditer(rb"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])", data[:400_000]))
    for m in sorted(rng.sample(nums, min(len(nums), rng.randint(1, 4))), key=lambda m: -m.start()):
        data = data[:m.start()] + rng.choice(EXTREME).encode() + data[m.end():]
    return data


def text_extreme(data: bytes, rng: random.Random) -> bytes:
    m = _pick(_TEXT, data, rng)
    if m is None or not m.group(1).strip():
        return attribute_extreme(data, rng)
    return data[:m.start(1)] + rng.choice(EXTREME).encode() + data[m.end(1):]


def hostile_path(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice(HOSTILE_PATHS).encode()
    m = _pick(_PATH_ATTRS, data, rng)
    if m is not None and rng.random() < 0.6:
        return data[:m.start()] + m.group(1) + b'="' + value + b'"' + data[m.end():]
    m = _pick(_URI_TEXT, data, rng)
    if m is not None:
        return data[:m.start(2)] + value + data[m.end(2):]
    if b"hrdf:" in data or b"gains:" in data:  # configs
        return re.sub(rb"(hrdf|gains):[^\n]*", lambda mm: mm.group(1) + b': "' + value + b'"', data, count=1)
    return data.replace(b">", b'><include file="' + value + b'"/>', 1)


def deep_nesting(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([300, 1000, 5000, 50000])
    m = _pick(_ELEMENT, data, rng)
    if data.lstrip().startswith(b"<") and m is not None:
        tag = m.group(1)
        inner = (b"<" + tag + b">") * depth + (b"</" + tag + b">") * depth
        return data[:m.start()] + inner + data[m.end():]
    if b"(" in data or b"<" not in data:
        return data + b"\nx: " + b"[" * depth + b"]" * depth + b"\n"
    return data


def formula(data: bytes, rng: random.Random) -> bytes:
    """HRDF attributes are formulas: nested parentheses, long operator chains, pi, huge literals."""
    n = rng.choice([100, 400, 3000])
    value = rng.choice([b"(" * n + b"1" + b")" * n, b"-" * n + b"1", b"pi*" * n + b"1", b"1e308*1e308",
                        b"2**99999", b"(" * n, b"1/0", b"pi/0", b"9" * 5000])
    m = _pick(_ATTR, data, rng)
    if m is None:
        return data
    return data[:m.start(2)] + value + data[m.end(2):]


def duplicate_element(data: bytes, rng: random.Random) -> bytes:
    m = _pick(_ELEMENT, data, rng)
    if m is None:
        return data
    return data[:m.end()] + m.group(0) * rng.choice([2, 100, 20000]) + data[m.end():]


def huge_count(data: bytes, rng: random.Random) -> bytes:
    for attr in (b"count", b"repeat", b"replicate", b"dim", b"nstep", b"N", b"steps"):
        if attr + b'="' in data and rng.random() < 0.5:
            return re.sub(attr + rb'="[^"]*"', attr + b'="' + rng.choice(
                [b"1e300 13 1", b"100000 100000 1", b"1e9", b"2147483648", b"-5", b"\xc2\xb2", b"nan 1 1"]) + b'"',
                data, count=1)
    return attribute_extreme(data, rng)


_XXE = [b'<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        b'<!DOCTYPE r [<!ENTITY a "' + b"x" * 100 + b'">' + b"".join(
            b'<!ENTITY %c "%s">' % (98 + i, (b"&%c;" % (97 + i)) * 10) for i in range(8)) + b"]>",
        b'<!DOCTYPE r SYSTEM "/dev/zero">', b'<?xml-stylesheet href="/dev/zero"?>']


def xxe(data: bytes, rng: random.Random) -> bytes:
    decl = rng.choice(_XXE)
    body = re.sub(rb"^\s*<\?xml[^>]*\?>", b"", data, count=1)
    m = _pick(_ATTR, body, rng)
    if m is not None:
        body = body[:m.start(2)] + rng.choice([b"&x;", b"&i;", b"&a;"]) + body[m.end(2):]
    return decl + body


def yaml_hostile(data: bytes, rng: random.Random) -> bytes:
    bomb = b"\n".join([b"a0: &a0 [" + b", ".join([b"lol"] * 9) + b"]"] + [
        b"a%d: &a%d [" % (i, i) + b", ".join([b"*a%d" % (i - 1)] * 9) + b"]" for i in range(1, 9)])
    choice = rng.choice([b"!!float x", b"!!int abc", b"9" * 5000, b"1" + b"0" * 400, b"!!binary a", b"&a [*a]",
                         b"!!python/object/apply:os.system [true]", b"{<<: 3}", b"[" * 3000, b"!!timestamp 2020-99-99",
                         b'"\\0"', b".nan", b"-.inf", b"~", b"[]", b"{}"])
    lines = data.split(b"\n")
    idx = [i for i, ln in enumerate(lines) if b":" in ln]
    if rng.random() < 0.15:
        return data + b"\nuser_data:\n" + b"\n".join(b"  " + ln for ln in bomb.split(b"\n")) + b"\n"
    if not idx:
        return data + b"\nx: " + choice
    i = rng.choice(idx)
    key = lines[i].split(b":", 1)[0]
    lines[i] = key + b": " + choice
    return b"\n".join(lines)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(max(len(data), 1))]


XML_MUTATORS: dict[str, Mutator] = {f.__name__: f for f in (
    byte_flips, attribute_extreme, number_tokens, text_extreme, hostile_path, deep_nesting, formula,
    duplicate_element, huge_count, xxe, truncate)}
YAML_MUTATORS: dict[str, Mutator] = {f.__name__: f for f in (
    byte_flips, number_tokens, hostile_path, yaml_hostile, deep_nesting, truncate)}
MESH_MUTATORS: dict[str, Mutator] = {f.__name__: f for f in (byte_flips, number_tokens, truncate)}


def make_case(seed: Seed, index: int, run_seed: int, data: bytes | None = None) -> tuple[bytes, list[str]]:
    """The mutated bytes of input ``index`` of run ``run_seed`` for ``seed`` (and the mutators applied)."""
    rng = random.Random(f"{run_seed}:{index}:{seed.fuzzed.name}")
    data = seed.fuzzed.read_bytes() if data is None else data
    is_yaml = seed.fuzzed.name.endswith((".yaml", ".yml"))
    table = MESH_MUTATORS if seed.kind == "mesh" else YAML_MUTATORS if is_yaml else XML_MUTATORS
    names = [rng.choice(sorted(table)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    for name in names:
        data = table[name](data, rng)
    return data, names
