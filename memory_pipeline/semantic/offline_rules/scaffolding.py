"""Scaffolding: text a harness, a template or a paste put into a turn, not what the person said.

Prompt templates (`## User Input` / ```` ```text ```` blocks with the user's words), headings
(`## Context`), checklists (`- [ ]`), placeholders (`[what was chosen]`, `{{name}}`,
`$ARGUMENTS`), slash commands (`/export`), file mentions (`@plan.md`), effort directives
("ultrathink"), injected context blocks (`<system-reminder>...</system-reminder>`), pasted
terminal sessions and logs, and status lines of an answer ("✅ Done!", "## Fix Complete") are
never a segment title, never a decision and never an insight.

`subject_text(prompt)` is the prompt with its scaffolding removed (a template's user input kept):
what the titles, the topic rules and the distillation read. `is_scaffolding_sentence` and
`is_status_line` judge single sentences or lines.
"""

from __future__ import annotations

import re

from memory_pipeline import tuning as T

_I = re.IGNORECASE
_M = re.MULTILINE

# A template's user input: a fenced block right after a heading that names it.
_INPUT_BLOCK = re.compile(
    r"^\s{0,3}#{1,6}\s*(?:" + T.SCAFFOLD_INPUT_HEADINGS + r")\b[^\n]*\n+"
    r"\s*```[\w-]*\n(.*?)\n\s*```",
    _I | _M | re.S,
)
_TAG_BLOCK = re.compile(r"<([a-z][\w-]*)(?:\s[^>]*)?>.*?</\1>", re.S | _I)
_LONE_TAG = re.compile(r"</?[a-z][\w-]*(?:\s[^>]*)?/?>", _I)
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s.*$", _M)
_CHECKLIST_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\[[ xX✓✔-]?\]\s.*$", _M)
PLACEHOLDER = re.compile(
    r"\[(?:[a-z][\w /'’-]{1,60}|\.\.\.|…)\]|\{\{[^}]*\}\}|\$[A-Z][A-Z_]{2,}\b|<[A-Z][A-Z_ ]{2,}>"
)
_SLASH_COMMAND = re.compile(r"^\s*/[a-z][\w:.-]*(?=\s|$)", _I | _M)
_FILE_MENTION = re.compile(r"(?<![\w/])@[\w./-]+")
_DIRECTIVE = re.compile(T.SCAFFOLD_DIRECTIVES, _I)
# A pasted terminal line ("user@host:/path$ cmd", "$ cmd", "PS C:\\> cmd", "(venv) ..."), a
# traceback or a log line with a level.
_PASTED_LINE = re.compile(
    r"^\s*(?:\(\S+\)\s*)?[\w.-]+@[\w.-]+:[^\s$#]*[$#].*$"
    r"|^\s*(?:\$|>>>|PS [A-Z]:\\[^>]*>)\s.*$"
    r"|^\s*(?:Traceback \(most recent call last\)|File \"[^\"]+\", line \d+).*$"
    r"|^\s*\S*\d{2}:\d{2}:\d{2}\S*\s+(?:\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\]?)\b.*$",
    _M,
)
_TEMPLATE_SENTENCE = re.compile(T.SCAFFOLD_TEMPLATE_SENTENCES, _I)
_STATUS = re.compile(T.SCAFFOLD_STATUS_LINES, _I)
_PROGRESS = re.compile(T.SCAFFOLD_PROGRESS_REPORT, _I)
_REVIEW_FINDING = re.compile(r"^\W*\[(?:P[0-4]|nit|major|minor|blocker|critical)\]", _I)
_EMOJI = re.compile(r"[\u2190-\u2bff\u2700-\u27bf\U0001F000-\U0001FAFF\ufe0f]")
_WS = re.compile(r"[ \t]+")


def subject_text(prompt: str) -> str:
    """The prompt without its scaffolding; a template's user input (its ```text block under
    `## User Input`) is the prompt itself."""
    inputs = [m.group(1).strip() for m in _INPUT_BLOCK.finditer(prompt)]
    inputs = [i for i in inputs if i and not PLACEHOLDER.fullmatch(i)]
    text = "\n\n".join(inputs) if inputs else prompt
    text = _TAG_BLOCK.sub("\n", text)
    text = _LONE_TAG.sub(" ", text)
    text = _HEADING_LINE.sub("", text)
    text = _CHECKLIST_LINE.sub("", text)
    text = _PASTED_LINE.sub("", text)
    text = PLACEHOLDER.sub(" ", text)
    text = _SLASH_COMMAND.sub(" ", text)
    text = _FILE_MENTION.sub(" ", text)
    text = _DIRECTIVE.sub(" ", text)
    lines = [ln for ln in text.splitlines() if not _TEMPLATE_SENTENCE.search(ln)]
    text = "\n".join(_WS.sub(" ", ln).strip() for ln in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def has_paste(prompt: str) -> bool:
    """The prompt pastes terminal output or a log: it reports on what was just done."""
    return bool(_PASTED_LINE.search(prompt))


def answer_text(outcome: str) -> str:
    """An answer without its headings, checklists and injected blocks: a heading labels what
    follows ("## Fix Complete"), it never states a decision or an insight."""
    text = _TAG_BLOCK.sub("\n", outcome)
    text = _HEADING_LINE.sub("", text)
    return _CHECKLIST_LINE.sub("", text)


def is_status_line(sentence: str) -> bool:
    """A line that reports progress ("✅ Done!", "Bug fix complete!", "Perfect! I've added..."),
    not a finding: never a decision or an insight."""
    if sentence.lstrip(" -*").startswith(tuple(T.SCAFFOLD_CHECK_MARKS)):
        return True
    return bool(_STATUS.search(_EMOJI.sub("", sentence).strip()))


_DATA_LINE = re.compile(r"^\W*[\w /-]{1,30}:\s*`[^`]+`\W*$")


def is_data_line(sentence: str) -> bool:
    """A "Key: `value`" line of a listing: a fact to look at, never a finding on its own."""
    return bool(_DATA_LINE.match(sentence))


def is_progress_report(sentence: str) -> bool:
    """A sentence that reports what was done ("I've successfully created the package")."""
    return bool(_PROGRESS.search(_EMOJI.sub("", sentence).strip()))


def is_scaffolding_sentence(sentence: str) -> bool:
    """A sentence that is template or harness text: a placeholder, a checklist line, a slash
    command, a tag, a review finding's priority tag, a template instruction or a status line."""
    s = sentence.strip()
    return bool(
        PLACEHOLDER.search(s)
        or _CHECKLIST_LINE.match(s)
        or _SLASH_COMMAND.match(s)
        or _LONE_TAG.search(s)
        or _REVIEW_FINDING.match(s)
        or _TEMPLATE_SENTENCE.search(s)
        or is_status_line(s)
    )
