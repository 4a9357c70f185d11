"""Tests of hebictl.formats.sdf."""
