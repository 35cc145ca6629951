"""The configuration sweep: one command fills the comparison table (issue 17)."""
