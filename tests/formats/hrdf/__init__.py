"""Tests of hebictl.formats.hrdf."""
