"""The one interface every embedding backend implements.

A vector is only meaningful inside its embedding space, named `<provider>:<model>:<dims>`
(for example `local:all-minilm-l6-v2:384`). Spaces are never mixed in one index or one query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    space: str  # "<provider>:<model>:<dims>"
    dims: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dims), each row L2-normalized."""
        ...

    @property
    def window_tokens(self) -> int:
        """The most tokens the model reads of one text (the rest is silently cut): passages are
        cut to fit it (memory_pipeline/embedding/passages.py)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many of the model's tokens each text is, as `window_tokens` counts them."""
        ...


def space_dims(space: str) -> int:
    """The dimension count encoded in a space name."""
    try:
        return int(space.rsplit(":", 1)[1])
    except (IndexError, ValueError) as exc:
        raise ValueError(f"embedding space {space!r} is not '<provider>:<model>:<dims>'") from exc
