"""Widgets shared by the screens. Each renders only from probe snapshots it is given."""
