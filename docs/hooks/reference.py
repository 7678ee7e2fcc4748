"""MkDocs hook: the reference pages, generated from the code at build time.

A page asks for a generated section with a marker line, replaced here before Markdown runs:

- `<!-- generated: commands -->`: one row per command, from the click group `knowl_build.cli:cli`
  (the full reference below it is mkdocs-click's `::: mkdocs-click` block);
- `<!-- generated: rules -->`: the rule table and one section per rule, anchored `#kb103`
  (SARIF's `helpUri` points there), from `knowl_build.rules.registry.RULES`;
- `<!-- generated: configuration -->`: a table of every key, then a section per key, from
  `knowl_build.core.config.SCHEMA` (the declarations that are `Config`'s fields);
- `<!-- generated: changelog -->`: the repository's CHANGELOG.md, so it has one source.

The generators are plain functions of their input, so tests can feed them a table of their own.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]


class RuleLike(Protocol):
    """`knowl_build.rules.registry.Rule`, as read here."""

    @property
    def code(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def default(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def doc(self) -> str: ...


class OptionLike(Protocol):
    """An entry of `knowl_build.core.config.SCHEMA` (a `knowl_build.core.config_options.Option`): a
    dotted key (`security.max_body_chars`, `rules.<CODE>`), a short type description, the
    default (None for none) and one paragraph of Markdown."""

    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def default(self) -> object: ...
    @property
    def doc(self) -> str: ...


# The first digit of a code names its family.
FAMILIES = {
    "0": "Files, frontmatter and the semantic layer",
    "1": "References",
    "2": "History and freshness",
    "3": "Lifecycle and conflicts",
    "4": "Secrets and limits",
}

CODE_SPAN = re.compile(r"(`+).+?\1")


def inline(text: str, *, cell: bool = False) -> str:
    """Plain text that may hold code spans, as Markdown: `<owner>` outside code is text, not a
    tag, and in a table cell a `|` outside code is not a column."""
    out, last = [], 0
    for match in CODE_SPAN.finditer(text):
        out.append(_escape(text[last : match.start()], cell))
        out.append(match.group(0))
        last = match.end()
    out.append(_escape(text[last:], cell))
    return "".join(out)


def _escape(text: str, cell: bool) -> str:
    text = html.escape(text, quote=False)
    return text.replace("|", "\\|") if cell else text


def rule_anchor(code: str) -> str:
    """The rule's anchor on the rules page, as SARIF's helpUri spells it."""
    return code.lower()


def rules_reference(rules: Iterable[RuleLike]) -> str:
    rules = list(rules)
    lines = ["| code | name | default | when |", "| --- | --- | --- | --- |"]
    for rule in rules:
        lines.append(
            f"| [{rule.code}](#{rule_anchor(rule.code)}) | {rule.name} | {rule.default} "
            f"| {inline(rule.summary, cell=True)} |"
        )
    family = None
    for rule in rules:
        digit = rule.code[2:3]
        if digit != family:
            family = digit
            title = FAMILIES.get(digit, f"KB{digit}xx")
            lines += ["", f"## {title} {{ #kb{digit}xx }}"]
        lines += [
            "",
            f"### {rule.code} {rule.name} {{ #{rule_anchor(rule.code)} }}",
            "",
            f"Default severity: **{rule.default}**. *{inline(rule.summary)}*",
            "",
            inline(rule.doc),
        ]
    return "\n".join(lines) + "\n"


def option_anchor(key: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "-", key.lower()).strip("-")


def toml_value(value: object) -> str:
    """A default as it would be written in knowl.toml."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return f"{{ {items} }}" if items else "{}"
    if isinstance(value, list | tuple | set | frozenset):
        items_ = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(toml_value(v) for v in items_) + "]"
    raise TypeError(f"configuration default {value!r}: no TOML spelling for {type(value).__name__}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def config_reference(schema: Iterable[OptionLike]) -> str:
    """A table of every key (its type and default, linking to its section), then each key's
    section, grouped by its TOML table (the first part of the dotted key)."""
    options = list(schema)
    anchors: list[str] = []
    for option in options:
        anchor = option_anchor(option.key)
        while anchor in anchors:
            anchor += "-"
        anchors.append(anchor)
    lines = [
        "| key | type | default |",
        "| --- | --- | --- |",
    ]
    for option, anchor in zip(options, anchors, strict=True):
        lines.append(
            f"| [`{option.key}`](#{anchor}) | {inline(option.kind, cell=True)} "
            f"| {_default_text(option.default)} |"
        )
    group: str | None = None
    for option, anchor in zip(options, anchors, strict=True):
        table = option.key.split(".", 1)[0] if "." in option.key else ""
        if table != group:
            group = table
            heading = f"`[{table}]`" if table else "Top-level keys"
            lines += ["", f"## {heading} {{ #table-{option_anchor(table) or 'top-level'} }}"]
        lines += [
            "",
            f"### `{option.key}` {{ #{anchor} }}",
            "",
            f"*{inline(option.kind)}*, default {_default_text(option.default)}",
            "",
            option.doc.strip(),
        ]
    return "\n".join(lines) + "\n"


def _default_text(default: object) -> str:
    return "none" if default is None else f"`{toml_value(default)}`"


def commands_index(group: Any) -> str:
    """One row per command of a click group, linking to mkdocs-click's `#knowl-<name>`."""
    import click

    lines = ["| command | what it does |", "| --- | --- |"]
    with click.Context(group, info_name="knowl") as ctx:
        for name in sorted(group.list_commands(ctx)):
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            summary = inline(command.get_short_help_str(limit=300), cell=True)
            lines.append(f"| [`knowl {name}`](#knowl-{name}) | {summary} |")
    return "\n".join(lines) + "\n"


def _rules() -> str:
    from knowl_build.rules.registry import RULES

    return rules_reference(RULES)


def _configuration() -> str:
    from knowl_build.core.config import SCHEMA

    return config_reference(SCHEMA)


def _commands() -> str:
    from knowl_build.cli import cli

    return commands_index(cli)


def _changelog() -> str:
    return (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


GENERATORS: dict[str, Callable[[], str]] = {
    "rules": _rules,
    "configuration": _configuration,
    "commands": _commands,
    "changelog": _changelog,
}
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def expand(markdown: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise PluginError(f"unknown generated section {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]().rstrip("\n")

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return expand(markdown)
