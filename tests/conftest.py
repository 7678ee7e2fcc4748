from __future__ import annotations

import os
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
    def make(files: dict[str, str | bytes] | None = None, git: bool = True, commit: bool = True) -> Project:
        proj = Project(tmp_path / "proj", git=git)
        if files:
            proj.write(files)
        if git and commit:
            proj.commit("initial")
        return proj

    return make


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("NO_COLOR", "1")
