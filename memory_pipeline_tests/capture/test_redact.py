"""Secrets never reach the database: every known shape is replaced and counted."""

from __future__ import annotations

import pytest

from memory_pipeline.capture.redact import redact

SECRETS = [
    ("openai_key", "my key is sk-proj-Ab3dEf5gH7iJ9kL1mN3oP5qR7sT9uV1w"),
    ("anthropic_key", "ANTHROPIC_API_KEY sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("aws_access_key_id", "aws id AKIAIOSFODNN7EXAMPLE in the env"),
    ("github_token", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"),
    ("slack_token", "xoxb-123456789012-abcdefghijkl"),
    ("google_api_key", "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
    ("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("bearer_token", "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345'"),
    ("url_password", "DATABASE_URL=postgres://billing:hunter2hunter2@db.internal:5432/billing"),
    ("assigned_secret", 'config: password = "correct-horse-battery"'),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----",
    ),
]


@pytest.mark.parametrize(("kind", "text"), SECRETS)
def test_each_secret_kind_is_redacted(kind: str, text: str) -> None:
    out, found = redact(text)
    assert found.by_kind.get(kind) == 1, (out, found.by_kind)
    assert f"[REDACTED:{kind}]" in out


def test_redaction_keeps_the_surrounding_meaning() -> None:
    out, found = redact("connect with postgres://billing:hunter2hunter2@db.internal:5432/billing")
    assert out == "connect with postgres://billing:[REDACTED:url_password]@db.internal:5432/billing"
    assert found.total == 1


def test_ordinary_text_is_untouched() -> None:
    text = (
        "We decided to keep rate limits in Postgres because Redis added an ops burden; "
        "see https://example.com/docs and the task-1234 ticket. sk-learn is a library."
    )
    out, found = redact(text)
    assert out == text and found.total == 0


def test_redacting_twice_changes_nothing() -> None:
    once, _ = redact("key sk-proj-Ab3dEf5gH7iJ9kL1mN3oP5qR7sT9uV1w and password=swordfish1")
    twice, found = redact(once)
    assert twice == once and found.total == 0
