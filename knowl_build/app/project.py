"""Which project a command is about, and its configuration."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from knowl_build.app import config_memo
from knowl_build.core.errors import UsageError

if TYPE_CHECKING:
    from knowl_build.core.config import Config

PROJECT_MARKERS = "knowl.toml, [tool.knowl] in pyproject.toml or a knowledge/ folder"


def _declares_knowl(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    # Imported here: start-up time (a project with knowl.toml is found without TOML).
    import tomllib

    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        # Still the project when it means to be: loading its configuration then names the
        # syntax error, instead of a search that walks past it.
        return "[tool.knowl" in text
    return isinstance(tool, dict) and "knowl" in tool


def find_project_root(start: Path) -> Path | None:
    """The first folder from `start` upward (itself included) holding knowl.toml, a
    pyproject.toml with [tool.knowl], or a knowledge/ folder, as git and ruff find theirs.

    The search stops at the top of the git repository it starts in (a folder holding `.git`):
    a project never spans repositories, and a `knowledge/` folder above the repository (a
    home folder's notes) is not this project."""
    for folder in (start, *start.parents):
        if (
            (folder / "knowl.toml").is_file()
            or (folder / "knowledge").is_dir()
            or _declares_knowl(folder / "pyproject.toml")
        ):
            return folder
        if (folder / ".git").exists():
            return None
    return None


def load_config(root: Path, explicit: Path | None = None) -> Config:
    """The project's configuration, every rule code it names checked against the rules."""
    # The rule registry is imported here, not at the top: reader commands load the
    # configuration (for out_dir and peers) without importing every rule (start-up time).
    from knowl_build.rules.registry import check_config

    return check_config(read_config(root, explicit))


@dataclass(frozen=True, slots=True)
class Project:
    """A project root and its configuration."""

    root: Path
    config: Config

    @property
    def out_dir(self) -> Path:
        return self.root / self.config.out_dir


@dataclass(slots=True)
class Locator:
    """Where a command looks for its project: `--repo` as given (no search), else found
    upward from the current folder; `--config` replaces the project's configuration file."""

    repo: Path | None = None
    config_file: Path | None = None
    cwd: Path | None = None
    _found: tuple[Path | None] | None = None

    def root_or_none(self) -> Path | None:
        if self.repo is not None:
            return self.repo.resolve()
        if self._found is None:
            self._found = (find_project_root((self.cwd or Path.cwd()).resolve()),)
        return self._found[0]

    def root(self) -> Path:
        """The project's root: commands that analyse the project stop here without one."""
        root = self.root_or_none()
        if root is None:
            raise UsageError(
                f"{self.cwd or Path.cwd()}: no knowl project here or in a parent folder "
                f"(looked for {PROJECT_MARKERS}); run knowl inside the project or pass --repo DIR"
            )
        return root

    def project(self) -> Project:
        root = self.root()
        return Project(root, load_config(root, self.config_file))

    def reader_project(self) -> Project:
        """The project for a command that only reads its artifact: the configuration gives
        out_dir and peers, and is read without importing the rules."""
        root = self.root()
        return Project(root, read_config(root, self.config_file))

    def reader_places(self) -> ReaderPlaces:
        """What a command that answers from the project's build needs of its configuration,
        recalled when its files are as this machine last read them (`config_memo`)."""
        root = self.root()
        remembered = config_memo.recall(root, self.config_file)
        if remembered is None:
            read_at = time.time_ns()
            before = config_memo.state(root, self.config_file)
            config = read_config(root, self.config_file)
            remembered = (config.out_dir, tuple(config.peer_paths))
            if not config.security.extra_patterns:
                config_memo.keep(root, self.config_file, before, remembered, read_at)
        out_dir, peers = remembered
        return ReaderPlaces(root, root / out_dir, tuple(root / peer for peer in peers))

    def config_if_any(self) -> Config:
        """The project's configuration when there is a project, else --config, else the
        defaults: for commands that can run without a project (rules, mcp --artifact)."""
        root = self.root_or_none()
        if root is not None:
            return load_config(root, self.config_file)
        if self.config_file is not None:
            return load_config(self.cwd or Path.cwd(), self.config_file)
        # Imported here: start-up time (as in read_config).
        from knowl_build.core.config import Config

        return Config()


@dataclass(frozen=True, slots=True)
class ReaderPlaces:
    """A project as a reader of its build sees it: where its builds and its peers are."""

    root: Path
    out_dir: Path
    peers: tuple[Path, ...]


def read_config(root: Path, explicit: Path | None = None) -> Config:
    """The configuration as written, its rule codes unchecked (a reader runs no rule)."""
    # Imported here: start-up time (a reader that recalls its configuration reads no TOML).
    from knowl_build.core.config_loader import load_config as read

    return read(root, explicit)
