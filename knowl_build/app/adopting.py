"""`knowl init`: a configuration for the repository as it is, and the first check's summary.

It looks (`shapes`), decides (each decision with its reason, printed), asks the checker
what the pages already use (their frontmatter keys become `[frontmatter] allow`; no review
date on any page turns KB202 off), and writes `knowl.toml`, `.knowl/` in `.gitignore` and,
when asked, the pre-commit hook and the GitHub workflow. It never replaces a file without
`--force` (then only the ones it writes whole; `.gitignore` is only ever appended to), and
with `--dry-run` it writes nothing. The configuration it writes is read back by the loader
before anything is written, so it is one knowl accepts.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.app import shapes
from knowl_build.core.config import Config
from knowl_build.core.config_loader import config_from_mapping
from knowl_build.core.errors import ConfigError, UsageError
from knowl_build.core.names import holds_secret
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.cache import CachePlace
from knowl_build.support.files import atomic_write

# Init's checks read the tree and write nothing: no cache, no history cache, no `.knowl/`
# (a --dry-run leaves the repository exactly as it was).
NO_CACHES = CachePlace(None)

CONFIG_FILE = "knowl.toml"
HOOKS_FILE = ".pre-commit-config.yaml"
WORKFLOW_FILE = ".github/workflows/knowl.yml"
IGNORE_LINE = ".knowl/"

# The link resolution, and the keys [links] needs beside it, for each kind of repository.
_LINKS: dict[str, list[tuple[str, str]]] = {
    "obsidian": [("resolution", "obsidian")],
    "quartz": [("resolution", "obsidian"), ("case_only", "warning")],
    "dendron": [("resolution", "dendron")],
    # Sections of a Hugo site reuse page names; / links start at the content folder.
    "hugo": [("resolution", "obsidian")],
}
_WHY_LINKS = {
    "obsidian": "wiki links resolve as Obsidian resolves them (names, aliases, shortest path)",
    "quartz": "Quartz resolves wiki links as Obsidian does, but publishes case-exact URLs",
    "dendron": "Dendron's links: [[label|note]], dotted names, note references",
    "hugo": "sections of a Hugo site reuse page names; / links start at the content folder",
}


@dataclass(slots=True)
class Decision:
    """One thing `init` decided, and why (printed as `what: why`)."""

    what: str
    why: str


@dataclass(slots=True)
class Plan:
    """What `init` writes, and why."""

    text: str  # knowl.toml
    decisions: list[Decision]
    files: dict[str, str] = field(default_factory=dict)  # path -> whole text written
    gitignore: str | None = None  # the text .gitignore gets (None: it already ignores .knowl/)
    findings: Counter[str] = field(default_factory=Counter)  # code -> count, first check
    pages: int = 0


def _toml(value: object) -> str:
    """A TOML value: strings as basic strings (JSON's escapes are TOML's), lists of them."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    # JSON's escapes are TOML's; TOML also forbids a raw DEL.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


@dataclass(slots=True)
class _Draft:
    top: dict[str, object] = field(default_factory=dict)
    tables: dict[str, dict[str, object]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # dotted key -> comment

    def set(self, key: str, value: object, note: str = "") -> None:
        table, _, name = key.rpartition(".")
        (self.tables.setdefault(table, {}) if table else self.top)[name] = value
        if note:
            self.notes[key] = note

    def render(self) -> str:
        lines = ["# knowl-build configuration, written by knowl init (see docs/configuration.md)."]
        for name, value in self.top.items():
            lines.append(self._line(name, name, value))
        for table, values in self.tables.items():
            lines += ["", f"[{table}]"]
            lines += [self._line(f"{table}.{name}", name, v) for name, v in values.items()]
        return "\n".join(lines) + "\n"

    def _line(self, key: str, name: str, value: object) -> str:
        line = f"{name} = {_toml(value)}"
        note = self.notes.get(key)
        return f"{line}  # {note}" if note else line

    def config(self) -> Config:
        try:
            return config_from_mapping(tomllib.loads(self.render()), CONFIG_FILE)
        except (ConfigError, tomllib.TOMLDecodeError) as exc:  # a bug here, never the user's
            raise UsageError(f"knowl init drafted a configuration knowl refuses: {exc}") from exc


def _layout(draft: _Draft, decisions: list[Decision], root: Path) -> shapes.Shape:
    found = shapes.detect(root)
    shape = found[0]
    decisions.append(Decision(f"repository kind: {shape.name}", shape.why))
    for other in found[1:]:
        decisions.append(Decision(f"also {other.name}", f"{other.why}; {shape.name} comes first"))
    if shape.name == "knowl":
        return shape
    draft.set("knowledge_dir", shape.folder)
    draft.set("knowledge.layout", "flat", "every page global, folders as they are")
    decisions.append(
        Decision(
            f'knowledge_dir = "{shape.folder}", layout = "flat"',
            "the pages stay where they are: no global/ or user/ folders to make",
        )
    )
    for key, value in _LINKS.get(shape.name, []):
        draft.set(f"links.{key}", value)
    if shape.name in _LINKS:
        decisions.append(
            Decision(f"links.resolution = {_LINKS[shape.name][0][1]}", _WHY_LINKS[shape.name])
        )
    if shape.name == "hugo":
        draft.set("links.site_root", shape.folder, "/docs/x/ is content/docs/x")
    if shape.name == "obsidian":
        templates = shapes.obsidian_templates(root, shape.folder)
        if templates is not None:
            prefix = "" if shape.folder == "." else f"{shape.folder}/"
            draft.set(
                "knowledge.exclude", [literal_glob(f"{prefix}{templates}")], "Obsidian's templates"
            )
            decisions.append(
                Decision(f"exclude {prefix}{templates}/", "the vault's templates folder")
            )
    return shape


def literal_glob(path: str) -> str:
    """A glob that matches `path` itself: `*`, `?` and `[` are written as classes."""
    return "".join(f"[{char}]" if char in "*?[" else char for char in path)


def _semantics(draft: _Draft, decisions: list[Decision], root: Path) -> None:
    found = shapes.semantics(root)
    if found.canonic_dir is not None:
        decisions.append(Decision("the Canonic semantic layer in semantics/", found.why[0]))
    if found.dbt_dir is not None:
        draft.set("semantics.dbt.project_dir", found.dbt_dir)
        decisions.append(Decision(f"a dbt project in {found.dbt_dir}/", found.why[-1]))
    if found.canonic_dir is None and found.dbt_dir is None:
        decisions.append(
            Decision("no semantic layer", "no semantics/ folder and no dbt_project.yml found")
        )


def _from_the_pages(draft: _Draft, decisions: list[Decision], root: Path) -> None:
    """What the pages already use: their own frontmatter keys; review dates or none."""
    analysis = analyse(root, draft.config(), use_cache=False, caches=NO_CACHES)
    keys = sorted(
        {
            d.subject
            for d in analysis.diagnostics
            if d.code == "KB006" and d.subject and not holds_secret(d.subject)
        }
    )
    if keys:
        draft.set("frontmatter.allow", keys)
        decisions.append(
            Decision(
                f"[frontmatter] allow {len(keys)} key(s)",
                f"the pages use them and they belong to other tools: {', '.join(keys[:8])}"
                + (", ..." if len(keys) > 8 else ""),
            )
        )
    pages = [p for p in analysis.pages if p.parsed.text_ok]
    if pages and not any(p.parsed.fields.last_validated_at for p in pages):
        draft.set("rules.KB202", "off", "no page carries meta.last_validated_at yet")
        decisions.append(
            Decision("KB202 off", "no page records when a person last reviewed it yet")
        )


HOOKS = """\
# pre-commit: knowl check on every commit (written by knowl init)
repos:
  - repo: local
    hooks:
      - id: knowl-check
        name: knowl check
        entry: knowl check
        language: system
        pass_filenames: false
        always_run: true
"""

WORKFLOW = """\
# knowl check on every push and pull request (written by knowl init). Until knowl-build is
# on PyPI, set the repository variable KNOWL_BUILD_SPEC to where you install it from (a
# wheel URL or git+https://...@<tag>).
name: knowl
on: [push, pull_request]
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with: { fetch-depth: 0 }
      - uses: actions/setup-python@v5
        with: { python-version: "3.12" }
      - run: pip install "${{ vars.KNOWL_BUILD_SPEC || 'knowl-build' }}"
      - run: knowl check
"""


def _gitignore(root: Path) -> str | None:
    """`.gitignore` with `.knowl/` appended (None when a line already ignores it)."""
    path = root / ".gitignore"
    try:
        # Not through a link (refused before anything is written): it may lead anywhere.
        text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else ""
    except (OSError, UnicodeDecodeError):
        raise UsageError(
            ".gitignore cannot be read as UTF-8 text; add .knowl/ to it by hand"
        ) from None
    if any(
        line.strip() in (".knowl", ".knowl/", "/.knowl", "/.knowl/") for line in text.splitlines()
    ):
        return None
    return text + ("" if not text or text.endswith("\n") else "\n") + IGNORE_LINE + "\n"


def plan(root: Path, *, pre_commit: bool = False, github: bool = False) -> Plan:
    """Everything `init` would write in `root`, decided; nothing is written."""
    draft, decisions = _Draft(), list[Decision]()
    _layout(draft, decisions, root)
    _semantics(draft, decisions, root)
    _from_the_pages(draft, decisions, root)
    config = draft.config()
    analysis = analyse(root, config, use_cache=False, caches=NO_CACHES)
    result = Plan(draft.render(), decisions, gitignore=_gitignore(root))
    result.findings = Counter(d.code for d in analysis.diagnostics)
    result.pages = sum(1 for p in analysis.pages if p.parsed.text_ok)
    if pre_commit:
        result.files[HOOKS_FILE] = HOOKS
    if github:
        result.files[WORKFLOW_FILE] = WORKFLOW
    return result


def _declares_knowl(pyproject: Path) -> bool:
    try:
        data = tomllib.loads(pyproject.read_text("utf-8")) if pyproject.is_file() else {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and "knowl" in tool


def refusals(root: Path, planned: Plan, force: bool) -> list[str]:
    """Why `init` must not write: a file it would replace (without --force), a configuration
    in pyproject.toml (two configurations are an error), a path that is a link."""
    problems = []
    if _declares_knowl(root / "pyproject.toml"):
        problems.append("pyproject.toml has [tool.knowl]: the project is configured there")
    real_root = os.path.realpath(root)
    targets = [CONFIG_FILE, *planned.files]
    if planned.gitignore is not None:
        targets.append(".gitignore")
    for name in targets:
        problem = _no_file_here(root, name)
        if problem is not None:
            problems.append(problem)
    for name in (CONFIG_FILE, *planned.files):
        path = root / name
        real = os.path.realpath(path)
        if path.is_symlink() or not real.startswith(real_root + os.sep):
            problems.append(
                f"{name} is a symlink or leads out of the project; knowl writes through no link"
            )
        elif path.exists() and not force:
            problems.append(f"{name} exists (--force replaces it)")
    if planned.gitignore is not None and (root / ".gitignore").is_symlink():
        problems.append(".gitignore is a symlink; knowl writes through no link")
    return problems


def _no_file_here(root: Path, name: str) -> str | None:
    """Why `name` cannot be written as a file: it is a folder, or a folder on its way is a
    file (`.github` a file, for `.github/workflows/knowl.yml`)."""
    path = root / name
    if path.exists() and not path.is_symlink() and not path.is_file():
        return f"{name} exists and is no file"
    for parent in list(path.parents)[: len(path.relative_to(root).parts) - 1]:
        if parent.exists() and not parent.is_dir():
            return (
                f"{parent.relative_to(root).as_posix()} is no folder, so {name} cannot be written"
            )
    return None


def write(root: Path, planned: Plan) -> list[str]:
    """Write the plan; the paths written, in order."""
    written = []
    for name, text in [(CONFIG_FILE, planned.text), *planned.files.items()]:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
        written.append(name)
    if planned.gitignore is not None:
        atomic_write(root / ".gitignore", planned.gitignore.encode("utf-8"))
        written.append(".gitignore")
    return written
