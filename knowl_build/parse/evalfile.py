"""The retrieval tests of `knowl eval` (`knowl-eval.yaml`): questions and the pages they must find.

The file comes with a pull request like any page, so it is untrusted: it is composed with
positions (no YAML tags run, aliases are bounded), every key and type is checked, and the first
problem stops the run as one line `file:line:col: problem` (exit 2). Nothing of it is printed
back but keys and page names, each through the one redaction.

    k: 5                      # optional: the default k of every question
    questions:
      - query: monthly recurring revenue
        pages: [mrr]          # each must be in the top k (PAGE: id, global:<id>, user:<o>:<id>)
        k: 3                  # optional, 1 to 100
        user: alice           # optional: answered as this user (their pages and global ones)
"""

from __future__ import annotations

from dataclasses import dataclass

from knowl_build.core.errors import UsageError
from knowl_build.core.model import TextIndex
from knowl_build.core.names import valid_user
from knowl_build.core.pageref import check_ref
from knowl_build.parse.text import decode
from knowl_build.parse.yamlnodes import YamlProblem, YMap, YNode, YScalar, YSeq, compose, key_text
from knowl_build.secrets.scanner import redact

DEFAULT_K = 5
MAX_K = 100  # the depth a rank is looked for in: a page below it has no rank
MAX_QUESTIONS = 5_000  # the YAML node bound (50,000 values) leaves room for this many
MAX_PAGES = 100
MAX_QUERY_CHARS = 1_000
MAX_FILE_BYTES = 2_000_000
TOP_KEYS = ("k", "questions")
QUESTION_KEYS = ("query", "pages", "k", "user")


@dataclass(frozen=True, slots=True)
class Question:
    query: str
    pages: tuple[str, ...]  # PAGE names as written, each at least once
    k: int
    user: str | None  # NFC, a valid user name
    line: int  # of the question's item in the file
    column: int


@dataclass(frozen=True, slots=True)
class Suite:
    path: str  # as shown in messages (project-relative)
    questions: tuple[Question, ...]


class _Problems:
    def __init__(self, label: str, text: str) -> None:
        self.label = label
        self.index = TextIndex(text)
        self.size = len(text)

    def at(self, offset: int, problem: str) -> UsageError:
        line, column = self.index.position(min(offset, self.size))
        return UsageError(f"{self.label}:{line}:{column}: {redact(problem)}")

    def where(self, node: YNode) -> tuple[int, int]:
        return self.index.position(min(node.start, self.size))


def parse_suite(data: bytes, label: str) -> Suite:
    """The questions of an eval file's bytes; UsageError (exit 2) with the position of the
    first problem."""
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{label}:1:1: the eval file is larger than {MAX_FILE_BYTES} bytes")
    text = decode(data)
    if text is None:
        raise UsageError(f"{label}:1:1: the eval file is not UTF-8 text")
    problems = _Problems(label, text)
    try:
        composed = compose(text)
    except YamlProblem as problem:
        raise problems.at(problem.offset, problem.message) from None
    if composed.duplicates:
        first = composed.duplicates[0]
        raise problems.at(first.start, f"key '{key_text(first)}' is repeated")
    root = composed.root
    if not isinstance(root, YMap):
        raise problems.at(
            0 if root is None else root.start,
            "expected a mapping with a 'questions' list (see knowl eval --help)",
        )
    top = _fields(problems, root, TOP_KEYS, "the eval file")
    default_k = _k(problems, top["k"]) if "k" in top else DEFAULT_K
    if "questions" not in top:
        raise problems.at(root.start, "'questions' is missing")
    items = top["questions"]
    if not isinstance(items, YSeq):
        raise problems.at(items.start, "'questions' must be a list")
    if not items.items:
        raise problems.at(items.start, "'questions' is empty: list at least one question")
    if len(items.items) > MAX_QUESTIONS:
        raise problems.at(items.start, f"more than {MAX_QUESTIONS} questions")
    questions = tuple(
        _question(problems, item, n, default_k) for n, item in enumerate(items.items, 1)
    )
    return Suite(label, questions)


def _fields(problems: _Problems, node: YMap, known: tuple[str, ...], what: str) -> dict[str, YNode]:
    found: dict[str, YNode] = {}
    for key, value in node.items:
        name = key_text(key)
        if name not in known:
            raise problems.at(
                key.start, f"{what}: unknown key '{name}' (expected {', '.join(known)})"
            )
        found[name] = value
    return found


def _question(problems: _Problems, node: YNode, n: int, default_k: int) -> Question:
    what = f"question {n}"
    if not isinstance(node, YMap):
        raise problems.at(node.start, f"{what}: expected a mapping with 'query' and 'pages'")
    fields = _fields(problems, node, QUESTION_KEYS, what)
    for required in ("query", "pages"):
        if required not in fields:
            raise problems.at(node.start, f"{what}: '{required}' is missing")
    query = fields["query"]
    if not (isinstance(query, YScalar) and isinstance(query.value, str) and query.value.strip()):
        raise problems.at(query.start, f"{what}: 'query' must be a non-empty string")
    if len(query.value) > MAX_QUERY_CHARS:
        raise problems.at(query.start, f"{what}: 'query' is longer than {MAX_QUERY_CHARS} chars")
    pages = _pages(problems, fields["pages"], what)
    k = _k(problems, fields["k"], what) if "k" in fields else default_k
    user = None
    if "user" in fields:
        node_user = fields["user"]
        if not (isinstance(node_user, YScalar) and isinstance(node_user.value, str)):
            raise problems.at(node_user.start, f"{what}: 'user' must be a string")
        try:
            user = valid_user(node_user.value, f"{what}: 'user'")
        except UsageError as exc:
            raise problems.at(node_user.start, str(exc)) from None
    line, column = problems.where(node)
    return Question(query.value, pages, k, user, line, column)


def _pages(problems: _Problems, node: YNode, what: str) -> tuple[str, ...]:
    if not isinstance(node, YSeq):
        raise problems.at(node.start, f"{what}: 'pages' must be a list of page names")
    if not node.items:
        raise problems.at(node.start, f"{what}: 'pages' is empty: name the pages it must find")
    if len(node.items) > MAX_PAGES:
        raise problems.at(node.start, f"{what}: 'pages' lists more than {MAX_PAGES} pages")
    pages: list[str] = []
    for item in node.items:
        if not (isinstance(item, YScalar) and isinstance(item.value, str) and item.value.strip()):
            raise problems.at(item.start, f"{what}: each page must be a non-empty string")
        try:
            check_ref(item.value)
        except UsageError as exc:
            raise problems.at(item.start, f"{what}: {exc}") from None
        if item.value not in pages:
            pages.append(item.value)
    return tuple(pages)


def _k(problems: _Problems, node: YNode, what: str = "the eval file") -> int:
    value = node.value if isinstance(node, YScalar) else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise problems.at(node.start, f"{what}: 'k' must be an integer from 1 to {MAX_K}")
    if not 1 <= value <= MAX_K:
        raise problems.at(node.start, f"{what}: 'k' must be from 1 to {MAX_K}, got {value}")
    return value
