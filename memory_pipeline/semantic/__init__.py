"""semantic stage."""
