"""The inbox's source kinds (issue 33): the ONE place they are named.

A document in the inbox is an `article` (a web page: a saved .html/.htm/.mhtml file or a fetched
URL), a `document` (Markdown, plain text, reStructuredText, PDF) or a `video` (a .vtt/.srt
transcript, with yt-dlp's .info.json beside it). The kind is the `source_type` of every memory a
document yields, so `--source article` filters search as `--source codex` does. Pipeline and
serving both read this module (it sits below both).
"""

from __future__ import annotations

from typing import Literal, get_args

InboxKind = Literal["article", "document", "video"]
INBOX_KINDS: tuple[str, ...] = get_args(InboxKind)
# How a memory of each kind is labelled (encoding context, the UI, `inbox list`).
INBOX_KIND_LABELS = {"article": "web article", "document": "document", "video": "video transcript"}
