"""The fixed-name tools that the MCP conformance suite's ``tools-call-*`` scenarios call.

Test fixtures only, never part of the package: ``conformance_server.py`` serves them beside the
operations' tools.
The names, contents and texts are the ones the suite's scenarios
(``@modelcontextprotocol/conformance``, pinned in ``node/package-lock.json``) check.
"""

from __future__ import annotations

import base64
import io
import wave
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import types
from mcp.server import ServerRequestContext

#: Handles a call of a fixture tool: ``(context, arguments) -> result``.
ToolHandler = Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class ExtraTool:
    """A tool served beside the operations' tools; not an operation."""

    tool: types.Tool
    handler: ToolHandler


#: A 1x1 PNG.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)


def _wav() -> str:
    """One sample of silence as a WAV file, base64."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80")
    return base64.b64encode(buffer.getvalue()).decode()


def _resource(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        resource=types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    )


def _constant(*blocks: types.ContentBlock, is_error: bool = False) -> ToolHandler:
    async def handler(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=list(blocks), is_error=is_error)

    return handler


async def _with_progress(
    ctx: ServerRequestContext[Any], args: dict[str, Any]
) -> types.CallToolResult:
    for progress in (0, 50, 100):  # a no-op when the request carried no progress token
        await ctx.session.report_progress(progress, 100)
        await anyio.sleep(0.05)
    return types.CallToolResult(content=[types.TextContent(text="done")])


HANDLERS: dict[str, ToolHandler] = {
    "test_simple_text": _constant(
        types.TextContent(text="This is a simple text response for testing.")
    ),
    "test_image_content": _constant(types.ImageContent(data=PNG, mime_type="image/png")),
    "test_audio_content": _constant(types.AudioContent(data=_wav(), mime_type="audio/wav")),
    "test_embedded_resource": _constant(
        _resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    ),
    "test_multiple_content_types": _constant(
        types.TextContent(text="Multiple content types test:"),
        types.ImageContent(data=PNG, mime_type="image/png"),
        _resource(
            "test://mixed-content-resource", "application/json", '{"test":"data","value":123}'
        ),
    ),
    "test_error_handling": _constant(
        types.TextContent(text="This tool intentionally returns an error for testing"),
        is_error=True,
    ),
    "test_tool_with_progress": _with_progress,
}


def fixture_tools() -> list[ExtraTool]:
    """The fixture tools, each taking no arguments."""
    return [
        ExtraTool(
            types.Tool(
                name=name,
                description=f"conformance suite fixture {name}",
                input_schema={"type": "object", "properties": {}},
            ),
            handler,
        )
        for name, handler in HANDLERS.items()
    ]
