"""Two prompts a client offers its user:

- `answer-with-knowledge(question)`: the `get_context` answer for the question (as the
  session's user), with instructions to answer from it alone, citing `path:line`, giving the
  live definitions and relaying every caveat.
- `record-decision(title, decision, reasoning, alternatives?)`: how to store a decision
  through the governed write path (`store_knowledge`, category `decision`); on a read-only
  server, the `knowl store` command a person runs instead.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from knowl_build.app import reading
from knowl_build.artifacts.answers import ContextAnswer
from knowl_build.core.errors import KnowlError
from knowl_build.mcp_server.session import Session
from knowl_build.mcp_server.shapes import MAX_FIELD_CHARS, MAX_QUERY_CHARS, MAX_TEXT_CHARS
from knowl_build.mcp_server.text import one_line
from knowl_build.output.text import printable

_log = logging.getLogger(__name__)

Question = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The question to answer.")
]
Title = Annotated[
    str,
    Field(min_length=1, max_length=MAX_FIELD_CHARS, description="The subject of the decision."),
]
Decision = Annotated[
    str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What was decided.")
]
Reasoning = Annotated[
    str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="Why it was decided.")
]
Alternatives = Annotated[
    str,
    Field(
        max_length=MAX_TEXT_CHARS,
        description="The options considered and not taken, one per line (or separated by ;).",
    ),
]

ANSWER = """\
Answer the question below from the team's knowledge base, and only from it.

Question: {question}

Rules:
- Ground every statement in the context that follows (get_context, read as {who}). Cite each
  claim with its page and citation, e.g. [revenue-definition](knowledge/global/metrics/revenue-definition.md:19).
- Give the live definition (expression) of every measure or metric you rely on.
- Relay every caveat, in your own words, next to the claim it qualifies.
- Say so when a page is stale, needs review, or drifted (its bound definition changed since it
  was written); prefer a page over the pages it superseded.
- If the context does not answer the question, say so; read more with read_knowledge_page or
  search_knowledge rather than guess.
"""


def _context_text(answer: ContextAnswer) -> str:
    out = ["", "## Pages"]
    if not answer["pages"]:
        out.append("(no page matches the question)")
    for page in answer["pages"]:
        flags = [page["freshness"], *(["drifted"] if page["drift_flag"] else [])]
        if page["status"] != "active":
            flags.append(page["status"])
        out.append(f"- {page['page']} ({page['scope']}): {page['title']} [{', '.join(flags)}]")
        if page["summary"]:
            out.append(f"  summary: {page['summary']}")
        cite = page["citation"]
        if cite is not None:
            out.append(f"  cite: {cite['path']}:{cite['line']}: {cite['text']}")
    if answer["entities"]:
        out += ["", "## Definitions (live)"]
    for entity in answer["entities"]:
        if not entity["live"]:
            out.append(f"- {entity['entity']}: not in the semantic layer any more")
            continue
        about = entity["expression"] or entity["description"]
        drifted = sorted({use["page"] for use in entity["used_by"] if use["drifted"]})
        line = f"- {entity['entity']} ({entity['kind']})" + (f": {about}" if about else "")
        if drifted:
            line += f" (drifted since written for: {', '.join(drifted)})"
        out.append(line)
    if answer["caveats"]:
        out += ["", "## Caveats (relay these)"]
    for caveat in answer["caveats"]:
        about = ", ".join(caveat["triggered_by"])
        out.append(f"- {caveat['page']}: {caveat['summary']} (about {about})")
    if answer["superseded"]:
        out += ["", "## Superseded (do not rely on these)"]
    for old in answer["superseded"]:
        out.append(f"- {old['page']}: replaced by {old['superseded_by']}")
    return "\n".join(printable(line) for line in out)


def _alternatives(text: str) -> list[str]:
    return [item.strip() for item in re.split(r"[\n;]", text) if item.strip()]


def register(server: MCPServer[Any], session: Session) -> None:
    @server.prompt(
        name="answer-with-knowledge",
        title="Answer with knowledge",
        description="Answer a question from the knowledge base: the get_context answer "
        "(pages with citations, live definitions, caveats) and how to use it.",
    )
    def answer_with_knowledge(question: Question) -> str:
        with session.lock:
            try:
                who = session.user
                options = reading.SearchOptions(user=who)
                answer = reading.context(session.readers.get(), question, options)
            except KnowlError as exc:
                message = one_line(str(exc))
                _log.info("Prompt 'answer-with-knowledge' rejected: %s", message)
                raise MCPError(code=INVALID_PARAMS, message=message) from None
        who = who or "anonymous"
        head = ANSWER.format(question=printable(question), who=printable(who))
        return head + _context_text(answer)

    @server.prompt(
        name="record-decision",
        title="Record a decision",
        description="Store a decision through the governed write path: store_knowledge with "
        "category decision, the reasoning and the alternatives considered.",
    )
    def record_decision(
        title: Title, decision: Decision, reasoning: Reasoning, alternatives: Alternatives = ""
    ) -> str:
        arguments: dict[str, Any] = {
            "category": "decision",
            "title": title,
            "content": decision,
            "reasoning": reasoning,
            "alternatives": _alternatives(alternatives),
        }
        if not session.allow_writes:
            command = ["knowl", "store", "--category", "decision", "--title", title]
            command += ["--content", decision, "--reasoning", reasoning]
            for item in arguments["alternatives"]:
                command += ["--alternative", item]
            return (
                "Record this decision in the team's knowledge base. This server is read-only "
                "(started without --allow-writes): show the user this command to run in the "
                "project, and explain that the page goes through the same checks and review "
                "as any change:\n\n" + shlex.join(command)
            )
        return (
            "Record this decision in the team's knowledge base through the governed write "
            "path.\n\n"
            "1. Call search_knowledge with the title and category decision (status all) to "
            "find a decision on the same subject. If this decision replaces one, add its id "
            "as `supersedes`; if one already says the same, stop and tell the user.\n"
            "2. Call store_knowledge with these arguments (add sl_refs for the semantic "
            "entities the decision is about, and tags):\n\n"
            f"```json\n{json.dumps(arguments, ensure_ascii=False, indent=2)}\n```\n\n"
            "3. Tell the user the outcome: `action` (inserted, duplicate or refused), the page "
            "and its path, its `status` (a draft waits for a person's review with knowl "
            "review) and whether `build` made it searchable. When refused, relay the "
            "diagnostics and do not retry with the offending text (a secret, say)."
        )
