"""The server: the SDK's MCPServer with knowl's tools, resources and prompts, named and
versioned as the package.

Every request answers as its user (`Session.answering_as`: over HTTP with tokens, the user the
request's token names, left in the request's ASGI scope by the gate). A prompt asked for
with a missing or empty argument, an argument that fails validation, or a name it does not
have is the protocol's invalid-params error, logged in one line (the SDK would answer code 0
and log a traceback)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
)
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
)
from pydantic import ValidationError
from pydantic.networks import AnyUrl

from knowl_build import __version__
from knowl_build.core.errors import KnowlError
from knowl_build.mcp_server import prompts, resources
from knowl_build.mcp_server.session import TOKEN_USER_KEY, Session
from knowl_build.mcp_server.text import one_line
from knowl_build.mcp_server.tools import read_tools, write_tools
from knowl_build.secrets.scanner import redact

NAME = "knowl-build"
_log = logging.getLogger(__name__)

INSTRUCTIONS = """\
This server answers from a team's knowledge base: Markdown pages about business metrics and
data, checked against a semantic layer. To answer a question, call get_context first: it gives
the best pages with citations, the live definitions of the metrics they use and the caveats.
Cite pages by path and line; always relay the caveats; say when a page is stale, needs review
or drifted. search_knowledge and read_knowledge_page go further; list_entities and
describe_entity look up the semantic layer. List tools page: pass next_cursor back as cursor."""


def token_user(request: Any) -> str | None:
    """The user the HTTP request's token names (the gate's scope key); None over stdio."""
    scope = getattr(request, "scope", None)
    user = scope.get(TOKEN_USER_KEY) if isinstance(scope, dict) else None
    return user if isinstance(user, str) else None


def _request_of(context: Context[Any, Any] | None) -> Any:
    if context is None:
        return None
    try:
        return context.request_context.request
    except ValueError:  # called in process, outside a request
        return None


def _invalid_params(what: str, message: str) -> MCPError:
    line = one_line(redact(message))
    _log.info("%s rejected: %s", what, line)
    return MCPError(code=INVALID_PARAMS, message=line)


def _fields(exc: ValidationError) -> str:
    # The rejected values are the caller's data: the fields and what is wrong, never them.
    problems = sorted({f"`{'.'.join(str(p) for p in e['loc'])}`: {e['msg']}" for e in exc.errors()})
    return "; ".join(problems)


class KnowlServer(MCPServer[Any]):
    def __init__(self, session: Session, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session

    @contextmanager
    def _answering(self, request: Any) -> Iterator[None]:
        with self.session.answering_as(token_user(request)):
            yield

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        # The SDK's message for arguments that fail validation quotes the values given: a
        # secret is replaced, a control character escaped.
        try:
            with self._answering(_request_of(context)):
                return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            raise type(exc)(one_line(redact(str(exc)))) from exc.__cause__

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        what = f"Prompt {one_line(redact(name))[:100]!r}"
        offered = {prompt.name: prompt for prompt in await self.list_prompts()}
        prompt = offered.get(name)
        if prompt is None:
            raise _invalid_params(what, f"no prompt {name!r}: {', '.join(sorted(offered))}")
        given = arguments or {}
        for argument in prompt.arguments or []:
            value = given.get(argument.name)
            if argument.required and (not isinstance(value, str) or not value.strip()):
                state = "missing" if value is None else "empty"
                raise _invalid_params(
                    what, f"prompt {name}: the argument `{argument.name}` is {state}"
                )
        try:
            with self._answering(_request_of(context)):
                return await super().get_prompt(name, arguments, context)
        except ValueError as exc:  # the SDK's wrappings of what the prompt raised
            cause: BaseException = exc
            while cause.__cause__ is not None and not isinstance(cause, ValidationError):
                cause = cause.__cause__
            if isinstance(cause, ValidationError):
                raise _invalid_params(what, f"prompt {name}: {_fields(cause)}") from None
            # A fault of knowl's: its type and redacted message, never its traceback.
            why = one_line(redact(str(cause)))
            _log.error("%s failed: %s: %s", what, type(cause).__name__, why)
            raise MCPError(code=INTERNAL_ERROR, message=f"prompt {name} failed") from None

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        # The SDK's error for a resource repeats the URI as given: in the message of an
        # unknown one, in the error's data and in its log line. A URI is the caller's text:
        # every field of the error, and the log line, carries it redacted (`shown_uri`).
        # Raised as the protocol error itself, which the SDK passes on without a word.
        try:
            with self._answering(_request_of(context)):
                return await super().read_resource(uri, context)
        except ResourceError as exc:
            raw, shown = str(uri), resources.shown_uri(str(uri))
            if isinstance(exc, UnexpectedResourceError):
                # A fault of knowl's: its type and redacted message, never its traceback.
                cause = exc.__cause__ or exc
                why = one_line(redact(str(cause).replace(raw, shown)))
                _log.error("Resource %r failed: %s: %s", shown, type(cause).__name__, why)
                message = f"Error reading resource {shown}"
            else:
                message = one_line(redact(str(exc).replace(raw, shown)))
                _log.info("Resource %r failed: %r", shown, message)
            code = INVALID_PARAMS if isinstance(exc, ResourceNotFoundError) else INTERNAL_ERROR
            raise MCPError(code=code, message=message, data={"uri": shown}) from None

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        # The pages the session's user may read, a page of the list at a time (the SDK's own
        # handler lists only resources registered one by one, and its public `list_resources`
        # takes no cursor). This overrides a private method: the SDK is pinned to its minor
        # version (pyproject.toml) and tests/test_mcp_sdk_override.py checks that the SDK
        # still calls it, with the same parameters, for `resources/list`. The SDK's public
        # alternative, a middleware, is provisional and would answer before `initialize`.
        cursor = params.cursor if params is not None else None
        try:
            # On a worker thread, as the SDK runs tools: the reader reads files.
            with self._answering(ctx.request):
                listed, following = await anyio.to_thread.run_sync(
                    resources.list_page_resources, self.session, cursor
                )
        except KnowlError as exc:
            raise MCPError(code=INVALID_PARAMS, message=one_line(str(exc))) from None
        return ListResourcesResult(resources=listed, next_cursor=following)


def build_server(session: Session) -> KnowlServer:
    tools = read_tools(session)
    if session.allow_writes:
        tools += write_tools(session)
    server = KnowlServer(
        session, name=NAME, version=__version__, instructions=INSTRUCTIONS, tools=tools
    )
    resources.register(server, session)
    prompts.register(server, session)
    return server
