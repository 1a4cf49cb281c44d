"""Render a stored briefing: Markdown (CLI, MCP), plain text and HTML (mail).

Every item links back to its memories: `memory_url` (MEMORY_BRIEF_MEMORY_URL, default
`memory:{id}`) is formatted with each memory's id; the id itself is always printed, so an agent
can pass it to `memory_read`. Item ids are printed for feedback (`brief --useful ID`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from memory_pipeline.express.models import StoredBriefing, StoredItem

DEFAULT_MEMORY_URL = "memory:{id}"
_ROLE_WORDS = {
    "subject": "",
    "newer": "newer",
    "older": "older",
    "successor": "replaced by",
    "evidence": "rests on",
}


def _role(role: str) -> str:
    word = _ROLE_WORDS.get(role, role)
    return f" ({word})" if word else ""


def _title(briefing: StoredBriefing) -> str:
    return f"Briefing for {briefing.day.isoformat()}"


def subject(briefing: StoredBriefing, items: Sequence[StoredItem] | None = None) -> str:
    items = briefing.items if items is None else items
    top = items[0].headline if items else "nothing new"
    more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return f"[memory] {briefing.day.isoformat()}: {top}{more}"


def _md_escape(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def markdown(
    briefing: StoredBriefing,
    memory_url: str = DEFAULT_MEMORY_URL,
    items: Sequence[StoredItem] | None = None,
) -> str:
    items = briefing.items if items is None else items
    lines = [f"# {_title(briefing)}", ""]
    if not items:
        lines.append("Nothing new since the last briefing.")
    for item in items:
        lines.append(f"{item.position}. **{item.headline}**  ")
        lines.append(f"   _{item.kind} · {item.topic} · item {item.id}_")
        if item.detail:
            lines.append(f"   {item.detail}")
        for m in item.memories:
            url = memory_url.format(id=m.id)
            lines.append(f"   - [{_md_escape(m.title)}]({url}){_role(m.role)} `{m.id}`")
        lines.append("")
    if briefing.filtered:
        lines.append(f"_{len(briefing.filtered)} item(s) left out by your mutes._")
    lines.append(
        "_Feedback: `memory-pipeline brief --useful ID`, `--less ID`, `--mute TOPIC|KIND`._"
    )
    return "\n".join(lines).rstrip() + "\n"


def plain(
    briefing: StoredBriefing,
    memory_url: str = DEFAULT_MEMORY_URL,
    items: Sequence[StoredItem] | None = None,
) -> str:
    items = briefing.items if items is None else items
    lines = [_title(briefing), "=" * len(_title(briefing)), ""]
    if not items:
        lines.append("Nothing new since the last briefing.")
    for item in items:
        lines.append(f"{item.position}. {item.headline}")
        lines.append(f"   [{item.kind} / {item.topic} / item {item.id}]")
        if item.detail:
            lines.append(f"   {item.detail}")
        for m in item.memories:
            lines.append(f"   - {m.title}{_role(m.role)}: {memory_url.format(id=m.id)}")
        lines.append("")
    lines.append("Feedback: memory-pipeline brief --useful ID | --less ID | --mute TOPIC|KIND")
    return "\n".join(lines).rstrip() + "\n"


def html_page(
    briefing: StoredBriefing,
    memory_url: str = DEFAULT_MEMORY_URL,
    items: Sequence[StoredItem] | None = None,
) -> str:
    items = briefing.items if items is None else items
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{e(_title(briefing))}</title></head><body>",
        f"<h1>{e(_title(briefing))}</h1>",
    ]
    if not items:
        parts.append("<p>Nothing new since the last briefing.</p>")
    else:
        parts.append("<ol>")
        for item in items:
            parts.append(f'<li value="{item.position}"><strong>{e(item.headline)}</strong>')
            parts.append(f"<br><small>{e(item.kind)} · {e(item.topic)} · item {item.id}</small>")
            if item.detail:
                parts.append(f"<p>{e(item.detail)}</p>")
            parts.append("<ul>")
            for m in item.memories:
                href = e(memory_url.format(id=m.id), quote=True)
                parts.append(f'<li><a href="{href}">{e(m.title)}</a>{e(_role(m.role))}</li>')
            parts.append("</ul></li>")
        parts.append("</ol>")
    parts.append(
        "<p><small>Feedback: <code>memory-pipeline brief --useful ID</code>, "
        "<code>--less ID</code>, <code>--mute TOPIC|KIND</code>.</small></p>"
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
