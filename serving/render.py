"""Readable text for search results and context packs (CLI tables, MCP text content).

Memory text is untrusted: it was written in past sessions and may contain anything, including
text that imitates instructions or tool output. It is cleaned of control and zero-width
characters and always shown inside <memory ...> ... </memory> delimiters with its provenance
(the source turns of `memory_read` sit in <turn ...> ... </turn> blocks inside their memory).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from memory_pipeline import tuning
from memory_pipeline.models.browse import (
    MemoryDetail,
    MemoryGraph,
    MemoryPage,
    MemorySummary,
    Timeline,
)
from memory_pipeline.models.provenance import Provenance
from serving.models import (
    ContextItem,
    ContextPack,
    EntityList,
    EntitySummary,
    EntityTimeline,
    PackRoute,
    PassageTurn,
    SearchHit,
)

# Control characters (except tab and newline) and invisible format characters (zero-width
# spaces and joiners, bidi overrides): they can hide or reorder text in an agent's context.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# The delimiters this module writes; text inside them must not be able to open or close one.
_DELIMITER = re.compile(r"</?\s*(?:memory|turn)\b", re.I)

M = TypeVar("M", bound=BaseModel)


@functools.lru_cache(maxsize=4096)
def clean(text: str) -> str:
    """The text without control and invisible format characters, unable to open or close a
    delimiter. Cached: a context pack renders each excerpt many times while it packs."""
    text = _UNSAFE.sub("", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    # A memory must not be able to close its own delimiter.
    return _DELIMITER.sub(lambda m: m.group(0).replace("<", "‹"), text)


def attr(value: object) -> str:
    """A value for a delimiter attribute: cleaned, on one line, quotes and brackets escaped."""
    text = " ".join(clean(str(value)).split())
    return (
        text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _clean_any(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, BaseModel):
        return clean_model(value)
    if isinstance(value, list):
        return [_clean_any(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean_any(v) for k, v in value.items()}
    return value


def clean_model(model: M) -> M:
    """A copy of a result model with every string in it cleaned (structured output)."""
    return model.model_copy(
        update={name: _clean_any(getattr(model, name)) for name in type(model).model_fields}
    )


def provenance_line(chains: list[Provenance]) -> str:
    if not chains:
        return "provenance: none (not derived from a captured task)"
    parts = []
    for p in chains:
        ordinals = ",".join(str(t.ordinal) for t in p.turns)
        parts.append(f"{p.source} task {p.native_task_id} turns {ordinals}")
    return "provenance: " + "; ".join(parts)


def memory_block(
    hit_id: str,
    kind: str,
    title: str,
    text: str,
    created: str,
    extra: str,
    chains: list[Provenance],
) -> str:
    return (
        f'<memory id="{hit_id}" kind="{kind}" created="{created}"{extra}>\n'
        f"title: {clean(title)}\n{clean(provenance_line(chains))}\n\n{clean(text)}\n</memory>"
    )


def excerpt_label(turns: list[PassageTurn], neighbour: bool = False, cut: bool = False) -> str:
    """The mark before a quoted passage: which turns of its task it is (`[t12]`, the provenance
    of the excerpt), `near` when it is a neighbour of a match, `cut` when only its head is
    quoted. Short on purpose: a pack repeats it for every excerpt (its `note` explains it)."""
    label = "[t" + ",".join(str(t.ordinal) for t in turns) if turns else "[excerpt"
    if neighbour:
        label += " near"
    if cut:
        label += " cut"
    return label + "]"


def hits_text(hits: list[SearchHit], max_chars: int | None = None) -> str:
    """Search results: each hit with the passages that matched (its content when none did,
    as for temporal neighbours)."""
    blocks = []
    for i, h in enumerate(hits, start=1):
        if h.passages:
            text = "\n".join(f"{excerpt_label(p.turns)}\n{p.text}" for p in h.passages)
        else:
            text = h.content
        if max_chars is not None:
            text = text[:max_chars]
        extra = f' rank="{i}" score="{h.score:.3f}"'
        if h.temporal_context:
            extra += ' temporal_context="true"'
        if h.observation_count > 1:  # near-duplicates folded into this memory
            extra += f' observed="{h.observation_count}"'
        if h.cite:  # an inbox document's passage: its URL or path and position
            extra += f' from="{attr(h.cite)}"'
        blocks.append(
            memory_block(
                str(h.id), h.type, h.title, text, h.created_at.isoformat(), extra, h.provenance
            )
        )
    return "\n\n".join(blocks) if blocks else "No memories matched."


# The kind a pack item's header leaves unsaid (ContextPack.note says so).
PACK_DEFAULT_KIND = "segment"


def pack_item_text(item: ContextItem) -> str:
    """One memory of a context pack as the agent reads it (and as its tokens are counted):
    one header line (id, kind, date, the tasks it came from, title), each excerpt after the
    mark of the turns it quotes, and the closing tag."""
    # Compact on purpose: every character counts against the budget, and a pack of short
    # messages holds many items. One header line: id, date, the tasks it came from
    # (source:native id), a short title; the kind only when it is not a segment (most items
    # are), and `whole` for a memory quoted whole (most items are excerpts; the pack's note
    # says both). The score, timestamps, turns and native message ids are in the structured
    # output.
    created = item.created_at.date().isoformat()
    tasks = " ".join(dict.fromkeys(f"{p.source}:{p.native_task_id}" for p in item.provenance))
    head = f'<memory id="{short_id(item.memory_id)}"'
    if item.kind != PACK_DEFAULT_KIND:
        head += f' kind="{attr(item.kind)}"'
    head += f' date="{created}"'
    if item.cite:  # an inbox document's passage: where it sits (URL or path, position)
        head += f' from="{attr(item.cite)}"'
    else:
        head += f' from="{attr(tasks)}"' if tasks else ' from="none"'
    if not _quoted(item):  # a segment's title is its first prompt: no need to say it twice
        head += f' title="{attr(_short(item.title, tuning.PACK_TITLE_CHARS))}"'
    lines = [head + (">" if item.truncated else ' whole="1">')]
    lines += [clean(f"flag: {f}") for f in item.flags]  # relationship warnings, at most two
    for e in item.excerpts:
        lines.append(f"{excerpt_label(e.turns, e.neighbour, e.truncated)} {clean(e.text)}")
    lines.append("</memory>")
    return "\n".join(lines)


def short_id(memory_id: object) -> str:
    """The id a pack item shows: the first PACK_ID_CHARS hex digits (browse.resolve_memory_id
    reads it back)."""
    return str(memory_id).replace("-", "")[: tuning.PACK_ID_CHARS]


_SPEAKER_CHARS = 40  # room for the speaker label before an excerpt's first words


def _quoted(item: ContextItem) -> bool:
    """Whether an excerpt already begins with the title (a segment quoting its first turn)."""
    title = " ".join(item.title.split()).rstrip("…").strip()
    head = len(title) + _SPEAKER_CHARS
    return bool(title) and any(title in " ".join(e.text[:head].split()) for e in item.excerpts)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def route_line(route: PackRoute) -> str:
    """How the router shaped a pack, and the aliases it could not resolve (ask, don't guess)."""
    line = f"route: {route.intent}"
    if route.entities:
        line += " about " + ", ".join(route.entities)
        if route.intent == "recall":
            line += " (memories mentioning it)" if route.filtered else " (none mentioned it)"
    if route.time:
        line += f"; time: {route.time}"
    for a in route.ambiguous:
        line += f"\nambiguous: {a}; ask which one is meant"
    return line


def pack_text(pack: ContextPack) -> str:
    head = (
        f"Context pack for: {clean(pack.query)}\n"
        f"{len(pack.items)} memories, {pack.tokens_used}/{pack.token_budget} tokens"
        f"{' (truncated: more that matched did not fit)' if pack.truncated else ''}.\n"
        f"{pack.note}"
    )
    if pack.route is not None:  # the intent router shaped this pack (serving/router.py)
        head += "\n" + clean(route_line(pack.route))
    parts = [head, *(pack_item_text(item) for item in pack.items)]
    if pack.left_out_count:  # ids only (kinds and titles are in the structured output)
        listed = " ".join(str(o.memory_id) for o in pack.left_out)
        more = pack.left_out_count - len(pack.left_out)
        parts.append(
            f"Left out for the budget (memory_read(id) reads one): {listed}"
            + (f" and {more} more" if more > 0 else "")
        )
    return "\n\n".join(parts)


# --- browsing (memory_list, memory_timeline, memory_graph, memory_read) ----------------------
def _summary_attrs(item: MemorySummary) -> str:
    extra = f' status="{attr(item.status)}"'
    if item.project:
        extra += f' project="{attr(item.project)}"'
    if item.source_type:
        extra += f' source="{attr(item.source_type)}"'
    return extra


def summary_block(item: MemorySummary, extra: str = "") -> str:
    return memory_block(
        str(item.id),
        attr(item.type),
        item.title,
        item.preview,
        item.created_at.isoformat(),
        _summary_attrs(item) + extra,
        item.provenance,
    )


def page_text(page: MemoryPage) -> str:
    head = f"{len(page.items)} memories, newest first (previews of their content)."
    if page.next_cursor:
        head += (
            f'\nMore: call memory_list again with cursor="{page.next_cursor}" and the same filters.'
        )
    else:
        head += "\nThis is the last page."
    if not page.items:
        return head
    return "\n\n".join([head, *(summary_block(i) for i in page.items)])


def timeline_text(tl: Timeline) -> str:
    scope = []
    if tl.around and tl.window_start and tl.window_end:
        scope.append(
            f"around {tl.around.isoformat()} ({tl.window_start.isoformat()} to "
            f"{tl.window_end.isoformat()})"
        )
    if tl.project:
        scope.append(f"in project {attr(tl.project)}")
    head = f"Timeline {' '.join(scope)}: {len(tl.items)} memories, oldest first."
    if tl.truncated:
        head += " More memories matched than the limit; narrow the window or raise the limit."
    if not tl.items:
        return head + "\nNo memories in this range."
    return "\n\n".join([head, *(summary_block(i) for i in tl.items)])


def edge_details(
    created_at: datetime, similarity: float | None, evidence: str | None, backend: str | None
) -> str:
    """An edge's age, and what relationship discovery recorded on it (sql/016)."""
    days = max(0, (datetime.now(UTC) - created_at).days)
    parts = [f"found {days}d ago" if days else "found today"]
    if backend:
        parts.append(f"by {attr(backend)}")
    if similarity is not None:
        parts.append(f"cosine {similarity:.2f}")
    text = f" [{', '.join(parts)}]"
    if evidence:
        text += f" evidence: {clean(evidence)}"
    return text


def graph_text(graph: MemoryGraph) -> str:
    head = (
        f"Relationship graph around {graph.root_id} to depth {graph.depth}: "
        f"{len(graph.nodes)} memories, {len(graph.edges)} relationships"
        f"{' (expired edges included)' if graph.include_expired else ''}."
    )
    if graph.truncated:
        head += " The neighbourhood was cut at the node or edge cap."
    lines = [head, "", "relationships (source --type--> target):"]
    for e in graph.edges:
        expired = f" (expired {e.expired_at.isoformat()})" if e.expired_at else ""
        lines.append(
            f"- {e.source_id} --{attr(e.relation_type)}--> {e.target_id}{expired}"
            + edge_details(e.created_at, e.similarity, e.evidence, e.backend)
        )
    if not graph.edges:
        lines.append("- none")
    blocks = [
        memory_block(
            str(n.id),
            attr(n.type),
            n.title,
            n.preview,
            n.created_at.isoformat(),
            f' status="{attr(n.status)}" depth="{n.depth}"'
            + (f' project="{attr(n.project)}"' if n.project else "")
            + (f' dream_run="{n.dream_run_id}"' if n.dream_run_id else ""),
            n.provenance,
        )
        for n in graph.nodes
    ]
    return "\n\n".join(["\n".join(lines), *blocks])


def detail_text(d: MemoryDetail) -> str:
    extra = f' status="{attr(d.status)}" updated="{d.updated_at.isoformat()}"'
    if d.project:
        extra += f' project="{attr(d.project)}"'
    if d.source_type:
        extra += f' source="{attr(d.source_type)}"'
    chains = [
        f"{p.source} task {p.native_task_id} turns {','.join(str(t.ordinal) for t in p.turns)}"
        for p in d.provenance
    ]
    meta = [f"title: {clean(d.title)}"]
    if d.tags:
        meta.append("tags: " + ", ".join(clean(t) for t in d.tags))
    meta.append(f"confidence: {d.confidence:.2f}")
    if d.observation_count > 1:
        meta.append(f"observed: {d.observation_count} times (copies: incoming duplicate_of)")
    if d.duplicate_of:
        meta.append(f"near-duplicate of: {d.duplicate_of} (the memory search shows)")
    if d.superseded_by:
        meta.append(f"superseded by: {d.superseded_by} (read it for what holds now)")
    for dp in d.dream:
        votes = ", ".join(f"{k} {v}" for k, v in dp.votes.items())
        line = (
            f"dream cycle: {dp.role} by run {dp.run_id} ({attr(dp.run_type)}, "
            f"{dp.run_started_at.date().isoformat()}), {attr(dp.operation or '')} via "
            f"{attr(dp.strategy or '')}; votes: {votes}; rests on: "
            + ", ".join(str(m) for m in dp.rests_on)
        )
        if dp.user_rejected_at:
            line += f"; rejected by the user: {clean(dp.user_rejection_reason or '')}"
        meta.append(line)
    if d.summary:
        meta.append(f"summary: {clean(d.summary)}")
    meta.append(
        clean("provenance: " + "; ".join(chains))
        if chains
        else "provenance: none (not derived from a captured task)"
    )
    body = clean(d.content)
    if d.content_truncated:
        body += "\n[content cut at the read limit]"
    parts = [
        f'<memory id="{d.id}" kind="{attr(d.type)}" created="{d.created_at.isoformat()}"{extra}>',
        "\n".join(meta),
        "",
        body,
        "",
    ]
    more = ", more not shown" if d.relationships_truncated else ""
    rels = [f"relationships ({len(d.relationships)}{more}):"]
    for r in d.relationships:
        arrow = "->" if r.direction == "outgoing" else "<-"
        expired = f" [expired {r.expired_at.isoformat()}]" if r.expired_at else ""
        rels.append(
            f"- {r.direction} {attr(r.relation_type)} {arrow} {r.other_id} "
            f"({attr(r.other_type)}, {attr(r.other_status)}): {clean(r.other_title)}{expired}"
            + edge_details(r.created_at, r.similarity, r.evidence, r.backend)
        )
    if not d.relationships:
        rels.append("- none")
    parts += ["\n".join(rels), ""]
    turns = [t for p in d.provenance for t in p.turns]
    parts.append(
        f"source turns ({len(turns)}{', cut at the read limits' if d.turns_truncated else ''}):"
    )
    for p in d.provenance:
        for t in p.turns:
            parts.append(
                f'<turn source="{attr(p.source)}" task="{attr(p.native_task_id)}"'
                f' ordinal="{t.ordinal}" role="{attr(t.role)}">'
            )
            for label, text, cut in (
                ("prompt", t.prompt, t.prompt_truncated),
                ("outcome", t.outcome, t.outcome_truncated),
            ):
                if text is None:
                    parts.append(f"{label}: [omitted: the read's text budget is spent]")
                else:
                    parts.append(f"{label}:{' [cut]' if cut else ''}\n{clean(text)}")
            parts.append("</turn>")
    parts.append("</memory>")
    return "\n".join(parts)


# --- entities (memory_entity, `memory-pipeline entities`) --------------------------------------
def _entity_head(e: EntitySummary) -> str:
    seen = ""
    if e.first_seen and e.last_seen:
        seen = f", {e.first_seen.date().isoformat()} to {e.last_seen.date().isoformat()}"
    aliases = f"; aliases: {', '.join(e.aliases)}" if e.aliases else ""
    said = f"{e.memories} memories, {e.turns} turns"
    return clean(f"{e.name} ({e.type}): mentioned in {said}{seen}{aliases}")


def entity_timeline_text(tl: EntityTimeline) -> str:
    if tl.entity is None:
        if not tl.candidates:
            return clean(f"No entity is named {tl.query!r}.")
        listed = "\n".join(f"- {_entity_head(c)}" for c in tl.candidates)
        return clean(f"{tl.query!r} names {len(tl.candidates)} entities; ask which:\n") + listed
    lines = [_entity_head(tl.entity)]
    if tl.entity.identifiers:
        lines.append(clean("identifiers: " + ", ".join(tl.entity.identifiers)))
    for m in tl.mentions:
        where = f"{m.source}:{m.native_task_id} t{m.turn}" if m.native_task_id else m.kind
        mid = short_id(m.memory_id) if m.memory_id else "-"
        lines.append(clean(f"{m.at.date().isoformat()} [{mid} {where}] ({m.extractor}) {m.line}"))
    if tl.truncated:
        lines.append("(older mentions left out: raise the limit)")
    return "\n".join(lines)


def entity_list_text(listing: EntityList) -> str:
    if not listing.entities:
        return "No entities yet (the memory_entities asset finds them)."
    head = f"{len(listing.entities)} of {listing.total} entities, most mentioned first:"
    return "\n".join([head, *(f"- {_entity_head(e)}" for e in listing.entities)])
