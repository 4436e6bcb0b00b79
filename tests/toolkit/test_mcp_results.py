"""How an MCP server's answer becomes a tool result: every content kind, and the bounds on what is kept.

The answers are the SDK's own result values, built here as a server's would arrive; the HTTP and
stdio tests (test_mcp.py) see the same mapping through real servers.
"""

from __future__ import annotations

import base64

import mcp_types as t
import pytest
from agent_core_plugins import mcp_results
from agent_core_plugins.mcp_results import result_of


def _answer(*blocks: object, structured: dict[str, object] | None = None, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=list(blocks), structured_content=structured, is_error=error)


def test_text_resources_audio_and_links_each_land_where_the_model_or_the_metadata_reads_them() -> None:
    wav = base64.b64encode(b"RIFF" + b"\0" * 60).decode()
    got = result_of("srv", "tool", _answer(
        t.TextContent(type="text", text="first"),
        t.EmbeddedResource(type="resource", resource=t.TextResourceContents(uri="file:///a.txt", text="inside",
                                                                             mime_type="text/plain")),
        t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(uri="file:///b.bin", blob=wav)),
        t.AudioContent(type="audio", data=wav, mime_type="audio/wav"),
        t.ResourceLink(type="resource_link", uri="https://example.com/doc", name="doc"),
    ))
    assert got["success"] is True
    lines = got["result"].splitlines()
    assert lines[:2] == ["first", "inside"]
    assert "[resource of unknown type, 64 bytes, kept in the message metadata]" in lines
    assert "[audio audio/wav, 64 bytes, kept in the message metadata]" in lines
    assert "[resource https://example.com/doc]" in lines
    kinds = [(a["type"], a.get("uri")) for a in got["metadata"]["mcp"]["attachments"]]
    assert kinds == [("resource", "file:///a.txt"), ("resource", "file:///b.bin"), ("audio", None),
                     ("resource_link", "https://example.com/doc")]


def test_is_error_is_an_error_result_and_structured_content_alone_is_shown_as_json() -> None:
    failed = result_of("srv", "tool", _answer(t.TextContent(type="text", text="no such city"), error=True))
    assert failed["success"] is False and failed["error"] == "no such city" and "result" not in failed
    silent = result_of("srv", "tool", _answer(error=True))
    assert "reported an error without a message" in silent["error"]
    data = result_of("srv", "tool", _answer(structured={"temp": 21}))
    assert data["result"] == '{"temp": 21}' and data["structured"] == {"temp": 21}


def test_what_a_server_sends_is_bounded_before_the_session_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_results, "MAX_ATTACHMENT_CHARS", 100)
    monkeypatch.setattr(mcp_results, "MAX_ATTACHMENTS", 2)
    monkeypatch.setattr(mcp_results, "MAX_TEXT_CHARS", 1000)
    small = base64.b64encode(b"x" * 30).decode()
    big = base64.b64encode(b"x" * 300).decode()
    got = result_of("srv", "tool", _answer(
        t.ImageContent(type="image", data=big, mime_type="image/png"),
        *[t.ImageContent(type="image", data=small, mime_type="image/png") for _ in range(3)],
        t.TextContent(type="text", text="y" * 5000), structured={"blob": "z" * 5000},
    ))
    first, second = got["metadata"]["mcp"]["attachments"]
    assert "data" not in first and "over the limit" in first["omitted"] and second["data"] == small
    assert got["result"].count("more than 2 attachments") == 2
    assert "structured" not in got and "structured content of" in got["result"]
    assert len(got["result"]) < 1200 and "[cut: the server sent" in got["result"]
