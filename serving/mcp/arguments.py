"""What every tool does with arguments it cannot use, before and after the SDK validates them.

- Text no stored value can hold: a NUL byte (PostgreSQL text has none) or a lone surrogate
  (not Unicode text; it cannot even be encoded to send back). In query text (an argument
  annotated `REPLACED`: memory_search `query`, memory_context `task`) each becomes U+FFFD and
  the search goes on; in any other argument (ids, cursors, filter values, projects, times) the
  call is refused, naming the argument.
- An argument the tool does not take (`tokens=300`) is refused with the names it does take
  (its argument model also forbids extra fields, so its input schema says
  `additionalProperties: false`).
- The SDK's validation errors (several lines each, echoing the input) become one line per call:
  `<argument>: <what is wrong>`, the valid values of a fixed set included.

Every refusal is a `ToolError` ("Error executing tool <name>: ..."): the model reads it and can
correct the call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ConfigDict, ValidationError


class Replaced:
    """Annotation marker: NUL bytes and lone surrogates in this argument become U+FFFD."""

    def __repr__(self) -> str:
        return "REPLACED"


REPLACED = Replaced()
REPLACEMENT = "\ufffd"
_UNUSABLE = re.compile("[\x00\ud800-\udfff]")


def unusable(text: str) -> str | None:
    """What makes `text` unusable (the first such character), or None."""
    match = _UNUSABLE.search(text)
    if match is None:
        return None
    if match.group() == "\x00":
        return "a NUL byte (U+0000)"
    return f"a lone surrogate (U+{ord(match.group()):04X})"


def replace_unusable(value: Any) -> Any:
    """Every string in `value` (nested lists and objects too) with U+FFFD for each NUL byte and
    lone surrogate."""
    if isinstance(value, str):
        return _UNUSABLE.sub(REPLACEMENT, value)
    if isinstance(value, list):
        return [replace_unusable(v) for v in value]
    if isinstance(value, dict):
        return {replace_unusable(k): replace_unusable(v) for k, v in value.items()}
    return value


def _first_unusable(value: Any, where: str) -> tuple[str, str] | None:
    """(where, what) of the first unusable string in `value`, keys included."""
    if isinstance(value, str):
        what = unusable(value)
        return (where, what) if what else None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _first_unusable(item, f"{where}[{i}]")
            if found:
                return found
    if isinstance(value, dict):
        for key, item in value.items():
            found = _first_unusable(key, f"{where} (a key)") or _first_unusable(
                item, f"{where}.{shown(key)}"
            )
            if found:
                return found
    return None


def shown(name: object) -> str:
    """A caller-supplied name, safe to put in an error: printable, quoted, cut."""
    text = str(name)[:60].encode("utf-8", "backslashreplace").decode("utf-8")
    return repr(text)


def strict(tool: Tool) -> Tool:
    """The tool with an argument model that forbids extra fields (and a schema that says so)."""
    base = tool.fn_metadata.arg_model
    model = type(
        base.__name__,
        (base,),
        {
            "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            "__module__": base.__module__,
        },
    )
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)
    return tool


def _replaced_names(tool: Tool) -> frozenset[str]:
    fields = tool.fn_metadata.arg_model.model_fields
    return frozenset(
        field.alias or name
        for name, field in fields.items()
        if any(m is REPLACED for m in field.metadata)
    )


def checked_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with query text repaired; ToolError (one line) for the rest."""
    names = list(tool.parameters.get("properties", {}))
    # As the SDK will: a JSON string given for a list or an object is parsed first, so the
    # checks below see what the tool would.
    arguments = tool.fn_metadata.pre_parse_json(arguments)
    unknown = sorted(shown(k) for k in arguments if k not in names)
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise ToolError(
            f"unknown argument{plural} {', '.join(unknown)}; {tool.name} takes "
            f"{', '.join(names) if names else 'no arguments'}"
        )
    replaced = _replaced_names(tool)
    out = dict(arguments)
    for name, value in arguments.items():
        if name in replaced:
            out[name] = replace_unusable(value)
            continue
        found = _first_unusable(value, name)
        if found:
            where, what = found
            raise ToolError(f"{where} contains {what}; send it without that character")
    return out


def _loc(parts: Iterable[object]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "arguments"


def one_line(tool: str, exc: ValidationError) -> str:
    """The errors of one call, one line: `where: what` for each distinct problem."""
    by_message: dict[str, list[str]] = {}
    extra: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        if error["type"] == "extra_forbidden":
            extra.append(shown(_loc(error["loc"])))
            continue
        message = " ".join(str(error["msg"]).split())
        if error["type"] == "missing":
            message = "required, and missing"
        by_message.setdefault(message, []).append(_loc(error["loc"]))
    parts = [f"{', '.join(dict.fromkeys(locs))}: {message}" for message, locs in by_message.items()]
    if extra:
        parts.append(f"unknown argument{'s' if len(extra) > 1 else ''} {', '.join(extra)}")
    return "; ".join(parts) or f"the arguments of {tool} are not valid"


class CheckedServer(MCPServer):
    """MCPServer whose tool calls go through `checked_arguments` and report validation errors on
    one line."""

    def __init__(self, *args: Any, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(*args, tools=[strict(t) for t in tools], **kwargs)
        self._checked = {t.name: t for t in tools}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._checked.get(name)
        if tool is not None:
            try:
                arguments = checked_arguments(tool, arguments)
            except ToolError as exc:
                raise ToolError(f"Error executing tool {name}: {exc}") from None
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {one_line(name, cause)}") from cause


def collect(
    tools: list[Tool], **options: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator like `MCPServer.tool(...)` that adds the tool to `tools` (for CheckedServer)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        tools.append(Tool.from_function(fn, **options))
        return fn

    return register
