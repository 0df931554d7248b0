"""Simulators: a flow-level (fluid) engine now; a packet-level engine later."""
