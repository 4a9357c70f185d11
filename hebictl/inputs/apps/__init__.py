"""HEBI's arm examples as explicit state machines (one transition table per app)."""
