"""The sensors and the hourly catch-up: what they request, and what they never request twice.

Each test ticks a real sensor (`dg.build_sensor_context`) over real files and a real database;
Dagster runs that are queued or in progress are real runs in a real (ephemeral) instance.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from memory_pipeline.capture.changes import PEEK_FAILED, WatchCursor, changed_since, watch
from memory_pipeline.capture.claude_code import ClaudeCodeConnector
from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.definitions import captured_tasks, transcript_sensor
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import demo_roots
from memory_pipeline.embedding.definitions import memory_embeddings
from memory_pipeline.entities.definitions import memory_entities
from memory_pipeline.inbox.definitions import inbox_documents
from memory_pipeline.inbox.resource import InboxResource
from memory_pipeline.jobs import INGEST_JOB, PARTITION_TAG, ingest_job, run_days
from memory_pipeline.partitions import first_day
from memory_pipeline.relationships.definitions import memory_relationships
from memory_pipeline.resources import (
    DatabaseResource,
    EmbeddingResource,
    SemanticResource,
    SourcesResource,
)
from memory_pipeline.schedules import hourly_catch_up, semantic_pass_request, semantic_pass_sensor
from memory_pipeline.semantic.definitions import semantic_memories
from memory_pipeline_tests.capture.test_capture_assets import RENAMED, codex_home, rollout, sources

DAY_21, DAY_24, DAY_30 = date(2026, 9, 21), date(2026, 9, 24), date(2026, 9, 30)
LATER_THREAD = "01a0f3af"  # a demo rollout that started on 2026-09-30
MOVED_THREAD = "01a13b6c"  # and one that started on 2026-10-14
PASS = ("semantic_memories", "memory_embeddings", "memory_entities", "memory_relationships")
DEMO_CODEX = demo_roots().home("codex")
SPACE = "local:all-minilm-l6-v2:384"


@pytest.fixture(scope="module")
def module_instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dg.DagsterInstance]:
    """A real instance on local storage, created once (it takes seconds). Not entered as a
    context manager: that would leave Dagster's definitions-state storage set for later tests."""
    home = tmp_path_factory.mktemp("dagster_instance")
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    inst = dg.DagsterInstance.from_config(str(home))
    yield inst
    inst.dispose()


@pytest.fixture
def instance(module_instance: dg.DagsterInstance) -> dg.DagsterInstance:
    """One instance for the module (creating one takes seconds), with no runs in it."""
    module_instance.wipe()
    return module_instance


class Watch:
    """Ticks the transcript sensor the way the daemon does: each tick gets the last cursor."""

    def __init__(self, instance: dg.DagsterInstance, src: SourcesResource, db_url: str) -> None:
        self.instance, self.src, self.db_url = instance, src, db_url
        self.cursor: str | None = None

    def tick(self) -> dg.SensorResult:
        with dg.build_sensor_context(
            instance=self.instance,
            cursor=self.cursor,
            resources={"sources": self.src, "db": DatabaseResource(url=self.db_url)},
        ) as context:
            result = transcript_sensor(context)
        self.cursor = result.cursor
        return result

    def requested(self) -> set[date]:
        """Days requested by one tick (empty when it skipped)."""
        result = self.tick()
        return set().union(*(days_of(r) for r in result.run_requests or []))


def days_of(request: dg.RunRequest) -> set[date]:
    tags = dict(request.tags)
    if request.partition_key:
        tags[PARTITION_TAG] = request.partition_key
    return run_days(tags)


def capture_all(conn: psycopg.Connection, src: SourcesResource) -> None:
    capture_window(conn, src.connectors(), date(2026, 1, 1), date(2027, 1, 1))


def set_mtime(path: Path, when: datetime) -> None:
    ns = int(when.timestamp() * 1e9)
    os.utime(path, ns=(ns, ns))


def add_run(
    instance: dg.DagsterInstance,
    day: date,
    status: dg.DagsterRunStatus,
    assets: list[str] | tuple[str, ...] | None = None,
) -> dg.DagsterRun:
    """A run of the ingest job for `day` in the instance, as the daemon records one."""
    from dagster._core.remote_origin import (
        InProcessCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    location = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name="memory_pipeline.definitions"),
        location_name="memory_pipeline",
    )
    run = dg.DagsterRun(
        job_name=INGEST_JOB,
        run_id=str(uuid.uuid4()),
        status=status,
        tags={PARTITION_TAG: day.isoformat()},
        asset_selection=frozenset(dg.AssetKey(a) for a in assets) if assets else None,
        remote_job_origin=RemoteJobOrigin(
            repository_origin=RemoteRepositoryOrigin(
                code_location_origin=location, repository_name="__repository__"
            ),
            job_name=INGEST_JOB,
        ),
    )
    return instance.add_run(run)


def test_the_first_tick_requests_every_day_then_only_files_that_change(
    db_url, tmp_path, instance
) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    watch = Watch(instance, sources(home, tmp_path), db_url)
    (request,) = watch.tick().run_requests
    assert days_of(request) == {DAY_21, date(2026, 9, 22), date(2026, 9, 23), DAY_24}
    quiet = watch.tick()  # nothing captured yet, but already requested: not again
    assert not quiet.run_requests and quiet.skip_reason
    grown = next(home.glob(f"sessions/**/*{RENAMED}.jsonl"))
    st = grown.stat()
    os.utime(grown, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert watch.requested() == {DAY_24}
    assert watch.requested() == set()


def test_a_copy_keeping_its_old_mtime_and_a_moved_in_folder_are_seen(
    db_url, conn, tmp_path, instance
) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    src = sources(home, tmp_path)
    watch = Watch(instance, src, db_url)
    watch.tick()
    capture_all(conn, src)
    assert watch.requested() == set()
    # `cp -p` of an old export: its mtime is older than anything the sensor has seen.
    original = rollout(LATER_THREAD)
    copy = home / original.relative_to(DEMO_CODEX)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(original, copy)
    set_mtime(copy, datetime(2026, 9, 30, 18, tzinfo=UTC))
    assert watch.requested() == {DAY_30}
    capture_all(conn, src)
    assert watch.requested() == set()
    # A folder moved in whole (`mv`): neither the files' mtime nor their ctime change.
    outside = tmp_path / "export" / "2026" / "10" / "15"
    outside.mkdir(parents=True)
    moved = rollout(MOVED_THREAD)
    shutil.copy2(moved, outside / moved.name)
    set_mtime(outside / moved.name, datetime(2026, 10, 14, 20, tzinfo=UTC))
    shutil.move(str(outside.parent.parent), str(home / "sessions" / "2026-export"))
    assert watch.requested() == {date(2026, 10, 14)}


def test_a_file_restored_with_an_older_mtime_is_seen(db_url, conn, tmp_path, instance) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, RENAMED, lines=25)  # the live file lost its tail
    src = sources(home, tmp_path)
    watch = Watch(instance, src, db_url)
    watch.tick()
    capture_all(conn, src)
    turns = conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0]
    assert watch.requested() == set()
    # Restored from a backup made before the damage: complete, and with its older mtime.
    live = next(home.glob("sessions/**/*.jsonl"))
    shutil.copy2(rollout(RENAMED), live)
    set_mtime(live, datetime.fromtimestamp(live.stat().st_mtime, UTC) - timedelta(days=30))
    assert watch.requested() == {DAY_24}
    capture_all(conn, src)
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] > turns
    assert watch.requested() == set()


def test_an_unchanged_tree_costs_one_stat_per_file_and_requests_nothing(
    db_url, conn, tmp_path, instance, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED, LATER_THREAD)
    src = sources(home, tmp_path)
    capture_all(conn, src)
    peeks: list[Path] = []
    task_days = CodexConnector.task_days

    def counting(self, path):  # type: ignore[no-untyped-def]
        peeks.append(path)
        return task_days(self, path)

    monkeypatch.setattr(CodexConnector, "task_days", counting)
    watch = Watch(instance, src, db_url)
    for _ in range(3):
        result = watch.tick()
        assert not result.run_requests and result.skip_reason
        assert "no transcript changed" in (result.skip_reason.skip_message or "")
    assert peeks == []
    assert len(watch.cursor or "") < 100  # the cursor holds nothing per file
    assert conn.execute("SELECT count(*) FROM sensor_file_requests").fetchone() == (0,)


def test_a_connector_raising_on_one_file_does_not_stop_the_tick(
    db_url, conn, tmp_path, instance, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    bad = next(home.glob("sessions/**/*01a0c2e9*.jsonl"))
    peeks: list[Path] = []
    task_days = CodexConnector.task_days

    def broken(self, path):  # type: ignore[no-untyped-def]
        peeks.append(path)
        if path == bad:
            raise OverflowError("date value out of range")
        return task_days(self, path)

    def broken_discover(self):  # type: ignore[no-untyped-def]
        raise PermissionError("projects: permission denied")

    monkeypatch.setattr(CodexConnector, "task_days", broken)
    monkeypatch.setattr(ClaudeCodeConnector, "discover", broken_discover)
    watch = Watch(instance, sources(home, tmp_path), db_url)
    assert watch.requested() == {DAY_24}
    skips = conn.execute(
        "SELECT source, path, reason, detail FROM capture_skips ORDER BY source"
    ).fetchall()
    assert skips[0][:3] == ("claude_code", "", "discover_failed")
    assert skips[1] == ("codex", str(bad), PEEK_FAILED, "OverflowError: date value out of range")
    # Recorded once: not peeked again until the file changes, then tried again.
    peeks.clear()
    assert watch.requested() == set() and peeks == []
    with bad.open("a") as f:
        f.write("\n")
    assert watch.requested() == set() and peeks == [bad]
    # `memory-pipeline run` plans through the same guard.
    days, _ = changed_since(sources(home, tmp_path).connectors(), since_ns=0)
    assert days == {DAY_24}


def test_a_file_still_not_captured_after_its_quiet_period_is_requested_once_more(
    db_url, conn, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """A chat import's unanswered last prompt is captured only once quiet, and a run may die:
    a requested file that is still not captured then is requested one more time."""
    home = codex_home(tmp_path, RENAMED)
    src = sources(home, tmp_path)
    live = next(home.glob("sessions/**/*.jsonl"))
    quiet_s = 30 * 60

    def look(after_s: float) -> set[date]:
        """A tick `after_s` seconds after the file's last change."""
        now = live.stat().st_mtime_ns + int(after_s * 1e9)
        no_runs = lambda: (set(), set())  # noqa: E731
        return watch(conn, src.connectors(), WatchCursor(), no_runs, quiet_s * 10**9, now).days

    assert look(1) == {DAY_24}
    assert look(60) == set()
    assert look(quiet_s + 1) == {DAY_24}  # still not captured: once more
    assert look(quiet_s + 2) == set()
    assert look(24 * 3600) == set()
    # A new version captured within its quiet period is not requested again.
    with live.open("a") as f:
        f.write("\n")
    assert look(1) == {DAY_24}
    capture_all(conn, src)
    assert look(quiet_s + 1) == set()
    assert conn.execute("SELECT count(*) FROM sensor_file_requests").fetchone() == (0,)


def test_a_renamed_thread_is_requested_once(db_url, conn, tmp_path, instance) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    src = sources(home, tmp_path)
    watch = Watch(instance, src, db_url)
    watch.tick()
    capture_all(conn, src)
    # A rename touches only session_index.jsonl, never the rollout.
    now = datetime.now(UTC).isoformat()
    entry = {"id": RENAMED, "thread_name": "reader perf", "updated_at": now}
    (home / "session_index.jsonl").write_text(json.dumps(entry) + "\n")
    assert watch.requested() == {DAY_24}
    assert watch.requested() == set()


def test_the_old_cursor_is_carried_over_without_requesting_old_renames(
    db_url, conn, tmp_path, instance
) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    entry = {"id": RENAMED, "thread_name": "reader perf", "updated_at": "2026-09-25T00:00:00Z"}
    (home / "session_index.jsonl").write_text(json.dumps(entry) + "\n")
    src = sources(home, tmp_path)
    capture_all(conn, src)
    watch = Watch(instance, src, db_url)
    watch.cursor = json.dumps({"mtime_ns": int(datetime.now(UTC).timestamp() * 1e9)})
    assert watch.requested() == set()


def test_changes_a_queued_run_will_read_are_not_requested_twice(db_url, tmp_path, instance) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, RENAMED)
    watch = Watch(instance, sources(home, tmp_path), db_url)
    queued = add_run(instance, DAY_24, dg.DagsterRunStatus.QUEUED)
    assert watch.requested() == set()  # the queued run reads the file when it starts
    instance.report_run_failed(queued)
    assert watch.requested() == set()  # requested once per version; the catch-up retries
    live = next(home.glob("sessions/**/*.jsonl"))
    with live.open("a") as f:
        f.write("\n")
    running = add_run(instance, DAY_24, dg.DagsterRunStatus.STARTED)
    assert watch.requested() == set()  # it may have read the file already: wait for it
    assert watch.requested() == set()
    instance.report_run_failed(running)
    assert watch.requested() == {DAY_24}
    # A run of the semantic pass alone does not capture: it covers nothing here.
    with live.open("a") as f:
        f.write("\n")
    add_run(instance, DAY_24, dg.DagsterRunStatus.QUEUED, assets=["semantic_memories"])
    assert watch.requested() == {DAY_24}


def write_chat(path: Path, task_id: str, start: datetime, turns: int = 2) -> None:
    lines = []
    for i in range(turns):
        at = start + timedelta(minutes=2 * i)
        lines.append(
            {
                "task_id": task_id,
                "role": "user",
                "text": f"Question {i} about {task_id}: should the cache use LRU or LFU eviction?",
                "timestamp": at.isoformat(),
            }
        )
        lines.append(
            {
                "task_id": task_id,
                "role": "assistant",
                "text": f"Answer {i}: we decided to use LRU because the access pattern is recent.",
                "timestamp": (at + timedelta(seconds=30)).isoformat(),
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


def test_the_semantic_pass_sensor_requests_quiet_pending_days_once(
    db_url, conn, tmp_path, instance
) -> None:  # type: ignore[no-untyped-def]
    imports = tmp_path / "imports"
    now = datetime.now(UTC).replace(microsecond=0)
    write_chat(imports / "old.jsonl", "old-chat", datetime(2026, 9, 10, 9, tzinfo=UTC))
    write_chat(imports / "done.jsonl", "done-chat", datetime(2026, 9, 12, 9, tzinfo=UTC))
    write_chat(imports / "live.jsonl", "live-chat", now - timedelta(minutes=10))
    src = SourcesResource.of(
        codex_home=str(tmp_path / "none"),
        claude_home=str(tmp_path / "none"),
        import_dir=str(imports),
        kind="real",
    )
    capture_window(conn, src.connectors(), date(2026, 1, 1), now.date() + timedelta(days=1))
    conn.execute(
        "INSERT INTO semantic_cursors (task_id, last_ordinal) SELECT id, turn_count - 1"
        " FROM captured_tasks WHERE native_id = 'done-chat'"
    )
    semantic = SemanticResource(ollama_host="http://127.0.0.1:9", quiet_minutes=30)
    resources = {"db": DatabaseResource(url=db_url), "semantic": semantic}

    def tick() -> dg.RunRequest | dg.SkipReason:
        with dg.build_sensor_context(instance=instance, resources=resources) as context:
            return semantic_pass_sensor(context)  # type: ignore[return-value]

    first = tick()
    assert isinstance(first, dg.RunRequest)
    assert days_of(first) == {date(2026, 9, 10)}  # not the live one (10 min), not the done one
    assert set(first.asset_selection or []) == {
        semantic_memories.key,
        memory_embeddings.key,
        memory_entities.key,
        memory_relationships.key,
    }
    queued = add_run(instance, date(2026, 9, 10), dg.DagsterRunStatus.QUEUED)
    assert isinstance(tick(), dg.SkipReason)
    instance.report_run_failed(queued)
    again = tick()
    # The same pending work keeps its run key: the daemon launches it once (the catch-up retries).
    assert isinstance(again, dg.RunRequest) and again.run_key == first.run_key
    add_run(instance, date(2026, 9, 10), dg.DagsterRunStatus.STARTED, assets=list(PASS))
    assert isinstance(tick(), dg.SkipReason)
    # Once the live task has been quiet for 30 minutes, its day is requested too.
    later = semantic_pass_request(conn, instance, 30, now + timedelta(minutes=25))
    assert isinstance(later, dg.RunRequest) and days_of(later) == {now.date()}

    # What it requests runs as is, and leaves nothing pending.
    defs = dg.Definitions(
        assets=[
            captured_tasks,
            inbox_documents,
            semantic_memories,
            memory_embeddings,
            memory_entities,
            memory_relationships,
        ],
        jobs=[ingest_job],
        resources={
            **resources,
            "sources": src,
            "inbox": InboxResource(
                inbox_dir=str(tmp_path / "no-inbox"), fetch_dir=str(tmp_path / "fetched")
            ),
            "semantic": SemanticResource(ollama_host="http://127.0.0.1:9", quiet_minutes=0),
            "embedding": EmbeddingResource(space=SPACE, ollama_host="http://127.0.0.1:9"),
        },
    )
    result = defs.resolve_job_def(INGEST_JOB).execute_in_process(
        instance=instance,
        partition_key=later.partition_key,
        asset_selection=list(later.asset_selection or []),
    )
    assert result.success
    live = conn.execute(
        "SELECT c.last_ordinal = t.turn_count - 1 FROM captured_tasks t"
        " JOIN semantic_cursors c ON c.task_id = t.id WHERE t.native_id = 'live-chat'"
    ).fetchone()
    assert live == (True,)
    # Left: the old task, whose day a started run holds.
    outcome = semantic_pass_request(conn, instance, 0, now + timedelta(hours=1))
    assert outcome == "1 quiet task(s): their days are already in a queued or running run"


def test_hourly_catch_up_requests_what_the_sensor_missed(db_url, conn, tmp_path, instance) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    src = sources(home, tmp_path)
    resources = {
        "db": DatabaseResource(url=db_url),
        "sources": src,
        "embedding": EmbeddingResource(space=SPACE, ollama_host="x"),
    }
    tick = datetime(2026, 11, 30, 12, 7, tzinfo=UTC)

    def catch_up() -> dg.RunRequest | dg.SkipReason:
        with dg.build_schedule_context(
            instance=instance, scheduled_execution_time=tick, resources=resources
        ) as context:
            return hourly_catch_up(context)  # type: ignore[return-value]

    never_captured = catch_up()
    assert days_of(never_captured) == {DAY_21, date(2026, 9, 22), date(2026, 9, 23), DAY_24}  # type: ignore[arg-type]
    capture_window(conn, src.connectors(), DAY_21, date(2026, 9, 25))
    # Captured but not yet through the semantic pass: the same days are still pending.
    assert max(days_of(catch_up())) == DAY_24  # type: ignore[arg-type]
    conn.execute(
        "INSERT INTO semantic_cursors (task_id, last_ordinal)"
        " SELECT id, turn_count - 1 FROM captured_tasks"
    )
    assert isinstance(catch_up(), dg.SkipReason)
    grown = next(home.glob("sessions/**/*01a0c2e9*.jsonl"))
    grown.write_text(grown.read_text() + "\n")
    assert days_of(catch_up()) == {DAY_21}  # type: ignore[arg-type]
    add_run(instance, DAY_21, dg.DagsterRunStatus.QUEUED)
    assert isinstance(catch_up(), dg.SkipReason)  # a queued run will capture it anyway


def test_a_transcript_older_than_the_first_partition_is_requested_and_captured(
    db_url, conn, tmp_path, instance
) -> None:  # type: ignore[no-untyped-def]
    """A session from before the partitions start (copied in with its old timestamps, or a
    chat exported years ago) arrives after the first capture: the sensor requests the first
    partition, and that partition's run captures it under its own start time."""
    home = codex_home(tmp_path, RENAMED)
    src = sources(home, tmp_path)
    watch = Watch(instance, src, db_url)
    watch.tick()
    capture_all(conn, src)
    first = first_day()  # this process's first partition (the tests set 2020-01-01)
    old_day = first - timedelta(days=400)
    original = rollout("01a0c2e9")  # started 2026-09-21
    shift = datetime(2026, 9, 21, tzinfo=UTC) - datetime.combine(old_day, time(), UTC)
    text = original.read_text().replace("2026-09-21", old_day.isoformat())
    text = re.sub(
        r'"(started_at|completed_at)":(\d+)',
        lambda m: f'"{m[1]}":{int(m[2]) - int(shift.total_seconds())}',
        text,
    )
    copy = home / "sessions" / "old-export" / original.name
    copy.parent.mkdir(parents=True)
    copy.write_text(text)
    set_mtime(copy, datetime.combine(old_day, time(20), UTC))
    (request,) = watch.tick().run_requests
    assert days_of(request) == {first}
    result = dg.materialize(
        [captured_tasks],
        partition_key=request.partition_key,
        resources={"db": DatabaseResource(url=db_url), "sources": src},
    )
    assert result.success
    started = conn.execute(
        "SELECT (started_at AT TIME ZONE 'UTC')::date FROM captured_tasks"
        " WHERE native_id LIKE '01a0c2e9%'"
    ).fetchall()
    assert started == [(old_day,)]
    assert watch.requested() == set()
