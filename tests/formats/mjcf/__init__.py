"""Tests of hebictl.formats.mjcf."""
