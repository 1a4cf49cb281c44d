"""Healing stored secrets: the current redaction rules over everything already stored
(`memory-pipeline heal`; once by itself in `memory-pipeline run` after the rules changed)."""
