"""The site's Jinja2 templates: the package's own, and a project's overrides.

A project's `[site] templates` folder holds files that replace the shipped ones of the same
name (as a MkDocs theme's `custom_dir` does); `knowl/<name>` always names the shipped file, so
an override can extend the original (`{% extends "knowl/base.html" %}`). The folder lies inside
the project, and so does every file read from it (a symbolic link that leads out is refused).

Templates are the project's own files, but they are rendered as untrusted code is: in Jinja2's
immutable sandbox (no access to private attributes or to Python's internals, nothing mutated),
with autoescaping on, so every value from a page is escaped unless the code marks it safe. The
only value marked safe is a body rendered by `markup.render_body`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    FileSystemLoader,
    PrefixLoader,
    StrictUndefined,
    TemplateError,
    TemplateNotFound,
)
from jinja2 import Environment as JinjaEnvironment
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup, escape

from knowl_build.core.errors import ConfigError, KnowlError

SHIPPED = "knowl"


def shipped_folder() -> Path:
    return Path(str(resources.files("knowl_build.site").joinpath("templates")))


def static_folder() -> Path:
    return Path(str(resources.files("knowl_build.site").joinpath("static")))


class _ProjectLoader(FileSystemLoader):
    """A project's template folder: files that resolve (links followed) inside `root` only."""

    def __init__(self, folder: Path, root: Path) -> None:
        super().__init__(str(folder))
        self.root = root.resolve()

    def get_source(
        self, environment: JinjaEnvironment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        if not Path(filename).resolve().is_relative_to(self.root):
            raise TemplateNotFound(template)
        return source, filename, uptodate


class Templates:
    """The templates of one site build and a digest of their text (a rebuild renders again
    every file when any template changes)."""

    def __init__(self, overrides: Path | None = None, root: Path | None = None) -> None:
        shipped = FileSystemLoader(str(shipped_folder()))
        loaders: list[BaseLoader] = []
        if overrides is not None:
            anchor = root if root is not None else overrides
            if not overrides.resolve().is_relative_to(anchor.resolve()):
                raise ConfigError(f"[site] templates: {overrides} is not inside the project")
            if not overrides.is_dir():
                raise ConfigError(f"[site] templates: {overrides} is not a folder")
            loaders.append(_ProjectLoader(overrides, anchor))
        loaders += [shipped, PrefixLoader({SHIPPED: shipped})]
        self.env = ImmutableSandboxedEnvironment(
            loader=ChoiceLoader(loaders),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        self.env.filters["code_spans"] = code_spans
        folders: list[tuple[Path, Path | None]] = [(shipped_folder(), None)]
        if overrides is not None:
            folders.append((overrides, (root if root is not None else overrides).resolve()))
        self.digest = _digest(folders)

    def render(self, name: str, context: dict[str, Any]) -> str:
        try:
            return self.env.get_template(name).render(context)
        except TemplateNotFound as exc:
            raise KnowlError(f"site template {name}: template {exc.name!r} not found") from None
        except TemplateError as exc:
            line = getattr(exc, "lineno", None)
            where = f" (line {line})" if line else ""
            raise KnowlError(f"site template {name}{where}: {exc.message}") from None


def code_spans(text: str) -> Markup:
    """A message with its `quoted` parts as code: every piece escaped, no other markup."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: the text as it is
        return Markup(escape(text))
    return Markup("").join(
        Markup("<code>%s</code>") % part if i % 2 else escape(part) for i, part in enumerate(parts)
    )


def _digest(folders: list[tuple[Path, Path | None]]) -> str:
    """The names and contents of the files of `folders` (each only those inside its anchor)."""
    h = hashlib.sha256()
    for folder, anchor in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if anchor is not None and not path.resolve().is_relative_to(anchor):
                continue
            h.update(path.relative_to(folder).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
        h.update(b"\1")
    return h.hexdigest()[:16]
