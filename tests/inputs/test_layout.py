"""HEBI's Mobile IO layout files: read with a bound, checked, labels per channel; errors name file and widget."""

from __future__ import annotations

import json

import pytest

from hebictl.errors import ConfigError
from hebictl.inputs.layout import MAX_LAYOUT_BYTES, labels, layout_path, load_layout

#: the shape of HEBI's kits/arms/config/layouts/ex_AR_kit.json (buttons) plus a slider and a joystick
LAYOUT = [
    {"id": "b1", "channels": ["b1"], "type": "button", "x": -0.75, "y": -0.73, "width": 0.15, "height": 0.15,
     "parameters": {"text": ["🏠"], "mode": "momentary"}},
    {"id": "b3", "channels": ["b3"], "type": "button", "x": -0.25, "y": -0.73, "width": 0.15, "height": 0.15,
     "parameters": {"text": ["📲"], "mode": "momentary"}},
    {"id": "a3", "channels": ["a3"], "type": "rotslider", "x": -0.25, "y": 0.6, "width": 0.05, "height": 0.5,
     "parameters": {"text": ["⏱️"], "steps": 10, "min": -1, "max": 1, "rest": 0}},
    {"id": "a7,a8", "channels": ["a7", "a8"], "type": "joystick", "x": 0.5, "y": 0.0, "width": 0.4, "height": 0.4,
     "parameters": {"text1": "", "text2": "Translate"}},
]


def test_a_hebi_layout_loads_with_its_labels(tmp_path):
    f = tmp_path / "layouts" / "ex_AR_kit.json"
    f.parent.mkdir()
    f.write_text(json.dumps(LAYOUT))
    assert layout_path({"mobile_io_layout": "layouts/ex_AR_kit.json"}, tmp_path) == f
    widgets = load_layout(f)
    assert labels(widgets)["b1"] == "🏠" and labels(widgets)["b3"] == "📲" and labels(widgets)["a3"] == "⏱️"
    assert labels(widgets)["a8"] == "a7,a8"


@pytest.mark.parametrize(("edit", "key"), [
    (lambda w: w[0].update(channels=["b9"]), "[0].channels"),
    (lambda w: w[1]["parameters"].update(mode="sticky"), "[1].parameters.mode"),
    (lambda w: w[2].update(x=float("1e9")), "[2].x"),
    (lambda w: w[3].update(colour="red"), "[3]"),
])
def test_bad_widgets_name_the_file_and_widget(tmp_path, edit, key):
    widgets = json.loads(json.dumps(LAYOUT))
    edit(widgets)
    f = tmp_path / "l.json"
    f.write_text(json.dumps(widgets))
    with pytest.raises(ConfigError) as info:
        load_layout(f)
    assert info.value.key == key and info.value.file == str(f), info.value


def test_oversize_layout_is_refused(tmp_path):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * (MAX_LAYOUT_BYTES + 1))
    with pytest.raises(ConfigError, match=r"big\.json"):
        load_layout(f)
