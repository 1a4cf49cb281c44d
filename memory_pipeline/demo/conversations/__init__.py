"""The demo conversations, one module per project (plus chat imports and the gold queries)."""
