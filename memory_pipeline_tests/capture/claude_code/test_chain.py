"""The record tree (§2.2): rewind branches, compaction, resumed history, sidechain records,
and what is not a prompt."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline_tests.support.claude_transcript import (
    Transcript,
    connector,
    only_task,
    project,
)


def test_rewind_branch_keeps_only_the_live_leaf_chain(home: Path) -> None:
    t = Transcript()
    t.prompt("one")
    answer_one = t.text("answer one", "msg_1", "end_turn")
    t.prompt("two (abandoned)")
    t.text("answer two", "msg_2", "end_turn")
    t.prompt("two, edited", parent=answer_one)  # second child of the same parent
    t.text("answer two, edited", "msg_3", "end_turn")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.ordinal, x.prompt) for x in task.turns] == [(0, "one"), (1, "two, edited")]


def test_last_prompt_leaf_after_the_last_message_selects_another_branch(home: Path) -> None:
    t = Transcript()
    t.prompt("one")
    answer_one = t.text("answer one", "msg_1", "end_turn")
    t.prompt("two")
    answer_two = t.text("answer two", "msg_2", "end_turn")
    t.prompt("two, edited", parent=answer_one)
    t.text("answer two, edited", "msg_3", "end_turn")
    path = t.write(project(home))
    assert [x.prompt for x in only_task(connector(home).parse(path)).turns] == [
        "one",
        "two, edited",
    ]
    # The user went back to the first branch: last-prompt names its leaf, after every message.
    t.sidecar({"type": "last-prompt", "sessionId": t.session_id, "leafUuid": answer_two})
    t.write(project(home))
    assert [x.prompt for x in only_task(connector(home).parse(path)).turns] == ["one", "two"]
    # A leafUuid naming an ancestor of the last message is not trusted to drop turns.
    t.sidecar({"type": "last-prompt", "sessionId": t.session_id, "leafUuid": answer_one})
    t.write(project(home))
    assert [x.prompt for x in only_task(connector(home).parse(path)).turns] == [
        "one",
        "two, edited",
    ]


def test_compaction_summary_is_not_a_prompt_and_the_old_chain_is_kept(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    before = t.last
    t.system(
        "compact_boundary",
        parent=None,
        logicalParentUuid=before,
        content="Conversation compacted",
        compactMetadata={"trigger": "manual", "preTokens": 100},
    )
    t.prompt(
        "This session is being continued from a previous conversation that ran out of context.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    t.turn("two", "answer two", 2)
    # An auto-compaction in the middle of a turn does not split it.
    t.prompt("three")
    t.tool_use("toolu_3", "msg_3a")
    t.tool_result("toolu_3")
    boundary_parent = t.last
    t.system("compact_boundary", parent=None, logicalParentUuid=boundary_parent)
    t.prompt("Summary of the conversation so far...", isCompactSummary=True)
    t.text("answer three", "msg_3b", "end_turn")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.prompt, x.outcome) for x in task.turns] == [
        ("one", "answer one"),
        ("two", "answer two"),
        ("three", "answer three"),
    ]


def test_resumed_history_from_an_ancestor_is_not_captured_again(home: Path) -> None:
    ancestor = "a0c35702-0000-4000-8000-000000000000"
    t = Transcript()
    # Copied ancestor records: snake session_id names the ancestor (§2.2, corpus §3.1).
    t.turn("old question", "old answer", 1, session_id=ancestor)
    t.turn("new question", "new answer", 2, session_id=t.session_id)
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.ordinal, x.prompt) for x in task.turns] == [(0, "new question")]
    assert task.native_context["ancestor_session_ids"] == [ancestor]

    # Older copies that keep the ancestor's camel-case sessionId are inherited too.
    t2 = Transcript(session_id="b0000000-0000-4000-8000-000000000002")
    t2.envelope["sessionId"] = ancestor
    t2.turn("old question", "old answer", 1)
    t2.envelope["sessionId"] = t2.session_id
    t2.turn("newer question", "newer answer", 2)
    task2 = only_task(connector(home).parse(t2.write(project(home))))
    assert task2.native_id == t2.session_id
    assert [x.prompt for x in task2.turns] == ["newer question"]


def test_sidechain_records_inside_a_main_file_are_skipped(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.envelope.update(isSidechain=True, agentId="deadbeef")
    t.prompt("delegated prompt", parent=None)
    t.text("delegated answer", "msg_side", "end_turn")
    t.envelope.update(isSidechain=False)
    del t.envelope["agentId"]
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [x.prompt for x in task.turns] == ["one"]


def test_commands_notifications_and_harness_text_are_not_prompts(home: Path) -> None:
    t = Transcript()
    t.prompt(
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n"
        "<command-args></command-args>"
    )
    t.prompt("<local-command-stdout></local-command-stdout>")
    t.prompt(
        "Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages.",
        isMeta=True,
    )
    t.turn("real question", "real answer", 1, promptSource="typed")
    t.prompt(
        "<task-notification><task-id>b1</task-id><status>completed</status></task-notification>",
        origin={"kind": "task-notification"},
        promptSource="system",
    )
    t.text("The background job finished.", "msg_n", "end_turn")
    t.prompt(
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>42</command-args>"
    )
    t.prompt("Review pull request 42 carefully ...", isMeta=True)
    t.text("PR 42 looks good.", "msg_r", "end_turn")
    t.prompt(
        [
            {"type": "text", "text": "<ide_opened_file>The user opened app.py</ide_opened_file>"},
            {"type": "text", "text": "and this one?"},
        ]
    )
    t.text("That one too.", "msg_q", "end_turn")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.prompt, x.outcome) for x in task.turns] == [
        ("real question", "real answer"),
        ("/review 42", "PR 42 looks good."),
        ("and this one?", "That one too."),
    ]
    assert task.ownership.reason == "claude_code:typed-prompt"
    assert task.unfinished_turn is False


def test_queued_steering_is_attached_to_the_turn_prompt(home: Path) -> None:
    t = Transcript()
    t.prompt("refactor the parser")
    t.tool_use("toolu_1", "msg_1")
    t.tool_result("toolu_1")
    t.attachment(
        {"type": "queued_command", "prompt": "and keep the tests green", "commandMode": "prompt"}
    )
    t.text("Refactored; tests pass.", "msg_2", "end_turn")
    [turn] = only_task(connector(home).parse(t.write(project(home)))).turns
    assert turn.prompt == "refactor the parser\n\nand keep the tests green"
