"""Tests of hebictl.formats.xxy."""
