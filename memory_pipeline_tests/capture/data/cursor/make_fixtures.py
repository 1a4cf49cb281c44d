"""Writes the Cursor fixture JSON files beside it (run once; the JSON is what tests read).

    .venv/bin/python memory_pipeline_tests/capture/data/cursor/make_fixtures.py

Field shapes: see README.md beside this file and memory_pipeline/capture/cursor/FORMAT.md.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp() * 1000)


def iso(base: str, seconds: int) -> str:
    when = datetime.fromisoformat(base).replace(tzinfo=UTC) + timedelta(seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def rich(text: str) -> str:
    """The composer input's Lexical editor state, as Cursor stores it (a JSON string)."""
    paragraphs = [
        {
            "children": [
                {
                    "detail": 0,
                    "format": 0,
                    "mode": "normal",
                    "style": "",
                    "text": line,
                    "type": "text",
                    "version": 1,
                }
            ],
            "direction": "ltr",
            "format": "",
            "indent": 0,
            "type": "paragraph",
            "version": 1,
        }
        for line in text.split("\n")
    ]
    return json.dumps(
        {
            "root": {
                "children": paragraphs,
                "direction": "ltr",
                "format": "",
                "indent": 0,
                "type": "root",
                "version": 1,
            }
        },
        separators=(",", ":"),
    )


WS = ["file:///home/mara/src/meterflow"]


def user(bid: str, text: str, when: str, editor: bool = True, **extra) -> dict:
    b = {
        "_v": 3,
        "type": 1,
        "bubbleId": bid,
        "text": text,
        "createdAt": when,
        "requestId": f"req-{bid}",
        "isAgentic": True,
        "unifiedMode": 2,
        "workspaceUris": WS,
        "modelInfo": {"modelName": "claude-4.5-sonnet"},
        "attachedCodeChunks": [],
        "context": {"fileSelections": [], "selections": []},
        "tokenCount": {"inputTokens": 0, "outputTokens": 0},
    }
    if editor:
        b["richText"] = rich(text)
    b.update(extra)
    return b


def answer(bid: str, text: str, when: str, **extra) -> dict:
    b = {
        "_v": 3,
        "type": 2,
        "bubbleId": bid,
        "serverBubbleId": f"srv-{bid}",
        "text": text,
        "createdAt": when,
        "codeBlocks": [],
        "toolResults": [],
        "isAgentic": True,
        "unifiedMode": 2,
        "tokenCount": {"inputTokens": 1200, "outputTokens": 240},
        "timingInfo": {
            "clientStartTime": 4745281.3,
            "clientRpcSendTime": 1766691321759,
            "clientSettleTime": 1766691395467,
            "clientEndTime": 1766691395467,
        },
    }
    b.update(extra)
    return b


def thinking(bid: str, when: str) -> dict:
    return answer(
        bid,
        "",
        when,
        capabilityType=30,
        thinking={"text": "The upload retries without backoff; check the client."},
        thinkingDurationMs=2300,
    )


def tool(bid: str, when: str, name: str, args: dict, result: dict) -> dict:
    return answer(
        bid,
        "",
        when,
        capabilityType=15,
        toolFormerData={
            "tool": 15 if name == "run_terminal_cmd" else 40,
            "toolCallId": f"toolu_{bid[:8]}",
            "toolIndex": 0,
            "modelCallId": f"mc-{bid}",
            "status": "completed",
            "name": name,
            "rawArgs": json.dumps(args),
            "params": json.dumps(args),
            "result": json.dumps(result),
            "additionalData": {},
        },
    )


def headers(*bubbles: dict) -> list[dict]:
    out = []
    for b in bubbles:
        h = {"bubbleId": b["bubbleId"], "type": b["type"]}
        if b["type"] == 2:
            h["serverBubbleId"] = b["serverBubbleId"]
        out.append(h)
    return out


def composer(
    cid: str, name: str | None, created: str, updated: str, bubbles: list[dict], **extra
) -> dict:
    c = {
        "_v": 10,
        "composerId": cid,
        "richText": "",
        "text": "",
        "hasLoaded": True,
        "fullConversationHeadersOnly": headers(*bubbles),
        "conversationMap": {},
        "status": "completed",
        "context": {"composers": [], "fileSelections": []},
        "unifiedMode": "agent",
        "forceMode": "edit",
        "isAgentic": True,
        "createdAt": ms(created),
        "lastUpdatedAt": ms(updated),
        "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
        "createdOnBranch": "main",
        "generatingBubbleIds": [],
        "subComposerIds": [],
    }
    if name is not None:
        c["name"] = name
    c.update(extra)
    return c


def split_store() -> dict:
    kv: dict[str, object] = {}

    def add(c: dict, bubbles: list[dict]) -> None:
        kv[f"composerData:{c['composerId']}"] = c
        for b in bubbles:
            kv[f"bubbleId:{c['composerId']}:{b['bubbleId']}"] = b

    t = "2026-10-05T09:00:00"
    agent = [
        user(
            "u1-0001", "The meter upload fails with a 503 now and then. Make it retry.", iso(t, 0)
        ),
        thinking("a1-0001", iso(t, 4)),
        answer("a1-0002", "I'll look at the upload client first.", iso(t, 6)),
        tool(
            "a1-0003",
            iso(t, 9),
            "read_file",
            {"target_file": "meterflow/upload.py"},
            {"contents": "def upload(batch): ..."},
        ),
        tool(
            "a1-0004",
            iso(t, 20),
            "run_terminal_cmd",
            {"command": "pytest -q tests/test_upload.py"},
            {"output": "3 passed", "exitCodeV2": 0},
        ),
        answer(
            "a1-0005",
            "Uploads now retry 503s three times with exponential backoff (0.5 s, 1 s,"
            " 2 s) in `meterflow/upload.py`; the tests pass.",
            iso(t, 31),
        ),
        user("u2-0001", "Log each retry at WARNING with the batch id.", iso(t, 120)),
        answer(
            "a2-0001",
            "Each retry now logs `upload retry {n}/3 for batch {id}` at WARNING.",
            iso(t, 140),
        ),
    ]
    sub = [
        user(
            "su-0001", "Find every caller of upload() in the repository.", iso(t, 10), editor=False
        ),
        answer("sa-0001", "Two callers: `nightly.py:41` and `backfill.py:88`.", iso(t, 15)),
    ]
    add(
        composer(
            "7f3c2a10-1b2c-4d5e-8f90-aa11bb22cc33",
            "Retry the flaky upload",
            t,
            "2026-10-05T09:02:20",
            agent,
            subComposerIds=["task-toolu_01AbCdEfGh"],
        ),
        agent,
    )
    add(
        composer(
            "task-toolu_01AbCdEfGh",
            "Find upload callers",
            "2026-10-05T09:00:10",
            "2026-10-05T09:00:15",
            sub,
            unifiedMode="agent",
        ),
        sub,
    )

    t2 = "2026-10-06T14:30:00"
    chat = [
        user("cu-0001", "What does polars' scan_csv do differently from read_csv?", iso(t2, 0)),
        answer(
            "ca-0001",
            "scan_csv is lazy: it builds a query plan and reads only what the plan"
            " needs when you call collect(); read_csv loads the whole file now.",
            iso(t2, 8),
        ),
    ]
    c = composer(
        "0b9d8e7f-6a5b-4c3d-2e1f-001122334455",
        None,
        t2,
        "2026-10-06T14:30:08",
        chat,
        unifiedMode="chat",
        forceMode="chat",
        isAgentic=False,
    )
    c["conversationMap"] = {b["bubbleId"]: b for b in chat}  # inline map, no bubble rows
    kv[f"composerData:{c['composerId']}"] = c

    t3 = "2026-10-07T08:00:00"
    bg = [
        user("bu-0001", "Upgrade polars to 1.x and fix what breaks.", iso(t3, 0)),
        answer(
            "ba-0001",
            "Started a background agent on branch cursor/polars-1x.",
            iso(t3, 3),
            capabilityType=21,
        ),
        answer("ba-0002", "Polars is on 1.9; two deprecated calls were replaced.", iso(t3, 900)),
    ]
    add(
        composer(
            "bg000000-0000-4000-8000-000000000001",
            "Upgrade polars",
            t3,
            "2026-10-07T08:15:00",
            bg,
            unifiedMode="background",
        ),
        bg,
    )

    bon = [
        user("nu-0001", "Write the CSV header check.", iso(t3, 10)),
        answer("na-0001", "Added `check_header()` raising on a missing column.", iso(t3, 40)),
    ]
    add(
        composer(
            "b0n00000-0000-4000-8000-000000000002",
            None,
            t3,
            "2026-10-07T08:00:40",
            bon,
            isBestOfNSubcomposer=True,
        ),
        bon,
    )

    t4 = "2026-10-08T10:00:00"
    noed = [
        user("xu-0001", "Summarise the open TODOs in meterflow.", iso(t4, 0), editor=False),
        answer("xa-0001", "Three TODOs: tariff lookup, DST gap, retry jitter.", iso(t4, 5)),
    ]
    add(
        composer("e0000000-0000-4000-8000-0000000000e1", None, t4, "2026-10-08T10:00:05", noed),
        noed,
    )

    t5 = "2026-10-09T16:00:00"
    gen = [
        user("gu-0001", "Add a --dry-run flag to the CLI.", iso(t5, 0)),
        answer(
            "ga-0001",
            "`meterflow run --dry-run` now prints the plan and writes nothing.",
            iso(t5, 30),
        ),
        user("gu-0002", "Also skip the upload in dry-run.", iso(t5, 60)),
        tool(
            "ga-0002",
            iso(t5, 64),
            "read_file",
            {"target_file": "meterflow/cli.py"},
            {"contents": "..."},
        ),
    ]
    add(
        composer(
            "9e000000-0000-4000-8000-000000000009",
            "Dry run flag",
            t5,
            "2026-10-09T16:01:04",
            gen,
            status="generating",
            generatingBubbleIds=["ga-0003"],
        ),
        gen,
    )

    kv["composerData:d0000000-0000-4000-8000-00000000000d"] = composer(
        "d0000000-0000-4000-8000-00000000000d", None, t5, t5, []
    )  # a chat opened, never used

    t6 = "2026-10-10T11:00:00"
    bad = [
        user("ku-0001", "Rename the tariff table.", iso(t6, 0)),
        answer("ka-0001", "Renamed to `tariffs`.", iso(t6, 5)),
        user("ku-0002", "And the index?", iso(t6, 30)),
        answer("ka-0002", "Renamed `idx_tariff` to `idx_tariffs`.", iso(t6, 35)),
        user("ku-0003", "Drop the old view.", iso(t6, 60)),
        answer("ka-0003", "Dropped `v_tariff_old`.", iso(t6, 65)),
        user("ku-0004", "Run the migration tests.", iso(t6, 90)),
        answer("ka-0004", "All 12 migration tests pass.", iso(t6, 120)),
    ]
    cid = "ba000000-0000-4000-8000-0000000000ba"
    add(composer(cid, "Tariff table rename", t6, "2026-10-10T11:02:00", bad), bad)
    kv[f"bubbleId:{cid}:ka-0001"] = (
        '{"_v":3,"type":2,"bubbleId":"ka-0001","text":"Renamed to'  # torn
    )
    del kv[f"bubbleId:{cid}:ku-0003"]  # a header whose bubble row is missing
    return {"cursorDiskKV": kv, "ItemTable": {}}


def split_workspace() -> dict:
    entries = [
        {
            "composerId": "7f3c2a10-1b2c-4d5e-8f90-aa11bb22cc33",
            "name": "Retry the flaky upload",
            "createdAt": ms("2026-10-05T09:00:00"),
            "lastUpdatedAt": ms("2026-10-05T09:02:20"),
            "unifiedMode": "agent",
            "forceMode": "edit",
        },
        {
            "composerId": "0b9d8e7f-6a5b-4c3d-2e1f-001122334455",
            "createdAt": ms("2026-10-06T14:30:00"),
            "unifiedMode": "chat",
            "forceMode": "chat",
        },
    ]
    return {
        "ItemTable": {
            "composer.composerData": {
                "allComposers": entries,
                "selectedComposerIds": [entries[0]["composerId"]],
                "composerDataVersion": 1,
            }
        },
        "cursorDiskKV": {},
    }


def inline_store() -> dict:
    """Cursor 0.4x (early 2025): the conversation inline in composerData, no `_v`."""
    t = "2025-03-14T10:00:00"
    conv = [
        {
            "type": 1,
            "bubbleId": "il-u1",
            "text": "Why does the DST change duplicate an hour of readings?",
            "richText": rich("Why does the DST change duplicate an hour of readings?"),
            "context": {"fileSelections": []},
            "attachedFoldersNew": [],
            "relevantFiles": [],
        },
        {
            "type": 2,
            "bubbleId": "il-a1",
            "text": "The utility CSV uses local time; 02:00-03:00 on"
            " 26 Oct occurs twice. Parse with the UTC offset column instead.",
            "suggestedCodeBlocks": [],
            "relevantFiles": ["meterflow/parse.py"],
        },
        {
            "type": 1,
            "bubbleId": "il-u2",
            "text": "Is there an offset column?",
            "richText": rich("Is there an offset column?"),
        },
        {"type": 2, "bubbleId": "il-a2", "text": "Yes, `utc_offset` in every row since 2023."},
    ]
    c = {
        "composerId": "11111111-2222-4333-8444-555555555555",
        "name": "DST duplicate hour",
        "conversation": conv,
        "hasLoaded": True,
        "text": "",
        "richText": "",
        "status": "completed",
        "createdAt": ms(t),
        "lastUpdatedAt": ms("2025-03-14T10:05:00"),
        "context": {"fileSelections": []},
    }
    return {"cursorDiskKV": {f"composerData:{c['composerId']}": c}, "ItemTable": {}}


def workspace_inline() -> dict:
    """Cursor 0.42-0.43 (autumn 2024): whole conversations in the workspace's allComposers."""
    t = "2024-11-20T15:00:00"
    conv = [
        {
            "type": 1,
            "bubbleId": "wi-u1",
            "text": "Add a type hint to load_tariffs.",
            "richText": rich("Add a type hint to load_tariffs."),
            "context": {"fileSelections": []},
            "timestamp": ms(t),
        },
        {
            "type": 2,
            "bubbleId": "wi-a1",
            "text": "`def load_tariffs(path: Path) -> pl.DataFrame:`",
            "context": {"fileSelections": []},
            "timestamp": ms(t) + 4000,
        },
    ]
    entry = {
        "composerId": "22222222-3333-4444-8555-666666666666",
        "name": "Tariff type hint",
        "conversation": conv,
        "richText": "",
        "text": "",
        "status": "completed",
        "context": {"fileSelections": []},
        "createdAt": ms(t),
        "lastUpdatedAt": ms(t) + 4000,
    }
    return {
        "ItemTable": {
            "composer.composerData": {
                "allComposers": [entry],
                "selectedComposerId": entry["composerId"],
                "composerDataVersion": 0,
            }
        },
        "cursorDiskKV": {},
    }


def transcript_lines() -> list[dict]:
    return [
        {
            "role": "user",
            "message": {
                "content": [
                    {
                        "type": "text",
                        "text": "<user_query>\nlist the failing tests in meterflow\n</user_query>",
                    }
                ]
            },
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Running the test suite."},
                    {"type": "tool_use", "name": "Shell", "input": {"command": "pytest -q"}},
                ]
            },
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {
                        "type": "text",
                        "text": "One test fails: `test_dst_gap`"
                        " (expects 23 hours on 29 March, gets 24).",
                    }
                ]
            },
        },
        {"type": "turn_ended", "status": "success"},
        {
            "role": "user",
            "message": {
                "content": [{"type": "text", "text": "<user_query>\nfix it\n</user_query>"}]
            },
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "name": "StrReplace",
                        "input": {"path": "meterflow/dst.py"},
                    }
                ]
            },
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {
                        "type": "text",
                        "text": "`hours_in_day()` now uses the zone's transitions;"
                        " `test_dst_gap` passes.",
                    }
                ]
            },
        },
        {"type": "turn_ended", "status": "success"},
    ]


def main() -> None:
    out = {
        "global-split.json": split_store(),
        "workspace-split.json": split_workspace(),
        "global-inline.json": inline_store(),
        "workspace-inline.json": workspace_inline(),
    }
    for name, data in out.items():
        (HERE / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    lines = [json.dumps(x, separators=(",", ":")) for x in transcript_lines()]
    (HERE / "agent-transcript.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
