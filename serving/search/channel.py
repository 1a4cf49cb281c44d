"""What each channel returns: its memory ranking and its passage ranking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_pipeline import tuning


@dataclass(frozen=True)
class ChannelResult:
    """One channel's memory ranking (each memory at its best passage) and passage ranking."""

    memories: list[str]
    passages: list[tuple[str, str]]  # (passage id, memory id), best first

    @staticmethod
    def of(rows: Sequence[tuple[Any, Any]]) -> ChannelResult:
        """From (passage id, memory id) rows best first: memories in order of first appearance,
        at most CANDIDATES_PER_CHANNEL of them."""
        memories: list[str] = []
        seen: set[str] = set()
        passages = []
        for pid, mid in rows:
            passages.append((str(pid), str(mid)))
            if str(mid) not in seen and len(memories) < tuning.CANDIDATES_PER_CHANNEL:
                seen.add(str(mid))
                memories.append(str(mid))
        return ChannelResult(memories, passages)


EMPTY = ChannelResult([], [])
