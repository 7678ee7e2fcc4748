"""Trust, class 12: a read-only source tree builds and checks, and nothing is written into it.

The tests run knowl in a real process on a tree that cannot be written: as root (CI), inside
`unshare -m` with the project bind-mounted read-only, since permission bits do not stop root;
otherwise with `chmod -R a-w`. Without either, they are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.core.config_loader import load_config
from knowl_build.core.errors import UsageError
from knowl_build.pipeline.check import check
from knowl_build.pipeline.publish import build
from tests.helpers import SEMANTICS, Project

REPO = Path(__file__).resolve().parent.parent
FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/revenue.md": (
        "---\nsummary: Revenue\nsl_refs: [shop_pg.orders.total_revenue]\n---\n"
        "Revenue is `<< sl:shop_pg.orders.total_revenue.expr >>`.\n"
    ),
    "knowledge/global/broken.md": "---\nsummary: Broken\n---\nSee [[nowhere]].\n",
}

# Calls the library in the read-only process: the result's notices, and how many pages had
# to be parsed (0 when every page came from the parse cache).
DRIVER = """
import json, sys
from pathlib import Path
import knowl_build.pipeline.pages as pages
from knowl_build.core.config_loader import load_config
from knowl_build.pipeline.check import check
from knowl_build.pipeline.publish import build
from knowl_build.core.errors import UsageError

parsed = []
original = pages._parse_uncached
def counting(todo, *args):
    parsed.extend(todo)
    return original(todo, *args)
pages._parse_uncached = counting

command, root = sys.argv[1], Path(sys.argv[2])
config = load_config(root)
if command == "build":
    result = build(root, config, out=Path(sys.argv[3]), full=True, allow_errors=True)
    status = result.status
else:
    result = check(root, config)
    status = "checked"
print(json.dumps({"status": status, "notices": result.notices, "parsed": len(parsed),
                  "codes": [d.code for d in result.diagnostics]}))
"""

ReadOnly = Callable[[Path, list[str]], subprocess.CompletedProcess[str]]


def _unshare(src: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(src), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )


def _chmod(src: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    subprocess.run(["chmod", "-R", "a-w", str(src)], check=True)
    try:
        return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(src)], check=True)


def _works(runner: ReadOnly, probe: Path) -> bool:
    probe.mkdir(parents=True, exist_ok=True)
    try:
        proc = runner(probe, ["sh", "-c", f"touch '{probe}/x'"])
    except (OSError, subprocess.CalledProcessError):
        return False
    return proc.returncode != 0 and not (probe / "x").exists()


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> ReadOnly:
    probe = tmp_path_factory.mktemp("probe")
    if os.geteuid() == 0:
        if shutil.which("unshare") and _works(_unshare, probe / "root"):
            return _unshare
        pytest.skip("running as root, and `unshare -m` with a read-only bind mount is not allowed")
    if _works(_chmod, probe / "user"):
        return _chmod
    pytest.skip("`chmod -R a-w` does not make a folder read-only on this machine")


def _listing(root: Path) -> list[tuple[str, int, int]]:
    """Every path under `root` (git's folder too) with its size and modification time."""
    rows = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            rows.append((str(path.relative_to(root)), info.st_size, info.st_mtime_ns))
    return sorted(rows)


@pytest.fixture
def tree(project: Callable[..., Project]) -> Project:
    return project(FILES)


def _knowl(*args: str) -> list[str]:
    return [sys.executable, "-m", "knowl_build", *args]


def _driver(*args: str) -> list[str]:
    return [sys.executable, "-c", DRIVER, *args]


def test_build_on_a_read_only_tree(tree: Project, tmp_path: Path, read_only: ReadOnly) -> None:
    out = tmp_path / "out"
    before = _listing(tree.root)
    proc = read_only(
        tree.root,
        _knowl(
            "build",
            "--repo",
            str(tree.root),
            "--out",
            str(out),
            "--allow-errors",
            "--format",
            "json",
        ),
    )
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["KB103"]
    assert _listing(tree.root) == before
    current = out / (out / "CURRENT").read_text().strip()
    assert (current / "manifest.json").is_file()
    assert (out / ".cache" / "pages.jsonl").is_file()
    assert not (tree.root / ".knowl").exists()


def test_second_build_uses_the_cache_under_out(
    tree: Project, tmp_path: Path, read_only: ReadOnly
) -> None:
    out = tmp_path / "out"
    before = _listing(tree.root)
    first = read_only(tree.root, _driver("build", str(tree.root), str(out)))
    assert first.returncode == 0, first.stderr
    first_run = json.loads(first.stdout)
    assert first_run["status"] == "published"
    assert first_run["parsed"] == 2
    assert first_run["notices"] == [
        f"the project root {tree.root} cannot be written; knowl writes nothing there and "
        f"keeps its caches in {out / '.cache'}"
    ]
    cache = out / ".cache" / "pages.jsonl"
    cached = cache.read_bytes()

    second = read_only(tree.root, _driver("build", str(tree.root), str(out)))
    assert second.returncode == 0, second.stderr
    second_run = json.loads(second.stdout)
    assert second_run["status"] == "published"
    assert second_run["parsed"] == 0  # every page came from <out>/.cache
    assert second_run["notices"] == first_run["notices"]
    assert cache.read_bytes() == cached
    assert (out / ".cache" / "history.json").is_file()
    assert _listing(tree.root) == before


def test_check_on_a_read_only_tree(tree: Project, read_only: ReadOnly) -> None:
    before = _listing(tree.root)
    for _ in range(2):  # no memo to fall back on: the second run checks again
        proc = read_only(tree.root, _driver("check", str(tree.root)))
        assert proc.returncode == 0, proc.stderr
        run = json.loads(proc.stdout)
        assert run["codes"] == ["KB103"]
        assert run["parsed"] == 2
        assert run["notices"] == [
            f"the project root {tree.root} cannot be written; knowl writes nothing there and "
            "runs without its caches"
        ]
    proc = read_only(tree.root, _knowl("check", "--repo", str(tree.root), "--format", "json"))
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr
    assert _listing(tree.root) == before


def test_build_without_out_on_a_read_only_tree_says_what_to_do(
    tree: Project, read_only: ReadOnly
) -> None:
    before = _listing(tree.root)
    proc = read_only(tree.root, _knowl("build", "--repo", str(tree.root)))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"knowl: error: the project root {tree.root} cannot be written, so the build has "
        "nowhere to go: pass --out <a writable folder>"
    )
    assert _listing(tree.root) == before


@pytest.mark.parametrize("command", ["build", "check"])
def test_the_notice_is_printed_once(
    tree: Project, tmp_path: Path, read_only: ReadOnly, command: str
) -> None:
    extra = ["--out", str(tmp_path / "out"), "--allow-errors"] if command == "build" else []
    proc = read_only(tree.root, _knowl(command, "--repo", str(tree.root), *extra))
    assert proc.returncode in (0, 1), proc.stderr
    notices = [line for line in proc.stderr.splitlines() if line.startswith("knowl: notice:")]
    assert len(notices) == 1, proc.stderr
    assert f"the project root {tree.root} cannot be written" in notices[0]


# --- a .knowl that is a symlink is never written through ------------------------------------


def test_a_symlinked_knowl_folder_is_not_written_through(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    proj = project(FILES, commit=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (proj.root / ".knowl").symlink_to(elsewhere, target_is_directory=True)
    proj.commit("a .knowl link")
    config = load_config(proj.root)

    result = check(proj.root, config)
    assert [d.code for d in result.diagnostics] == ["KB103"]
    assert result.notices == [
        f"the project root {proj.root} has a .knowl that is a symlink; knowl writes nothing "
        "there and runs without its caches"
    ]
    built = build(proj.root, config, out=tmp_path / "out", allow_errors=True)
    assert built.status == "published"
    assert len(built.notices) == 1
    with pytest.raises(UsageError, match=r"has a \.knowl that is a symlink, so the build has"):
        build(proj.root, config, allow_errors=True)  # its default output is under .knowl
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / "out" / ".cache" / "pages.jsonl").is_file()


def test_a_writable_tree_keeps_its_caches_and_says_nothing(tree: Project, tmp_path: Path) -> None:
    config = load_config(tree.root)
    assert check(tree.root, config).notices == []
    built = build(tree.root, config, out=tmp_path / "out", allow_errors=True)
    assert built.notices == []
    assert (tree.root / ".knowl" / "cache" / "pages.jsonl").is_file()
    assert not (tmp_path / "out" / ".cache").exists()
