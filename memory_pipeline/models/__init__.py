"""Pydantic models that both the pipeline and `serving` use: what reading a memory returns.

They sit below both so the pipeline (forget's private tier) can type what serving reads without
importing `serving`.
"""
