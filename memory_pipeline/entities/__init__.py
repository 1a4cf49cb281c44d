"""Entities: nodes of a closed type set and the mentions wiring memories and turns to them."""
