"""reinforcement stage: retrieval events folded into memories' access statistics."""
