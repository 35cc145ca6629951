"""Helpers shared by tests (import as `support.<module>`: tests/ is on sys.path via conftest)."""
