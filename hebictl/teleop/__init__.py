"""MQTT teleoperation of an arm: operators send goals, jog streams and stops through a broker, the
arm publishes its state; see docs/teleop.md for the protocol, the safety rules and broker set-up.

Modules, one idea each:

* :mod:`~hebictl.teleop.topics` - topic names and QoS of the protocol
* :mod:`~hebictl.teleop.schema` - one validator per command topic (nothing unvalidated reaches the arm)
* :mod:`~hebictl.teleop.admission` - freshness, per-client ordering and per-topic rate limits
* :mod:`~hebictl.teleop.feasibility` - speed and reach checks of goals against the arm's limits
* :mod:`~hebictl.teleop.jog` - jog mailbox and the handle that starts and ends the arm's ``jog`` mode
* :mod:`~hebictl.teleop.runner` - the arm thread: modes, e-stop latch, snapshots (every stop brakes
  on the Arm's own ramp, :mod:`hebictl.control.braking`)
* :mod:`~hebictl.teleop.snapshot` - the immutable per-cycle snapshot the arm thread hands the bridge
* :mod:`~hebictl.teleop.bridge` - the asyncio MQTT side: reconnects, acks, state publishing
* :mod:`~hebictl.teleop.server` - runner and bridge started and stopped together
* :mod:`~hebictl.teleop.client` - :class:`TeleopClient`, the operator side
* :mod:`~hebictl.teleop.messages` - ack and state payloads
* :mod:`~hebictl.teleop.acks` - bounded ack queue, coalesced under a flood
* :mod:`~hebictl.teleop.description` - the retained ``state/description`` payload
* :mod:`~hebictl.teleop.clock` - the injected wall and monotonic clocks
* :mod:`~hebictl.teleop.connection` - broker URL, credentials, TLS
* :mod:`~hebictl.teleop.broker` - a private mosquitto for tests, benchmarks and local trials

Importing this package does not import aiomqtt (the ``teleop`` extra); the bridge and client do.
"""
