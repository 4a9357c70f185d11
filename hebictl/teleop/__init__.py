"""MQTT teleoperation of an arm: operators send goals, jog streams and stops through a broker, the
arm publishes its state; see docs/teleop.md for the protocol, the safety rules and broker set-up.

Modules, one idea each:

* :mod:`~hebictl.teleop.topics` - topic names and QoS of the protocol
* :mod:`~hebictl.teleop.schema` - one validator per command topic (nothing unvalidated reaches the arm)
* :mod:`~hebictl.teleop.admission` - freshness, per-client ordering and per-topic rate limits
* :mod:`~hebictl.teleop.jog` - jog mailbox and the arm plugin that integrates jog velocities
* :mod:`~hebictl.teleop.braking` - decelerate-then-hold profiles
* :mod:`~hebictl.teleop.runner` - the arm thread: modes, e-stop latch, snapshots
* :mod:`~hebictl.teleop.bridge` - the asyncio MQTT side: reconnects, acks, state publishing
* :mod:`~hebictl.teleop.server` - runner and bridge started and stopped together
* :mod:`~hebictl.teleop.client` - :class:`TeleopClient`, the operator side
* :mod:`~hebictl.teleop.messages` - ack and state payloads
* :mod:`~hebictl.teleop.connection` - broker URL, credentials, TLS
* :mod:`~hebictl.teleop.broker` - a private mosquitto for tests, benchmarks and local trials

Importing this package does not import aiomqtt (the ``teleop`` extra); the bridge and client do.
"""
