"""The bundled demo corpus: a developer's agent sessions in the real on-disk formats."""
