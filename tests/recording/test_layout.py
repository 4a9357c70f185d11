"""The Foxglove layout shipped in docs/ refers only to topics and fields a recording has."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording

from hebictl.recording import schemas

LAYOUT = Path(__file__).resolve().parents[2] / "docs" / "foxglove-layout.json"


def _leaves(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    return _leaves(node["first"]) + _leaves(node["second"])


def test_layout_panels_and_topics_exist():
    layout = json.loads(LAYOUT.read_text())
    assert sorted(_leaves(layout["layout"])) == sorted(layout["configById"])
    text = json.dumps(layout["configById"])
    used = set(re.findall(r'"(/[a-z_/]+?)(?:[."]|\\")', text))
    declared = {t.name for t in schemas.TOPICS}
    assert used and used <= declared, used - declared
    for t in schemas.TOPICS:  # JSON fields the plots read are in the topic's schema
        if t.json_schema is None:
            continue
        for field in re.findall(rf'"{re.escape(t.name)}\.([a-z_]+)', text):
            assert field in t.json_schema["properties"], (t.name, field)
    assert {"/joint_states", "/events", "/tf", "/robot_description", "/supervisor/mode"} <= used
