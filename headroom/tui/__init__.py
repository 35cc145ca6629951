"""Show: the Textual app."""
