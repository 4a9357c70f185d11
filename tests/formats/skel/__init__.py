"""Tests of hebictl.formats.skel."""
