"""The inbox in Dagster: the asset's per-kind run metadata, and the sensor asking for today's run
when the inbox changed (and not again once it is stored)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline import tuning
from memory_pipeline.definitions import defs
from memory_pipeline.inbox.definitions import inbox_sensor
from memory_pipeline.inbox.resource import InboxResource
from memory_pipeline.inbox.store import INBOX_LINE
from memory_pipeline.progress import to_terminal
from memory_pipeline.resources import DatabaseResource
from memory_pipeline_tests.inbox.files import text_pdf, write
from memory_pipeline_tests.inbox.test_readers import ARTICLE


def test_asset_metadata_per_kind_and_the_sensor(db_url: str, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    write(inbox / "post.html", ARTICLE)
    write(inbox / "policy.pdf", text_pdf(["Backups are kept 14 days."]))
    write(inbox / "scan.md", b"\x00\x01binary")
    resources = {
        "db": DatabaseResource(url=db_url),
        "inbox": InboxResource(inbox_dir=str(inbox), fetch_dir=str(tmp_path / "cache")),
    }
    today = datetime.now(UTC).date()
    with dg.DagsterInstance.ephemeral() as instance:
        context = dg.build_sensor_context(instance=instance, resources=resources)
        result = inbox_sensor(context)
        assert [r.partition_key for r in result.run_requests] == [today.isoformat()]

        asset = defs.get_assets_def("inbox_documents")
        done = dg.materialize(
            [asset], partition_key=today.isoformat(), resources=resources, instance=instance
        )
        assert done.success
        meta = done.asset_materializations_for_node("inbox_documents")[0].metadata
        assert meta["inbox_read"].value is True
        by_kind = meta["by_kind"].value
        assert by_kind["article"]["new"] == 1 and by_kind["document"]["new"] == 1
        assert by_kind["document"]["failed"] == 1
        assert meta["file_issues"].value == {"binary": 1}
        # the line `memory-pipeline run` prints under the asset's counts: per kind, and why not
        assert meta[INBOX_LINE].value == (
            "inbox: article 1 new; document 1 new, 1 not stored; why: binary 1"
            " (`memory-pipeline inbox list` lists them)"
        )

        # stored: only the bad file's version is left, which asks for the same run key again
        again = inbox_sensor(dg.build_sensor_context(instance=instance, resources=resources))
        assert [r.run_key for r in again.run_requests] != [r.run_key for r in result.run_requests]
        (inbox / "scan.md").unlink()
        quiet = inbox_sensor(dg.build_sensor_context(instance=instance, resources=resources))
        assert not quiet.run_requests and quiet.skip_reason

        yesterday = (today - timedelta(days=1)).isoformat()
        old = dg.materialize([asset], partition_key=yesterday, resources=resources)
        assert (
            old.asset_materializations_for_node("inbox_documents")[0].metadata["inbox_read"].value
            is False
        )


def test_a_long_capture_shows_its_progress_on_the_run_terminal(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memory-pipeline run` executes the asset in its own process with Dagster's console
    logger quiet: the inbox's progress lines still reach its terminal (`to_terminal`, which
    `materialize_all` wraps around its jobs), and the run's log."""
    monkeypatch.setattr(tuning, "INBOX_PROGRESS_PASSAGES", 10)
    inbox = tmp_path / "inbox"
    write(inbox / "long.md", "".join(f"# H{n}\n\nLine {n}.\n" for n in range(25)))
    resources = {
        "db": DatabaseResource(url=db_url),
        "inbox": InboxResource(inbox_dir=str(inbox), fetch_dir=str(tmp_path / "cache")),
    }
    lines: list[str] = []
    with dg.DagsterInstance.ephemeral() as instance, to_terminal(lines.append):
        done = dg.materialize(
            [defs.get_assets_def("inbox_documents")],
            partition_key=datetime.now(UTC).date().isoformat(),
            resources=resources,
            instance=instance,
        )
        assert done.success
        logged = [
            e.message
            for e in instance.all_logs(done.run_id)
            if e.message and "passages stored so far" in e.message
        ]
    assert lines == [
        "    inbox: long.md: 10 passages stored so far",
        "    inbox: long.md: 20 passages stored so far",
    ]
    assert len(logged) == 2  # the Dagster UI's run log has them too
