"""The only module that talks to git.

Every call is one `git` process for the whole project (never one per file or per commit).
Without git, or outside a repository, `GitRepo.find` returns None and history features are
skipped (KB009).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


def _env() -> dict[str, str]:
    # Read at each call: the environment (an identity, a config path) may change in-process.
    return {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


class GitFailed(Exception):
    pass


def _run(args: list[str], cwd: Path) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=_env(), capture_output=True, check=False)
    except OSError as exc:
        raise GitFailed(str(exc)) from exc
    if proc.returncode != 0:
        raise GitFailed(proc.stderr.decode("utf-8", "replace").strip())
    return proc.stdout


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A git work tree holding the project. `prefix` is the project's path inside it."""

    toplevel: Path
    project: Path
    prefix: str  # "" or "sub/dir/" with a trailing slash

    @classmethod
    def find(cls, project: Path) -> GitRepo | None:
        try:
            out = _run(["rev-parse", "--show-toplevel", "--show-prefix"], project)
        except GitFailed:
            return None
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 1 or not lines[0]:
            return None
        prefix = lines[1] if len(lines) > 1 else ""
        return cls(Path(lines[0]), project, prefix)

    def run(self, *args: str) -> bytes:
        return _run(list(args), self.project)

    def ignored(self, folders: list[str]) -> set[str]:
        """Project-relative paths git ignores under `folders` (folders end with `/`)."""
        try:
            out = self.run(
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
                "--",
                *folders,
            )
        except GitFailed:
            return set()
        return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}

    def head(self) -> str | None:
        try:
            return self.run("rev-parse", "--verify", "-q", "HEAD^{commit}").decode().strip() or None
        except GitFailed:
            return None

    def dirty(self, paths: list[str]) -> bool:
        """True when any of `paths` (project-relative) differs from HEAD, untracked included."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
        return bool(out.strip(b"\0"))

    def remote_url(self) -> str | None:
        try:
            return self.run("config", "--get", "remote.origin.url").decode().strip() or None
        except GitFailed:
            return None

    def changed_files(self) -> set[str] | None:
        """Project-relative paths that differ from HEAD, untracked ones included.

        None when there is no HEAD yet (every file counts as changed)."""
        if self.head() is None:
            return None
        out = self.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", "."
        )
        changed: set[str] = set()
        for entry in out.decode("utf-8", "surrogateescape").split("\0"):
            if len(entry) < 4:
                continue
            path = entry[3:]  # porcelain paths are relative to the repository root
            if path.startswith(self.prefix):
                changed.add(path[len(self.prefix) :])
        return changed


# --- history: one log pass, blobs in batch -------------------------------------------------

WORKING_TREE = "working-tree"


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: int  # committer time, seconds since the epoch
    author: str
    subject: str

    @property
    def date(self) -> str:
        import datetime as dt

        return dt.datetime.fromtimestamp(self.time, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.sha,
            "date": self.date,
            "author": self.author,
            "subject": self.subject,
        }


@dataclass(slots=True)
class EntityHistory:
    """Where an entity came from: commit ids, or WORKING_TREE for uncommitted changes."""

    introduced_in: str | None = None
    changed_in: str | None = None
    removed_in: str | None = None
    kind: str = ""
    fingerprint: str = ""

    def to_list(self) -> list[str | None]:
        return [self.introduced_in, self.changed_in, self.removed_in, self.kind, self.fingerprint]

    @classmethod
    def from_list(cls, row: list[str | None]) -> EntityHistory:
        return cls(row[0], row[1], row[2], row[3] or "", row[4] or "")


@dataclass(slots=True)
class History:
    head: str | None
    commits: dict[str, Commit]
    entities: dict[str, EntityHistory]
    exprs: dict[str, str]  # measure fingerprint -> the expression it was computed from
    page_commits: dict[str, list[str]]  # project-relative path -> commit ids, newest first

    def commit_json(self, ref: str | None) -> dict[str, object] | None:
        if ref is None:
            return None
        if ref == WORKING_TREE:
            return {"commit": None, "working_tree": True}
        return self.commits[ref].to_json()


@dataclass(frozen=True, slots=True)
class _Change:
    status: str
    old: str  # old path ("" when added)
    new: str  # new path ("" when deleted)
    blob: str  # new blob id


def _parse_log(data: bytes, prefix: str) -> list[tuple[Commit, list[_Change]]]:
    """Parse `git log -z --raw --format=%x01%H%x02%ct%x02%an%x02%s` output, newest first."""
    text = data.decode("utf-8", "surrogateescape")
    entries: list[tuple[Commit, list[_Change]]] = []
    for chunk in text.split("\x01")[1:]:
        header, _, rest = chunk.partition("\0")
        sha, time, author, subject = [*header.split("\x02"), "", "", "", ""][:4]
        tokens = rest.lstrip("\n").split("\0")
        changes: list[_Change] = []
        i = 0
        while i < len(tokens):
            meta = tokens[i].lstrip("\n")
            if not meta.startswith(":"):
                i += 1
                continue
            parts = meta[1:].split()
            status, blob = parts[4][0], parts[3]
            if status in "RC":
                old, new = tokens[i + 1], tokens[i + 2]
                i += 3
            else:
                old = new = tokens[i + 1]
                i += 2
            strip = len(prefix)
            old = old[strip:] if old.startswith(prefix) else old
            new = new[strip:] if new.startswith(prefix) else new
            if status == "A":
                old = ""
            elif status == "D":
                new = ""
            changes.append(_Change(status, old, new, blob))
        entries.append((Commit(sha, int(time or 0), author, subject), changes))
    return entries


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob with these bytes (no process needed)."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class GitHistory:
    """Reads history through GitPython's persistent `cat-file --batch` and one `git log`."""

    def __init__(self, repo: GitRepo) -> None:
        import git

        self.repo = repo
        self._git = git.Repo(repo.toplevel)
        self._blobs: dict[str, bytes | None] = {}

    def close(self) -> None:
        self._git.close()

    def blob(self, ref: str) -> bytes | None:
        """The bytes of a blob (by id, or `commit:path`); None when it does not exist."""
        if ref in self._blobs:
            return self._blobs[ref]
        try:
            _sha, kind, _size, data = self._git.git.get_object_data(ref)
        except ValueError:
            data, kind = None, "missing"
        result = data if _text(kind) == "blob" else None
        self._blobs[ref] = result
        return result

    def object_id(self, ref: str) -> str | None:
        try:
            sha, _kind, _size = self._git.git.get_object_header(ref)
        except ValueError:
            return None
        return _text(sha)

    def log(
        self, folders: list[str], since: str | None = None
    ) -> list[tuple[Commit, list[_Change]]]:
        """First-parent history of HEAD (after `since`, when given), newest first."""
        if self.repo.head() is None:
            return []
        span = f"{since}..HEAD" if since else "HEAD"
        out = self.repo.run(
            "log",
            "--first-parent",
            "-z",
            "--raw",
            "-M",
            "--no-abbrev",
            "--format=%x01%H%x02%ct%x02%an%x02%s",
            span,
            "--",
            *folders,
        )
        return _parse_log(out, self.repo.prefix)

    def first_parent_chain(self) -> list[str]:
        """HEAD and its first-parent ancestors, newest first."""
        if self.repo.head() is None:
            return []
        return self.repo.run("rev-list", "--first-parent", "HEAD").decode().split()

    def reachable_from_head(self, commits: set[str]) -> dict[str, str | None]:
        """Each (possibly abbreviated) commit id -> its full id if reachable from HEAD."""
        resolved: dict[str, str | None] = {}
        for ref in commits:
            resolved[ref] = self.object_id(f"{ref}^{{commit}}")
        wanted = {sha for sha in resolved.values() if sha}
        if not wanted or self.repo.head() is None:
            return {ref: None for ref in commits}
        reachable = set(self.repo.run("rev-list", "HEAD").decode().split())
        return {ref: sha if sha in reachable else None for ref, sha in resolved.items()}

    def head_paths_differ(self, pairs: set[tuple[str, str]], root: Path) -> set[tuple[str, str]]:
        """(commit, repo-relative path) pairs whose file changed since `commit` (HEAD or the
        working tree differs, or the path is gone)."""
        changed: set[tuple[str, str]] = set()
        for commit, path in pairs:
            then = self.object_id(f"{commit}:{path}")
            now = self.object_id(f"HEAD:{path}")
            try:
                worktree: str | None = git_blob_id((root / path).read_bytes())
            except OSError:
                worktree = None
            if worktree is None or then != now or then != worktree:
                changed.add((commit, path))
        return changed


# --- one page's versions, and the tree at a revision ----------------------------------------


def resolve_revision(repo: GitRepo, rev: str) -> str:
    """A commit, tag or branch, or an ISO date: the last first-parent commit at or before it."""
    import datetime as dt

    try:
        return repo.run("rev-parse", "--verify", "-q", f"{rev}^{{commit}}").decode().strip()
    except GitFailed:
        pass
    try:
        when = dt.datetime.fromisoformat(rev.replace("Z", "+00:00"))
    except ValueError:
        raise GitFailed(f"'{rev}' is not a commit, tag, branch or ISO date") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    if len(rev) == 10:  # a bare date means the whole of that day
        when += dt.timedelta(days=1) - dt.timedelta(seconds=1)
    out = repo.run("rev-list", "-1", "--first-parent", f"--before={when.isoformat()}", "HEAD")
    sha = out.decode().strip()
    if not sha:
        raise GitFailed(f"no commit at or before {rev}")
    return sha


@dataclass(frozen=True, slots=True)
class Version:
    commit: Commit
    path: str  # project-relative path of the page in that commit
    data: bytes


def page_versions(repo: GitRepo, path: str) -> list[Version]:
    """Every committed version of the file at `path`, newest first, following renames."""
    if repo.head() is None:
        return []
    out = repo.run(
        "log",
        "--first-parent",
        "--follow",
        "-M",
        "-z",
        "--raw",
        "--no-abbrev",
        "--format=%x01%H%x02%ct%x02%an%x02%s",
        "HEAD",
        "--",
        path,
    )
    versions: list[Version] = []
    reader = GitHistory(repo)
    try:
        for commit, changes in _parse_log(out, repo.prefix):
            change = next((c for c in changes if c.new), None)
            if change is None:
                continue  # the commit deleted it
            data = reader.blob(change.blob)
            if data is not None:
                versions.append(Version(commit, change.new, data))
    finally:
        reader.close()
    return versions


def export_tree(repo: GitRepo, rev: str, paths: list[str], target: Path) -> None:
    """Write the project's `paths` as they were at `rev` into `target` (one `git archive`)."""
    import io
    import tarfile

    tree = f"{rev}:{repo.prefix}" if repo.prefix else rev
    present = [p for p in paths if _exists_at(repo, rev, p)]
    if not present:
        target.mkdir(parents=True, exist_ok=True)
        return
    data = repo.run("archive", "--format=tar", tree, "--", *present)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(target, filter="data")


def _exists_at(repo: GitRepo, rev: str, path: str) -> bool:
    try:
        repo.run("cat-file", "-e", f"{rev}:{repo.prefix}{path}")
    except GitFailed:
        return False
    return True


# --- commits made by writes -----------------------------------------------------------------


class IdentityMissing(GitFailed):
    pass


def commit_paths(repo: GitRepo, paths: list[str], message: str) -> str:
    """Commit exactly `paths` (project-relative), whatever else is staged; return the id."""
    try:
        repo.run("var", "GIT_COMMITTER_IDENT")
        repo.run("var", "GIT_AUTHOR_IDENT")
    except GitFailed as exc:
        raise IdentityMissing(
            "git has no identity for the commit (set user.name and user.email): " + str(exc)
        ) from None
    repo.run("add", "--", *paths)
    repo.run("commit", "-q", "--only", "-m", message, "--", *paths)
    return repo.run("rev-parse", "HEAD").decode().strip()
