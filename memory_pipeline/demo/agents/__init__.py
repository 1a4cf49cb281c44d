"""Demo sessions of the agents beyond Codex, Claude Code and the chat import: one module each.

A module here holds its agent's demo sessions (the projects of `demo/conversations/`, told with
the vocabulary of `demo/spec.py`) and renders them the way the agent writes them. It defines

    HOME = "gemini_home"                      # its demo root under demo/corpus/, the same as the
                                              # `demo` of its entry in models/sources.py
    def render(home: Path, manifest: build_corpus.Manifest) -> None: ...
                                              # write the files; record each task and gold turn
                                              # (manifest.tasks.append(TaskInfo(...)),
                                              # manifest.add_gold, manifest.files as build_corpus)

and is listed in `DEMO_AGENTS` below (one line). `build_corpus.build` calls every module after
the built-in agents, so `python -m memory_pipeline.demo.build_corpus` writes its files too and
`test_demo_corpus.py` checks them (reproducible byte for byte, parsed without an issue).
"""

from __future__ import annotations

from types import ModuleType

from memory_pipeline.demo.agents import aider, cursor, gemini_cli, kiro_cli, kiro_ide, opencode

DEMO_AGENTS: tuple[ModuleType, ...] = (opencode, aider, kiro_cli, kiro_ide, cursor, gemini_cli)
