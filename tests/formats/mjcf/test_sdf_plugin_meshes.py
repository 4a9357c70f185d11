"""SDF-plugin meshes against the ones MuJoCo's compiler generates for the same plugin instance."""

from __future__ import annotations

import numpy as np
import pytest
from lxml import etree

from hebictl.formats import geometry
from hebictl.formats.mjcf.sdf_plugin_meshes import mesh_plugin_config, sdf_plugin_mesh

mujoco = pytest.importorskip("mujoco")

CASES = [
    ("mujoco.sdf.torus", {}),
    ("mujoco.sdf.torus", {"radius1": "1", "radius2": "0.3"}),
    ("mujoco.sdf.bowl", {"height": "0.3", "thickness": "0.05"}),
    ("mujoco.sdf.gear", {"alpha": "15"}),
    ("mujoco.sdf.gear", {"diameter": "1.5", "teeth": "12", "thickness": "0.3", "innerdiameter": "0.4"}),
    ("mujoco.sdf.nut", {"radius": "0.3"}),
    ("mujoco.sdf.bolt", {}),
]


def _mujoco_mesh(tmp_path, plugin: str, config: dict[str, str]) -> tuple[np.ndarray, np.ndarray, float]:
    """Vertices, faces and body mass (density 1) MuJoCo compiles for one plugin mesh."""
    configs = "".join(f'<config key="{k}" value="{v}"/>' for k, v in config.items())
    path = tmp_path / "m.xml"
    path.write_text(f"""<mujoco>
      <extension><plugin plugin="{plugin}"><instance name="p">{configs}</instance></plugin></extension>
      <asset><mesh name="m"><plugin instance="p"/></mesh></asset>
      <worldbody><body><freejoint/><geom type="mesh" mesh="m" density="1"/></body></worldbody>
    </mujoco>""")
    m = mujoco.MjModel.from_xml_path(str(path))
    a, n = m.mesh_vertadr[0], m.mesh_vertnum[0]
    fa, fn = m.mesh_faceadr[0], m.mesh_facenum[0]
    return m.mesh_vert[a:a + n].astype(np.float64), m.mesh_face[fa:fa + fn].astype(np.int64), float(m.body_mass[1])


def _triangles(V: np.ndarray, F: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Oriented triangles as rows of indices into ``points``, each rotated to start at its smallest index,
    sorted."""
    _, ids = np.unique(np.vstack([points, V]), axis=0, return_inverse=True)
    T = ids.ravel()[len(points):][F]
    k = T.argmin(axis=1)
    T = np.stack([T[np.arange(len(T)), (k + i) % 3] for i in range(3)], axis=1)
    return T[np.lexsort(T.T[::-1])]


@pytest.mark.parametrize(("plugin", "config"), CASES)
def test_mesh_equals_mujoco(tmp_path, plugin, config):
    """Same vertices (bit for bit), same oriented triangles, and the legacy volume MuJoCo gives the body."""
    V_ref, F_ref, mass = _mujoco_mesh(tmp_path, plugin, config)
    V, F = sdf_plugin_mesh(plugin, config)
    assert len(V) == len(V_ref) and len(F) == len(F_ref)
    np.testing.assert_array_equal(np.unique(V, axis=0), np.unique(V_ref, axis=0))
    points = np.unique(V_ref, axis=0)
    np.testing.assert_array_equal(_triangles(V, F, points), _triangles(V_ref, F_ref, points))
    assert geometry.legacy_mesh_properties(V, F, 1.0).mass == pytest.approx(mass, rel=1e-12)


def test_config_from_instance_or_inline_plugin():
    """A mesh plugin resolves through its <extension> instance, or names the plugin itself."""
    root = etree.fromstring("""<mujoco>
      <extension><plugin plugin="mujoco.sdf.torus"><instance name="t">
        <config key="radius1" value="0.5"/></instance></plugin></extension>
      <asset><mesh name="a"><plugin instance="t"/></mesh>
             <mesh name="b"><plugin plugin="mujoco.sdf.nut"><config key="radius" value="0.2"/></plugin></mesh>
             <mesh name="c"><plugin instance="missing"/></mesh></asset></mujoco>""")
    a, b, c = (mesh.find("plugin") for mesh in root.iter("mesh"))
    assert mesh_plugin_config(a, root) == ("mujoco.sdf.torus", {"radius1": "0.5"})
    assert mesh_plugin_config(b, root) == ("mujoco.sdf.nut", {"radius": "0.2"})
    with pytest.raises(ValueError, match="instance 'missing' not found"):
        mesh_plugin_config(c, root)


@pytest.mark.parametrize(("plugin", "config", "message"), [
    ("mujoco.sdf.sdflib", {}, "not one of MuJoCo's SDF plugins"),
    ("mujoco.sdf.torus", {"radius1": "wide"}, "must be a number"),
])
def test_rejects_unknown_plugin_and_bad_values(plugin, config, message):
    """Plugins this reader cannot reproduce, and non-numeric attributes, are refused with the reason."""
    with pytest.raises(ValueError, match=message):
        sdf_plugin_mesh(plugin, config)
