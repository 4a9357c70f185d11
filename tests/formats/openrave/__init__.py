"""Tests of hebictl.formats.openrave."""
