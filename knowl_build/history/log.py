"""The project's history in one first-parent `git log` pass, blobs in batch.

Reading history never stops a run: a git failure on one object, or of one command, is kept as
a problem (a sentence naming the object or the command, KB012) and the history rules go on
with what git could read. A shallow clone is said (KB010), and what lies before its oldest
commit is unknown, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from knowl_build.history.git import GitFailed, GitRepo, first_line, run_git
from knowl_build.history.objects import ID_IN_TEXT, cat_file, git_blob_id, object_id
from knowl_build.history.records import Commit


@dataclass(frozen=True, slots=True)
class _Change:
    status: str
    old: str  # old path ("" when added)
    new: str  # new path ("" when deleted)
    blob: str  # new blob id
    old_blob: str = ""  # old blob id (zeros when added)


# One commit of the log and the files it changed.
LogEntry = tuple[Commit, list[_Change]]


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


_REMOTE = re.compile(r'remote "(.+)"')


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
        """End GitPython's persistent process, if any (it starts again if asked)."""
        self.repo.close()

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
            answers, failed = cat_file(self.repo, todo, contents=True)
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
        clone), from the configuration GitPython reads (git is asked without GitPython)."""
        if self._promisor_remote is None:
            self._promisor_remote = ""
            for remote in self._remotes():
                value = self.repo.config_value("remote", remote, "promisor") or ""
                if value.strip().lower() in ("true", "yes", "on", "1"):
                    self._promisor_remote = remote
                    break
        return self._promisor_remote or None

    def _remotes(self) -> list[str]:
        """The remotes the configuration names, in its order."""
        if self.repo.handle is not None:
            found = (_REMOTE.fullmatch(section) for section in self.repo.config_sections())
            return [match.group(1) for match in found if match is not None]
        try:
            out = self.repo.command("config", "--get-regexp", r"^remote\..*\.promisor$")
        except GitFailed:  # no such key: not a partial clone
            return []
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        return [line.partition(" ")[0][len("remote.") : -len(".promisor")] for line in lines]

    def _prefetch(self, oids: list[str]) -> list[str]:
        """In a partial clone, fetch the blobs of `oids` git does not have in one `git fetch`
        (git would fetch them one at a time); return the ids worth asking `cat-file` for.
        Those the fetch could not bring are `unreadable` at once: asking for them would make
        git try the remote again for each one."""
        remote = self._promisor()
        if remote is None:
            return oids
        try:
            out = self.repo.command(
                "cat-file", "--batch-all-objects", "--batch-check=%(objectname)", "--unordered"
            )
            present = set(out.decode().split())
        except GitFailed:
            return oids
        absent = [oid for oid in oids if oid not in present]
        if not absent:
            return oids
        try:
            run_git(
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
            return int(self.repo.command("rev-list", "--count", "HEAD").decode().strip() or 0)
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
            out = self.repo.command(
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
            return _parse_log(
                self.repo.command(*base, "-M", span, "--", *pathspecs), self.repo.prefix
            )
        except GitFailed as exc:
            renames = exc
        try:
            entries = _parse_log(
                self.repo.command(*base, "--no-renames", span, "--", *pathspecs), self.repo.prefix
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
        return self.repo.command("rev-list", "--first-parent", "HEAD").decode().split()

    def reachable_from_head(self, commits: set[str]) -> dict[str, str | None]:
        """Each (possibly abbreviated) commit id -> its full id if reachable from HEAD, else
        None. A commit whose answer is unknown is left out: git failed on it, or the clone is
        shallow and the commit may lie before its oldest commit."""
        refs = {ref: f"{ref}^{{commit}}" for ref in commits}
        answers, failed = cat_file(self.repo, sorted(refs.values()), contents=False)
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
                reachable = set(self.repo.command("rev-list", "HEAD").decode().split())
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
            tree = self.repo.command("rev-parse", "--verify", "-q", "HEAD^{tree}").decode().strip()
            lines = [f"{commit} {head}\n" for commit in commits]
            lines.append(f"{object_id('tree', b'', len(head))} {tree}\n")
            out = run_git(
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
    found = ID_IN_TEXT.search(str(error))
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
    pages = "" if knowledge_dir in ("", ".") else f"{_glob(knowledge_dir)}/"
    specs = [f":(glob){pages}**/*.md"]
    folders = [semantics_dir, *(dbt_folders or ())]
    for folder in dict.fromkeys(folders):
        where = "" if folder in ("", ".") else f"{_glob(folder)}/"
        specs += [f":(glob){where}**/*.yaml", f":(glob){where}**/*.yml"]
    return specs


def _glob(path: str) -> str:
    return re.sub(r"([*?\[\\])", r"\\\1", path.strip("/"))
