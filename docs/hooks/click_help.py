"""MkDocs hook: click's help conventions, turned into Markdown on the commands page.

mkdocs-click copies each command's help text into the page as Markdown, but click's help is
plain text: `<out_dir>` would be read as an HTML tag and vanish, and the indented lines of an
"Examples:" block (a `\b` paragraph, which click prints unwrapped) would run together into one
paragraph. A Markdown preprocessor that runs right after mkdocs-click's (priority 141) turns
each command's description into what `--help` shows: text escaped, examples as code.
"""

from __future__ import annotations

import html
import re
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

# The headings mkdocs-click writes with attr_list on: `### knowl check { #knowl-check ... }`.
COMMAND_HEADING = re.compile(r"^#{1,6} knowl\b.*\{ #knowl[-\w]* data-toc-label='[^']*' \}$")
USAGE = "**Usage:**"
INDENT = "  "


def describe(lines: list[str]) -> list[str]:
    """A command's help text as Markdown: runs of indented lines become a fenced block."""
    out: list[str] = []
    block: list[str] = []
    for line in [*lines, ""]:
        if line.startswith(INDENT) and line.strip():
            block.append(line[len(INDENT) :])
            continue
        if block:
            out += ["", "```text", *block, "```", ""]
            block = []
        out.append(html.escape(line, quote=False))
    return out[:-1]


class ClickHelp(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(lines):
            out.append(lines[i])
            if COMMAND_HEADING.match(lines[i]):
                end = i + 1
                while end < len(lines) and lines[end] != USAGE:
                    end += 1
                out += describe(lines[i + 1 : end])
                i = end
                continue
            i += 1
        return out


class ClickHelpExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        # Preprocessors run from the highest priority down: mkdocs-click is 141, and raw HTML
        # is stashed at 20, so the escaped text is never read as a tag.
        md.preprocessors.register(ClickHelp(md), "knowl_click_help", 140)


def on_config(config: Any) -> Any:
    config.markdown_extensions.append(ClickHelpExtension())
    return config
