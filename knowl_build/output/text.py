"""The `text` finding format and every other terminal output: the one place rich is used."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic
from knowl_build.rules.registry import RULES

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def console(stream: TextIO | None = None) -> Console:
    # Colour only on a terminal; rich also honours NO_COLOR and FORCE_COLOR.
    return Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)


def render(diagnostics: Sequence[Diagnostic], out: Console) -> None:
    for d in sorted(diagnostics):
        line = Text()
        line.append(f"{d.path}:{d.line}:{d.column}:", style="bold")
        line.append(" ")
        line.append(d.severity, style=_STYLE[d.severity])
        line.append(f" {d.code} ", style="dim" if d.severity == "info" else "")
        line.append(d.message)
        out.print(line)
        if d.hint:
            out.print(Text(f"    hint: {d.hint}", style="dim"))


def summary_line(counts: dict[str, int], pages: int, semantic_files: int) -> Text:
    text = Text(f"checked {pages} page(s) and {semantic_files} semantic file(s): ")
    parts = [
        (counts["error"], "error", "bold red"),
        (counts["warning"], "warning", "yellow"),
        (counts["info"], "info", "cyan"),
    ]
    for i, (count, label, style) in enumerate(parts):
        if i:
            text.append(", ")
        text.append(
            f"{count} {label}" + ("s" if count != 1 and label != "info" else ""),
            style=style if count else "",
        )
    return text


def baseline_line(compared: dict[str, Any]) -> str:
    hidden = compared["hidden"]
    return (
        f"{hidden} known finding(s) hidden: they are in the project at {compared['ref']} "
        f"({str(compared['commit'])[:12]}); only new findings are reported"
    )


def rules_table(config: Config, out: Console) -> None:
    table = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("code", "name", "default", "configured", "summary"):
        table.add_column(column, overflow="fold")
    for rule in RULES:
        configured = config.severity(rule.code)
        table.add_row(
            Text(rule.code),
            Text(rule.name),
            Text(rule.default),
            Text(configured, style="bold" if configured != rule.default else ""),
            Text(rule.summary),
        )
    out.print(table)
    if config.per_path:
        out.print()
        out.print(Text("per path ([rules.per-path], a later glob wins):", style="bold"))
        paths = Table(show_lines=False, box=None, pad_edge=False)
        for column in ("glob", "severities"):
            paths.add_column(column, overflow="fold")
        for glob, severities in config.per_path:
            paths.add_row(Text(glob), Text(", ".join(f"{c} = {v}" for c, v in severities.items())))
        out.print(paths)
    out.print()
    out.print(
        Text(
            "Suppress findings inline: <!-- knowl: disable-next-line KB401 --> (the next line) "
            "or <!-- knowl: disable KB103 --> (to the end of the file); in frontmatter, "
            "# knowl: disable-next-line KB006 or # knowl: disable KB202 (the whole page). "
            "A suppression that hides nothing is KB011.",
            style="dim",
        )
    )


class _Stages:
    """A rich progress bar over the build's stages (or nothing, when disabled)."""

    def __init__(self, out: Console, enabled: bool) -> None:
        self.out = out
        self.enabled = enabled
        self.progress: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[str], None] | None:
        if not self.enabled:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from knowl_build.build import STAGES

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=self.out,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("knowl build", total=len(STAGES))
        names = list(STAGES)

        def advance(stage: str) -> None:
            done = names.index(stage) if stage in names else 0
            self.progress.update(self.task, completed=done, description=f"knowl build: {stage}")
            self.progress.refresh()

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


def stage_progress(out: Console, enabled: bool) -> _Stages:
    return _Stages(out, enabled)


def build_summary(out: Console, result: Any, seconds: float) -> None:
    """One screen at the end of a build: what was built, what was found, how fresh it is."""
    c = result.counts
    status = {
        "published": "published",
        "no-op": "unchanged, nothing published (no-op)",
        "refused": "refused: error findings, nothing published (use --allow-errors)",
    }
    line = Text()
    line.append(f"build {result.build_id}: ", style="bold")
    line.append(status[result.status], style="red" if result.status == "refused" else "green")
    out.print(line)
    if result.folder is not None and result.status == "published":
        mode = "incremental" if result.incremental else "full"
        out.print(Text(f"  artifact: {result.folder} ({mode})"))
    out.print(
        Text(
            f"  {c['pages']} pages, {c['entities']} entities, {c['semantic_files']} semantic files"
        )
    )
    findings = summary_line(
        {"error": c["errors"], "warning": c["warnings"], "info": c["info"]}, 0, 0
    )
    out.print(Text("  findings: ") + findings[findings.plain.index(": ") + 2 :])
    out.print(
        Text(
            f"  freshness: {c['fresh']} fresh, {c['stale']} stale, {c['needs_review']} needs review"
        )
    )
    if result.pruned:
        out.print(Text(f"  pruned: {', '.join(result.pruned)}"))
    stages = ", ".join(f"{name} {secs:.2f}" for name, secs in result.timings.items())
    out.print(Text(f"  {seconds:.2f} s" + (f" ({stages})" if stages else "")))


def stale_table(rows: list[dict[str, Any]], out: Console) -> None:
    if not rows:
        return
    table = Table(box=None, pad_edge=False)
    for column in ("page", "scope", "freshness", "reasons"):
        table.add_column(column, overflow="fold")
    for row in rows:
        reasons = "\n".join(f"{r['code']}: {r['message']}" for r in row["reasons"])
        table.add_row(
            Text(row["page"]),
            Text(row["scope"]),
            Text(row["freshness"], style=_FRESH.get(row["freshness"], "")),
            Text(reasons),
        )
    out.print(table)


_FRESH = {"needs_review": "bold red", "stale": "yellow", "fresh": "green"}


def _strength(score: float, best: float) -> Text:
    share = score / best if best > 0 else 0.0
    filled = max(1, round(share * 10))
    return Text("█" * filled + "·" * (10 - filled), style="green")


def search_results(answer: dict[str, Any], out: Console) -> None:
    hits = answer["hits"]
    if not hits:
        out.print(Text(f"no hits for '{answer['query']}'", style="dim"))
    else:
        table = Table(box=None, pad_edge=False, show_edge=False)
        for column in ("#", "page", "title / summary", "match", "freshness"):
            table.add_column(column, overflow="fold")
        best = max(h["score"] for h in hits)
        for n, hit in enumerate(hits, 1):
            where = hit["page"] if hit["scope"] == "global" else f"{hit['page']} ({hit['scope']})"
            if len(answer.get("repos", [])) > 1 or hit["repo"] != hits[0]["repo"]:
                where = f"{hit['repo']}: {where}"
            about = Text()
            about.append(hit["title"], style="bold")
            if hit["summary"]:
                about.append("\n" + hit["summary"], style="")
            for note in hit["annotations"]:
                about.append(f"\n+ your note: {note['page']} ({note['scope']})", style="cyan")
            fresh = Text(hit["freshness"], style=_FRESH.get(hit["freshness"], ""))
            if hit["drift_flag"]:
                fresh.append(" drift", style="bold red")
            table.add_row(Text(str(n)), Text(where), about, _strength(hit["score"], best), fresh)
        out.print(table)
    for caveat in answer["caveats"]:
        line = Text("caveat ", style="bold yellow")
        line.append(f"{caveat['page']}: {caveat['summary']}")
        line.append(f" (about {', '.join(caveat['triggered_by'])})", style="dim")
        out.print(line)


def show_page(page: dict[str, Any], out: Console) -> None:
    from rich.markdown import Markdown

    head = Text(page["title"], style="bold")
    head.append(f"  {page['page_id']} · {page['scope']} · {page['usage_mode']}", style="dim")
    out.print(head)
    if page["status"] != "active":
        note = Text(f"status: {page['status']}", style="bold red")
        if page["superseded_by"]:
            note.append(f", superseded by {page['superseded_by']}")
        out.print(note)
    fresh = page["freshness"]
    out.print(Text(f"freshness: {fresh['value']}", style=_FRESH.get(fresh["value"], "")))
    for reason in fresh["reasons"]:
        out.print(Text(f"  {reason['code']}: {reason['message']}", style="dim"))
    for drift in page["drift"]:
        changed = drift.get("changed_in") or {}
        where = changed.get("commit") or ("working tree" if changed.get("working_tree") else "?")
        out.print(
            Text(
                f"  drift {drift['entity']}: {drift.get('bound_expr')} -> "
                f"{drift.get('live_expr')} (changed in {str(where)[:12]})",
                style="red",
            )
        )
    if page["summary"]:
        out.print(Text(page["summary"], style="italic"))
    out.print()
    out.print(Markdown(page["body"]) if out.is_terminal else Text(page["body"]))
    for caveat in page["caveats"]:
        out.print(Text(f"caveat {caveat['page']}: {caveat['summary']}", style="yellow"))
    if page["annotations"]:
        notes = ", ".join(f"{a['page']} ({a['scope']})" for a in page["annotations"])
        out.print(Text(f"your notes: {notes}", style="cyan"))
    if page["backlinks"]:
        links = ", ".join(f"{b['page']} ({b['kind']})" for b in page["backlinks"])
        out.print(Text(f"linked from: {links}", style="dim"))


def traversal(answer: dict[str, Any], out: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("depth", "page", "scope", "via"):
        table.add_column(column)
    for page in answer["pages"]:
        via = page["via"]
        how = (
            "seed"
            if via is None
            else f"{via['kind']} from {via['from']}"
            + (f" through {via['entity']}" if via.get("entity") else "")
        )
        table.add_row(Text(str(page["depth"])), Text(page["page"]), Text(page["scope"]), Text(how))
    out.print(table)
    for entity in answer["entities"]:
        line = Text(f"{entity['entity']} ({entity['kind']})", style="bold")
        if entity["expr"]:
            line.append(f" = {entity['expr']}")
        out.print(line)


def timeline(answer: dict[str, Any], out: Console) -> None:
    if not answer["versions"]:
        out.print(Text(f"{answer['page']} has no committed version yet", style="dim"))
    for version in answer["versions"]:
        head = Text(f"{version['commit'][:12]} ", style="bold yellow")
        head.append(f"{version['date']}  {version['author']}  {version['subject']}")
        out.print(head)
        detail = f"  {version['path']}  status: {version['status']}"
        out.print(Text(detail, style="dim"))
        if version["summary"]:
            out.print(Text(f"  {version['summary']}", style="italic"))
        for line in version["diff"].splitlines():
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            out.print(Text(f"  {line}", style=style))


def store_outcome(outcome: Any, out: Console) -> None:
    label = {"inserted": "stored", "duplicate": "no-op", "refused": "refused"}[outcome.action]
    line = Text(f"{label}: ", style="bold red" if outcome.action == "refused" else "bold green")
    line.append(f"{outcome.page} ({outcome.path})" if outcome.path else str(outcome.page))
    if outcome.superseded:
        line.append(f", supersedes {outcome.superseded}")
    out.print(line)
    for d in outcome.diagnostics:
        if d["severity"] == "error" or outcome.action == "refused":
            out.print(
                Text(
                    f"  {d['path']}:{d['line']}:{d['column']}: {d['severity']} {d['code']} {d['message']}"
                )
            )
    if outcome.message:
        out.print(Text(f"  {outcome.message}", style="dim" if outcome.action != "refused" else ""))
    if outcome.commit:
        out.print(Text(f"  committed {outcome.commit[:12]}", style="dim"))


def conflict_table(groups: list[dict[str, Any]], out: Console) -> None:
    if not groups:
        out.print(Text("no exclusive pages", style="dim"))
        return
    table = Table(box=None, pad_edge=False)
    for column in ("key", "scope", "pages", ""):
        table.add_column(column, overflow="fold")
    for group in groups:
        scope = ", ".join(f"{k}={v}" for k, v in group["scope"].items())
        pages = ", ".join(
            p["page"] if p["scope"] == "global" else f"{p['page']} ({p['scope']})"
            for p in group["pages"]
        )
        flag = (
            Text("violation", style="bold red") if group["violation"] else Text("ok", style="green")
        )
        table.add_row(Text(group["key"]), Text(scope), Text(pages), flag)
    out.print(table)
