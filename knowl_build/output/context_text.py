"""`knowl context` as text: the pages with the line each is cited by, the definitions they
rest on, the caveats and the pages the hits replace. Every string passes `printable`."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from knowl_build.artifacts.answers import ContextAnswer, ContextEntity, ContextPage
from knowl_build.output.text import printable


def _line(*parts: tuple[object, str]) -> Text:
    line = Text()
    for value, style in parts:
        line.append(printable(value), style=style)
    return line


def context_answer(answer: ContextAnswer, out: Console) -> None:
    if not answer["pages"]:
        out.print(_line((f"no pages for '{answer['question']}'", "dim")))
        return
    out.print(_line(("Pages", "bold")))
    for n, page in enumerate(answer["pages"], 1):
        _page(n, page, out)
    if answer["entities"]:
        out.print(_line(("Definitions", "bold")))
        for entity in answer["entities"]:
            _entity(entity, out)
    for caveat in answer["caveats"]:
        about = ", ".join(caveat["triggered_by"])
        out.print(
            _line(
                ("caveat ", "bold yellow"),
                (f"{caveat['page']}: {caveat['summary']}", ""),
                (f" (about {about})", "dim"),
            )
        )
    for old in answer["superseded"]:
        out.print(
            _line(
                ("replaces ", "dim"),
                (f"{old['page']}: {old['summary']}", ""),
                (f" (superseded by {old['superseded_by']})", "dim"),
            )
        )


def _page(n: int, page: ContextPage, out: Console) -> None:
    fresh = page["freshness"] + (", drift" if page["drift_flag"] else "")
    where = page["page"] if page["scope"] == "global" else f"{page['page']} ({page['scope']})"
    out.print(_line((f"{n}. ", ""), (page["title"], "bold"), (f"  {where} · {fresh}", "dim")))
    if page["summary"] and page["summary"] != page["title"]:
        out.print(_line(("   ", ""), (page["summary"], "")))
    citation = page["citation"]
    if citation is not None:
        out.print(
            _line(
                (f"   {citation['path']}:{citation['line']}: ", "cyan"),
                (citation["text"], "italic"),
            )
        )


def _entity(entity: ContextEntity, out: Console) -> None:
    if not entity["live"]:
        out.print(_line((entity["entity"], "bold"), (" is not in the semantic layer", "red")))
        return
    what = entity["expression"] or entity["description"] or ""
    out.print(_line((entity["entity"], "bold"), (f" ({entity['kind']})", "dim"), (f"  {what}", "")))
    if entity["expression"] and entity["description"]:
        out.print(_line(("   ", ""), (entity["description"], "")))
    drifted = [use["page"] for use in entity["used_by"] if use["drifted"]]
    if drifted:
        out.print(_line(("   drifted since written: ", "bold red"), (", ".join(drifted), "red")))
