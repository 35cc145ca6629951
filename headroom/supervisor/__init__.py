"""Act: launch and supervise vLLM, restart with adjusted knobs, roll back, journal runs, drive load ramps."""
