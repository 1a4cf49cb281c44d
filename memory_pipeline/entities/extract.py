"""Offline extraction: what a text names, strongest identity first (seed 003, issue 34).

Plain functions over text, no database and no model:

- `identifiers`: deterministic keys. Repository URLs (`repo:github.com/owner/name`), e-mail
  addresses (`email:...`, a person), @handles (`handle:...`), file paths (`path:...`), host names
  (`host:...`), package names from install commands and imports (`package:...`), and tools as
  the first word of a backticked command (`tool:...`). Two texts naming the same key name the
  same node, with no model and no review.
- `software`: well-known software named in prose ("we drop Redis", "instead of cron"), from the
  closed vocabulary ENTITY_KNOWN_SOFTWARE, keyed like a command's tool (`tool:redis`) or an
  installed package (`package:mmap`).
- `speaker_person`: a turn's speaker, a person keyed by the name (`person:<name>`), unless the
  speaker is a role ("User", "Agent").
- `named`: names found by their phrasing ("my friend Victor", "moved to Lisbon", "works at
  Acme"). These carry no identifier: the store resolves them through the aliases it knows, so an
  alias of two nodes stays ambiguous instead of being linked.
- `alias_spans`: every span of a text that equals a known alias (longest first), for the store's
  alias scan.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from memory_pipeline import tuning


@dataclass(frozen=True)
class Found:
    """One thing a text names. `identifiers` empty: a name to resolve through aliases."""

    category: str
    name: str
    surface: str
    extractor: str
    identifiers: tuple[str, ...] = ()
    aliases: tuple[str, ...] = field(default=())
    score: float | None = None  # a model's own confidence; else the extractor's

    @property
    def confidence(self) -> float:
        if self.score is not None:
            return self.score
        return tuning.ENTITY_CONFIDENCE[self.extractor]

    def __post_init__(self) -> None:
        if self.category not in tuning.ENTITY_TYPES:
            raise ValueError(f"entity type {self.category!r} is not in the closed set")


def normal(alias: str) -> str:
    """An alias as stored and scanned: lower case, single spaces, no surrounding punctuation."""
    return " ".join(alias.lower().split()).strip(".,;:!?'\"()[]{}")


_REPO = re.compile(
    r"(?:https?://(?:www\.)?|git@|ssh://git@)"
    r"(github\.com|gitlab\.com|bitbucket\.org|codeberg\.org)[/:]"
    r"([A-Za-z0-9][\w.-]*)/([\w.-]+?)(?:\.git)?(?=[/\s#?)\]'\",;>]|$)"
)
_EMAIL = re.compile(r"(?<![\w.+-])([\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b")
_NAMED_EMAIL = re.compile(r"([A-Z][a-z]+(?: [A-Z][a-z]+)?) <([^<>\s]+@[^<>\s]+)>")
_HANDLE = re.compile(r"(?<![\w@./])@([A-Za-z][\w-]{1,38})(?![\w.(@-])")
_URL = re.compile(r"\bhttps?://[^\s<>\"')\]]+")
_TLDS = "com|org|net|io|dev|app|ai|cloud|internal|co|sh"
_HOST = re.compile(
    rf"(?<![\w@./-])((?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+(?:{_TLDS}))(?![\w.-]*\w)",
    re.IGNORECASE,
)
_PATH = re.compile(
    r"(?<![\w/.:~@-])("
    r"(?:~|\.{1,2})?/(?:[\w.-]+/)+[\w.-]+"  # /etc/nginx/nginx.conf, ~/src/app, ./a/b
    r"|(?:[\w-][\w.-]*/)+[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5}"  # src/app/main.py
    r")(?![\w/])"
)
_INSTALL = re.compile(
    r"\b(?:pip3?|uv pip|uv|poetry|pipx) (?:install|add) ([^\n`;&|]+)"
    r"|\b(?:npm (?:install|i|add)|yarn add|pnpm add|bun add) ([^\n`;&|]+)"
    r"|\bcargo (?:add|install) ([^\n`;&|]+)"
    r"|\bgem install ([^\n`;&|]+)"
)
_IMPORT = re.compile(r"^\s*(?:from ([A-Za-z_]\w*)[\w.]* import |import ([A-Za-z_]\w*))", re.M)
_PACKAGE_NAME = re.compile(r"^(@?[A-Za-z0-9][\w.-]*(?:/[\w.-]+)?)")
_BACKTICK = re.compile(r"`([^`\n]{1,120})`")

_CAP = r"[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?"
_CAP_NAME = rf"({_CAP}(?: {_CAP}){{0,2}})"
_RELATIVES = (
    "friend|friends|sister|brother|mom|mum|mother|dad|father|wife|husband|partner|colleague|"
    "coworker|co-worker|boss|son|daughter|cousin|aunt|uncle|neighbor|neighbour|teammate|manager|"
    "grandma|grandmother|grandpa|grandfather|roommate|girlfriend|boyfriend|mentor|niece|nephew"
)
_PERSON = re.compile(rf"\b(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir) (?:{_RELATIVES}),? {_CAP_NAME}")
# A place by its phrasing, said of a person ("she moved to Lisbon", "I grew up in Oslo") or of a
# trip: "the worker moved to Celery" names no subject that can travel, so it is no place.
_SUBJECT = r"(?:I|[Hh]e|[Ss]he|[Tt]hey|[Ww]e|[A-Z][a-z]+)(?: (?:just|recently|finally|also|once))?"
_PLACE = re.compile(
    rf"(?:\b{_SUBJECT} (?:visited|travell?ed to|moved to|flew to|live in|lives in|lived in|"
    r"grew up in|was born in|were born in)"
    r"|\b(?:a trip to|trip to|vacation in|holiday in|holidays in|visiting|born in))"
    rf" {_CAP_NAME}"
)
_ORG = re.compile(
    r"\b(?:work|works|worked|working|interning|intern|employed|a job) (?:at|for)"
    rf" (?:the )?{_CAP_NAME}"
    rf"|\bjoined (?:the )?{_CAP_NAME}"
)
# Capitalised words that start a sentence or a phrase, never a name on their own.
NOT_NAMES = frozenset(
    (
        "i",
        "the",
        "a",
        "an",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "this",
        "that",
        "it",
        "we",
        "they",
        "he",
        "she",
        "you",
        "there",
        "here",
        "then",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "today",
        "tomorrow",
        "yesterday",
        "last",
        "next",
        "home",
        "work",
        "school",
    )
)
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}


def _strip_punct(path: str) -> str:
    return path.rstrip(".,;:")


def identifiers(text: str) -> list[Found]:
    """Every deterministic key the text holds, in text order per kind."""
    out: list[Found] = []
    repo_spans: list[tuple[int, int]] = []
    for m in _REPO.finditer(text):
        host, owner, name = m.group(1).lower(), m.group(2), m.group(3)
        slug = f"{owner}/{name}"
        repo_spans.append(m.span())
        out.append(
            Found(
                "repository",
                slug,
                m.group(0),
                "identifier",
                (f"repo:{host}/{slug.lower()}",),
                (slug, name),
            )
        )
    named = {e.lower(): n for n, e in _NAMED_EMAIL.findall(text)}
    email_spans: list[tuple[int, int]] = []
    for m in _EMAIL.finditer(text):
        if any(a <= m.start(1) < b for a, b in repo_spans):
            continue  # git@github.com:owner/repo is a repository, not an address
        address = m.group(1).lower()
        email_spans.append(m.span())
        person = named.get(address)
        ids = (f"email:{address}",) + ((f"person:{normal(person)}",) if person else ())
        aliases = (person, person.split()[0]) if person else ()
        out.append(Found("person", person or address, m.group(1), "identifier", ids, aliases))
    for m in _HANDLE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not text[line_start : m.start()].strip():
            continue  # a decorator (`@dataclass` on its own line), not a handle
        handle = m.group(1)
        out.append(
            Found("person", f"@{handle}", m.group(0), "identifier", (f"handle:{handle.lower()}",))
        )
    urls = [u.span() for u in _URL.finditer(text)]

    def inside(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
        return any(a <= span[0] and span[1] <= b for a, b in spans)

    for m in _HOST.finditer(text):
        span = m.span(1)
        if inside(span, repo_spans) or inside(span, email_spans):
            continue
        host = m.group(1).lower()
        if host.count(".") == 0 or host.split(".")[-2] in ("", "www"):
            continue
        out.append(Found("host", host, m.group(1), "identifier", (f"host:{host}",), (host,)))
    for m in _PATH.finditer(text):
        span = m.span(1)
        if inside(span, urls) or inside(span, email_spans):
            continue
        path = _strip_punct(m.group(1))
        if path.count("/") < 1 or "//" in path:
            continue
        key = path.removeprefix("./")
        base = key.rsplit("/", 1)[-1]
        aliases = (key, base) if "." in base else (key,)
        out.append(Found("file", key, path, "identifier", (f"path:{key}",), aliases))
    out.extend(packages(text))
    out.extend(commands(text))
    return out


def packages(text: str) -> Iterator[Found]:
    """Packages named by an install command (`pip install x`, `npm i y`) or imported."""
    seen: set[str] = set()
    for m in _INSTALL.finditer(text):
        args = next(g for g in m.groups() if g is not None)
        for word in args.split():
            if word.startswith("-") or word in (".", "-e"):
                continue
            pm = _PACKAGE_NAME.match(word.strip("'\""))
            if pm is None:
                break
            name = pm.group(1).rstrip(".-")
            if len(name) < 2 or "=" in name:
                continue
            # npm's scoped packages keep their @: `npm i @types/node`
            if "@" in name[1:]:
                name = name[: name.index("@", 1)]
            yield from _package(name, word, seen)
    for m in _IMPORT.finditer(text):
        name = m.group(1) or m.group(2)
        if name in _STDLIB or name.startswith("_"):
            continue
        yield from _package(name, name, seen)


def _package(name: str, surface: str, seen: set[str]) -> Iterator[Found]:
    key = name.lower().replace("_", "-")
    if key in seen:
        return
    seen.add(key)
    yield Found("package", name, surface, "identifier", (f"package:{key}",), (name,))


def commands(text: str) -> Iterator[Found]:
    """A tool as the first word of a backticked command: `git rebase -i`, `$ make test`."""
    seen: set[str] = set()
    for m in _BACKTICK.finditer(text):
        words = m.group(1).strip().removeprefix("$ ").split()
        if not words:
            continue
        tool = words[0].lower()
        if tool in tuning.ENTITY_KNOWN_TOOLS and tool not in seen:
            seen.add(tool)
            yield Found("tool", tool, m.group(0), "command", (f"tool:{tool}",), (tool,))


# Every name of a known software node -> the node's name.
_SOFTWARE_NAME = {
    alias: name
    for name, (_, others) in tuning.ENTITY_KNOWN_SOFTWARE.items()
    for alias in (name, *others)
}
_SOFTWARE = re.compile(
    r"(?<![\w-])("
    + "|".join(re.escape(a) for a in sorted(_SOFTWARE_NAME, key=lambda a: (-len(a), a)))
    + r")(?![\w-])",
    re.IGNORECASE,
)


def software(text: str) -> Iterator[Found]:
    """Known software named anywhere in the text, once per node, in text order."""
    seen: set[str] = set()
    for m in _SOFTWARE.finditer(text):
        name = _SOFTWARE_NAME[m.group(1).lower()]
        if name in seen:
            continue
        seen.add(name)
        category, others = tuning.ENTITY_KNOWN_SOFTWARE[name]
        key = name.replace("_", "-") if category == "package" else name
        yield Found(
            category, name, m.group(1), "vocabulary", (f"{category}:{key}",), (name, *others)
        )


def speaker_person(speaker: str | None) -> Found | None:
    """The person a turn's speaker is, keyed by the name; None for a role or no name."""
    if not speaker:
        return None
    name = " ".join(speaker.split())
    key = normal(name)
    if not key or key in tuning.ENTITY_ROLE_SPEAKERS or not any(c.isalpha() for c in key):
        return None
    first = key.split()[0]
    aliases = (name,) if first == key else (name, name.split()[0])
    return Found("person", name, speaker, "speaker", (f"person:{key}",), aliases)


def named(text: str) -> list[Found]:
    """Names found by their phrasing; resolved through aliases by the store (no identifiers)."""
    out: list[Found] = []
    for pattern, category in ((_PERSON, "person"), (_PLACE, "place"), (_ORG, "organisation")):
        for m in pattern.finditer(text):
            name = next(g for g in m.groups() if g is not None)
            words = name.split()
            while words and words[-1].lower() in NOT_NAMES:
                words.pop()
            if not words or words[0].lower() in NOT_NAMES:
                continue
            name = " ".join(words)
            out.append(Found(category, name, name, "pattern", (), (name,)))
    return out


_WORD = re.compile(r"[\w][\w.'/@+-]*[\w]|[\w]")


def alias_spans(text: str, aliases: Iterable[str]) -> list[tuple[str, str]]:
    """(alias, surface) for every span of `text` equal to a known alias, longest match first and
    left to right; a span inside a longer match is not matched again ("Victor Hugo" is one
    mention, not also one of "Victor")."""
    known = {a for a in aliases if len(a) >= tuning.ENTITY_ALIAS_MIN_CHARS}
    if not known:
        return []
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        for n in range(min(tuning.ENTITY_ALIAS_MAX_WORDS, len(words) - i), 0, -1):
            start, end = words[i][1], words[i + n - 1][2]
            surface = text[start:end]
            key = normal(surface)
            if key in known:
                out.append((key, surface))
                i += n
                break
            # a trailing possessive or full stop: "Victor's", "Lisbon."
            trimmed = re.sub(r"('s|\.)$", "", key)
            if trimmed != key and trimmed in known:
                out.append((trimmed, surface))
                i += n
                break
        else:
            i += 1
    return out
