"""Tests of hebictl.formats.urdf."""
