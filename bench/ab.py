"""What the A/B benchmarks share: the earlier revision checked out beside this tree, both
sides' code byte-compiled, a second copy of a corpus, and each figure's median and range over
runs made in turn."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from corpus import make_corpus

REPO = Path(__file__).resolve().parent.parent

# A figure over the runs: (median, least, greatest).
Spread = tuple[float, float, float]


def byte_compiled(*folders: Path) -> None:
    """The modules under `folders`, this tree's package and the environment's packages written
    as bytecode before any process is timed. Where PYTHONDONTWRITEBYTECODE is set (as here),
    Python writes no bytecode as it imports, so every process compiles every module it
    imports again (+40 ms a command, issue 25); compileall writes it whatever the variable."""
    packages = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})
    code = [str(REPO / "knowl_build"), *map(str, folders)]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *code, *packages],
        check=False,  # a package that does not compile (a test fixture) is no reason to stop
        capture_output=True,
    )


@contextmanager
def revision(baseline: str, code: Path) -> Iterator[Path]:
    """`baseline` checked out at `code` (a git worktree of this repository), removed after;
    both sides' code byte-compiled (`byte_compiled`)."""
    if not code.exists():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(code), baseline],
            check=True,
        )
    byte_compiled(code / "knowl_build")
    try:
        yield code
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(code)],
            check=False,
            capture_output=True,
        )


def second_copy(a_root: Path, b_root: Path) -> None:
    """B's corpus, the same history as A's. A clone, not a copy: git may be packing A's
    objects in the background while a copy reads them."""
    if b_root.exists():
        return
    b_root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(a_root), str(b_root)], check=True)
    shutil.copy(a_root / "knowl.toml", b_root / "knowl.toml")


def corpora(
    workdir: Path, suite: str, pages: int, commits: int, markdown_links: bool = False
) -> tuple[Path, Path]:
    """A's and B's corpus of `pages` pages for `suite` under `workdir`: A's made once (kept
    with --keep), B's a clone of it (`second_copy`)."""
    a_root = workdir / f"{suite}-{pages}-a" / "corpus"
    b_root = workdir / f"{suite}-{pages}-b" / "corpus"
    if not a_root.exists():
        make_corpus(a_root, pages, commits=commits, markdown_links=markdown_links)
    second_copy(a_root, b_root)
    return a_root, b_root


def summary(runs: list[dict[str, float]], figures: Iterable[str]) -> dict[str, Spread]:
    """Each figure's median, least and greatest value over the runs."""
    return {
        name: (
            statistics.median(r[name] for r in runs),
            min(r[name] for r in runs),
            max(r[name] for r in runs),
        )
        for name in figures
    }


PLAIN = REPO / "bench" / ".cache" / "python-plain"


def interpreter() -> str:
    """A Python that sees this environment's packages but not its editable install of
    knowl-build, as a user's installed `knowl` starts: the editable install's finder (a .pth
    file run at every start, about 20 ms here) is no cost of knowl's. A virtual environment
    whose one .pth file names this one's site-packages: a folder named in a .pth is put on
    the path, and its own .pth files are not run. Each side's package comes from PYTHONPATH."""
    python = PLAIN / "bin" / "python"
    if not python.exists():
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", "--without-pip", str(PLAIN)], check=True)
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        paths = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})
        (Path(site) / "knowl-bench-packages.pth").write_text("\n".join(paths) + "\n")
    return str(python)


def side_env(code: Path) -> dict[str, str]:
    """The environment of a process of one side: its code first on the path, so `python -m
    knowl_build` runs that side's package (the editable install is this tree's)."""
    # Each side its own user cache (the validated-artifact memo): the two revisions may
    # write it in formats the other discards, so sharing it would make each re-validate.
    cache = REPO / "bench" / ".cache" / "xdg" / hashlib.sha256(str(code).encode()).hexdigest()[:12]
    return {**os.environ, "PYTHONPATH": str(code), "XDG_CACHE_HOME": str(cache)}


def timed(args: list[str], code: Path, cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user and system, of the process and the processes it waited
    for: its parse workers and index writer) and stdout of `python *args` with `code`'s
    package, started as an installed `knowl` starts (`interpreter`). Exit 1 (findings) is an answer; anything else stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [interpreter(), *args], capture_output=True, text=True, env=side_env(code), cwd=cwd
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout
