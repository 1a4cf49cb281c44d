"""embedding stage."""
