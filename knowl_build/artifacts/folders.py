"""Which output folders knowl may use, which folders in them it made, and reading files
there without following links."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from knowl_build.artifacts.layout import BUILD_MARKER, MANIFEST, OUT_MARKER, TOKEN
from knowl_build.core.errors import KnowlError, UsageError

if TYPE_CHECKING:
    from knowl_build.core.config import Config

# --- which output folders knowl may use, and which folders in them it made -------------------


class OutputFolderError(KnowlError):
    """The output folder cannot be made or used (one line, naming it)."""


def check_out_dir(
    root: Path,
    config: Config,
    out: Path | None = None,
    git: Sequence[tuple[Path, str]] = (),
) -> Path:
    """The output folder to use: `out` (the user's choice, anywhere; a symlink is resolved)
    or the configured `out_dir`, which must lie inside the project with no symlink along
    its way there (a committed `.knowl/build` link would lead the build's writes, and its
    takeover of a stale lock, anywhere).

    Either way, refuse a folder where pruning could reach the project's own files: the
    project root or an ancestor of it, the knowledge or semantics folder, an ancestor of
    them or a folder inside them (symlinks resolved); and a folder inside one git keeps for
    itself (`git`, from `history.gitdir.git_folders`, or any folder named `.git`)."""
    base = root.resolve()
    if out is None:
        out_dir = root / config.out_dir
        here = base
        for part in PurePosixPath(config.out_dir).parts:
            here = here / part
            try:
                info = os.lstat(here)
            except OSError:
                break  # made by the build below, as a folder
            if stat.S_ISLNK(info.st_mode):
                raise UsageError(
                    f"output folder {config.out_dir}: {here.relative_to(base).as_posix()} is a "
                    "symlink, and knowl writes through no link inside the project; remove it "
                    "(or pass --out <folder>)"
                )
        resolved = Path(os.path.realpath(out_dir))
        if base not in resolved.parents:
            raise UsageError(
                f"output folder {config.out_dir} leads outside the project; "
                "give knowl a folder of its own inside it (default .knowl/build)"
            )
    else:
        resolved = Path(os.path.realpath(out))
        # A link is followed once, here: the build works in the folder it leads to.
        out_dir = out if os.path.abspath(out) == str(resolved) else resolved
    if resolved == base or resolved in base.parents:
        raise UsageError(
            f"output folder {out_dir} is the project root or holds it; "
            "give knowl a folder of its own (default .knowl/build)"
        )
    for name in (config.knowledge_dir, config.semantics_dir):
        guarded = (base / name).resolve()
        if guarded == base:
            # The knowledge folder is the project's root (the flat layout): the output must
            # hold no page, which pruning it would delete.
            if _holds_pages(resolved, base):
                raise UsageError(
                    f"output folder {out_dir} holds pages of the project; give knowl a "
                    "folder of its own (default .knowl/build)"
                )
            continue
        if resolved == guarded or resolved in guarded.parents or guarded in resolved.parents:
            raise UsageError(
                f"output folder {out_dir} overlaps the project's {name}/ folder; "
                "give knowl a folder of its own (default .knowl/build)"
            )
    problem = git_problem(resolved, git)
    if problem is not None:
        raise UsageError(
            f"output folder {out_dir} lies inside {problem}, where git would take knowl's "
            "files for its own; give knowl a folder of its own (default .knowl/build)"
        )
    return out_dir


def git_problem(path: Path, git: Sequence[tuple[Path, str]]) -> str | None:
    """Which folder of git's `path` lies in (`git`: each with what it is, or any folder named
    `.git`), as `the git directory /p/.git`; None when it lies in none. The same folder
    reached another way (a case-insensitive file system, a bind mount) counts too."""
    resolved = Path(os.path.realpath(path))
    for folder, what in git:
        if _within(resolved, Path(os.path.realpath(folder))):
            return f"{what} {folder}"
    for here in [resolved, *resolved.parents]:
        if here.name.casefold() == ".git":
            return f"the git directory {here}"
    return None


def _within(path: Path, folder: Path) -> bool:
    if path == folder or folder in path.parents:
        return True
    try:
        target = os.stat(folder)
    except OSError:
        return False
    for here in [path, *path.parents]:
        try:
            info = os.stat(here)
        except OSError:
            continue  # not made yet
        if (info.st_dev, info.st_ino) == (target.st_dev, target.st_ino):
            return True
    return False


def make_out_dir(out_dir: Path, what: str = "output folder") -> None:
    """Create the output folder (and its parents); OutputFolderError when it cannot be
    made, is not a folder, or cannot be written. `what` names it in the message."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputFolderError(f"{what} {out_dir} is not a folder") from None
    except OSError as exc:
        raise OutputFolderError(f"{what} {out_dir} cannot be created ({os_reason(exc)})") from None
    if not out_dir.is_dir():
        raise OutputFolderError(f"{what} {out_dir} is not a folder")
    # os.access sees a read-only mount even for root, whom permission bits do not stop.
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{what} {out_dir} cannot be written")


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def output_failure(
    out_dir: Path, exc: OSError, *, writing: bool = False, what: str = "output folder"
) -> KnowlError | None:
    """The one-line error for an OSError on a file of the output folder; None for another
    file's. `writing`: the failed code wrote only the output folder, so an error without a
    file name (a full disk) is the output folder's too."""
    if any(_inside(out_dir, n) for n in (exc.filename, exc.filename2)) or (
        writing and exc.filename is None
    ):
        return OutputFolderError(f"{what} {out_dir} cannot be used ({os_reason(exc)})")
    return None


@contextlib.contextmanager
def output_errors(
    out_dir: Path, what: str = "output folder", *, writing: bool = False
) -> Iterator[None]:
    """Turn an OSError on a file of the output folder into a one-line error naming the
    folder (not an internal error); any other OSError goes on up."""
    try:
        yield
    except OSError as exc:
        failure = output_failure(out_dir, exc, writing=writing, what=what)
        if failure is None:
            raise
        raise failure from None


def _inside(folder: Path, name: object) -> bool:
    if not isinstance(name, str | bytes | os.PathLike):
        return False
    path = os.path.abspath(os.fsdecode(name))
    top = os.path.abspath(folder)
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


# Opening never follows a symlink and never waits (a FIFO planted as a file would block).
_OPEN_FLAGS = (
    os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
)


def open_regular(path: Path) -> int:
    """A descriptor of the regular file at `path` (OSError for anything else)."""
    fd = os.open(path, _OPEN_FLAGS)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def read_regular(path: Path, limit: int = -1) -> bytes:
    """A regular file's bytes (at most `limit`), never through a symlink."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return handle.read(limit)


def read_small(path: Path, limit: int = 256) -> bytes | None:
    """A small regular file's bytes; None when there is none."""
    try:
        return read_regular(path, limit)
    except OSError:
        return None


def out_token(out_dir: Path, *, create: bool = False) -> str | None:
    """The random token that marks `out_dir` as knowl's; made on first use when `create`."""
    data = read_small(out_dir / OUT_MARKER)
    token = data.decode("ascii", "replace").strip() if data is not None else ""
    if TOKEN.fullmatch(token):
        return token
    if not create:
        return None
    # Imported here: start-up time (a reader only reads markers).
    import secrets

    token = secrets.token_hex(16)
    write_marker(out_dir / OUT_MARKER, token)
    return token


def write_marker(path: Path, token: str) -> None:
    write_beside(path, (token + "\n").encode("ascii"), ".marker.")


def write_beside(path: Path, data: bytes, prefix: str) -> None:
    """`data` written to a temporary file named `prefix...` beside `path`, then renamed
    into place; a failed write (a full disk) leaves neither the file nor the temporary one."""
    # Imported here: start-up time (a reader writes no marker).
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # a full disk names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def made_by_knowl(folder: Path, token: str | None) -> bool:
    """A real folder (not a symlink) whose marker holds this output folder's token."""
    try:
        if token is None or not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
    except OSError:
        return False
    data = read_small(folder / BUILD_MARKER)
    return data is not None and data.split(b"\n")[0].decode("ascii", "replace").strip() == token


def shown_name(name: str) -> str:
    """A name from a file, safe to print on one line."""
    return repr(name[:60] + ("..." if len(name) > 60 else ""))


def safe_name(name: str) -> bool:
    """A manifest entry names a file inside the folder, at the top or under index/, vectors/."""
    pure = PurePosixPath(name)
    parts = pure.parts
    return (
        bool(parts)
        and not pure.is_absolute()
        and "\\" not in name
        and all(part not in ("", ".", "..") for part in parts)
        and pure.as_posix() == name
        and (len(parts) == 1 or (len(parts) == 2 and parts[0] in ("index", "vectors")))
        and name not in (MANIFEST, BUILD_MARKER)
        and all(ch.isprintable() for ch in name)
    )


def listing(folder: Path) -> tuple[dict[str, os.stat_result], list[str]]:
    """Every entry below `folder` by relative name (lstat), and what is not a regular file."""
    found: dict[str, os.stat_result] = {}
    odd: list[str] = []
    stack = [("", folder)]
    while stack:
        prefix, here = stack.pop()
        with os.scandir(here) as entries:
            for entry in entries:
                name = prefix + entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and not prefix:
                    stack.append((name + "/", Path(entry.path)))
                elif stat.S_ISREG(info.st_mode):
                    found[name] = info
                else:
                    odd.append(name)
    return found, odd


def _holds_pages(folder: Path, base: Path) -> bool:
    """Whether `folder` holds a Markdown file discovery would read as a page: none does under
    a folder whose name starts with `.` (`.knowl/`), which discovery never enters."""
    inner = folder.relative_to(base).parts if folder.is_relative_to(base) else ()
    if any(part.startswith(".") for part in inner) or not folder.is_dir():
        return False
    return any(path.is_file() for path in folder.rglob("*.md"))
