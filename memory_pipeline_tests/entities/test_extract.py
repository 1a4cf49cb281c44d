"""Offline extraction on hand-made text: deterministic identifiers, names by their phrasing,
speakers, the alias scan; and no text makes it crash or invent a type."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline import tuning
from memory_pipeline.entities.extract import (
    alias_spans,
    identifiers,
    named,
    normal,
    software,
    speaker_person,
)


def keys(text: str) -> set[str]:
    return {i for f in identifiers(text) for i in f.identifiers}


def test_repository_urls_in_every_spelling_are_one_key() -> None:
    text = (
        "Cloned https://github.com/Acme/Widget-API.git, see "
        "https://github.com/acme/widget-api/pull/12 and git@github.com:acme/widget-api.git"
    )
    assert {k for k in keys(text) if k.startswith("repo:")} == {"repo:github.com/acme/widget-api"}
    assert not any(k.startswith("path:") for k in keys(text))  # URL paths are not files


def test_emails_handles_hosts_paths() -> None:
    text = (
        "Mail Victor Hugo <victor@example.org> or ping @vhugo; the API runs on api.acme.io "
        "and the config is in deploy/nginx/site.conf and /etc/ssl/private/key.pem."
    )
    found = keys(text)
    assert {"email:victor@example.org", "person:victor hugo", "handle:vhugo"} <= found
    assert "host:api.acme.io" in found
    assert "host:example.org" not in found  # an e-mail's domain is not a host mention
    assert {"path:deploy/nginx/site.conf", "path:/etc/ssl/private/key.pem"} <= found


def test_decorators_versions_and_dates_are_not_identifiers() -> None:
    text = "@dataclass\nclass A: ...\nUpgraded 3.5/4.0 on 10/12/2024 and/or later."
    assert keys(text) == set()


def test_packages_from_install_commands_and_imports() -> None:
    text = (
        "Run `pip install psycopg[binary]==3.2 httpx -U` and `npm i @types/node`.\n"
        "import numpy as np\nfrom pydantic import BaseModel\nimport os\n"
    )
    found = keys(text)
    assert {"package:psycopg", "package:httpx", "package:@types/node"} <= found
    assert {"package:numpy", "package:pydantic"} <= found
    assert "package:os" not in found  # the standard library is not a package
    assert "tool:pip" in found and "tool:npm" in found  # backticked commands


def test_speakers_are_people_roles_are_not() -> None:
    victor = speaker_person("Victor  Hugo")
    assert victor is not None
    assert victor.identifiers == ("person:victor hugo",)
    assert {normal(a) for a in victor.aliases} == {"victor hugo", "victor"}
    assert speaker_person("User") is None and speaker_person("Agent") is None
    assert speaker_person("") is None and speaker_person(None) is None


def test_names_by_their_phrasing() -> None:
    text = (
        "My friend Nadia came along. We moved to Lisbon in May, and she works at Bayview "
        "Institute. I visited The Hague? No."
    )
    got = {(f.category, f.name) for f in named(text)}
    assert ("person", "Nadia") in got
    assert ("place", "Lisbon") in got
    assert ("organisation", "Bayview Institute") in got
    assert all(f.identifiers == () for f in named(text))  # names resolve through aliases


def test_alias_scan_takes_the_longest_match() -> None:
    spans = alias_spans("Victor Hugo met Victor's cousin", {"victor hugo", "victor"})
    assert spans == [("victor hugo", "Victor Hugo"), ("victor", "Victor's")]


def test_known_software_named_in_prose() -> None:
    """What decisions choose and drop ("we drop Redis", "instead of cron"), one node per thing
    whatever its spelling; a word inside a longer name (django-redis) or an ordinary word
    ("the node", "make sure") is none."""
    text = (
        "We drop Redis and keep the limits in PostgreSQL; django-redis stays as the cache. "
        "A systemd timer replaces the cron entry, Postgres keeps the buckets, and `&mmap` goes: "
        "make sure the node has memmap2 removed."
    )
    found = {(f.category, f.name): f for f in software(text)}
    assert set(found) == {
        ("tool", "redis"),
        ("tool", "postgres"),
        ("tool", "systemd"),
        ("tool", "cron"),
        ("package", "mmap"),
    }
    assert found[("tool", "postgres")].identifiers == ("tool:postgres",)
    assert found[("tool", "postgres")].surface == "PostgreSQL"  # the first spelling met
    assert found[("package", "mmap")].aliases == ("mmap", "memmap2")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_extracts_only_closed_types(text: str) -> None:
    found = [*identifiers(text), *named(text), *software(text)]
    assert all(f.category in tuning.ENTITY_TYPES for f in found)
    assert all(0 <= f.confidence <= 1 for f in found)
    alias_spans(text, {normal(f.name) for f in found})
