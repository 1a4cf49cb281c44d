"""Every column of the memory database that can hold text a user or an agent wrote, and how the
heal treats it.

Three lists, which together name every text-like column (text, varchar, jsonb, json, arrays of
text, tsvector, vector) of every table of the schema; memory_pipeline_tests/heal/
test_heal_columns.py fails when a migration adds one that none of them names:

- TABLES: columns the heal rewrites with the current redaction rules: `text` as a whole, `json`
  string values (keys and structure are kept), `arrays` element by element.
- DERIVED: columns computed from rewritten ones, recomputed by the heal (heal/run.py) rather
  than redacted: full-text vectors, lexeme tables, embeddings and the hashes that key them.
- NO_USER_TEXT: columns that cannot hold what a user or an agent wrote: hashes, enums, ids,
  model and space names, file paths capture reads sources by (never redacted at capture
  either: a changed path would lose the file's state).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    """A table and the columns of it the heal rewrites, reported under `surface`."""

    name: str
    surface: str
    text: tuple[str, ...] = ()
    json: tuple[str, ...] = ()
    arrays: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.text, *self.json, *self.arrays)


# In the order they are healed; the surface names are what `memory-pipeline heal` prints.
TABLES: tuple[Table, ...] = (
    Table("agent_turns", "turns", text=("prompt", "outcome", "prompt_speaker", "outcome_speaker")),
    Table(
        "captured_tasks",
        "tasks (titles, provenance)",
        text=("title",),
        json=("native_context", "ownership_evidence"),
    ),
    Table("capture_skips", "capture skips", text=("detail",), json=("evidence",)),
    Table(
        "memories",
        "memories",
        text=("title", "content", "summary", "encoding_context", "project", "source_url"),
        json=("metadata",),
        arrays=("tags",),
    ),
    Table("topic_segments", "memories", text=("title",)),
    Table("memory_passages", "passages", text=("heading", "text")),
    Table("memory_relationships", "relationships", text=("note", "evidence")),
    Table("entities", "entities", text=("name", "summary"), json=("properties",)),
    Table("entity_edges", "entities", json=("properties",)),
    # Identifiers and aliases are what memories wrote (an e-mail, a path, a name), and so is
    # the text a mention matched (sql/036).
    Table("entity_identifiers", "entities", text=("identifier",)),
    Table("entity_aliases", "entities", text=("alias",)),
    Table("entity_ambiguities", "entities", text=("alias",)),
    Table("memory_entities", "entities", text=("surface",)),
    Table("turn_entities", "entities", text=("surface",)),
    Table(
        "dream_cycle_runs",
        "dream digests",
        text=("digest", "explorer_feedback_injected", "error"),
        json=("explorer_output", "precheck", "feedback"),
    ),
    Table(
        "dream_cycle_candidates",
        "dream candidates",
        text=(
            "evaluator_a_reasoning",
            "evaluator_b_reasoning",
            "evaluator_c_reasoning",
            "evaluator_d_reasoning",
            "user_rejection_reason",
        ),
        json=("candidate_json",),
    ),
    Table("briefings", "briefings", json=("filtered",)),
    Table("briefing_items", "briefings", text=("topic", "headline", "detail")),
    Table("express_pushes", "briefings", text=("reason", "recipients", "subject")),
    Table("express_feedback", "feedback", text=("target", "note")),
    Table("forget_audit", "forget audit", json=("selector", "counts")),
    Table(
        "inbox_sources",
        "inbox sources",
        text=("title", "author", "site", "published", "url"),
        json=("details",),
    ),
    Table("inbox_passages", "inbox sources", text=("position",)),
    Table("semantic_pass_runs", "semantic pass runs", json=("memory_counts",)),
)

# table -> column -> how the heal recomputes it.
DERIVED: dict[str, dict[str, str]] = {
    "agent_turns": {"content_sha256": "sha256 of the rewritten prompt and outcome"},
    "memories": {"search_vector": "trigger memories_search_vector, on the rewritten text"},
    "memory_passages": {
        "search_vector": "recomputed with the rewritten text, then cut again",
        "source_sha256": "cleared, so the embedding step cuts the memory again",
    },
    "memory_embeddings": {
        "embedding": "re-embedded: content_sha256 no longer matches the text",
        "content_sha256": "of the text embedded",
    },
    "passage_embeddings": {
        "embedding": "re-embedded: content_sha256 no longer matches the text",
        "content_sha256": "of the text embedded",
        "memory_type": "copied from memories (sql/023)",
        "memory_source_type": "copied from memories (sql/023)",
        "memory_project": "copied from memories (sql/023)",
    },
    "passage_piece_embeddings": {
        "embedding": "re-embedded: content_sha256 no longer matches the turn's text",
        "content_sha256": "of the turn's text",
    },
    "passage_postings": {"lexeme": "triggers of memory_passages (sql/021)"},
    "search_term_stats": {"lexeme": "refresh_bm25_statistics"},
    "passage_term_stats": {"lexeme": "refresh_bm25_statistics"},
    "relationship_scans": {
        "content_sha256": "memory text hash: a changed memory is rescanned",
        "entities_sha256": "hash of the memory's entity keys: a changed set is rescanned",
    },
    "entity_scans": {"content_sha256": "memory text hash: a changed memory is read again"},
}

# table -> column -> why it cannot hold user text.
NO_USER_TEXT: dict[str, dict[str, str]] = {
    "agent_turns": {
        "native_turn_id": "the source's id of the turn",
        "source_key": "a keyed hash of the source text (sql/028)",
        "native_message_ids": "the source's ids of the messages",
    },
    "briefing_item_memories": {"role": "enum"},
    "briefing_items": {"item_key": "kind and a hash of memory ids", "kind": "enum"},
    "briefings": {"editor": "'offline' or 'ollama:<model>'"},
    "capture_skips": {
        "kind": "enum",
        "native_id": "the source's id of the task",
        "ownership": "enum",
        "path": "the file capture read",
        "reason": "enum",
        "source": "enum",
    },
    "captured_tasks": {
        "native_id": "the source's id of the task (its identity, and the tombstone key)",
        "ownership_reason": "a reason code",
        "source": "enum",
        "source_path": "the file capture reads the task from",
        "title_source": "the native field the title came from",
    },
    "dream_cycle_candidates": {
        "approval": "enum",
        "evaluator_a_verdict": "enum",
        "evaluator_b_verdict": "enum",
        "evaluator_c_verdict": "enum",
        "evaluator_d_verdict": "enum",
        "final_verdict": "enum",
        "fingerprint": "a hash of ids",
        "operation": "enum",
        "schema_operation": "enum",
        "strategy": "an explorer strategy's name",
    },
    "dream_cycle_runs": {
        "backend": "a backend name",
        "digest_path": "the digest file (its text is healed as a file)",
        "run_type": "enum",
        "status": "enum",
    },
    "embedding_spaces": {"model": "a model name", "name": "a space name", "provider": "enum"},
    "entities": {"category": "enum (the closed type set)", "source_type": "an extractor name"},
    "entity_scans": {"backend": "a backend name"},
    "entity_edges": {"relation": "a relation name"},
    "express_feedback": {"target_kind": "enum", "verb": "enum"},
    "express_pushed_items": {"item_key": "kind and a hash of memory ids", "kind": "enum"},
    "express_pushes": {"status": "enum"},
    "forgotten_tasks": {"native_id": "a tombstone: the source's task id", "source": "enum"},
    "forgotten_turns": {"content_sha256": "a tombstone: a hash"},
    "inbox_sources": {
        "kind": "enum",
        "locator": "its identity (a URL or the file's path) and the tombstone key",
        "path": "the inbox file it was read from",
        "content_sha256": "a hash of the extracted text",
    },
    "memories": {
        "mem_class": "enum",
        "source_type": "enum",
        "status": "enum",
        "type": "enum",
    },
    "memory_embeddings": {"space": "a space name"},
    "memory_entities": {"extractor": "an extractor name", "relation": "a relation name"},
    "memory_passages": {"cut_for": "a space name"},
    "memory_provenance": {"role": "enum"},
    "turn_entities": {"extractor": "an extractor name"},
    "memory_relationships": {"backend": "a judge's name", "relation_type": "enum"},
    "ownership_confirmations": {
        "native_id": "the source's id of a task the user confirmed",
        "source": "enum",
    },
    "passage_embeddings": {"space": "a space name"},
    "passage_piece_embeddings": {"space": "a space name"},
    "redaction_state": {"how": "enum", "rules_version": "a version string"},
    "relationship_scans": {"backend": "a judge's name", "space": "a space name"},
    "retrieval_events": {
        "query_sha256": "a hash: the query itself is never stored",
        "surface": "enum",
    },
    "schema_migrations": {"checksum": "a hash", "filename": "a file name", "version": "a number"},
    "search_index_identity": {"build": "a directory name"},
    "semantic_pass_runs": {
        "backend": "a backend name",
        "input_sha256": "a hash",
        "output_sha256": "a hash",
    },
    "sensor_file_requests": {"outcome": "enum", "path": "a source file's path"},
    "source_files": {"path": "a source file's path", "source": "enum"},
}
