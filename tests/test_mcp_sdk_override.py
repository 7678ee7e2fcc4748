"""The MCP server overrides one private handler of the SDK (`_handle_list_resources`, for the
paged list of the session's pages): the SDK is pinned to its minor version, and these tests
fail as soon as a release stops calling the override for `resources/list` or changes what it
passes. The paging itself is tested through a client (test_mcp_writes)."""

from __future__ import annotations

import inspect
from importlib.metadata import version
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp_types import ListResourcesResult, PaginatedRequestParams  # noqa: E402

from knowl_build.mcp_server.server import KnowlServer  # noqa: E402


def test_the_sdk_is_the_pinned_minor() -> None:
    major, minor = (int(part) for part in version("mcp").split(".")[:2])
    assert (major, minor) == (2, 3)


def test_the_sdk_routes_resources_list_to_the_override() -> None:
    server = KnowlServer(session=None, name="knowl-build")  # type: ignore[arg-type]
    entry = server._lowlevel_server.get_request_handler("resources/list")
    assert entry is not None
    assert entry.params_type is PaginatedRequestParams
    assert getattr(entry.handler, "__func__", None) is KnowlServer._handle_list_resources
    assert entry.handler.__self__ is server  # type: ignore[attr-defined]


def test_the_override_keeps_the_sdks_signature() -> None:
    def shape(function: Any) -> list[tuple[str, Any]]:
        signature = inspect.signature(function)
        return [(name, p.kind) for name, p in signature.parameters.items()]

    assert shape(KnowlServer._handle_list_resources) == shape(MCPServer._handle_list_resources)
    assert shape(KnowlServer._handle_list_resources) == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("params", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    ]
    hints = inspect.get_annotations(MCPServer._handle_list_resources, eval_str=True)
    assert hints["return"] is ListResourcesResult
