"""Fixtures of the plugin tests: the 6-DoF kit's model and a :class:`FakeArm` over it
(tests/_support/plugin_arm.py has the stand-in and its hebi-py twin)."""

from __future__ import annotations

import pytest

from hebictl.formats import load_model
from tests._support.plugin_arm import KIT6, FakeArm


@pytest.fixture(scope="module")
def model():
    return load_model(KIT6)


@pytest.fixture
def arm(model) -> FakeArm:
    return FakeArm(model)
