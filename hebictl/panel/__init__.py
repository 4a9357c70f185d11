"""``hebictl panel``: a browser operator station for every arm on an MQTT broker (docs/panel.md).

* :mod:`~hebictl.panel.link` - the panel's MQTT client: arms seen on the broker, commands, write-access probe
* :mod:`~hebictl.panel.server` - the page and the WebSocket per browser tab; the dead-man forwarding
* :mod:`~hebictl.panel.auth` - the launch secret, operator identities, Host/Origin checks
* :mod:`~hebictl.panel.commands` - browser messages checked field by field; goal durations
* :mod:`~hebictl.panel.events` - status changes in plain words, with their severity
* :mod:`~hebictl.panel.kinematics` - link poses from an arm's ``state/description``
* :mod:`~hebictl.panel.policy` - which controls the arm's state allows
* ``static/`` - the page (plain HTML/JS/CSS, no third-party JavaScript, nothing fetched at runtime)

Importing this package imports neither aiomqtt nor websockets (the ``panel`` extra); the modules do.
"""
