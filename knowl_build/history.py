"""The only module that talks to git.

Every call is one `git` process for the whole project (never one per file or per commit).
Without git, or outside a repository, `GitRepo.find` returns None and history features are
skipped (KB009).

Reading history never stops a run: a git failure on one object, or of one command, is kept as
a problem (a sentence naming the object or the command, KB012) and the history rules go on
with what git could read. A shallow clone is said (KB010), and what lies before its oldest
commit is unknown, never guessed.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowl_build import clock
from knowl_build.errors import KnowlError


def _env() -> dict[str, str]:
    # Read at each call: the environment (an identity, a config path) may change in-process.
    # A partial clone fetches missing objects on demand: never wait for a password prompt.
    return {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


class GitFailed(KnowlError):
    """A git command failed. History reading keeps such failures as problems (KB012); one
    that escapes elsewhere ends the run with its one-line message, never a traceback."""


def _run(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=_env(), input=stdin, capture_output=True, check=False
        )
    except OSError as exc:
        raise GitFailed(str(exc)) from exc
    if proc.returncode != 0:
        raise GitFailed(proc.stderr.decode("utf-8", "replace").strip())
    return proc.stdout


def first_line(error: BaseException | str | bytes) -> str:
    """The first line git wrote about a failure, short enough for a finding."""
    text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
    line = next((s.strip() for s in text.splitlines() if s.strip()), "no message")
    return line if len(line) <= 200 else line[:199] + "…"


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A git work tree holding the project. `prefix` is the project's path inside it."""

    toplevel: Path
    project: Path
    prefix: str  # "" or "sub/dir/" with a trailing slash
    shallow: bool = False  # a shallow clone: history before its oldest commits is absent

    @classmethod
    def find(cls, project: Path) -> GitRepo | None:
        try:
            out = _run(
                ["rev-parse", "--show-toplevel", "--show-prefix", "--is-shallow-repository"],
                project,
            )
        except GitFailed:
            return None
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 1 or not lines[0]:
            return None
        prefix = lines[1] if len(lines) > 1 else ""
        shallow = len(lines) > 2 and lines[2] == "true"
        return cls(Path(lines[0]), project, prefix, shallow)

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

    def check_ignore(self, paths: list[str], *, index: bool = True) -> set[str]:
        """Which of `paths` (project-relative, any place in the project) git ignores: one
        `git check-ignore` for all of them. With `index`, a tracked file is never ignored (as
        git sees it); without, only the ignore rules count, which also answers for paths inside
        a submodule (that git refuses with the index). Raises GitFailed when git cannot say."""
        if not paths:
            return set()
        args = ["check-ignore", "--stdin", "-z", *([] if index else ["--no-index"])]
        try:
            out = _run(args, self.project, stdin=b"".join(os.fsencode(p) + b"\0" for p in paths))
        except GitFailed as exc:
            if str(exc):
                raise
            return set()  # exit 1 without a message: none of the paths is ignored
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
SHALLOW = "shallow history"  # why a claim is unknown: the clone is shallow
INCOMPLETE = "history incomplete"  # why a claim is unknown: git could not read the history


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: int  # committer time, seconds since the epoch
    author: str
    subject: str

    @property
    def date(self) -> str:
        return clock.stamp(clock.from_epoch(self.time))

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.sha,
            "date": self.date,
            "author": self.author,
            "subject": self.subject,
        }


@dataclass(slots=True)
class EntityHistory:
    """Where an entity came from: commit ids, or WORKING_TREE for uncommitted changes.

    `unknown_past` marks an entity part of whose past git could not show: it was in a shallow
    clone's oldest commit (when it was introduced is unknown: `introduced_in` is None), or it
    was in a version git could not read. `changed_in` then names only a change seen after
    that (None: whether it changed is unknown), and `removed_in` only a removal seen."""

    introduced_in: str | None = None
    changed_in: str | None = None
    removed_in: str | None = None
    kind: str = ""
    fingerprint: str = ""
    unknown_past: bool = False

    def to_list(self) -> list[str | bool | None]:
        return [
            self.introduced_in,
            self.changed_in,
            self.removed_in,
            self.kind,
            self.fingerprint,
            self.unknown_past,
        ]

    @classmethod
    def from_list(cls, row: list[Any]) -> EntityHistory:
        unknown_past = bool(row[5]) if len(row) > 5 else False
        return cls(row[0], row[1], row[2], row[3] or "", row[4] or "", unknown_past)


@dataclass(slots=True)
class History:
    head: str | None
    commits: dict[str, Commit]
    entities: dict[str, EntityHistory]
    exprs: dict[str, str]  # measure fingerprint -> the expression it was computed from
    page_commits: dict[str, list[str]]  # project-relative path -> commit ids, newest first
    boundary: str | None = None  # a shallow clone's oldest first-parent commit
    unknown: str | None = None  # SHALLOW or INCOMPLETE: part of the history is not known

    def commit_json(self, ref: str | None) -> dict[str, object] | None:
        if ref is None:
            return None
        if ref == WORKING_TREE:
            return {"commit": None, "working_tree": True}
        return self.commits[ref].to_json()

    @property
    def unknown_text(self) -> str:
        """What a message says in place of a claim the history cannot back."""
        return f"unknown ({self.unknown})"


@dataclass(frozen=True, slots=True)
class _Change:
    status: str
    old: str  # old path ("" when added)
    new: str  # new path ("" when deleted)
    blob: str  # new blob id
    old_blob: str = ""  # old blob id (zeros when added)


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
            status, blob, old_blob = parts[4][0], parts[3], parts[2]
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
            changes.append(_Change(status, old, new, blob, old_blob))
        entries.append((Commit(sha, int(time or 0), author, subject), changes))
    return entries


def _object_id(kind: str, data: bytes, length: int = 40) -> str:
    """The id git gives an object of `kind` with these bytes; `length` 64 in a SHA-256
    repository."""
    import hashlib

    algorithm = hashlib.sha256 if length == 64 else hashlib.sha1
    return algorithm(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()


def git_blob_id(data: bytes, length: int = 40) -> str:
    """The id git gives a blob with these bytes (no process needed)."""
    return _object_id("blob", data, length)


_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_ID_IN_TEXT = re.compile(r"\b(?:[0-9a-f]{64}|[0-9a-f]{40})\b")


@dataclass(frozen=True, slots=True)
class _Object:
    oid: str
    kind: str
    data: bytes  # empty for `--batch-check`


def _cat_file(
    cwd: Path, refs: list[str], contents: bool
) -> tuple[dict[str, _Object | None], dict[str, str]]:
    """One `git cat-file --batch` (or `--batch-check`) for all `refs`: each ref -> its object,
    or None when git has no such object; and each ref git failed on -> why.

    A corrupt object can end the process or garble what follows it (its content is checked
    against its id): the refs after it are asked again in a new process, so a run costs one
    process plus one per corrupt object."""
    answers: dict[str, _Object | None] = {}
    failed: dict[str, str] = {}
    todo = list(dict.fromkeys(refs))
    mode = "--batch" if contents else "--batch-check"
    silent = ""  # why the last process that answered nothing failed
    while todo:
        try:
            proc = subprocess.run(
                ["git", "cat-file", mode],
                cwd=cwd,
                env=_env(),
                input="".join(f"{ref}\n" for ref in todo).encode("utf-8", "surrogateescape"),
                capture_output=True,
                check=False,
            )
        except OSError as exc:
            failed.update(dict.fromkeys(todo, first_line(str(exc))))
            break
        out, pos, done, why = proc.stdout, 0, 0, ""
        for ref in todo:
            end = out.find(b"\n", pos)
            if end < 0:
                why = first_line(proc.stderr) if proc.stderr.strip() else "git stopped"
                break
            header = out[pos:end].decode("utf-8", "surrogateescape")
            pos = end + 1
            if header == f"{ref} missing" or header == f"{ref} ambiguous":
                answers[ref] = None
                done += 1
                continue
            parts = header.rsplit(" ", 2)
            if len(parts) != 3 or not parts[2].isdigit():
                why = "git answered out of order (a corrupt object before it)"
                break
            oid, kind, size = parts[0], parts[1], int(parts[2])
            data = b""
            if contents:
                data = out[pos : pos + size]
                if len(data) < size or out[pos + size : pos + size + 1] != b"\n":
                    why = "corrupt: " + (
                        first_line(proc.stderr) if proc.stderr.strip() else "cut short"
                    )
                    break
                pos += size + 1
                if _FULL_ID.fullmatch(ref) and _object_id(kind, data, len(ref)) != ref:
                    why = "corrupt: its content does not match its id"
                    break
            answers[ref] = _Object(oid, kind, data)
            done += 1
        if done == len(todo):
            break
        failed[todo[done]] = why
        if not out:
            # Twice in a row git answered nothing, for the same reason: it is not about one
            # object, and asking again one ref at a time would only fail the same way.
            reason = _ID_IN_TEXT.sub("<id>", why)
            if reason == silent:
                failed.update(dict.fromkeys(todo[1:], why))
                break
            silent = reason
        todo = todo[done + 1 :]
    return answers, failed


class GitHistory:
    """Reads history with one first-parent `git log` pass and blobs in batch
    (`git cat-file --batch`). What git could not read is kept in `problems`, one sentence
    each (KB012), never raised."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self._blobs: dict[str, bytes | None] = {}
        self.unreadable: dict[str, str] = {}  # blob id -> why git could not read it
        self.problems: list[str] = []
        self._promisor_remote: str | None = None  # "" once known not to be a partial clone

    def close(self) -> None:
        """Nothing stays open between batches; kept so callers can release a reader."""

    def problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def read_blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The bytes of every blob git can read among `ids`, read in one batch; the others
        are in `unreadable` (missing or corrupt)."""
        ids = list(dict.fromkeys(ids))
        todo = [oid for oid in ids if oid not in self._blobs]
        if todo:
            todo = self._prefetch(todo)
            answers, failed = _cat_file(self.repo.toplevel, todo, contents=True)
            for oid in todo:
                found = answers.get(oid)
                if oid in failed:
                    self.unreadable[oid] = failed[oid]
                elif found is None:
                    self.unreadable[oid] = "missing"
                self._blobs[oid] = (
                    found.data if found is not None and found.kind == "blob" else None
                )
        return {oid: data for oid in ids if (data := self._blobs.get(oid)) is not None}

    def _promisor(self) -> str | None:
        """The remote a partial clone fetches missing objects from (None: not a partial
        clone)."""
        if self._promisor_remote is None:
            try:
                out = self.repo.run("config", "--get-regexp", r"^remote\..*\.promisor$")
            except GitFailed:  # no such key: not a partial clone
                out = b""
            self._promisor_remote = ""
            for line in out.decode("utf-8", "surrogateescape").splitlines():
                key, _, value = line.partition(" ")
                if value.strip().lower() in ("true", "yes", "on", "1"):
                    self._promisor_remote = key[len("remote.") : -len(".promisor")]
                    break
        return self._promisor_remote or None

    def _prefetch(self, oids: list[str]) -> list[str]:
        """In a partial clone, fetch the blobs of `oids` git does not have in one `git fetch`
        (git would fetch them one at a time); return the ids worth asking `cat-file` for.
        Those the fetch could not bring are `unreadable` at once: asking for them would make
        git try the remote again for each one."""
        remote = self._promisor()
        if remote is None:
            return oids
        try:
            out = self.repo.run(
                "cat-file", "--batch-all-objects", "--batch-check=%(objectname)", "--unordered"
            )
            present = set(out.decode().split())
        except GitFailed:
            return oids
        absent = [oid for oid in oids if oid not in present]
        if not absent:
            return oids
        try:
            _run(
                [
                    "-c",
                    "fetch.negotiationAlgorithm=noop",
                    "fetch",
                    remote,
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--recurse-submodules=no",
                    "--filter=blob:none",
                    "--stdin",
                ],
                self.repo.toplevel,
                stdin="".join(f"{oid}\n" for oid in absent).encode(),
            )
        except GitFailed as exc:
            why = f"not in this partial clone, and fetching it failed: {first_line(exc)}"
            for oid in absent:
                self.unreadable[oid] = why
                self._blobs[oid] = None
            return [oid for oid in oids if oid in present]
        return oids

    def blob(self, oid: str) -> bytes | None:
        """The bytes of one blob (callers read many with `read_blobs` first: one process)."""
        return self.read_blobs([oid]).get(oid)

    def depth(self) -> int | None:
        """How many commits a shallow clone holds: None for a whole history, 0 when git
        could not count them."""
        if not self.repo.shallow:
            return None
        try:
            return int(self.repo.run("rev-list", "--count", "HEAD").decode().strip() or 0)
        except (GitFailed, ValueError) as exc:
            self.problem(f"git could not count the commits of HEAD ({first_line(exc)})")
            return 0

    def boundary(self) -> str | None:
        """A shallow clone's oldest first-parent commit, whose parents git does not have
        (None for a whole history). Its diff lists every file as added: that is where the
        clone starts, not where the files came from."""
        if not self.repo.shallow or self.repo.head() is None:
            return None
        try:
            out = self.repo.run(
                "log",
                "--first-parent",
                "--max-parents=0",
                "--decorate-refs=refs/knowl-none",  # no ref names: only "grafted" stays
                "--format=%H%x00%D",
                "HEAD",
            )
        except GitFailed as exc:
            self.problem(f"git could not find where the shallow history starts ({first_line(exc)})")
            return None
        for line in out.decode("utf-8", "replace").splitlines():
            sha, _, decorations = line.partition("\0")
            if "grafted" in decorations.split(", "):
                return sha
        return None

    def log(
        self, pathspecs: list[str], since: str | None = None
    ) -> list[tuple[Commit, list[_Change]]] | None:
        """First-parent history of HEAD (after `since`, when given), newest first; None when
        git could not read it (`problems` says why).

        Rename detection reads the blobs of added and deleted files: when git cannot read
        one, the log is read again without renames (the replay of the semantic layer does
        not need them; only a page's own history follows renames)."""
        if self.repo.head() is None:
            return []
        span = f"{since}..HEAD" if since else "HEAD"
        base = [
            "-c",
            "log.showRoot=true",  # the first commit's files are additions, whatever the config
            "log",
            "--first-parent",
            "--no-color",
            "-z",
            "--raw",
            "--no-abbrev",
            "--format=%x01%H%x02%ct%x02%an%x02%s",
        ]
        try:
            return _parse_log(self.repo.run(*base, "-M", span, "--", *pathspecs), self.repo.prefix)
        except GitFailed as exc:
            renames = exc
        try:
            entries = _parse_log(
                self.repo.run(*base, "--no-renames", span, "--", *pathspecs), self.repo.prefix
            )
        except GitFailed as exc:
            self.problem(
                f"git log failed ({first_line(exc)}); the history rules go on without history"
            )
            return None
        self.problem(_rename_problem(renames, entries))
        return entries

    def first_parent_chain(self) -> list[str]:
        """HEAD and its first-parent ancestors, newest first."""
        if self.repo.head() is None:
            return []
        return self.repo.run("rev-list", "--first-parent", "HEAD").decode().split()

    def reachable_from_head(self, commits: set[str]) -> dict[str, str | None]:
        """Each (possibly abbreviated) commit id -> its full id if reachable from HEAD, else
        None. A commit whose answer is unknown is left out: git failed on it, or the clone is
        shallow and the commit may lie before its oldest commit."""
        refs = {ref: f"{ref}^{{commit}}" for ref in commits}
        answers, failed = _cat_file(self.repo.toplevel, sorted(refs.values()), contents=False)
        resolved: dict[str, str | None] = {}
        for ref, name in sorted(refs.items()):
            if name in failed:
                self.problem(f"git could not read commit {ref} ({failed[name]})")
                continue
            found = answers.get(name)
            resolved[ref] = found.oid if found is not None else None
        reachable: set[str] = set()
        if any(resolved.values()) and self.repo.head() is not None:
            try:
                reachable = set(self.repo.run("rev-list", "HEAD").decode().split())
            except GitFailed as exc:
                self.problem(
                    f"git rev-list HEAD failed ({first_line(exc)}); source_commit is not checked"
                )
                return {}
        result: dict[str, str | None] = {}
        for ref, sha in resolved.items():
            if sha is not None and sha in reachable:
                result[ref] = sha
            elif not self.repo.shallow:
                result[ref] = None
        return result

    def head_paths_differ(self, pairs: set[tuple[str, str]], root: Path) -> set[tuple[str, str]]:
        """(commit, repo-relative path) pairs whose file changed since `commit` (HEAD or the
        working tree differs, or the path is gone).

        One `git diff-tree --stdin` compares each commit's tree with HEAD's, and lists HEAD's
        blob ids against the empty tree: it reads trees only, so a blob git does not have
        (a partial clone, a lost object) is never taken for a changed file. When git fails,
        no pair is claimed changed and `problems` says why."""
        head = self.repo.head()
        if not pairs or head is None:
            return set()
        commits = sorted({commit for commit, _ in pairs})
        paths = sorted({path for _, path in pairs})
        try:
            tree = self.repo.run("rev-parse", "--verify", "-q", "HEAD^{tree}").decode().strip()
            lines = [f"{commit} {head}\n" for commit in commits]
            lines.append(f"{_object_id('tree', b'', len(head))} {tree}\n")
            out = _run(
                ["diff-tree", "-r", "-z", "--no-renames", "--stdin", "--"]
                + [f":(literal){path}" for path in paths],
                self.repo.toplevel,
                stdin="".join(lines).encode(),
            )
        except GitFailed as exc:
            self.problem(
                f"git could not compare affected_paths with their source_commit "
                f"({first_line(exc)}); affected paths are not checked"
            )
            return set()
        differ: dict[str, set[str]] = {}  # commit (or the tree pair) -> paths that differ
        head_blobs: dict[str, str] = {}  # path at HEAD -> blob id
        section = ""
        tokens = out.decode("utf-8", "surrogateescape").split("\0")
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if not token.startswith(":") and "\n" in token:  # "<tree> <tree>\n:<meta>"
                section, _, token = token.partition("\n")
            if token.startswith(":") and i + 1 < len(tokens):
                path = tokens[i + 1]
                if " " in section:
                    head_blobs[path] = token[1:].split()[3]
                else:
                    differ.setdefault(section, set()).add(path)
                i += 2
                continue
            if token.strip():
                section = token.strip()
            i += 1

        def under(changed: set[str], path: str) -> bool:
            folder = path.rstrip("/") + "/"
            return path in changed or any(p.startswith(folder) for p in changed)

        result: set[tuple[str, str]] = set()
        for commit, path in pairs:
            try:
                worktree: str | None = git_blob_id((root / path).read_bytes(), len(head))
            except OSError:
                worktree = None
            if (
                worktree is None
                or under(differ.get(commit, set()), path)
                or head_blobs.get(path) != worktree
            ):
                result.add((commit, path))
        return result


def _rename_problem(error: GitFailed, entries: list[tuple[Commit, list[_Change]]]) -> str:
    """KB012's sentence when rename detection failed: the blob it could not read, where."""
    found = _ID_IN_TEXT.search(str(error))
    if found is not None:
        oid = found.group(0)
        for commit, changes in entries:
            for change in changes:
                if change.blob == oid and change.new:
                    where = f"{change.new} in commit {commit.sha[:12]}"
                elif change.old_blob == oid and change.old:
                    where = f"{change.old} before commit {commit.sha[:12]}"
                else:
                    continue
                return (
                    f"git could not read blob {oid} ({where}) to detect renames; page "
                    "history does not follow renames in this run"
                )
    return (
        f"git log could not detect renames ({first_line(error)}); page history does not "
        "follow renames in this run"
    )


def history_pathspecs(
    knowledge_dir: str, semantics_dir: str, dbt_folders: tuple[str, ...] | None
) -> list[str]:
    """What the history rules read from git: pages, semantic YAML, the dbt project's model
    YAML. Nothing else (a seed CSV, an image) is listed, so rename detection never reads it."""
    specs = [f":(glob){_glob(knowledge_dir)}/**/*.md"]
    folders = [semantics_dir, *(dbt_folders or ())]
    for folder in dict.fromkeys(folders):
        where = "" if folder in ("", ".") else f"{_glob(folder)}/"
        specs += [f":(glob){where}**/*.yaml", f":(glob){where}**/*.yml"]
    return specs


def _glob(path: str) -> str:
    return re.sub(r"([*?\[\\])", r"\\\1", path.strip("/"))


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


def checkout_at(repo: GitRepo, commit: str, paths: list[str], target: Path) -> Path:
    """The project as it was at `commit`, with its git history, in `target`: a clone that
    borrows this repository's objects (nothing is copied and nothing in this repository is
    written), with only the project's `paths` checked out. Returns the project's folder
    in the clone."""
    _run(
        ["clone", "--quiet", "--shared", "--no-checkout", "--", str(repo.toplevel), str(target)],
        target.parent,
    )
    patterns = [f"/{repo.prefix}{path.strip('/')}" for path in paths]
    _run(["sparse-checkout", "set", "--no-cone", "--", *patterns], target)
    _run(["checkout", "--quiet", "--detach", commit, "--"], target)
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
        out = repo.run(*base, "--follow", "-M", "HEAD", "--", path)
    except GitFailed as exc:
        try:
            out = repo.run(*base, "--no-renames", "HEAD", "--", path)
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


def page_versions(repo: GitRepo, path: str) -> list[Version]:
    """Every committed version of the file at `path` git can read, newest first, following
    renames (`page_history` also says what it could not read)."""
    return page_history(repo, path)[0]


def export_tree(repo: GitRepo, rev: str, paths: list[str], target: Path) -> None:
    """Write the project's `paths` as they were at `rev` into `target` (one `git archive`).

    A member the `data` filter refuses is left out, the rest is written: a committed symlink
    that leads out of `target` (an absolute one, `../../..`) is, at `rev`, no file at all,
    exactly as a link leaving the project is no page in the working tree."""
    import io
    import tarfile

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
    data = repo.run("archive", "--format=tar", tree, "--", *present)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(target, filter=data_or_nothing)


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
