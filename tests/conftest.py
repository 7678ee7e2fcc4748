from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import Project


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[None]:
    # Findings must not depend on the machine: a fixed "today", no CI auto-detection, and the
    # semantic arm only in the tests marked for it (the extra may be installed or not).
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")  # 2026-05-28
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    if request.node.get_closest_marker("embeddings") is None:
        monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")
    yield


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Project]:
    def make(
        files: dict[str, str | bytes] | None = None, git: bool = True, commit: bool = True
    ) -> Project:
        proj = Project(tmp_path / "proj", git=git)
        if files:
            proj.write(files)
        if git and commit:
            proj.commit("initial")
        return proj

    return make


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("NO_COLOR", "1")
    # Bytecode is written, as an installed package has it: where PYTHONDONTWRITEBYTECODE is
    # set, every `knowl` process a test starts would compile every module it imports again
    # (+40 ms each, hundreds of processes), and pytest would rewrite every test module anew.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    # knowl remembers validated artifacts in the user's cache: never the real one in tests.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="knowl-test-cache-")
    # Git behaves the same on every machine: no user or system configuration (signing hooks,
    # templates), and an identity for the commits the tests and knowl's --commit make.
    empty = Path(__file__).resolve().parent / "golden" / "empty.gitconfig"
    os.environ["GIT_CONFIG_GLOBAL"] = str(empty)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    for key, value in (
        ("GIT_AUTHOR_NAME", "Test Author"),
        ("GIT_AUTHOR_EMAIL", "author@example.invalid"),
        ("GIT_COMMITTER_NAME", "Test Author"),
        ("GIT_COMMITTER_EMAIL", "author@example.invalid"),
    ):
        os.environ[key] = value


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.basename(cache).startswith("knowl-test-cache-"):
        shutil.rmtree(cache, ignore_errors=True)
