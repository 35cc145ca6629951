"""Think: the memory model, the five-step rules and knob plans. Pure functions over probe snapshots."""
