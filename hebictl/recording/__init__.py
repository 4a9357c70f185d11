"""Runs you can open in Foxglove: MCAP recording of an arm, written off the control thread.

* :mod:`~hebictl.recording.schemas`: the topics and their schemas (Foxglove's where one fits);
* :mod:`~hebictl.recording.writer`: :class:`McapRecorder`, the bounded buffer and writer thread;
* :mod:`~hebictl.recording.frames`: the URDF links' frames from forward kinematics;
* :mod:`~hebictl.recording.reader`: reading a recording back (``hebictl log info``, ``hebictl plot``);
* :mod:`~hebictl.recording.hebilog`: importing hebi-py's ``.hebilog`` files.

Needs the ``record`` extra (``mcap``, ``foxglove-schemas-protobuf``); see docs/recording.md.
"""
