"""The `text` finding format and every other terminal output: the one place rich's console
is used (search results that nothing styles are laid out by `plain`, without it).

Every string shown here passes through `printable` first (most through `_text` and `_append`):
file names, link targets and page text come from pull requests, and a raw ESC or
backspace could recolour, move the cursor or rewrite earlier lines of a developer's terminal.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from knowl_build.artifacts.schema import (
    MixedSearchAnswer,
    SearchAnswer,
    ShowAnswer,
    StaleRow,
    TraverseAnswer,
)
from knowl_build.core.diagnostics import Diagnostic, repo_path
from knowl_build.core.vocabulary import counted
from knowl_build.output import hits
from knowl_build.output.escapes import printable as printable
from knowl_build.output.hits import FRESH, about

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _text(value: object = "", style: str = "") -> Text:
    """One line of output, made printable."""
    return Text(printable(value), style=style)


def _append(line: Text, value: object, style: str = "") -> Text:
    line.append(printable(value), style=style)
    return line


def _when(stamp: object) -> str:
    """A time as knowl writes it (`2026-11-30T14:02:09Z`, or a date) shown with its zone:
    `2026-11-30 14:02 UTC`; anything else as it is."""
    text = str(stamp)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)  # knowl writes times in UTC
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _id_column(table: Table, header: str) -> None:
    """A column of ids (pages, scopes, codes): never split across lines; other columns wrap."""
    table.add_column(header, no_wrap=True)


def console(stream: TextIO | None = None) -> Console:
    # Colour only on a terminal; rich also honours NO_COLOR and FORCE_COLOR.
    return Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)


def _finding_lines(d: Diagnostic, prefix: str = "") -> tuple[str, str | None]:
    """A finding's line and its hint's line, printable."""
    path = repo_path(d.path, prefix)
    head = printable(f"{path}:{d.line}:{d.column}: {d.severity} {d.code} {d.message}")
    return head, printable(f"    hint: {d.hint}") if d.hint else None


def render(diagnostics: Sequence[Diagnostic], out: Console, prefix: str = "") -> None:
    """Findings as `path:line:col: severity CODE message`, each path given from `prefix` (the
    project's folder as seen from where the command runs, "" for project-relative)."""
    ordered = sorted(diagnostics)
    if not ordered:
        return
    if out.color_system is None:
        # Nothing to style (a pipe, a file, CI): the same characters without rich, which
        # spends ~50 us a line (1 s for the 25,000 findings a hostile page can draw).
        lines: list[str] = []
        for d in ordered:
            head, hint = _finding_lines(d, prefix)
            lines.append(head)
            if hint is not None:
                lines.append(hint)
        out.file.write("\n".join(lines) + "\n")
        return
    text = Text()  # one Text printed once: a print per line costs twice as much
    for n, d in enumerate(ordered):
        if n:
            text.append("\n")
        _append(text, f"{repo_path(d.path, prefix)}:{d.line}:{d.column}:", style="bold")
        text.append(" ")
        text.append(d.severity, style=_STYLE[d.severity])
        _append(text, f" {d.code} ", style="dim" if d.severity == "info" else "")
        _append(text, d.message)
        if d.hint:
            text.append("\n")
            _append(text, f"    hint: {d.hint}", style="dim")
    out.print(text)


def summary_line(counts: dict[str, int], pages: int, semantic_files: int) -> Text:
    text = _text(f"checked {pages} page(s) and {semantic_files} semantic file(s): ")
    parts = [
        (counts["error"], "error", "bold red"),
        (counts["warning"], "warning", "yellow"),
        (counts["info"], "info", "cyan"),
    ]
    for i, (count, label, style) in enumerate(parts):
        if i:
            _append(text, ", ")
        _append(
            text,
            f"{count} {label}" + ("s" if count != 1 and label != "info" else ""),
            style=style if count else "",
        )
    return text


def baseline_line(compared: dict[str, Any]) -> str:
    hidden = compared["hidden"]
    return printable(
        f"{hidden} known finding(s) hidden: they are in the project at {compared['ref']} "
        f"({str(compared['commit'])[:12]}); only new findings are reported"
    )


def rules_table(table_data: Any, out: Console) -> None:
    """The rule table (`app.checking.RuleTable`): each rule's default and configured severity,
    then the per-path severities."""
    table = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("code", "name", "default", "configured"):
        _id_column(table, column)
    table.add_column("summary", overflow="fold")
    for rule in table_data.rules:
        table.add_row(
            _text(rule.code),
            _text(rule.name),
            _text(rule.default),
            _text(rule.configured, style="bold" if rule.configured != rule.default else ""),
            _text(rule.summary),
        )
    out.print(table)
    if table_data.per_path:
        out.print()
        out.print(_text("per path ([rules.per-path], a later glob wins):", style="bold"))
        paths = Table(show_lines=False, box=None, pad_edge=False)
        for column in ("glob", "severities"):
            paths.add_column(column, overflow="fold")
        for glob, severities in table_data.per_path:
            paths.add_row(
                _text(glob), _text(", ".join(f"{c} = {v}" for c, v in severities.items()))
            )
        out.print(paths)
    out.print()
    out.print(
        _text(
            "Suppress findings inline: <!-- knowl: disable-next-line KB401 --> (the next line) "
            "or <!-- knowl: disable KB103 --> (to the end of the file); in frontmatter, "
            "# knowl: disable-next-line KB006 or # knowl: disable KB202 (the whole page). "
            "A suppression that hides nothing is KB011.",
            style="dim",
        )
    )


class _Stages:
    """A rich progress bar over the build's stages (or nothing, when disabled)."""

    def __init__(self, out: Console, enabled: bool, stages: Sequence[str]) -> None:
        self.out = out
        self.enabled = enabled
        self.stages = list(stages)
        self.progress: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[str], None] | None:
        if not self.enabled:
            return None
        # Imported only when a bar is drawn (start-up time of every other run).
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=self.out,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("knowl build", total=len(self.stages))
        names = self.stages

        def advance(stage: str) -> None:
            done = names.index(stage) if stage in names else 0
            self.progress.update(self.task, completed=done, description=f"knowl build: {stage}")
            self.progress.refresh()

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


def stage_progress(out: Console, enabled: bool, stages: Sequence[str]) -> _Stages:
    return _Stages(out, enabled, stages)


def build_summary(out: Console, result: Any, seconds: float) -> None:
    """One screen at the end of a build: what was built, what was found, how fresh it is."""
    c = result.counts
    status = {
        "published": "published",
        "no-op": "unchanged, nothing published (no-op)",
        "refused": "refused: error findings, nothing published (use --allow-errors)",
    }
    line = _text()
    _append(line, f"build {result.build_id}: ", style="bold")
    _append(line, status[result.status], style="red" if result.status == "refused" else "green")
    out.print(line)
    if result.folder is not None and result.status == "published":
        mode = "incremental" if result.incremental else "full"
        out.print(_text(f"  artifact: {result.folder} ({mode})"))
    out.print(
        _text(
            f"  {counted(c['pages'], 'page')}, {counted(c['entities'], 'entity', 'entities')}, "
            f"{counted(c['semantic_files'], 'semantic file')}"
        )
    )
    findings = summary_line(
        {"error": c["errors"], "warning": c["warnings"], "info": c["info"]}, 0, 0
    )
    out.print(_text("  findings: ") + findings[findings.plain.index(": ") + 2 :])
    out.print(
        _text(
            f"  freshness: {c['fresh']} fresh, {c['stale']} stale, {c['needs_review']} needs review"
        )
    )
    if result.pruned:
        out.print(_text(f"  pruned: {', '.join(result.pruned)}"))
    stages = ", ".join(f"{name} {secs:.2f}" for name, secs in result.timings.items())
    out.print(_text(f"  {seconds:.2f} s" + (f" ({stages})" if stages else "")))


def stale_table(rows: list[StaleRow], out: Console) -> None:
    if not rows:
        return
    table = Table(box=None, pad_edge=False)
    for column in ("page", "scope", "freshness"):
        _id_column(table, column)
    table.add_column("reasons", overflow="fold")
    for row in rows:
        reasons = "\n".join(printable(f"{r['code']}: {r['message']}") for r in row["reasons"])
        table.add_row(
            _text(row["page"]),
            _text(row["scope"]),
            _text(row["freshness"], style=FRESH.get(row["freshness"], "")),
            Text(reasons),  # each reason made printable above
        )
    out.print(table)


def search_results(answer: SearchAnswer | MixedSearchAnswer, out: Console) -> None:
    """The hits as a table (`hits.shown`: the cells plain output shows too)."""
    shown = hits.shown(answer)
    for note in shown.notes:
        out.print(_rich(note))
    if shown.rows:
        table = Table(box=None, pad_edge=False, show_edge=False)
        for column in hits.COLUMNS:
            if column.folds:
                table.add_column(column.header, overflow="fold")
            else:
                _id_column(table, column.header)
        for row in shown.rows:
            table.add_row(*(_rich(cell) for cell in row))
        out.print(table)
    for caveat in shown.caveats:
        out.print(_rich(caveat))


def _rich(cell: hits.Cell) -> Text:
    text = Text(style=cell.style)
    for value, style in cell.runs:
        text.append(value, style=style)
    return text


def _drift_change(drift: dict[str, Any]) -> str:
    """A drift record on one line: the definition before and after (the lines that differ
    follow when it spans lines), and the commits that changed it."""
    before, after = drift.get("bound_expr"), drift.get("live_expr")
    commits = drift.get("changes") or [c for c in [drift.get("changed_in")] if c]
    names = [str(c["commit"])[:12] if c.get("commit") else "working tree" for c in commits]
    where = f"changed in {', '.join(names)}" if names else ""
    if drift.get("diff"):
        return f"its definition {where or 'changed'}:"
    if after is None:  # an artifact of an earlier version: no definition kept
        what = "its definition changed"
    elif before is None:
        now = "; ".join(str(after).splitlines())
        what = f"written against a definition not found in history, now `{now}`"
    else:
        what = f"`{before}` -> `{after}`"
    return what + (f" ({where})" if where else "")


def show_page(page: ShowAnswer, out: Console) -> None:
    # rich.markdown takes 40 ms to import: loaded to show a page only (start-up time).
    from rich.markdown import Markdown

    heading, summary = about(page["title"], page["page_id"], page["summary"])
    head = _text(heading, style="bold")
    _append(head, f"  {page['page_id']} · {page['scope']} · {page['usage_mode']}", style="dim")
    out.print(head)
    if page["status"] != "active":
        note = _text(f"status: {page['status']}", style="bold red")
        if page["superseded_by"]:
            _append(note, f", superseded by {page['superseded_by']}")
        out.print(note)
    fresh = page["freshness"]
    state = _text(f"freshness: {fresh['value']}", style=FRESH.get(fresh["value"], ""))
    validated = page["meta"]["last_validated_at"]
    if validated:
        _append(state, f" (last validated {_when(validated)})", style="dim")
    out.print(state)
    for reason in fresh["reasons"]:
        out.print(_text(f"  {reason['code']}: {reason['message']}", style="dim"))
    for drift in page["drift"]:
        out.print(_text(f"  drift {drift['entity']}: {_drift_change(drift)}", style="red"))
        for line in (drift.get("diff") or "").splitlines():
            out.print(_text(f"    {line}", style="red"))
    if summary:
        out.print(_text(summary, style="italic"))
    out.print()
    body = printable(page["body"], block=True)
    out.print(Markdown(body) if out.is_terminal else Text(body))
    for caveat in page["caveats"]:
        out.print(_text(f"caveat {caveat['page']}: {caveat['summary']}", style="yellow"))
    if page["annotations"]:
        notes = ", ".join(f"{a['page']} ({a['scope']})" for a in page["annotations"])
        out.print(_text(f"your notes: {notes}", style="cyan"))
    if page["backlinks"]:
        links = ", ".join(f"{b['page']} ({b['kind']})" for b in page["backlinks"])
        out.print(_text(f"linked from: {links}", style="dim"))


def traversal(answer: TraverseAnswer, out: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("depth", "page", "scope"):
        _id_column(table, column)
    table.add_column("via", overflow="fold")
    for page in answer["pages"]:
        via = page["via"]
        how = (
            "seed"
            if via is None
            else f"{via['kind']} from {via['from']}"
            + (f" through {via['entity']}" if via.get("entity") else "")
        )
        table.add_row(
            _text(str(page["depth"])), _text(page["page"]), _text(page["scope"]), _text(how)
        )
    out.print(table)
    for entity in answer["entities"]:
        line = _text(f"{entity['entity']} ({entity['kind']})", style="bold")
        if entity["expr"]:
            _append(line, f" = {entity['expr']}")
        out.print(line)


def timeline(answer: dict[str, Any], out: Console) -> None:
    if not answer["versions"]:
        out.print(_text(f"{answer['page']} has no committed version yet", style="dim"))
    for version in answer["versions"]:
        head = _text(f"{version['commit'][:12]} ", style="bold yellow")
        _append(head, f"{_when(version['date'])}  {version['author']}  {version['subject']}")
        out.print(head)
        detail = f"  {version['path']}  status: {version['status']}"
        out.print(_text(detail, style="dim"))
        if version["summary"]:
            out.print(_text(f"  {version['summary']}", style="italic"))
        # Lines end at `\n` only (splitlines would also break at \x1c, \x85, ...): the rest of
        # each line is page text, shown as a block.
        lines = printable(version["diff"], block=True).split("\n")
        for line in lines[:-1] if lines[-1] == "" else lines:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            out.print(Text(f"  {line}", style=style))


def store_outcome(outcome: Any, out: Console) -> None:
    label = {"inserted": "stored", "duplicate": "no-op", "refused": "refused"}[outcome.action]
    line = _text(f"{label}: ", style="bold red" if outcome.action == "refused" else "bold green")
    _append(line, f"{outcome.page} ({outcome.path})" if outcome.path else str(outcome.page))
    if outcome.superseded:
        _append(line, f", supersedes {outcome.superseded}")
    out.print(line)
    for d in outcome.diagnostics:
        if d["severity"] == "error" or outcome.action == "refused":
            out.print(
                _text(
                    f"  {d['path']}:{d['line']}:{d['column']}: {d['severity']} {d['code']} {d['message']}"
                )
            )
    if outcome.message:
        out.print(_text(f"  {outcome.message}", style="dim" if outcome.action != "refused" else ""))


def new_outcome(outcome: Any, out: Console) -> None:
    """`knowl new`: the page written, or the refusal and its error findings; then every other
    finding on the new page, so the writer sees what to fill in."""
    refused = outcome.action == "refused"
    line = _text(
        "refused: " if refused else "created: ", style="bold red" if refused else "bold green"
    )
    _append(line, f"{outcome.page} ({outcome.path})")
    out.print(line)
    for d in outcome.diagnostics:
        out.print(
            _text(
                f"  {d['path']}:{d['line']}:{d['column']}: {d['severity']} {d['code']} {d['message']}"
            )
        )
    if outcome.message:
        out.print(_text(f"  {outcome.message}"))


def conflict_table(groups: list[dict[str, Any]], out: Console) -> None:
    if not groups:
        out.print(_text("no exclusive pages", style="dim"))
        return
    table = Table(box=None, pad_edge=False)
    _id_column(table, "key")
    table.add_column("scope", overflow="fold")
    _id_column(table, "pages")
    table.add_column("", no_wrap=True)
    for group in groups:
        scope = ", ".join(f"{k}={v}" for k, v in group["scope"].items())
        pages = "\n".join(  # one per line: a list of ids wraps between them only
            p["page"] if p["scope"] == "global" else f"{p['page']} ({p['scope']})"
            for p in group["pages"]
        )
        flag = (
            _text("violation", style="bold red")
            if group["violation"]
            else _text("ok", style="green")
        )
        table.add_row(_text(group["key"]), _text(scope), _text(pages), flag)
    out.print(table)
