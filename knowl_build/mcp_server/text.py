"""The short text each tool answers with beside its structured content: a few lines a person
reads in a client's tool log, never the JSON again. Every value passes through `printable`
(control characters escaped): page text comes from pull requests."""

from __future__ import annotations

from collections.abc import Iterable

from knowl_build.artifacts.answers import (
    ContextAnswer,
    EntityDescription,
    EntityList,
    StaleList,
)
from knowl_build.artifacts.schema import MixedSearchAnswer, SearchAnswer, ShowAnswer, TraverseAnswer
from knowl_build.core.vocabulary import counted
from knowl_build.mcp_server.shapes import StoreAnswer, SupersedeAnswer, TimelineAnswer
from knowl_build.output.text import printable
from knowl_build.secrets.scanner import redact

SHOWN = 5  # items named in a line; the structured content has them all
TITLE_CHARS = 80


def one_line(message: str) -> str:
    """An error message as one printable line: pydantic's validation errors span several
    lines and end with a link to its documentation, which helps no client."""
    lines = [line.strip() for line in message.splitlines()]
    kept = [line for line in lines if line and not line.startswith("For further information")]
    return printable("; ".join(kept))


def _short(value: object, limit: int = TITLE_CHARS) -> str:
    text = printable(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _names(items: Iterable[str], total: int | None = None) -> str:
    listed = list(items)
    total = len(listed) if total is None else total
    shown = ", ".join(_short(item, 60) for item in listed[:SHOWN])
    more = total - min(len(listed), SHOWN)
    return shown + (f" and {more} more" if more > 0 else "")


def _flags(freshness: str, drift: bool, status: str | None = None) -> str:
    flags = [printable(freshness)]
    if drift:
        flags.append("drifted")
    if status is not None and status != "active":
        flags.append(printable(status))
    return ", ".join(flags)


def _more(next_cursor: str | None) -> list[str]:
    return ["More: call again with cursor = next_cursor."] if next_cursor else []


def search(answer: SearchAnswer | MixedSearchAnswer) -> str:
    hits = answer["hits"]
    lines = [f"{len(hits)} hit(s) for {_short(answer['query'])!r}."]
    for hit in hits[:SHOWN]:
        if hit["kind"] == "entity":
            about = f": {_short(hit['description'], 200)}" if hit["description"] else ""
            lines.append(
                f"- entity {_short(hit['entity'], 100)} ({_short(hit['entity_kind'], 40)}){about}"
            )
            continue
        flags = _flags(hit["freshness"], hit["drift_flag"], hit["status"])
        lines.append(f"- {_short(hit['page'], 60)}: {_short(hit['title'])} ({flags})")
        snippet, section = hit.get("snippet"), hit.get("section")
        if snippet:
            where = f"{_short(section['heading'], 60)}, " if section else ""
            lines.append(f"  ({where}line {snippet['line']}) {_short(snippet['text'], 200)}")
    if answer["caveats"]:
        lines.append("Caveats to relay: " + _names(c["page"] for c in answer["caveats"]))
    for term, near in answer.get("suggestions", {}).items():
        lines.append(f"Did you mean ({_short(term)}): " + _names(near))
    return "\n".join(lines)


def show(answer: ShowAnswer) -> str:
    flags = _flags(answer["freshness"].get("value", ""), answer["meta"]["drift_flag"])
    lines = [
        f"{_short(answer['title'])} ({answer['scope']}:{_short(answer['page_id'], 60)}, "
        f"{printable(answer['status'])}, {flags})",
    ]
    if answer["summary"]:
        lines.append(_short(answer["summary"], 200))
    if answer["superseded_by"]:
        lines.append(f"Superseded by {_short(answer['superseded_by'], 60)}.")
    if answer["caveats"]:
        lines.append("Caveats to relay: " + _names(c["page"] for c in answer["caveats"]))
    return "\n".join(lines)


def traverse(answer: TraverseAnswer) -> str:
    text = (
        f"{len(answer['pages'])} page(s) and "
        f"{counted(len(answer['entities']), 'entity', 'entities')} reached "
        f"from {_names(answer['seeds'])}."
    )
    if answer["truncated"]:
        text += f" Stopped at max_nodes={answer['max_nodes']}: more pages are within reach."
    return text


def stale(answer: StaleList) -> str:
    pages = answer["pages"]
    if not answer["total"]:
        return "No page is stale or needs review."
    lines = [f"{answer['total']} page(s) are not fresh; this answer holds {len(pages)}:"]
    lines += [f"- {_short(p['page'], 60)} ({printable(p['freshness'])})" for p in pages[:SHOWN]]
    return "\n".join(lines + _more(answer["next_cursor"]))


def timeline(answer: TimelineAnswer) -> str:
    versions = answer["versions"]
    if not versions:
        return f"No committed version of {_short(answer['page'], 60)}."
    newest = versions[0]
    return (
        f"{len(versions)} version(s) of {_short(answer['page'], 60)}; newest "
        f"{printable(newest['date'])}: {_short(newest['subject'])}"
    )


def context(answer: ContextAnswer) -> str:
    pages = answer["pages"]
    lines = [
        f"{len(pages)} page(s), {len(answer['entities'])} definition(s) and "
        f"{len(answer['caveats'])} caveat(s) for {_short(answer['question'])!r}."
    ]
    for page in pages[:SHOWN]:
        cite = page["citation"]
        where = f" at {printable(cite['path'])}:{cite['line']}" if cite else ""
        flags = _flags(page["freshness"], page["drift_flag"], page["status"])
        lines.append(f"- {_short(page['page'], 60)}: {_short(page['title'])}{where} ({flags})")
    if answer["caveats"]:
        lines.append("Caveats to relay: " + _names(c["page"] for c in answer["caveats"]))
    if answer["superseded"]:
        lines.append("Replaces: " + _names(p["page"] for p in answer["superseded"]))
    return "\n".join(lines)


def entities(answer: EntityList) -> str:
    rows = answer["entities"]
    text = f"{counted(answer['total'], 'entity', 'entities')} match; this answer holds {len(rows)}"
    text += (": " + _names(r["entity"] for r in rows)) if rows else "."
    return "\n".join([text, *_more(answer["next_cursor"])])


def entity(answer: EntityDescription) -> str:
    about = answer["expression"] or answer["description"] or ""
    used = sum(len(pages) for pages in answer["pages"].values())
    lines = [f"{printable(answer['entity'])} ({printable(answer['kind'])})"]
    if about:
        lines.append(_short(about, 200))
    lines.append(f"Fingerprint {printable(answer['fingerprint'])}; {used} page(s) use it.")
    caveats = answer["pages"].get("caveat", [])
    if caveats:
        lines.append("Caveats to relay: " + _names(p["page"] for p in caveats))
    return "\n".join(lines)


def _build(answer: StoreAnswer | SupersedeAnswer) -> str:
    """The build after a write: an agent told "not searchable yet" must not write again."""
    build = answer["build"]
    if build is None:
        return ""
    if answer["rebuilt"]:
        return " Rebuilt: searchable now."
    reason = build["reason"]
    why = f": {printable(reason)}" if reason else ""
    return f" Not searchable yet{why}. The write stands; do not repeat it."


def _commit(answer: StoreAnswer | SupersedeAnswer) -> str:
    """A commit git refused after the write: the write stands all the same."""
    commit = answer["commit"]
    if commit is None or commit["status"] != "failed":
        return ""
    return f" Not committed: {printable(commit['reason'] or 'no reason given')}."


def store(answer: StoreAnswer) -> str:
    action = answer["action"]
    if action == "refused":
        found = len(answer["diagnostics"])
        return f"Refused: nothing was written ({found} finding(s) in diagnostics)."
    page = _short(answer["page"] or "", 60)
    if action == "duplicate":
        return f"Already known as {page}; nothing was written."
    text = f"Stored {page} at {printable(answer['path'] or '')} ({printable(answer['status'])})."
    if answer["superseded"]:
        text += f" It supersedes {_short(answer['superseded'], 60)}."
    if answer["overlapping"]:
        text += f" It overlaps {_short(answer['overlapping'], 60)}."
    return text + _commit(answer) + _build(answer)


def refused_call(answer: StoreAnswer, why: str = "") -> str:
    """A refused store (a tool error): what is wrong with it, its error findings' messages,
    else `why` (the page to supersede is frozen, the tree changed under the write)."""
    errors = [printable(d["message"]) for d in answer["diagnostics"] if d["severity"] == "error"]
    reasons = errors or ([redact(why)] if why else [])
    if not reasons:
        return "Refused: nothing was written."
    return one_line(f"Refused: nothing was written: {'; '.join(reasons)}.")


def supersede(answer: SupersedeAnswer) -> str:
    text = (
        f"{_short(answer['superseded'], 60)} is superseded by "
        f"{_short(answer['superseded_by'], 60)} ({len(answer['paths'])} file(s) changed)."
    )
    return text + _commit(answer) + _build(answer)
