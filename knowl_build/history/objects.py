"""Git objects read in batch: one `git cat-file --batch` for many blobs, each checked against
its id, so a corrupt or missing object is named, never read as something else."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from knowl_build.history.git import GitFailed, GitRepo, first_line, git_process


def object_id(kind: str, data: bytes, length: int = 40) -> str:
    """The id git gives an object of `kind` with these bytes; `length` 64 in a SHA-256
    repository."""

    algorithm = hashlib.sha256 if length == 64 else hashlib.sha1
    return algorithm(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()


def git_blob_id(data: bytes, length: int = 40) -> str:
    """The id git gives a blob with these bytes (no process needed)."""
    return object_id("blob", data, length)


FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
ID_IN_TEXT = re.compile(r"\b(?:[0-9a-f]{64}|[0-9a-f]{40})\b")


@dataclass(frozen=True, slots=True)
class _Object:
    oid: str
    kind: str
    data: bytes  # empty for `--batch-check`


Answers = tuple[dict[str, _Object | None], dict[str, str]]


def cat_file(repo: GitRepo, refs: list[str], contents: bool) -> Answers:
    """Each of `refs` -> its object, or None when git has no such object; and each ref git
    failed on -> why (`batch_cat_file`).

    Not GitPython's persistent reader (`Git.get_object_data`): it asks for one object at a
    time and reads as many bytes as the object's header says, so a loose object whose header
    claims more bytes than it holds stalls it for good (tests/test_history_robust.py). One
    `git cat-file --batch` given all refs at once, its input closed, always ends."""
    return batch_cat_file(repo.toplevel, refs, contents)


def batch_cat_file(cwd: Path, refs: list[str], contents: bool) -> Answers:
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
            _code, out, errors = git_process(
                ["cat-file", mode],
                cwd,
                "".join(f"{ref}\n" for ref in todo).encode("utf-8", "surrogateescape"),
            )
        except GitFailed as exc:
            failed.update(dict.fromkeys(todo, first_line(str(exc))))
            break
        pos, done, why = 0, 0, ""
        for ref in todo:
            end = out.find(b"\n", pos)
            if end < 0:
                why = first_line(errors) if errors.strip() else "git stopped"
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
                    why = "corrupt: " + (first_line(errors) if errors.strip() else "cut short")
                    break
                pos += size + 1
                if FULL_ID.fullmatch(ref) and object_id(kind, data, len(ref)) != ref:
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
            reason = ID_IN_TEXT.sub("<id>", why)
            if reason == silent:
                failed.update(dict.fromkeys(todo[1:], why))
                break
            silent = reason
        todo = todo[done + 1 :]
    return answers, failed
