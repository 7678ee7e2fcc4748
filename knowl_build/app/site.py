"""`knowl site`: the project's current artifact (or `--artifact`) rendered as a static website.

The site folder is knowl's: a build writes, rewrites and removes files in it. So it may not
be the project's root, its knowledge, semantics or build folder, nor hold one of them, nor lie
inside one or inside a folder git keeps for itself (the git directory, a hooks folder); and a
folder that is neither empty nor a site knowl wrote is refused rather than written over.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from knowl_build.app.project import Locator, Project
from knowl_build.artifacts import publication
from knowl_build.artifacts.folders import git_problem, make_out_dir, output_errors
from knowl_build.core.config import DENDRON, Config
from knowl_build.core.diagnostics import EXIT_OK
from knowl_build.core.errors import UsageError
from knowl_build.history.gitdir import git_folders
from knowl_build.reader.view import ArtifactView, find_artifact
from knowl_build.site import build as site_build
from knowl_build.site.build import SiteResult
from knowl_build.site.output import claim, is_site_folder

DEFAULT_OUT = ".knowl/site"
SITE_FOLDER = "site folder"


@dataclass(frozen=True, slots=True)
class SiteOptions:
    artifact: Path | None = None  # default: the project's current build
    out: Path | None = None  # default: <project>/.knowl/site
    full: bool = False  # render every file again


@dataclass(frozen=True, slots=True)
class SiteOutcome:
    artifact: Path
    result: SiteResult
    exit_status: int = EXIT_OK


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def check_out(out: Path, project: Project | None, artifact: Path) -> None:
    """Refuse a site folder knowl must not write into (see the module's docstring)."""
    out = out.resolve()
    guarded: list[tuple[Path, str]] = []
    if project is not None:
        root = project.root.resolve()
        config = project.config
        if _inside(root, out):
            raise UsageError(f"{out}: the site folder must not be the project root or hold it")
        if config.knowledge_dir != ".":  # the root itself: a site folder writes no page
            guarded.append((root / config.knowledge_dir, f"the {config.knowledge_dir}/ folder"))
        guarded += [
            (root / config.semantics_dir, f"the {config.semantics_dir}/ folder"),
            (root / config.out_dir, f"the build folder {config.out_dir}/"),
        ]
    guarded.append((artifact.resolve(), "the artifact folder"))
    for folder, what in guarded:
        if _inside(out, folder) or _inside(folder, out):
            raise UsageError(f"{out}: the site folder must be apart from {what}")
    problem = git_problem(out, git_folders(project.root) if project is not None else [])
    if problem is not None:
        raise UsageError(
            f"{out}: the site folder must be outside {problem}, where git would take its "
            "files for its own"
        )
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: not a folder")
    if out.is_dir() and any(out.iterdir()) and not is_site_folder(out):
        raise UsageError(
            f"{out}: not empty and not a site knowl wrote; choose an empty or new folder"
        )


def settings(project: Project | None, full: bool = False) -> site_build.Settings:
    """The `[site]` configuration of the project (defaults without one)."""
    config = project.config if project is not None else Config()
    root = project.root if project is not None else None
    templates = None
    if config.site_templates is not None and root is not None:
        templates = root / config.site_templates
    return site_build.Settings(
        title=config.site_title,
        base_url=config.site_base_url,
        templates=templates,
        root=root,
        full=full,
        label_first=config.link_resolution == DENDRON,
        code_shortcodes=config.code_names,
    )


def build_site(locator: Locator, options: SiteOptions = SiteOptions()) -> SiteOutcome:
    """Render the artifact into the site folder, writing only what changed."""
    if options.artifact is not None:
        root = locator.root_or_none()  # the project, if any, gives [site] and a default --out
        project = locator.reader_project() if root is not None else None
        folder = find_artifact(options.artifact)
    else:
        project = locator.reader_project()  # none: says what it looked for (exit 2)
        folder = find_artifact(publication.resolve_artifact(project.out_dir))
    if options.out is not None:
        out = options.out
    elif project is not None:
        out = project.root / DEFAULT_OUT
    else:
        raise UsageError("--out is needed outside a project (where to write the site)")
    # A site folder that cannot be made or written, or a disk that fills up, is one line
    # (exit 2), never an internal error; each file is written whole or not at all.
    with output_errors(out, SITE_FOLDER, writing=True):
        check_out(out, project, folder)
        # The artifact is validated before the site folder is touched: a refused artifact
        # leaves no folder behind.
        view = ArtifactView.open(folder)
        try:
            # A folder knowl makes, or finds empty, is marked as knowl's before anything else
            # is written, so a build that stops half way (a full disk) leaves one the next
            # finishes.
            adopted = not out.is_dir() or not any(out.iterdir())
            make_out_dir(out, SITE_FOLDER)
            if adopted:
                claim(out)
            result = site_build.build(view, out, settings(project, options.full))
        finally:
            view.close()
    return SiteOutcome(folder, result)
