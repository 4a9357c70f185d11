"""Helpers shared by test modules of several folders (plain functions and constants, no fixtures).

Fixtures stay in the ``conftest.py`` files, which import what they build on from here; a test
module imports helpers from here too, never from a ``conftest.py`` (pytest may import a conftest
under another name, and a fixture module is not an API). One module per idea:

* :mod:`tests._support.paths` - where the repository, its bundled kits and configs are;
* :mod:`tests._support.corpus` - the corpus of others' robot files and the one reason its tests skip;
* :mod:`tests._support.hebi_py` - hebi-py, imported without its chatter;
* :mod:`tests._support.broker` - a real mosquitto on a free loopback port;
* :mod:`tests._support.arms` - the 6-DoF kit's Arm on the mock backend, as several folders start it;
* :mod:`tests._support.teleop` - operator-side constants, the coroutine runner and the write recorder;
* :mod:`tests._support.cost` - the opt-in per-test cost report (`--cost-report FILE`);
* :mod:`tests._support.plugin_arm` - the plugins' view of an arm over plain buffers, and a hebi-py twin.
"""
