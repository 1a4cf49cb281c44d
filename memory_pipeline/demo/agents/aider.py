"""Aider demo sessions: `aider/<repo>/.aider.chat.history.md`, written by Aider 0.86's rules.

`aider/` stands for the repositories MEMORY_AIDER_ROOTS names; Aider writes its chat history in
the repository it runs in (Aider-AI/aider `aider/io.py`: the `# aider chat started at` header in
local time, the logged command line, `#### ` prompt lines, blockquoted `> ` tool lines with two
trailing spaces, the answer verbatim). One interactive chat in meterflow, and a scripted
`aider --message` run (delegated).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memory_pipeline.demo import build_corpus as bc
from memory_pipeline.demo.conversations.projects import METERFLOW
from memory_pipeline.demo.spec import Session, Turn

HOME = "aider"
VERSION = "0.86.1"
CHAT = Session(
    key="aider-meterflow-bom",
    tool="aider",
    project=METERFLOW,
    date="2026-10-14",
    summary="Aider: the utility CSV's BOM and ';' separator",
    turns=(
        Turn(
            at="11:20",
            prompt="Since the October export the utility CSV starts with a BOM and uses `;` as "
            "separator, and the first column comes out as '\\ufeffmeter_id'. Fix the reader.",
            answer="The export switched to Excel's CSV dialect. I sniff the separator from the "
            "header line and strip the BOM from the first column name after reading, so both "
            "the old and the new exports load.\n\ningest/utility_csv.py\n```python\n"
            "<<<<<<< SEARCH\n    df = pl.read_csv(path)\n=======\n"
            "    head = path.read_bytes()[:4096].decode('utf-8-sig')\n"
            "    sep = ';' if head.count(';') > head.count(',') else ','\n"
            "    df = pl.read_csv(path, separator=sep)\n"
            "    df = df.rename({df.columns[0]: df.columns[0].lstrip('\\ufeff')})\n"
            ">>>>>>> REPLACE\n```",
            plants=("insight",),
        ),
        Turn(
            at="11:31",
            prompt="/ask should we normalise the separator when we archive the raw files too?",
            answer="No: keep the raw files byte for byte as the utility sent them, so a re-run "
            "of the backfill sees exactly what arrived. Normalise only in the Parquet output.",
            plants=("decision",),
        ),
    ),
)
SCRIPTED = Session(
    key="aider-meterflow-typing",
    tool="aider",
    project=METERFLOW,
    date="2026-10-15",
    mode="exec",
    summary="Aider --message: type hints in the GridPulse client",
    turns=(
        Turn(
            at="07:02",
            prompt="add type hints to ingest/gridpulse.py",
            answer="Added type hints to the four functions in `ingest/gridpulse.py`.",
        ),
    ),
)


class _History:
    """InputOutput.append_chat_history and its callers, as in aider/io.py."""

    def __init__(self) -> None:
        self.text = ""

    def append(self, text: str, linebreak: bool = False, blockquote: bool = False) -> None:
        if blockquote:
            text = "> " + text.strip()
        if linebreak:
            text = text.rstrip() + "  \n"
        if not text.endswith("\n"):
            text += "\n"
        self.text += text

    def start(self, when: datetime, argv: str) -> None:
        self.append(f"\n# aider chat started at {when:%Y-%m-%d %H:%M:%S}\n\n")
        for line in (
            argv,
            f"Aider v{VERSION}",
            "Main model: anthropic/claude-sonnet-4-5 with diff edit format, infinite output",
            "Git repo: .git with 61 files",
            "Repo-map: using 4096 tokens, auto refresh",
        ):
            self.tool(line)

    def tool(self, line: str) -> None:
        self.append(line, linebreak=True, blockquote=True)

    def user(self, prompt: str) -> None:
        lines = "  \n#### ".join(prompt.splitlines())
        self.append(f"\n#### {lines}", linebreak=True)

    def ai(self, answer: str) -> None:
        self.append("\n" + answer.strip() + "\n\n")


def render(home: Path, manifest: bc.Manifest) -> None:
    h = _History()
    repo = home / "meterflow"
    for session, argv in (
        (CHAT, "/home/mara/.local/bin/aider --model sonnet"),
        (
            SCRIPTED,
            "/home/mara/.local/bin/aider --message 'add type hints to "
            "ingest/gridpulse.py' --yes-always",
        ),
    ):
        ids = bc.Ids(session.key)
        times = bc.turn_times(session.date, session.turns, ids)
        start = times[0].replace(microsecond=0)
        h.start(start, argv)
        if session is CHAT:
            h.user("/add ingest/utility_csv.py")
            h.tool("Added ingest/utility_csv.py to the chat")
        for turn in session.turns:
            h.user(turn.prompt)
            h.ai(turn.answer)
            if "SEARCH" in turn.answer:
                h.tool("Applied edit to ingest/utility_csv.py")
                h.tool("Commit 4be81d0 fix: read the utility CSV's BOM and ; separator")
            h.tool("Tokens: 6.2k sent, 410 received. Cost: $0.02 message, $0.03 session.")
            manifest.plants.update(turn.plants)
        stamp = start.strftime("%Y%m%dT%H%M%S")
        manifest.tasks.append(
            bc.TaskInfo(
                source="aider",
                native_id=f"meterflow@{stamp}",
                spec_key=session.key,
                project=session.project.key,
                ownership="user_owned" if session is CHAT else "delegated",
                delegation="" if session is CHAT else "exec",
                complete_turns=len(session.turns),
                days=(session.date,),
                path=f"{HOME}/meterflow/.aider.chat.history.md",
            )
        )
    path = repo / ".aider.chat.history.md"
    bc.write_text(path, h.text)
    manifest.files.append(str(path))
