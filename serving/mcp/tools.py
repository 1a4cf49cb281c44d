"""The eight read-only memory tools and the failures they report to the model."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, date, datetime
from typing import Annotated, Any

import anyio.to_thread
import numpy as np
import psycopg
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from memory_pipeline import tuning
from memory_pipeline.db.failures import classify
from memory_pipeline.errors import BrowseError, UserError
from memory_pipeline.forget.tier import visible_detail, visible_graph
from memory_pipeline.models.browse import (
    MemoryDetail,
    MemoryGraph,
    MemoryPage,
    RelationType,
    Timeline,
)
from memory_pipeline.settings import Settings
from serving import browse
from serving.brief import Briefing, read_briefing
from serving.context_pack import context as build_context_pack
from serving.db import ReaderError
from serving.entity_pack import entity_filters, entity_list, entity_timeline
from serving.mcp.arguments import CheckedServer, collect
from serving.mcp.auth import StaticTokenVerifier
from serving.mcp.pool import ReaderBusy, ReaderPool
from serving.mcp.schema import (
    DEFAULT_TOKEN_BUDGET,
    INSTRUCTIONS,
    MAX_FILTER_CHARS,
    MAX_HIT_CHARS,
    MAX_SEARCH_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    READ_ONLY,
    SERVER_NAME,
    EntityName,
    ExcludeReversed,
    MemClasses,
    MemoryId,
    ProjectContext,
    Projects,
    Query,
    SearchResults,
    Since,
    Sources,
    Statuses,
    Tags,
    Task,
    Types,
    Until,
)
from serving.mcp.workers import Busy, Gate, ProcessRunner, ThreadRunner, ToolFailed
from serving.models import ContextPack, EntityTimeline, SearchFilters, SearchHit
from serving.render import (
    clean,
    clean_model,
    detail_text,
    entity_list_text,
    entity_timeline_text,
    graph_text,
    hits_text,
    pack_text,
    page_text,
    timeline_text,
)
from serving.search import QueryEmbedder, search

logger = logging.getLogger(__name__)


class _EmbedderFailed(Exception):
    pass


class _GuardedEmbedder(QueryEmbedder):
    """The query embedder, its failures told apart so search can fall back to keywords."""

    def __init__(self, inner: QueryEmbedder) -> None:
        self.inner = inner

    def embed(self, space: str, query: str) -> np.ndarray:
        try:
            return self.inner.embed(space, query)
        except Exception as exc:
            raise _EmbedderFailed from exc


_URL = re.compile(r"\S+://\S+")


@contextmanager
def _expected_failures() -> Iterator[None]:
    """Expected failures become ToolErrors with safe text; anything else stays a crash."""
    try:
        yield
    except BrowseError as exc:
        raise ToolError(str(exc)) from None
    except psycopg.errors.QueryCanceled:
        raise ToolError(
            "the query took too long and was cancelled; narrow it (filters, a smaller limit or "
            "depth)"
        ) from None
    except ReaderBusy as exc:
        raise ToolError(f"the memory server is busy ({exc}); try again in a few seconds") from None
    except ReaderError as exc:
        message = _URL.sub("<url>", exc.public)
        if exc.temporary:
            raise ToolError(f"the memory database is unavailable right now: {message}") from None
        raise ToolError(f"the memory database cannot be used: {message}") from None
    except psycopg.OperationalError as exc:
        logger.warning("memory database unavailable", exc_info=True)
        raise ToolError(
            f"the memory database is unavailable right now ({classify(exc).detail}); try again "
            "in a minute"
        ) from None
    except UserError as exc:
        raise ToolError(
            "the memory database cannot be used: " + _URL.sub("<url>", str(exc))
        ) from None


def _result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json"),
    )


def _filters(**fields: Any) -> SearchFilters:
    given = {k: v for k, v in fields.items() if v is not None}
    for key in ("since", "until"):  # a time without an offset is UTC
        if key in given and given[key].tzinfo is None:
            given[key] = given[key].replace(tzinfo=UTC)
    return SearchFilters(**given)


def _cap_hits(hits: list[SearchHit]) -> tuple[list[SearchHit], bool]:
    """Cleaned hits, each cut to MAX_HIT_CHARS, all together to MAX_SEARCH_TEXT_CHARS."""
    out: list[SearchHit] = []
    used = 0
    truncated = False
    for hit in hits:
        hit = clean_model(hit)
        content, title = hit.content, hit.title
        if len(content) > MAX_HIT_CHARS:
            content = content[: MAX_HIT_CHARS - 6].rstrip() + " [...]"
            truncated = True
        if len(title) > MAX_TITLE_CHARS:
            title = title[: MAX_TITLE_CHARS - 6].rstrip() + " [...]"
            truncated = True
        passages = []
        for p in hit.passages:  # the matched excerpts, each under the same cap
            if len(p.text) > MAX_HIT_CHARS:
                p = p.model_copy(update={"text": p.text[: MAX_HIT_CHARS - 6].rstrip() + " [...]"})
                truncated = True
            passages.append(p)
        size = len(content) + len(title) + sum(len(p.text) + 100 for p in passages) + 400
        if out and used + size > MAX_SEARCH_TEXT_CHARS:
            truncated = True
            break
        used += size
        out.append(
            hit.model_copy(update={"content": content, "title": title, "passages": passages})
        )
    return out, truncated


def _query(text: str, what: str = "query") -> str:
    text = text.strip()
    if not text:
        raise ToolError(f"the {what} is empty; say what to look for")
    return text


class BodyContext:
    """What a search or context-pack call needs: the reader connections and the embedder (of
    this process, or of a worker process: serving/mcp/workers.py)."""

    def __init__(self, pool: ReaderPool, embedder: QueryEmbedder) -> None:
        self.pool = pool
        self.embedder = _GuardedEmbedder(embedder)

    @classmethod
    def for_worker(cls, reader_url: str, ollama_host: str) -> BodyContext:
        # One call at a time in a worker: one connection, kept.
        return cls(ReaderPool(reader_url, max_size=1), QueryEmbedder(ollama_host))

    def warm_up(self) -> None:
        """Connect and load the serving space's model, so the first call is not the slow one."""
        from memory_pipeline.embedding.spaces import serving_space

        with self.pool.connection() as conn:
            space = serving_space(conn)
        if space is not None:
            self.embedder.embed(space[0], "warm up")

    def run(self, call: Callable[..., Any], **kw: Any) -> Any:
        with _expected_failures(), self.pool.connection() as conn:
            try:
                return call(conn, embedder=self.embedder, **kw)
            except _EmbedderFailed:
                logger.warning("query embedding failed; keyword search only", exc_info=True)
                return call(conn, embedder=None, **kw)


def search_body(
    ctx: BodyContext,
    *,
    query: str,
    limit: int,
    filters: SearchFilters,
    project_context: str | None,
    temporal_context: bool,
) -> tuple[dict[str, Any], str]:
    """memory_search's work: (structured content, text)."""
    response = ctx.run(
        _entity_search,
        query=query,
        limit=limit,
        filters=filters,
        project_context=project_context,
        temporal_context=temporal_context,
        record_surface="mcp",
    )
    hits, truncated = _cap_hits(response.results)
    result = SearchResults(
        query=clean(query), space=response.space, results=hits, truncated=truncated
    )
    extra = sum(1 for h in hits if h.temporal_context)
    head = (
        f"{len(hits) - extra} results"
        f"{f' and {extra} temporal neighbours of the top one' if extra else ''}"
        f" for: {clean(query)}{' (cut at the text cap)' if truncated else ''}. {result.note}"
    )
    return result.model_dump(mode="json"), head + "\n\n" + hits_text(hits)


def _entity_search(conn: Any, *, filters: SearchFilters, **kw: Any) -> Any:
    """search, with the caller's entity names resolved on the same connection."""
    return search(conn, filters=entity_filters(conn, filters), **kw)


def context_body(
    ctx: BodyContext,
    *,
    query: str,
    token_budget: int,
    filters: SearchFilters,
    project_context: str | None,
) -> tuple[dict[str, Any], str]:
    """memory_context's work: (structured content, text)."""
    pack = ctx.run(
        build_context_pack,
        query=query,
        token_budget=token_budget,
        filters=filters,
        project_context=project_context,
        record_surface="mcp",
    )
    pack = clean_model(pack)
    return pack.model_dump(mode="json"), pack_text(pack)


def _answer(answer: tuple[dict[str, Any], str]) -> CallToolResult:
    structured, text = answer
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def build_server(
    reader_url: str | None = None,
    *,
    embedder: QueryEmbedder | None = None,
    pool: ReaderPool | None = None,
    token: str | None = None,
    include_private: bool = False,
    workers: int = 0,
) -> MCPServer:
    """The MCP server with its eight read-only tools.

    `reader_url` (or `pool`) points it at a database as the read-only role; by default the
    configured one (`MEMORY_READER_URL`, else the read-only role on the pipeline's database).
    With `token`, streamable HTTP requires `Authorization: Bearer <token>`. Private-tier
    memories (sql/019) are on no tool unless `include_private` (`mcp --include-private`).
    With `workers` > 0, memory_search and memory_context run in that many worker processes
    (serving/mcp/workers.py), otherwise in threads of this process; either way behind a
    bounded line that answers "busy, retry after N s" rather than make a call wait long.
    """
    private = include_private or None  # SearchFilters.include_private, or its default (False)
    pool = pool or ReaderPool(reader_url)
    ollama_host = Settings.from_env().ollama_host
    local = BodyContext(pool, embedder or QueryEmbedder(ollama_host))
    runner: ThreadRunner | ProcessRunner
    if workers > 0:
        runner = ProcessRunner(pool.url, ollama_host, workers)
    else:
        runner = ThreadRunner(lambda: local, tuning.MCP_POOL_SIZE)
    gate = Gate(runner.slots, tuning.MCP_QUEUE_MAX_WAIT_S)

    body_tool = {search_body: "memory_search", context_body: "memory_context"}

    async def offload(body: Callable[..., Any], **kwargs: Any) -> CallToolResult:
        try:
            return _answer(await gate.run(lambda: runner.call(body, kwargs)))
        except Busy as exc:
            # A tool error the model reads (as the SDK words them), and the wait in _meta for a
            # client that retries by itself.
            return CallToolResult(
                content=[
                    TextContent(type="text", text=f"Error executing tool {body_tool[body]}: {exc}")
                ],
                is_error=True,
                _meta={"retry_after_s": exc.retry_after_s},
            )
        except ToolFailed as exc:
            raise ToolError(str(exc)) from None

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> Any:
        pool.attach()
        runner.start()
        try:
            yield {"pool": pool}
        finally:
            runner.stop()
            await anyio.to_thread.run_sync(pool.detach)

    auth: dict[str, Any] = {}
    if token is not None:
        auth = {
            "token_verifier": StaticTokenVerifier(token),
            # A static bearer token, no authorization server: nothing to advertise.
            "auth": AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None),
        }
    tools: list[Tool] = []

    def tool(name: str, title: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return collect(tools, name=name, title=title, annotations=READ_ONLY)

    @tool("memory_search", "Search memories")
    async def memory_search(
        query: Query,
        limit: Annotated[int, Field(ge=1, le=tuning.MAX_LIMIT, description="How many results.")] = (
            tuning.DEFAULT_LIMIT
        ),
        types: Types = None,
        mem_classes: MemClasses = None,
        projects: Projects = None,
        sources: Sources = None,
        tags: Tags = None,
        since: Since = None,
        until: Until = None,
        statuses: Statuses = None,
        exclude_reversed: ExcludeReversed = False,
        entity: EntityName = None,
        project_context: ProjectContext = None,
        temporal_context: Annotated[
            bool, Field(description="Append the top result's neighbours within 24 hours.")
        ] = True,
    ) -> Annotated[CallToolResult, SearchResults]:
        """Hybrid search (keywords + vectors + rerank) over memories, best first, with
        provenance and the passages that matched (the excerpts memory_context packs). Results
        marked temporal_context are neighbours in time of the top one."""
        q = _query(query)
        filters = _filters(
            include_private=private,
            types=types,
            mem_classes=mem_classes,
            projects=projects,
            sources=sources,
            tags=tags,
            since=since,
            until=until,
            statuses=statuses,
            exclude_reversed=exclude_reversed,
            entities=[entity] if entity else None,
        )
        return await offload(
            search_body,
            query=q,
            limit=limit,
            filters=filters,
            project_context=project_context,
            temporal_context=temporal_context,
        )

    @tool("memory_context", "Context pack for a task")
    async def memory_context(
        task: Task,
        token_budget: Annotated[
            int,
            Field(
                ge=MIN_TOKEN_BUDGET,
                le=MAX_TOKEN_BUDGET,
                description=f"Tokens the pack may use ({tuning.CHARS_PER_TOKEN} characters each).",
            ),
        ] = DEFAULT_TOKEN_BUDGET,
        projects: Projects = None,
        sources: Sources = None,
        exclude_reversed: ExcludeReversed = False,
        entity: EntityName = None,
        project_context: ProjectContext = None,
    ) -> Annotated[CallToolResult, ContextPack]:
        """Excerpts of the most relevant memories for a task (the passages that matched, and
        their neighbouring turns as the budget allows), cut to a token budget, with provenance
        and the memories left out (memory_read returns any memory whole). Correction episodes
        are never packed (search for them explicitly)."""
        q = _query(task, "task description")
        filters = _filters(
            projects=projects,
            sources=sources,
            include_private=private,
            exclude_reversed=exclude_reversed,
            entities=[entity] if entity else None,
        )
        return await offload(
            context_body,
            query=q,
            token_budget=token_budget,
            filters=filters,
            project_context=project_context,
        )

    @tool("memory_read", "Read one memory")
    def memory_read(
        memory_id: MemoryId,
        include_expired: Annotated[
            bool, Field(description="Also list relationships that no longer hold.")
        ] = False,
    ) -> Annotated[CallToolResult, MemoryDetail]:
        """One memory in full: its fields, typed relationships, and provenance down to the
        prompt and outcome of each supporting turn (cut to bounds)."""
        with _expected_failures(), pool.connection() as conn:
            detail = browse.read_memory(conn, memory_id, include_expired=include_expired)
            if not include_private:
                detail = visible_detail(conn, detail)
        detail = clean_model(detail)
        return _result(detail, detail_text(detail))

    @tool("memory_list", "List memories")
    def memory_list(
        types: Types = None,
        mem_classes: MemClasses = None,
        projects: Projects = None,
        sources: Sources = None,
        tags: Tags = None,
        since: Since = None,
        until: Until = None,
        statuses: Statuses = None,
        limit: Annotated[
            int, Field(ge=1, le=browse.MAX_PAGE_SIZE, description="Memories per page.")
        ] = browse.DEFAULT_PAGE_SIZE,
        cursor: Annotated[
            str | None,
            Field(
                max_length=browse.MAX_CURSOR_CHARS,
                description="next_cursor from the previous page (same filters); omit at first.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, MemoryPage]:
        """Memories matching filters, newest first, a page at a time (content previews)."""
        filters = _filters(
            include_private=private,
            types=types,
            mem_classes=mem_classes,
            projects=projects,
            sources=sources,
            tags=tags,
            since=since,
            until=until,
            statuses=statuses,
        )
        with _expected_failures(), pool.connection() as conn:
            page = browse.list_memories(conn, filters, limit=limit, cursor=cursor or None)
        page = clean_model(page)
        return _result(page, page_text(page))

    @tool("memory_graph", "Relationship graph")
    def memory_graph(
        memory_id: MemoryId,
        depth: Annotated[
            int, Field(ge=1, le=browse.MAX_GRAPH_DEPTH, description="Hops from the memory.")
        ] = 1,
        relation_types: Annotated[
            list[RelationType] | None,
            Field(max_length=9, description="Only these relationship types."),
        ] = None,
        include_expired: Annotated[
            bool, Field(description="Also follow relationships that no longer hold.")
        ] = False,
        max_nodes: Annotated[
            int, Field(ge=1, le=browse.MAX_GRAPH_NODES, description="Memories at most.")
        ] = browse.DEFAULT_GRAPH_NODES,
    ) -> Annotated[CallToolResult, MemoryGraph]:
        """The typed-relationship neighbourhood of a memory (both directions), breadth first."""
        with _expected_failures(), pool.connection() as conn:
            graph = browse.memory_graph(
                conn,
                memory_id,
                depth=depth,
                relation_types=relation_types,
                include_expired=include_expired,
                max_nodes=max_nodes,
            )
            if not include_private:
                graph = visible_graph(conn, graph)
        graph = clean_model(graph)
        return _result(graph, graph_text(graph))

    @tool("memory_timeline", "Timeline")
    def memory_timeline(
        around: Annotated[
            datetime | None,
            Field(description="A time (ISO 8601) to look around; UTC when no offset is given."),
        ] = None,
        window_hours: Annotated[
            float,
            Field(
                gt=0,
                le=browse.MAX_TIMELINE_WINDOW_HOURS,
                description="Hours before and after `around`.",
            ),
        ] = 24,
        project: Annotated[
            str | None,
            Field(min_length=1, max_length=MAX_FILTER_CHARS, description="Only this project."),
        ] = None,
        types: Types = None,
        statuses: Statuses = None,
        limit: Annotated[
            int, Field(ge=1, le=browse.MAX_TIMELINE_ITEMS, description="Memories at most.")
        ] = browse.DEFAULT_TIMELINE_ITEMS,
    ) -> Annotated[CallToolResult, Timeline]:
        """What happened around a time and/or in a project: memories ordered by creation time,
        oldest first. Give `around`, `project`, or both."""
        filters = _filters(types=types, statuses=statuses, include_private=private)
        with _expected_failures(), pool.connection() as conn:
            tl = browse.timeline(
                conn,
                around=around,
                window_hours=window_hours,
                project=project,
                filters=filters,
                limit=limit,
            )
        tl = clean_model(tl)
        return _result(tl, timeline_text(tl))

    @tool("memory_entity", "Entity timeline")
    def memory_entity(
        name: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_FILTER_CHARS,
                description="A person, project, repository, package, file, host, tool, place "
                "or organisation: a name, an alias or an identifier (repo:github.com/o/r). "
                "Leave out to list the most mentioned entities.",
            ),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=browse.MAX_TIMELINE_ITEMS, description="Mentions at most.")
        ] = browse.DEFAULT_TIMELINE_ITEMS,
    ) -> Annotated[CallToolResult, EntityTimeline]:
        """Everything that mentions an entity, newest first: one dated line per mention with
        its memory, task and turn, and how it was linked (identifier, speaker, alias, ...).
        A name that means several entities returns them to ask which; no name lists the
        entities most mentioned."""
        with _expected_failures(), pool.connection() as conn:
            if name is None or not name.strip():
                listing = entity_list(conn, include_private=include_private, limit=limit)
                tl = clean_model(
                    EntityTimeline(query="", entities=listing.entities, total=listing.total)
                )
                return _result(tl, entity_list_text(listing))
            tl = entity_timeline(conn, name, include_private=include_private, limit=limit)
        tl = clean_model(tl)
        return _result(tl, entity_timeline_text(tl))

    @tool("memory_brief", "Daily briefing")
    def memory_brief(
        day: Annotated[
            date | None,
            Field(description="The briefing of this day (YYYY-MM-DD); default the latest."),
        ] = None,
    ) -> Annotated[CallToolResult, Briefing]:
        """The user's latest daily briefing: new dream-cycle syntheses, contradictions,
        superseded decisions, resurfaced memories, the weekly digest and open questions, each
        with a headline and the ids of the memories it rests on (open them with memory_read)."""
        with _expected_failures(), pool.connection() as conn:
            briefing, text = read_briefing(conn, day, include_private=include_private)
        briefing = clean_model(briefing)
        return _result(briefing, clean(text))

    return CheckedServer(
        SERVER_NAME,
        title="memory-pipeline (read-only)",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        tools=tools,
        **auth,
    )
