"""Read-only commands over the materialized memories: search, context, entities, eval, mcp.

They go through `serving/`, as an agent would, connecting as the read-only role.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memory_pipeline.cli.app import app
from memory_pipeline.errors import UserError
from memory_pipeline.models.sources import MEMORY_SOURCES
from memory_pipeline.settings import DEMO_GOLD, DEMO_SOURCES_GOLD, Settings

if TYPE_CHECKING:
    from serving.models import SearchHit

TypeOpt = Annotated[list[str] | None, typer.Option("--type", help="Memory type (repeatable).")]
ProjectOpt = Annotated[list[str] | None, typer.Option("--project", help="Project (repeatable).")]
SourceOpt = Annotated[
    list[str] | None,
    typer.Option("--source", help=f"{', '.join(MEMORY_SOURCES)} (repeatable)."),
]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable, any of).")]
SinceOpt = Annotated[datetime | None, typer.Option(help="Only memories created at or after this.")]
UntilOpt = Annotated[datetime | None, typer.Option(help="Only memories created before this.")]
PrivateOpt = Annotated[
    bool,
    typer.Option(
        "--include-private",
        help="Include private-tier memories (MEMORY_PRIVATE); left out by default.",
    ),
]
EntityOpt = Annotated[
    str | None,
    typer.Option(
        "--entity", help="Only memories mentioning this entity (`memory-pipeline entities`)."
    ),
]
StatusOpt = Annotated[
    list[str] | None,
    typer.Option("--status", help="Statuses to include (default: active, explored)."),
]


def _filters(types, projects, sources, tags, since, until, statuses, include_private=False):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from serving.models import SearchFilters

    fields = {
        "types": types,
        "projects": projects,
        "sources": sources,
        "tags": tags,
        "since": since,
        "until": until,
        "include_private": include_private,
    }
    if statuses:
        fields["statuses"] = statuses
    try:
        return SearchFilters(**fields)
    except ValidationError as exc:
        raise UserError(f"invalid filter: {exc.errors()[0]['msg']}") from exc


def _check_query(query: str) -> str:
    from memory_pipeline.tuning import MAX_QUERY_CHARS

    query = query.strip()
    if not query:
        raise UserError("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise UserError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    return query


@app.command()
def search(
    query: str,
    limit: Annotated[int, typer.Option(min=1, max=50, help="Results to return.")] = 10,
    json_output: Annotated[bool, typer.Option("--json", help="Ranked results as JSON.")] = False,
    types: TypeOpt = None,
    projects: ProjectOpt = None,
    sources: SourceOpt = None,
    tags: TagOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    statuses: StatusOpt = None,
    include_private: PrivateOpt = False,
    exclude_reversed: Annotated[
        bool,
        typer.Option(
            "--exclude-reversed",
            help="Leave out memories a newer decision reverses (or that were superseded).",
        ),
    ] = False,
    entity: EntityOpt = None,
) -> None:
    """Hybrid search (BM25 + vectors + rerank) over memories, as an agent would see it."""
    from serving.db import connect_reader, reader_errors
    from serving.search import QueryEmbedder
    from serving.search import search as run_search

    query = _check_query(query)
    settings = Settings.from_env()
    filters = _filters(types, projects, sources, tags, since, until, statuses, include_private)
    filters.exclude_reversed = exclude_reversed
    filters.entities = [entity] if entity else None
    with reader_errors(), connect_reader() as conn, _browse_errors():
        from serving.entity_pack import entity_filters

        filters = entity_filters(conn, filters)
        response = run_search(
            conn,
            query,
            embedder=QueryEmbedder(settings.ollama_host),
            limit=limit,
            filters=filters,
            record_surface="cli",
        )
    if json_output:
        typer.echo(response.model_dump_json(indent=2))
        return
    _print_hits(response)


def _print_hits(response) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console
    from rich.table import Table

    ranked = sum(not h.temporal_context for h in response.results)
    extra = len(response.results) - ranked
    title = f"{ranked} results for {response.query!r}" + (
        f" (+{extra} nearby in time)" if extra else ""
    )
    table = Table(title=title, expand=True)
    for column in ("#", "score", "type", "title", "from", "date"):
        table.add_column(column, overflow="fold", ratio={"title": 4, "from": 2}.get(column))
    for i, hit in enumerate(response.results, start=1):
        rank = "+" if hit.temporal_context else str(i)
        table.add_row(
            rank,
            f"{hit.score:.3f}",
            hit.type,
            hit.title,
            search_origin(hit),
            hit.created_at.date().isoformat(),
        )
    # Not a terminal (piped, captured): 80 columns would fold every title; use a wider page.
    probe = Console()
    console = probe if probe.is_terminal else Console(width=140)
    console.print(table)
    console.print(
        f"vector space: {response.space or 'none (BM25 only)'}; "
        "'+' rows are temporal neighbours of the top result. --json shows provenance."
    )


def search_origin(hit: SearchHit) -> str:
    """A result's `from` column: where it matched (the best matched passage's turn, else the
    memory's first turn), or where an inbox document's passage sits (URL or path, position)."""
    if hit.cite:
        return hit.cite
    best = hit.passages[0] if hit.passages and hit.passages[0].turns else None
    if best is not None and best.native_task_id:
        return f"{best.source}:{best.native_task_id[:13]} t{best.turns[0].ordinal}"
    origin = ", ".join(
        f"{p.source}:{p.native_task_id[:13]} t{p.turns[0].ordinal}" for p in hit.provenance
    )
    return origin or "-"


@app.command()
def context(
    query: str,
    tokens: Annotated[
        int, typer.Option("--tokens", min=50, max=100_000, help="Token budget.")
    ] = 2000,
    json_output: Annotated[bool, typer.Option("--json", help="The pack as JSON.")] = False,
    projects: ProjectOpt = None,
    sources: SourceOpt = None,
    include_private: PrivateOpt = False,
    entity: EntityOpt = None,
) -> None:
    """A token-budgeted context pack for a task description (what an agent gets at start)."""
    from serving.context_pack import context as build_pack
    from serving.db import connect_reader, reader_errors
    from serving.render import pack_text
    from serving.search import QueryEmbedder

    query = _check_query(query)
    settings = Settings.from_env()
    filters = _filters(None, projects, sources, None, None, None, None, include_private)
    filters.entities = [entity] if entity else None
    with reader_errors(), connect_reader() as conn, _browse_errors():
        pack = build_pack(
            conn,
            query,
            tokens,
            embedder=QueryEmbedder(settings.ollama_host),
            filters=filters,
            record_surface="cli",
        )
    typer.echo(pack.model_dump_json(indent=2) if json_output else pack_text(pack))


@contextmanager
def _browse_errors() -> Iterator[None]:
    """An entity name that means several entities, or none: one line saying what to do."""
    from memory_pipeline.errors import BrowseError

    try:
        yield
    except BrowseError as exc:
        raise UserError(str(exc)) from None


@app.command()
def entities(
    name: Annotated[
        str | None,
        typer.Argument(help="A name, alias or identifier; leave out to list the entities."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="Rows at most.")] = 50,
    json_output: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
    include_private: PrivateOpt = False,
) -> None:
    """The people, projects, repositories, packages, files, hosts, tools, places and
    organisations memories mention; with NAME, its timeline (every mention, newest first)."""
    from serving.db import connect_reader, reader_errors
    from serving.entity_pack import entity_list, entity_timeline
    from serving.render import entity_list_text, entity_timeline_text

    with reader_errors(), connect_reader() as conn:
        if name is None:
            listing = entity_list(conn, include_private=include_private, limit=limit)
            text = entity_list_text(listing)
            out = listing.model_dump_json(indent=2) if json_output else text
        else:
            tl = entity_timeline(conn, name, include_private=include_private, limit=limit)
            out = tl.model_dump_json(indent=2) if json_output else entity_timeline_text(tl)
    typer.echo(out)


@app.command()
def mcp(
    transport: Annotated[
        str, typer.Option(help="stdio (agents launch it) or http (streamable HTTP, bearer token).")
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="HTTP: interface to bind; keep it local.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: port.")] = 8765,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="HTTP: allow binding beyond loopback.")
    ] = False,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="HTTP: a Host name clients use (repeatable)."),
    ] = None,
    include_private: Annotated[
        bool,
        typer.Option(
            "--include-private",
            help="Serve private-tier memories too (every tool, every client of this server).",
        ),
    ] = False,
) -> None:
    """The read-only MCP server for agents: stdio (Claude Code, Codex) or streamable HTTP."""
    from serving.mcp.run import mcp_command

    mcp_command(transport, host, port, allow_remote, allowed_hosts or [], include_private)


@app.command("eval")
def evaluate_retrieval(
    gold: Annotated[
        Path, typer.Option(help="Gold set (JSON Lines); default: the demo corpus's.")
    ] = DEMO_GOLD,
    json_output: Annotated[bool, typer.Option("--json", help="Full report as JSON.")] = False,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence/--no-evidence",
            help="Also measure evidence found in context packs of 1,000 and 2,000 tokens, "
            "beside a raw-message baseline.",
        ),
    ] = True,
    relationships_gold: Annotated[
        Path | None,
        typer.Option(
            help="Gold pairs for relationship discovery (JSON Lines); default with the demo "
            "gold set: the demo corpus's.",
        ),
    ] = None,
    secrets: Annotated[
        bool,
        typer.Option(
            "--secrets",
            help="Instead: recall and false-positive rate of secret redaction on a labelled set "
            "(no database needed); exits 1 when a target is missed.",
        ),
    ] = False,
    secrets_set: Annotated[
        Path | None,
        typer.Option(
            help="With --secrets: a folder of JSON Lines files or one file; default: "
            "evaluation/secrets/.",
        ),
    ] = None,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Instead: evaluate the semantic pass on hand-labelled real sessions (segment "
            "boundaries, titles, decisions, insights). Needs no database.",
        ),
    ] = False,
    semantic_gold: Annotated[
        Path | None,
        typer.Option(help="With --semantic: the labelled sessions (JSON Lines)."),
    ] = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="With --semantic: the offline rules only (without it, a configured and served "
            "MEMORY_SEMANTIC_MODEL is measured too, after the rules, with the difference).",
        ),
    ] = False,
    sources: Annotated[
        bool,
        typer.Option(
            "--sources",
            help="Instead: questions whose evidence sits in inbox documents and video "
            "transcripts (R@5, R@10, MRR per channel, evidence in the context pack).",
        ),
    ] = False,
    sources_gold: Annotated[
        Path | None,
        typer.Option(help="With --sources: the questions (JSON Lines); default: the demo's."),
    ] = None,
    derivation_labels: Annotated[
        Path | None,
        typer.Option(
            help="Hand labels of derived decisions, insights, correction episodes, contradicts "
            "edges and dream memories (JSON Lines); default: evaluation/derivations/labels.jsonl.",
        ),
    ] = None,
) -> None:
    """Recall@5, Recall@10 and MRR of BM25, vectors and the full pipeline on a gold set, and
    evidence found within 1,000 and 2,000 tokens of the context pack vs raw messages; then
    precision and recall of discovered relationships per edge type; the current value first on
    knowledge-update questions, and the precision of what the pipeline derived against hand
    labels. With --secrets: recall and
    false positives of redaction instead. With --semantic: segment boundary F1, title
    acceptability and decision/insight precision and recall of the semantic pass on real
    sessions."""
    if secrets:
        _evaluate_secrets(secrets_set, json_output)
        return
    if semantic:
        _evaluate_semantic(semantic_gold, offline, json_output)
        return
    if sources:
        _evaluate_sources(sources_gold or DEMO_SOURCES_GOLD, json_output)
        return
    import json

    from serving.db import connect_reader, reader_errors
    from serving.derivation_evaluation import DERIVATION_LABELS, evaluate_derivations
    from serving.derivation_evaluation import report_lines as derivation_lines
    from serving.evaluation import evaluate, load_gold, report_table
    from serving.search import QueryEmbedder

    if not gold.is_file():
        raise UserError(f"gold set {gold} not found")
    queries = load_gold(gold)
    settings = Settings.from_env()
    labels_path = derivation_labels or DERIVATION_LABELS
    if derivation_labels is not None and not derivation_labels.is_file():
        raise UserError(f"derivation labels {derivation_labels} not found")
    with reader_errors(), connect_reader() as conn:
        report = evaluate(conn, queries, QueryEmbedder(settings.ollama_host), evidence=evidence)
        derived = evaluate_derivations(conn, labels_path) if labels_path.is_file() else None
    if json_output:
        data = report.model_dump(mode="json")
        if report.evidence is not None and (first := report.evidence.current_first()):
            data["evidence"]["current_value_first"] = first.model_dump(mode="json")
        if derived is not None:
            data["derivations"] = derived.model_dump(mode="json")
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(report_table(report))
        if derived is not None:
            typer.echo("\n" + "\n".join(derivation_lines(derived, labels_path)))
    if relationships_gold is None and gold == DEMO_GOLD:
        from memory_pipeline.relationships.evaluation import DEMO_RELATIONSHIPS_GOLD

        relationships_gold = DEMO_RELATIONSHIPS_GOLD
    if relationships_gold is not None and not json_output:
        from memory_pipeline.relationships import evaluation as rel

        if not relationships_gold.is_file():
            raise UserError(f"relationship gold pairs {relationships_gold} not found")
        with reader_errors(), connect_reader() as conn:
            scores = rel.evaluate(conn, rel.load_gold(relationships_gold))
        typer.echo("\n" + rel.report_table(scores))


def _evaluate_sources(gold: Path, json_output: bool) -> None:
    from serving.db import connect_reader, reader_errors
    from serving.search import QueryEmbedder
    from serving.source_evaluation import evaluate_sources, load_questions, report_lines

    if not gold.is_file():
        raise UserError(f"sources gold set {gold} not found")
    questions = load_questions(gold)
    settings = Settings.from_env()
    with reader_errors(), connect_reader() as conn:
        report = evaluate_sources(conn, questions, QueryEmbedder(settings.ollama_host))
    typer.echo(report.model_dump_json(indent=2) if json_output else "\n".join(report_lines(report)))


def _evaluate_secrets(path: Path | None, json_output: bool) -> None:
    import json

    from memory_pipeline.capture import secret_eval

    path = path or secret_eval.DEFAULT_SET
    try:
        rows = secret_eval.load_rows(path)
    except (OSError, secret_eval.SetError) as exc:
        raise UserError(f"cannot read the secrets set: {exc}") from exc
    result = secret_eval.evaluate(rows)
    if json_output:
        report = {
            "secrets": result.secrets,
            "caught": result.caught,
            "kinds": len(result.kinds),
            "recall": result.recall,
            "near_misses": result.near_misses,
            "changed": result.changed,
            "false_positive_rate": result.false_positive_rate,
            "missed": dict(result.missed),
            "false_positives": dict(result.false_positives),
            "meets_targets": result.meets_targets,
        }
        typer.echo(json.dumps(report, indent=2))
    else:
        typer.echo(secret_eval.report(result, path))
    if not result.meets_targets:
        raise typer.Exit(1)


def _evaluate_semantic(gold: Path | None, offline: bool, json_output: bool) -> None:
    import json

    from memory_pipeline.cli.app import say
    from memory_pipeline.embedding.minilm import get_minilm
    from memory_pipeline.resources import SemanticResource
    from memory_pipeline.semantic import evaluation as sem
    from memory_pipeline.semantic.models import SemanticBackend
    from memory_pipeline.semantic.offline_rules import OfflineRulesBackend

    gold = gold or sem.REAL_SESSIONS_GOLD
    backends: list[SemanticBackend] = [OfflineRulesBackend(embedder=get_minilm())]
    if not offline:
        settings = Settings.from_env()
        configured = SemanticResource.from_settings(settings).backend()
        if configured.name != backends[0].name:
            backends.append(configured)  # the offline rules first, then what the model adds
        elif settings.semantic_model:
            say(
                f"semantic eval: model {settings.semantic_model} is not served by "
                f"{settings.ollama_host} (ollama pull {settings.semantic_model}); "
                "offline rules only"
            )
        else:
            say("semantic eval: no MEMORY_SEMANTIC_MODEL configured; offline rules only")
    reports = [sem.evaluate(gold, backend, progress=say) for backend in backends]
    if json_output:
        if len(reports) == 1:
            typer.echo(reports[0].model_dump_json(indent=2))
        else:  # one report per backend, the offline rules first
            typer.echo(json.dumps([r.model_dump(mode="json") for r in reports], indent=2))
        return
    typer.echo("\n\n".join(sem.report_table(r) for r in reports))
    if len(reports) == 2:
        typer.echo("\n" + sem.comparison_line(*reports))
