"""The live chain of a transcript: leaf choice, rewinds, and the walk up the tree (§2.2 "Tree").

* Records are indexed by `uuid` (first occurrence wins, so resume replays that rewrite the same
  uuids change nothing, see load.py). The live leaf is the last non-sidechain user or assistant
  record in byte order; a `last-prompt`/`summary` `leafUuid` written *after* it and naming a
  record on another branch wins (the user went back to that branch; a leafUuid that is an
  ancestor of the last message is not trusted to drop turns).
* The chain is walked up through `parentUuid`, then `logicalParentUuid` across a
  `compact_boundary`. A parent that is missing from the file (or a `parentUuid` of the wrong JSON
  type) stops the walk at the first record of the file (a resumed file that starts mid-chain);
  anywhere else it is a `broken_chain` issue and the walk goes on with the previous record in
  byte order, so one corrupt line does not lose the turns above it.
* Unreadable links. Where the chain lost a record (a bridged gap, a record flagged as another
  thread's, a user record of the wrong shape), the lost record may have been a prompt. Turns must
  not swallow the answer of the prompt that was lost, so the record after such a gap starts a new
  cycle that is never a turn (a *break*), unless its neighbours prove that no prompt fits there
  (`_may_hide_prompt`). The turn the bad line belonged to may be lost; the turns before it keep
  exactly their own answers.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from memory_pipeline.capture.claude_code.records import TOOL_USE, UNREADABLE, Loaded, Rec
from memory_pipeline.capture.jsonl import JsonlRead


@dataclass
class Chain:
    """The readable records of the live chain, root first, and where the chain was broken."""

    records: list[Rec] = field(default_factory=list)
    # uuids of records that start a new, non-turn cycle: something unreadable came before them.
    breaks: frozenset[str] = frozenset()


def live_chain(loaded: Loaded, read: JsonlRead, main_thread: bool) -> Chain:
    """Records of the leaf-most chain, root first. Sidechain records are dropped in main files."""
    sidechain = not main_thread
    if not main_thread and True not in loaded.last_message:
        sidechain = False  # a side-thread file whose records lack isSidechain: use them anyway
    if sidechain not in loaded.last_message:
        return Chain()
    leaf, leaf_line = loaded.last_message[sidechain]
    walked, bridged = _walk(loaded, leaf, read)
    hint = _rewind_hint(loaded, leaf_line, sidechain, {rec.uuid for rec in walked})
    if hint is not None:
        walked, bridged = _walk(loaded, hint, read)
    return _readable(walked, bridged, sidechain)


def _rewind_hint(loaded: Loaded, leaf_line: int, sidechain: bool, on_chain: set[str]) -> str | None:
    """The newest leafUuid, if written after the last message and naming another branch.

    A leafUuid naming an ancestor of the last message is ignored: it may be stale bookkeeping,
    and dropping turns that were already complete on such evidence is worse than waiting.
    """
    if not loaded.leaf_hints or loaded.leaf_hints[-1].line <= leaf_line:
        return None
    rec = loaded.records.get(loaded.leaf_hints[-1].leaf or "")
    if rec is not None and rec.sidechain == sidechain and rec.uuid not in on_chain:
        return rec.uuid
    return None


def _walk(loaded: Loaded, leaf: str, read: JsonlRead) -> tuple[list[Rec], set[str]]:
    """(chain root first, uuids of records whose parent was bridged over)."""
    chain: list[Rec] = []
    bridged: set[str] = set()
    seen: set[str] = set()
    lines = [rec.line for rec in loaded.order]
    cur = loaded.records.get(leaf)
    while cur is not None:
        if cur.uuid in seen:
            read.issue("broken_chain", f"parentUuid cycle at {cur.uuid}", cur.line)
            break
        seen.add(cur.uuid)
        chain.append(cur)
        # compact_boundary: parentUuid is null and logicalParentUuid links to the old chain.
        link = cur.parent or cur.logical_parent
        if link is None and not cur.parent_unreadable:
            break
        nxt = loaded.records.get(link) if link else None
        if nxt is None and cur.logical_parent and cur.logical_parent != link:
            nxt = loaded.records.get(cur.logical_parent)
        if nxt is None:
            nxt = _previous_record(loaded, lines, cur, seen)
            if nxt is None:
                break  # the file starts mid-chain (resumed session or forked side thread)
            what = f"parent {link} is missing" if link else "parentUuid is unreadable"
            read.issue("broken_chain", f"{what}; continued at line {nxt.line}", cur.line)
            bridged.add(cur.uuid)
        cur = nxt
    chain.reverse()
    return chain, bridged


def _previous_record(loaded: Loaded, lines: list[int], rec: Rec, seen: set[str]) -> Rec | None:
    index = bisect_left(lines, rec.line) - 1
    while index >= 0:
        candidate = loaded.order[index]
        if candidate.uuid not in seen and candidate.sidechain == rec.sidechain:
            return candidate
        index -= 1
    return None


def _readable(walked: list[Rec], bridged: set[str], sidechain: bool) -> Chain:
    """Drop what cannot be read (other thread's records, unreadable user records) and mark the
    breaks where a lost record may have been a prompt."""
    kept: list[Rec] = []
    breaks: set[str] = set()
    lost = False  # something unreadable since the last kept record
    for rec in walked:
        # §2.3: keep the per-record isSidechain check even though main files have none.
        if rec.sidechain != sidechain or (rec.type == "user" and rec.kind == UNREADABLE):
            lost = True
            continue
        if (lost or rec.uuid in bridged) and kept and _may_hide_prompt(kept[-1], rec):
            breaks.add(rec.uuid)
        lost = False
        kept.append(rec)
    return Chain(kept, frozenset(breaks))


def _may_hide_prompt(before: Rec, after: Rec) -> bool:
    """Could a record lost between `before` and `after` (chain neighbours) have been a prompt?

    Not when `after` starts a cycle anyway or is a tool result (it answers a tool call of the same
    turn), nor when `before` is a prompt, a tool result or a tool call (what follows each of these
    inside a turn is never a new prompt), nor when both are blocks of one streamed assistant
    message. Otherwise (e.g. a final answer, then a lost line, then a new assistant message) it
    could have been.
    """
    if after.starts_cycle or (after.type == "user" and after.kind == "tool_result"):
        return False
    if before.type == "user" and (before.starts_cycle or before.kind == "tool_result"):
        return False
    if before.type == "assistant":
        if before.blocks and before.blocks[-1][0] == TOOL_USE:
            return False
        if after.type == "assistant" and before.msg_id and before.msg_id == after.msg_id:
            return False
    return True
