"""Write `.aider.chat.history.md` exactly as Aider does, for tests, fuzzing and the demo.

The four writers below follow Aider-AI/aider `aider/io.py` (0.86, Apache-2.0) line for line:
`InputOutput.__init__` (the session header), `user_input`, `ai_output`, `tool_output` and
`append_chat_history` (blockquote, linebreak, strip), and `aider/main.py` (the command line,
version, model and repository lines after the header). `.aider.input.history` is
prompt_toolkit's `FileHistory.store_string` format.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def append_chat_history(
        self, text: str, linebreak: bool = False, blockquote: bool = False, strip: bool = True
    ) -> None:
        if blockquote:
            if strip:
                text = text.strip()
            text = "> " + text
        if linebreak:
            if strip:
                text = text.rstrip()
            text = text + "  \n"
        if not text.endswith("\n"):
            text += "\n"
        with self.path.open("a", encoding="utf-8", errors="ignore") as f:
            f.write(text)

    def start(
        self,
        when: datetime,
        argv: str = "/home/mara/.local/bin/aider --model sonnet",
        version: str = "0.86.1",
    ) -> None:
        """A session: the header, then what main.py logs before the first prompt."""
        self.append_chat_history(f"\n# aider chat started at {when:%Y-%m-%d %H:%M:%S}\n\n")
        self.tool_output(argv)
        self.tool_output(f"Aider v{version}")
        self.tool_output(
            "Main model: anthropic/claude-sonnet-4-5 with diff edit format, infinite output"
        )
        self.tool_output("Git repo: .git with 42 files")
        self.tool_output("Repo-map: using 4096 tokens, auto refresh")

    def user_input(self, inp: str) -> None:
        prefix = "####"
        hist = inp.splitlines() if inp else ["<blank>"]
        joined = f"  \n{prefix} ".join(hist)
        self.append_chat_history(f"\n{prefix} {joined}", linebreak=True)

    def ai_output(self, content: str) -> None:
        self.append_chat_history("\n" + content.strip() + "\n\n")

    def tool_output(self, *messages: str) -> None:
        if messages:
            hist = " ".join(messages)
            self.append_chat_history(hist.strip(), linebreak=True, blockquote=True)


def input_history(path: Path, when: datetime, text: str) -> None:
    """prompt_toolkit FileHistory.store_string: a `# <time>` line, then `+<line>` per line."""
    with path.open("a", encoding="utf-8") as f:
        f.write(f"\n# {when}\n")
        for line in text.split("\n"):
            f.write(f"+{line}\n")


def chat(
    h: History, prompt: str, answer: str | None, tools: tuple[str, ...] = ("Applied edit",)
) -> None:
    """One exchange: the prompt, the answer (None: not yet), then tool lines."""
    h.user_input(prompt)
    if answer is not None:
        h.ai_output(answer)
        for line in tools:
            h.tool_output(line)
