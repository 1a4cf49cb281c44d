"""The semantic pass through Dagster: backend choice, run metadata, the Ollama path end to end."""

from __future__ import annotations

import json

import dagster as dg

from memory_pipeline.capture.definitions import captured_tasks
from memory_pipeline.resources import DatabaseResource, SemanticResource
from memory_pipeline.semantic.definitions import semantic_memories
from memory_pipeline_tests.capture.test_capture_assets import RENAMED, codex_home, sources
from memory_pipeline_tests.support.fake_ollama import DEFAULT_CHAT_MODEL, running_fake_ollama

DAY = "2026-09-24"


def run(db_url, tmp_path, semantic: SemanticResource) -> dict[str, object]:  # type: ignore[no-untyped-def]
    result = dg.materialize(
        [captured_tasks, semantic_memories],
        partition_key=DAY,
        resources={
            "db": DatabaseResource(url=db_url),
            "sources": sources(codex_home(tmp_path, RENAMED), tmp_path),
            "semantic": semantic,
        },
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("semantic_memories")
    (check,) = result.get_asset_check_evaluations()
    meta = {k: v.value for k, v in mat.metadata.items()}
    meta["check_passed"] = check.passed
    return meta


def test_ollama_backend_runs_when_the_model_is_there(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    answer = {
        "segments": [
            {
                "first_ordinal": 0,
                "last_ordinal": 5,
                "title": "logslice reader performance",
                "memories": [
                    {
                        "type": "decision",
                        "title": "Read regular files with memmap2",
                        "content": "logslice reads regular files through memmap2 because it "
                        "cut a 2.3 GB scan from 3.41 s to 1.07 s.",
                        "supporting_ordinals": [2],
                    }
                ],
            }
        ],
        "corrections": [],
    }
    with running_fake_ollama() as fake:
        fake.script_chat(json.dumps(answer))
        meta = run(
            db_url,
            tmp_path,
            SemanticResource(ollama_host=fake.host, model=DEFAULT_CHAT_MODEL, quiet_minutes=0),
        )
        (request,) = fake.chat_requests
        assert request.body["format"]["title"] == "PassResult"
    assert meta["backend"] == f"ollama:{DEFAULT_CHAT_MODEL}"
    assert meta["tasks_processed"] == 1 and meta["failures"] == 0 and meta["check_passed"]
    assert meta["memories_by_type"] == {
        "correction_episode": 0,
        "decision": 1,
        "insight": 0,
        "segment": 1,
    }
    content = conn.execute("SELECT content FROM memories WHERE type = 'decision'").fetchone()[0]
    assert "memmap2" in content


def test_a_failed_pass_is_reported_and_fails_the_check(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with running_fake_ollama() as fake:
        fake.script_chat("this is not JSON")
        meta = run(
            db_url,
            tmp_path,
            SemanticResource(ollama_host=fake.host, model=DEFAULT_CHAT_MODEL, quiet_minutes=0),
        )
    assert meta["failures"] == 1 and not meta["check_passed"]
    assert meta["failed_tasks"][0]["native_id"] == RENAMED
    assert "malformed JSON" in meta["failed_tasks"][0]["error"]
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_offline_rules_when_the_model_is_missing(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with running_fake_ollama() as fake:
        meta = run(
            db_url,
            tmp_path,
            SemanticResource(ollama_host=fake.host, model="not-pulled:7b", quiet_minutes=0),
        )
        assert fake.chat_requests == []
    assert meta["backend"] == "offline-rules" and meta["tasks_processed"] == 1
