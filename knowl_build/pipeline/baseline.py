"""Adopting the gate on a repository that already has findings: `--baseline REF`.

The project is checked as it was at REF (a commit, branch or tag such as `origin/main`), in a
clone that borrows the repository's objects and checks out only the project's files, with
the same configuration; a finding of the working tree is *known* when the base has the same
finding, matched by code, path and subject (`Diagnostic.identity`, the SARIF partial
fingerprint without the occurrence), so a finding whose line moved is not new. Findings are
counted, not just matched: two broken links to the same page where the base had one is one
new finding (the later one in the file).

A finding about a value (`Rule.about_a_value`: a secret, a sensitive path) is matched by that
value too, or replacing the base's AWS key with another in the same place would pass as
known: its identity also holds a keyed digest (HMAC-SHA256) of the text its span points at, in
the file at each side (`secrets.values` says how far a private key runs). The key is 32
random bytes made for one comparison, held in this process only: both sides are digested
here, nothing stores or prints a digest, so none can be checked against guesses of a short
value. A value that cannot be read back where its finding points (the file changed meanwhile,
a path redacted because it looks like a secret and no file matches it) matches nothing: that
finding is new.
"""

from __future__ import annotations

import hmac
import secrets
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.core.errors import UsageError
from knowl_build.core.model import TextIndex
from knowl_build.history.git import GitFailed, GitRepo, first_line
from knowl_build.history.pages import checkout_at
from knowl_build.parse.text import decode
from knowl_build.pipeline.cache import cache_place
from knowl_build.pipeline.check import check
from knowl_build.pipeline.discover import discover
from knowl_build.pipeline.inputs import read_file
from knowl_build.pipeline.urlcache import URL_CACHE
from knowl_build.rules.registry import RULES
from knowl_build.secrets.scanner import redact
from knowl_build.secrets.values import secret_end

PARSE_CACHE = "pages.jsonl"
VALUE_CODES = frozenset(rule.code for rule in RULES if rule.about_a_value)

# (code, path, subject, value): `Diagnostic.identity` and, for a finding about a value, the
# keyed digest of that value (else b"").
Identity = tuple[str, str, str, bytes]


def _comparison_key() -> bytes:
    return secrets.token_bytes(32)


class ValueDigests:
    """Keyed digests of what value findings point at, under a key made for one comparison
    (see the module notes). Nothing here is printed: the key and the digests stay in memory."""

    __slots__ = ("_key",)

    def __init__(self) -> None:
        self._key = _comparison_key()

    def __repr__(self) -> str:
        return "ValueDigests()"

    def identities(
        self, project: Path, config: Config, diagnostics: Sequence[Diagnostic]
    ) -> list[Identity]:
        """The identity of each of `diagnostics`, found in the project at `project`."""
        files = _Files(project, config)
        identities: list[Identity] = []
        for d in diagnostics:
            code, path, subject = d.identity
            digest = b""
            if code in VALUE_CODES:
                value = files.value(d)
                # Unreadable: a digest of nothing else's, so that it matches nothing.
                digest = (
                    hmac.digest(self._key, value.encode(), "sha256")
                    if value is not None
                    else secrets.token_bytes(32)
                )
            identities.append((code, path, subject, digest))
        return identities


class _Files:
    """The project's files as the pipeline decoded them, read once each, on demand."""

    def __init__(self, project: Path, config: Config) -> None:
        self.project = project
        self.config = config
        self.texts: dict[str, tuple[str, TextIndex] | None] = {}
        self.redacted: dict[str, str | None] | None = None  # shown path -> file, when unique

    def value(self, d: Diagnostic) -> str | None:
        """The text `d` points at (a secret through its end), or None when it is not there."""
        if d.end_line is None or d.end_column is None:
            return None
        read = self._text(d.path)
        if read is None:
            return None
        text, index = read
        start = _offset(index, d.line, d.column)
        last = _offset(index, d.end_line, d.end_column)
        if start is None or last is None or not start <= last < len(text):
            return None
        return text[start : secret_end(text, start, last + 1)]

    def _text(self, path: str) -> tuple[str, TextIndex] | None:
        if path not in self.texts:
            data, _ = read_file(str(self.project), self._file(path) or path)
            text = decode(data) if data is not None else None
            self.texts[path] = (text, TextIndex(text)) if text is not None else None
        return self.texts[path]

    def _file(self, path: str) -> str | None:
        """The file a redacted path shows (a page named like a secret), if exactly one."""
        if "[redacted]" not in path:
            return None
        if self.redacted is None:
            self.redacted = {}
            for page in discover(self.project, self.config).pages:
                shown = redact(page)
                self.redacted[shown] = None if shown in self.redacted else page
        return self.redacted.get(path)


def _offset(index: TextIndex, line: int, column: int) -> int | None:
    """The offset of a 1-based (line, column) of `index`'s text, or None past its lines."""
    if not 1 <= line <= len(index.starts) or column < 1:
        return None
    offset = index.starts[line - 1] + column - 1
    # A column past its line's end is not on that line.
    if line < len(index.starts) and offset >= index.starts[line]:
        return None
    return offset


@dataclass(frozen=True, slots=True)
class Baseline:
    ref: str  # as given
    commit: str  # what it resolved to
    findings: list[Diagnostic]
    root: Path  # the working tree whose findings `new` is given
    config: Config = field(repr=False)
    values: ValueDigests = field(repr=False)
    known: Counter[Identity] = field(repr=False)  # the base's findings, by identity

    def new(self, findings: list[Diagnostic]) -> tuple[list[Diagnostic], int]:
        """The findings that are not in the base, and how many known ones were hidden."""
        known = Counter(self.known)
        ordered = sorted(findings)
        kept: list[Diagnostic] = []
        for diagnostic, identity in zip(
            ordered, self.values.identities(self.root, self.config, ordered), strict=True
        ):
            if known[identity] > 0:
                known[identity] -= 1
                continue
            kept.append(diagnostic)
        return kept, len(findings) - len(kept)

    def to_json(self, hidden: int) -> dict[str, object]:
        return {"ref": redact(self.ref), "commit": self.commit, "hidden": hidden}


def load(root: Path, config: Config, ref: str, *, check_urls: bool = False) -> Baseline:
    """The findings of the project at `ref` (UsageError when it is not a revision here);
    `check_urls`: with the URL check's (KB110), so a URL dead in both is not new."""
    repo, commit = revision(root, ref)
    paths = project_paths(config)
    workdir = Path(tempfile.mkdtemp(prefix="knowl-baseline-"))
    try:
        try:
            project = checkout_at(repo, commit, paths, workdir / "repo")
        except GitFailed as exc:
            raise UsageError(f"--baseline: cannot check out '{ref}': {first_line(exc)}") from None
        share_parse_cache(root, project)
        base = check(project, config, check_urls=check_urls)
        # Before the checkout goes: the base's values are read from its files.
        values = ValueDigests()
        known = Counter(values.identities(project, config, base.diagnostics))
        return Baseline(ref, commit, base.diagnostics, root, config, values, known)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def revision(root: Path, ref: str) -> tuple[GitRepo, str]:
    """The repository of `root` and the commit `ref` names in it (UsageError otherwise)."""
    repo = GitRepo.find(root)
    if repo is None:
        raise UsageError("--baseline needs a git repository: it compares against a revision")
    if not ref or ref.startswith("-"):
        raise UsageError(f"--baseline: '{ref}' is not a commit, branch or tag")
    try:
        commit = repo.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}").decode().strip()
    except GitFailed:
        hint = " (a shallow checkout: fetch it first, e.g. git fetch origin main)" * repo.shallow
        raise UsageError(f"--baseline: '{ref}' is not a commit, branch or tag here{hint}") from None
    return repo, commit


def project_paths(config: Config) -> list[str]:
    """The project's files a checkout of another revision needs, relative to the project."""
    paths = [config.knowledge_dir, config.semantics_dir, "knowl.toml", "pyproject.toml"]
    if config.dbt_project_dir is not None:
        paths.append(config.dbt_project_dir or ".")
    return paths


def share_parse_cache(root: Path, project: Path) -> None:
    """Pages are cached by their content: most of the base's pages are the working tree's, so
    a copy of its parse cache spares parsing them again."""
    here = cache_place(root).folder
    if here is None:
        return
    for name in (PARSE_CACHE, URL_CACHE):  # the URL check's answers too: most URLs are shared
        if (here / name).is_file():
            there = project / ".knowl" / "cache"
            there.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(here / name, there / name)
