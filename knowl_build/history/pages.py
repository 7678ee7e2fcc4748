"""A page's own history and the tree at a revision: versions of one file (following renames),
a revision named by a commit, tag, branch or date, the tree exported or checked out there, and
the commits writes make."""

from __future__ import annotations

import datetime as dt
import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from knowl_build.history.git import GitFailed, GitRepo, first_line, git_process, run_git
from knowl_build.history.log import GitHistory, _Change, _parse_log, _rename_problem
from knowl_build.history.records import Commit


def resolve_revision(repo: GitRepo, rev: str) -> str:
    """A commit, tag or branch, or an ISO date: the last first-parent commit at or before it."""

    found = repo.commit_of(rev)
    if found is not None:
        return found
    try:
        when = dt.datetime.fromisoformat(rev.replace("Z", "+00:00"))
    except ValueError:
        raise GitFailed(f"'{rev}' is not a commit, tag, branch or ISO date") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    if len(rev) == 10:  # a bare date means the whole of that day
        when += dt.timedelta(days=1) - dt.timedelta(seconds=1)
    out = repo.command("rev-list", "-1", "--first-parent", f"--before={when.isoformat()}", "HEAD")
    sha = out.decode().strip()
    if not sha:
        raise GitFailed(f"no commit at or before {rev}")
    return sha


def checkout_at(repo: GitRepo, commit: str, paths: list[str], target: Path) -> Path:
    """The project as it was at `commit`, with its git history, in `target`: a clone that
    borrows this repository's objects (nothing is copied and nothing in this repository is
    written), with only the project's `paths` checked out. Returns the project's folder
    in the clone."""
    run_git(
        ["clone", "--quiet", "--shared", "--no-checkout", "--", str(repo.toplevel), str(target)],
        target.parent,
    )
    patterns = [f"/{repo.prefix}{path.strip('/')}" for path in paths]
    run_git(["sparse-checkout", "set", "--no-cone", "--", *patterns], target)
    run_git(["checkout", "--quiet", "--detach", commit, "--"], target)
    return target / repo.prefix


@dataclass(frozen=True, slots=True)
class Version:
    commit: Commit
    path: str  # project-relative path of the page in that commit
    data: bytes


def page_history(
    repo: GitRepo, path: str, keep: Callable[[str], bool] | None = None
) -> tuple[list[Version], list[str]]:
    """Every committed version of the file at `path`, newest first, following renames; and
    what git could not read (one sentence each: the version is left out, never guessed).

    With `keep`, a version whose path in its commit `keep` refuses (another user's folder) is
    left out before anything of it is read, and nothing said about what git could not read
    names such a path: the answer is as if those versions had never been.

    One `git log --follow` pass (again without renames when rename detection cannot read a
    blob), then every version's blob in one batch."""
    if repo.head() is None:
        return [], []

    def kept(change: _Change) -> bool:
        return keep is None or all(keep(p) for p in (change.old, change.new) if p)

    reader = GitHistory(repo)
    base = [
        "-c",
        "log.showRoot=true",
        "log",
        "--first-parent",
        "--no-color",
        "-z",
        "--raw",
        "--no-abbrev",
        "--format=%x01%H%x02%ct%x02%an%x02%s",
    ]
    try:
        out = repo.command(*base, "--follow", "-M", "HEAD", "--", path)
    except GitFailed as exc:
        try:
            out = repo.command(*base, "--no-renames", "HEAD", "--", path)
        except GitFailed as again:
            reader.problem(f"git log failed for {path} ({first_line(again)})")
            return [], reader.problems
        entries = [
            (commit, [c for c in changes if kept(c)])
            for commit, changes in _parse_log(out, repo.prefix)
        ]
        reader.problem(_rename_problem(exc, entries))
    found: list[tuple[Commit, _Change]] = []
    for commit, changes in _parse_log(out, repo.prefix):
        change = next((c for c in changes if c.new), None)
        if change is not None and (keep is None or keep(change.new)):  # else deleted or hidden
            found.append((commit, change))
    blobs = reader.read_blobs(change.blob for _, change in found)
    versions: list[Version] = []
    for commit, change in found:
        data = blobs.get(change.blob)
        if data is not None:
            versions.append(Version(commit, change.new, data))
        elif change.blob in reader.unreadable:
            reader.problem(
                f"git could not read {change.new} in commit {commit.sha[:12]} "
                f"(blob {change.blob}: {reader.unreadable[change.blob]}); that version is "
                "left out"
            )
    return versions, reader.problems


def export_tree(repo: GitRepo, rev: str, paths: list[str], target: Path) -> None:
    """Write the project's `paths` as they were at `rev` into `target` (one `git archive`).

    A member the `data` filter refuses is left out, the rest is written: a committed symlink
    that leads out of `target` (an absolute one, `../../..`) is, at `rev`, no file at all,
    exactly as a link leaving the project is no page in the working tree."""

    def data_or_nothing(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, dest)
        except tarfile.FilterError:
            return None

    tree = f"{rev}:{repo.prefix}" if repo.prefix else rev
    present = [p for p in paths if _exists_at(repo, rev, p)]
    if not present:
        target.mkdir(parents=True, exist_ok=True)
        return
    data = repo.command("archive", "--format=tar", tree, "--", *present)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(target, filter=data_or_nothing)


def _exists_at(repo: GitRepo, rev: str, path: str) -> bool:
    try:
        repo.command("cat-file", "-e", f"{rev}:{repo.prefix}{path}")
    except GitFailed:
        return False
    return True


class IdentityMissing(GitFailed):
    pass


def check_identity(repo: GitRepo) -> None:
    """IdentityMissing when git has no author or committer to commit as."""
    try:
        repo.command("var", "GIT_COMMITTER_IDENT")
        repo.command("var", "GIT_AUTHOR_IDENT")
    except GitFailed as exc:
        raise IdentityMissing(
            "git has no identity for the commit (set user.name and user.email): " + str(exc)
        ) from None


class CommitFailed(GitFailed):
    """Git made no commit (a hook rejected it, another git process holds the index); the
    message is one line, and the index is as it was before the commit was tried."""


def commit_paths(repo: GitRepo, paths: list[str], message: str) -> str | None:
    """Commit exactly `paths` (project-relative), whatever else is staged; return the id, or
    None when they hold what HEAD holds (nothing to commit).

    When git makes no commit, CommitFailed, with the index entries of `paths` put back as
    they were: a commit that did not happen leaves nothing staged that the user did not stage
    (the files stay written, for the user to commit)."""
    check_identity(repo)
    before = repo.command("ls-files", "-s", "-z", "--full-name", "--", *paths)
    _step(repo, "add", "--", *paths)  # nothing is staged when it fails
    try:
        changed = _staged(repo, paths)
        if changed:
            _step(repo, "commit", "-q", "--only", "-m", message, "--", *paths)
    except GitFailed as exc:
        _restage(repo, paths, before, exc)
        raise
    if not changed:
        _restage(repo, paths, before, None)
        return None
    return repo.command("rev-parse", "HEAD").decode().strip()


def _step(repo: GitRepo, *args: str) -> None:
    try:
        repo.command(*args)
    except GitFailed as exc:
        # A hook that rejects a commit may say nothing at all; git then says nothing either.
        said = first_line(exc) if str(exc).strip() else "no message (a hook may have refused it)"
        raise CommitFailed(f"git {args[0]} failed: {said}") from None


def _staged(repo: GitRepo, paths: list[str]) -> bool:
    """Whether the index holds, for `paths`, anything HEAD does not (an unborn HEAD: any)."""
    code, _, err = git_process(["diff", "--cached", "--quiet", "--", *paths], repo.project)
    if code not in (0, 1):
        raise CommitFailed(f"git diff failed: {first_line(err)}")
    return code == 1


def _restage(repo: GitRepo, paths: list[str], before: bytes, failure: GitFailed | None) -> None:
    """The index entries of `paths` as `before` (`git ls-files -s -z --full-name`) lists
    them: each entry removed, then the ones listed put back."""
    try:
        repo.command("update-index", "--force-remove", "--", *paths)
        if before:
            repo.command("update-index", "-z", "--index-info", stdin=before)
    except GitFailed as exc:
        left = f"git left {', '.join(paths)} staged ({first_line(exc)})"
        raise CommitFailed(left if failure is None else f"{failure}; {left}") from None
