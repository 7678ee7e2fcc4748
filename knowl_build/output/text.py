"""The `text` finding format and every other terminal output: the one place rich is used."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

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
