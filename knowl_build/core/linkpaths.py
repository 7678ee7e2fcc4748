"""Markdown link destinations as paths: what `[text](dest)` names, before any page is looked up.

Pure string work, shared by the body scan (what a destination is), the resolution of links
(`resolve.PageIndex.resolve_link`) and `knowl fix` (`writes.relink` rewrites a destination):

- a destination with a scheme (`https:`, `mailto:`, `tel:`, ...) or a protocol-relative one
  (`//host/x`) is no path: only http(s) destinations are kept, as URLs;
- anything else is a path and a `#fragment` (a `?query` is dropped), `%`-decoded;
- a relative path is relative to the linking page's file; a site-absolute one (`/a/b/`) is
  relative to `[links] site_root`, with pretty URLs (`/a/b/` is `a/b.md`, `a/b/index.md` or
  `a/b/_index.md`);
- `#fragment` names a heading by its GitHub-style slug (`github_slugs`).
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import unquote

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
HTTP_SCHEMES = ("http", "https")
# The forms of a Markdown destination (`classify`).
PATH = "path"
URL = "url"
OTHER = "other"
# What a page's own heading is called when `[x](#local)` names it, and pages' suffix.
PAGE_SUFFIX = ".md"
PRETTY_INDEXES = ("index.md", "_index.md")


def classify(destination: str) -> str:
    """PATH, URL (http or https) or OTHER (another scheme, `//host`, or nothing at all)."""
    if not destination or destination.startswith("//"):
        return OTHER
    match = _SCHEME.match(destination)
    if match is None:
        return PATH
    return URL if match.group(0)[:-1].lower() in HTTP_SCHEMES else OTHER


def split_path(destination: str) -> tuple[str, str | None]:
    """A path destination's path and fragment, both `%`-decoded (`a%20b.md#x` -> `a b.md`,
    `x`); the fragment is None without `#`, and a `?query` is dropped."""
    path, hash_mark, fragment = destination.partition("#")
    path = path.partition("?")[0]
    return unquote(path), unquote(fragment) if hash_mark else None


def leaves(path: str) -> bool:
    """True when a normalised project-relative path lies outside the project."""
    return path == ".." or path.startswith("../") or path.startswith("/")


def relative_path(page_path: str, target: str) -> str:
    """`target` relative to the folder of the page at `page_path` (both project-relative),
    normalised: `..` segments folded, so a path outside the project starts with `../`."""
    folder = posixpath.dirname(page_path)
    joined = posixpath.normpath(posixpath.join(folder, target)) if target else folder
    return "" if joined == "." else joined


def site_path(site_root: str, target: str) -> str:
    """A site-absolute `target` (`/guide/setup/`) as a project-relative path under
    `site_root` ("" for the project root), normalised like `relative_path`."""
    inner = target.lstrip("/")
    joined = posixpath.normpath(posixpath.join(site_root or ".", inner)) if inner else site_root
    return "" if joined in (".", "") else joined


def forms(path: str, target: str, *, pretty: bool) -> list[str]:
    """The files a path may name, in the order they are tried. A path with a file extension
    names itself; one ending in `/` (or naming a folder) its pretty-URL pages `a/b.md`,
    `a/b/index.md`, `a/b/_index.md`; one without an extension itself (a file such as
    `LICENSE`), then the page `path.md` (as GitHub wikis and Hugo link), then the pretty
    forms when `pretty` (site-absolute targets)."""
    folder_like = target.endswith("/") or target in ("", ".", "..") or target.endswith("/.")
    if folder_like:
        if not path:
            return [f"{name}" for name in PRETTY_INDEXES]
        return [f"{path}{PAGE_SUFFIX}", *(f"{path}/{name}" for name in PRETTY_INDEXES)]
    if posixpath.splitext(posixpath.basename(path))[1]:
        return [path]
    found = [path, f"{path}{PAGE_SUFFIX}"]
    if pretty:
        found += [f"{path}/{name}" for name in PRETTY_INDEXES]
    return found


# --- heading slugs ---------------------------------------------------------------------------


def _github_slug(text: str) -> str:
    """github-slugger's slug: lower case; every character that is not a letter, a mark, a
    number, a connector (`_`), `-` or a space removed; each space a `-`."""
    kept = [
        char
        for char in text.lower()
        if char in "- " or unicodedata.category(char)[0] in "LMN" or char == "_"
    ]
    return "".join(kept).replace(" ", "-")


_NOT_WORD = re.compile(r"[^\w\s-]")
_RUNS = re.compile(r"[-\s]+")


def _toc_slug(text: str) -> str:
    """Python-Markdown's `toc` slug (MkDocs): word characters kept, runs of spaces and `-` as
    one `-`."""
    return _RUNS.sub("-", _NOT_WORD.sub("", text).strip().lower())


def github_slugs(headings: Iterable[str]) -> frozenset[str]:
    """Every fragment that names one of `headings` (their texts, markup removed, in page
    order): GitHub's slugs, a repeated one numbered as GitHub numbers it (`x`, `x-1`, ...),
    and MkDocs' (`toc`) slugs, numbered `x_1` as it does."""
    return heading_slugs((text, None) for text in headings)


def heading_slugs(headings: Iterable[tuple[str, str | None]]) -> frozenset[str]:
    """`github_slugs` of headings given as (text, explicit id): a heading with an explicit id
    (`## Links { #custom-links }`) is named by that id instead of a slug, as MkDocs and Hugo
    name it, and takes no slug's number."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    toc_seen: dict[str, int] = {}
    for text, anchor in headings:
        if anchor is not None:
            found.add(anchor)
            continue
        base = _github_slug(text)
        slug = base
        while slug in seen:
            seen[base] += 1
            slug = f"{base}-{seen[base]}"
        seen.setdefault(slug, 0)
        found.add(slug)
        toc = _toc_slug(text)
        count = toc_seen.get(toc, 0)
        toc_seen[toc] = count + 1
        found.add(toc if count == 0 else f"{toc}_{count}")
    return frozenset(found)


# --- where a path destination leads -----------------------------------------------------------

# What a path destination names (`locate`).
PAGE = "page"
FILE = "file"  # a file or folder that is no page, inside the project
OUTSIDE = "outside"  # a path that leaves the project (KB008)
INTERNAL = "internal"  # a path into `.git/` or `.knowl/`: no file of the project (KB008)
MISSING = "missing"
UNCHECKED = "unchecked"  # site-absolute without `[links] site_root`


def _nothing(path: str) -> str:
    return MISSING


@dataclass(frozen=True, slots=True)
class LinkSettings:
    """What resolving Markdown paths needs besides the pages: whether a project-relative
    path that is no page is a file or folder of the project (FILE), leaves it (OUTSIDE) or
    is not there (MISSING); `[links] site_root` and `[links] exclude`."""

    exists: Callable[[str], str] = _nothing
    site_root: str | None = None
    exclude: tuple[str, ...] = ()
    # What `exists` answered for paths it looked up on disk (the check memo compares them).
    asked: dict[str, str] = field(default_factory=dict)


class Located(NamedTuple):
    kind: str
    path: str = ""  # the page's or file's project-relative path


def locate(
    page_path: str,
    target: str,
    pages: Container[str],
    exists: Callable[[str], str],
    site_root: str | None,
) -> Located:
    """What a Markdown link's path `target` (decoded, not empty) in the page at `page_path`
    names: a page (its path in `pages`), a file (`exists(path)` says FILE, OUTSIDE or
    MISSING for a project-relative path that is no page), or nothing. Relative targets are
    relative to the page's folder; site-absolute ones (`/a/b/`) to `site_root`, or
    UNCHECKED without one."""
    if target.startswith("/"):
        if site_root is None:
            return Located(UNCHECKED)
        path, pretty = site_path(site_root, target), True
    else:
        path, pretty = relative_path(page_path, target), False
    if leaves(path):
        return Located(OUTSIDE, path)
    candidates = forms(path, target, pretty=pretty)
    for candidate in candidates:
        if candidate in pages:
            return Located(PAGE, candidate)
    for candidate in dict.fromkeys([*candidates, path]):
        found = exists(candidate)
        if found != MISSING:
            return Located(found, candidate)
    return Located(MISSING, path)


# --- [links] exclude ----------------------------------------------------------------------------

MAX_EXCLUDE_PATTERNS = 256
MAX_PATTERN_CHARS = 1000
# Of a destination, the part an exclude pattern is matched against: a bound on the work of
# any pattern, on any page.
MAX_MATCHED_CHARS = 2048


def exclude_problem(pattern: str) -> str | None:
    """Why an `[links] exclude` pattern is refused (a one-line reason), or None. A pattern
    comes from a configuration a pull request may change, so besides compiling it must not
    nest a repetition of a variable count in another (`(a+)+`, `(a|a*)*`, `(.*a){20}`), the
    shape that makes Python's backtracking matcher take exponential time."""
    if not pattern:
        return "must not be empty"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"is longer than {MAX_PATTERN_CHARS} characters"
    try:
        parsed = _sre_parse(pattern)
    except re.error as exc:
        return f"is not a regular expression ({exc})"
    except RecursionError:
        return "nests too deeply"
    if _nested_repeat(parsed, False):
        return (
            "repeats a repetition (such as `(a+)+`), which can take exponential time; "
            "write it without the nested quantifier"
        )
    return None


def _sre_parse(pattern: str) -> Any:
    parser: Any = getattr(re, "_parser", None)
    if parser is None:  # pragma: no cover - Python before 3.11 named it sre_parse
        # optional: only where `re._parser` is missing.
        import sre_parse as parser
    return parser.parse(pattern)


_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


def _nested_repeat(items: Any, inside: bool) -> bool:
    """Whether a parsed pattern holds a repetition of a variable count (`a+`, `a*`,
    `a{1,3}`) inside a repetition of more than one (`(...)+`, `(...){2}`)."""
    for op, value in items:
        if str(op) in _REPEATS:
            low, high, body = value
            if (inside and high != low) or _nested_repeat(body, inside or high > 1):
                return True
        elif any(_nested_repeat(part, inside) for part in _parts(value)):
            return True
    return False


def _parts(value: Any) -> Iterator[Any]:
    """The sub-patterns one parsed item holds: a group's, each branch's, a lookaround's."""
    if hasattr(value, "data"):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _parts(item)


@functools.lru_cache(maxsize=256)
def exclude_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def excluded(destination: str, patterns: Iterable[str]) -> bool:
    """Whether `[links] exclude` skips a destination (as written): any pattern found in it."""
    head = destination[:MAX_MATCHED_CHARS]
    return any(exclude_regex(pattern).search(head) is not None for pattern in patterns)
