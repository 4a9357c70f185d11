"""Control: the Arm, its goals, plugins, safety states and the fixed-rate loop."""
