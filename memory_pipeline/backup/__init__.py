"""backup stage."""
