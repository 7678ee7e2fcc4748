"""What kind of repository this is, for `knowl init`: the shapes knowl knows, and what each
means for the configuration (where the pages are, which layout, which link rules).

Everything here reads files of a repository that may be anyone's, and only reads them: each
file is read through `_read` (inside the project, no symlink out, at most 1 MB), YAML with a
loader that builds plain values and ignores tags (MkDocs' `!!python/name:` and `!ENV` are
words here, never objects), TOML with tomllib, JSON with json; JavaScript and TypeScript
configurations (Docusaurus, Quartz) are never run or parsed, only their presence counts. A
folder a configuration names (MkDocs' `docs_dir`, Hugo's `contentDir`, a Dendron vault's
`fsPath`) is used only when it is a relative path to a folder inside the project.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

MAX_CONFIG_BYTES = 1 << 20


@dataclass(slots=True)
class Shape:
    """One kind of repository found, and why."""

    name: str  # obsidian | dendron | hugo | quartz | mkdocs | docusaurus | knowl | markdown
    folder: str  # the pages' folder, project-relative ("." for the root)
    why: str  # the file or folder that gave it away


@dataclass(slots=True)
class Semantics:
    """Semantic layers found: a Canonic `semantics/` folder, a dbt project."""

    canonic_dir: str | None = None
    dbt_dir: str | None = None
    why: list[str] = field(default_factory=list)


class _PlainLoader(yaml.SafeLoader):
    """Plain values only; a tagged node is its plain value (a tag never names a type)."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    return None


_PlainLoader.add_multi_constructor("", _untagged)


def _inside(root: Path, rel: str) -> Path | None:
    """`root/rel` when it stays inside the project with symlinks followed, else None."""
    if not rel or PurePosixPath(rel).is_absolute() or os.path.isabs(rel):
        return None
    if any(part == ".." for part in PurePosixPath(rel).parts):
        return None
    path = root / rel
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root + os.sep):
        return None
    return path


def _read(root: Path, rel: str) -> bytes | None:
    path = _inside(root, rel)
    if path is None or not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_CONFIG_BYTES else data


def _mapping(root: Path, rel: str) -> dict[str, Any]:
    """A YAML, TOML or JSON file's top-level mapping ({} when absent, unreadable or not one)."""
    data = _read(root, rel)
    if data is None:
        return {}
    try:
        if rel.endswith(".toml"):
            loaded: Any = tomllib.loads(data.decode("utf-8"))
        elif rel.endswith(".json"):
            loaded = json.loads(data)
        else:
            loaded = yaml.load(data, Loader=_PlainLoader)
    except (ValueError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _usable(name: str) -> bool:
    """A folder name init can write into knowl.toml and read back as the same folder: UTF-8,
    no control character, no backslash (which the configuration reads as `/`)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\\" not in name and not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name)


def _folder(root: Path, value: Any, default: str) -> str:
    """A folder a configuration names, when it is a relative folder inside the project (and
    not git's own, nor one knowl could not name)."""
    rel = value.strip().strip("/") if isinstance(value, str) and _usable(value) else ""
    if any(part.casefold() in (".git", ".knowl") for part in PurePosixPath(rel).parts):
        rel = ""
    rel = rel[2:] if rel.startswith("./") else rel
    if rel in ("", "."):
        return default
    path = _inside(root, rel)
    return PurePosixPath(rel).as_posix() if path is not None and path.is_dir() else default


def _dir(root: Path, rel: str) -> bool:
    path = _inside(root, rel)
    return path is not None and path.is_dir()


def _obsidian(root: Path) -> Shape | None:
    for folder in (".", "vault", "Vault", "notes", "docs"):
        if _dir(root, ".obsidian" if folder == "." else f"{folder}/.obsidian"):
            where = ".obsidian/" if folder == "." else f"{folder}/.obsidian/"
            return Shape("obsidian", folder, f"{where} (an Obsidian vault)")
    return None


def _dendron(root: Path) -> Shape | None:
    if _read(root, "dendron.yml") is None:
        return None
    config = _mapping(root, "dendron.yml")
    workspace = config.get("workspace")
    vaults = workspace.get("vaults") if isinstance(workspace, dict) else None
    paths = [
        _folder(root, vault.get("fsPath"), "")
        for vault in (vaults if isinstance(vaults, list) else [])
        if isinstance(vault, dict)
    ]
    paths = [p for p in paths if p]
    folder = paths[0] if len(paths) == 1 else "."
    many = f", {len(paths)} vaults read from the root" if len(paths) > 1 else ""
    return Shape("dendron", folder, f"dendron.yml (a Dendron workspace{many})")


_HUGO_CONFIGS = (
    "hugo.toml",
    "hugo.yaml",
    "hugo.yml",
    "hugo.json",
    "config.toml",
    "config.yaml",
    "config.yml",
)


def _hugo(root: Path) -> Shape | None:
    for name in _HUGO_CONFIGS:
        if _read(root, name) is None:
            continue
        config = _mapping(root, name)
        content = _folder(root, config.get("contentDir"), "content")
        if name.startswith("config.") and not _dir(root, content):
            continue  # a config.toml is not Hugo's without a content folder
        if _dir(root, content):
            return Shape("hugo", content, f"{name} and {content}/ (a Hugo site)")
    return None


def _quartz(root: Path) -> Shape | None:
    for name in ("quartz.config.ts", "quartz.config.js"):
        if _read(root, name) is not None and _dir(root, "content"):
            return Shape("quartz", "content", f"{name} and content/ (a Quartz site)")
    return None


def _mkdocs(root: Path) -> Shape | None:
    for name in ("mkdocs.yml", "mkdocs.yaml"):
        if _read(root, name) is not None:
            docs = _folder(root, _mapping(root, name).get("docs_dir"), "docs")
            if _dir(root, docs):
                return Shape("mkdocs", docs, f"{name} (an MkDocs site, docs_dir {docs}/)")
    return None


def _docusaurus(root: Path) -> Shape | None:
    for name in ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs"):
        if _read(root, name) is not None and _dir(root, "docs"):
            return Shape("docusaurus", "docs", f"{name} and docs/ (a Docusaurus site)")
    return None


def _knowl(root: Path) -> Shape | None:
    if _dir(root, "knowledge/global") or _dir(root, "knowledge/user"):
        return Shape("knowl", "knowledge", "knowledge/global/ or knowledge/user/ (knowl's layout)")
    return None


# Most specific first: a Quartz or Hugo site may hold an Obsidian vault as its content.
_DETECTORS = (_knowl, _dendron, _quartz, _hugo, _mkdocs, _docusaurus, _obsidian)


def _has_markdown(root: Path, budget: int = 20_000) -> bool:
    """Whether any `.md` file lies outside hidden folders (at most `budget` entries looked at)."""
    stack = [root]
    while stack and budget > 0:
        folder = stack.pop()
        for entry in _entries(folder):
            budget -= 1
            if entry.name.startswith(".") or entry.name == "node_modules":
                continue
            if entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
                return True
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return False


def detect(root: Path) -> list[Shape]:
    """Every shape found, most specific first. Without one: the root's Markdown as it is, or,
    in a repository with no page yet, knowl's own layout (`knowledge/global/`)."""
    found = [shape for detector in _DETECTORS if (shape := detector(root)) is not None]
    if found:
        return found
    if _has_markdown(root):
        return [Shape("markdown", ".", "no site generator or vault: Markdown as it is")]
    return [Shape("knowl", "knowledge", "no pages yet: knowl's own layout, knowledge/global/")]


def semantics(root: Path) -> Semantics:
    """The semantic layers beside the pages: Canonic YAML under `semantics/`, a dbt project
    (its `dbt_project.yml` at the root or one folder down)."""
    found = Semantics()
    if _dir(root, "semantics"):
        found.canonic_dir = "semantics"
        found.why.append("semantics/ (Canonic YAML)")
    folders = sorted(
        entry.name
        for entry in _entries(root)
        if entry.is_dir()
        and not entry.name.startswith(".")
        and entry.name != "node_modules"
        and _usable(entry.name)
    )
    candidates = [".", *folders]
    for folder in candidates:
        rel = "dbt_project.yml" if folder == "." else f"{folder}/dbt_project.yml"
        if _read(root, rel) is not None:
            found.dbt_dir = folder
            found.why.append(f"{rel} (a dbt project)")
            break
    return found


def _entries(root: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(root) as entries:
            return list(entries)[:10_000]
    except OSError:
        return []


def obsidian_templates(root: Path, vault: str) -> str | None:
    """The templates folder an Obsidian vault names (`.obsidian/templates.json`), if any."""
    base = "" if vault == "." else f"{vault}/"
    folder = _mapping(root, f"{base}.obsidian/templates.json").get("folder")
    rel = _folder(root, f"{base}{folder}" if isinstance(folder, str) else None, "")
    return rel[len(base) :] if rel else None
