"""Tests of hebictl.wiring: a config into a running Arm."""
