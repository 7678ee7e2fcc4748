"""Security rules (SPEC 9): secrets (KB401), sensitive paths (KB402), sizes (KB403).

Findings name the kind of secret and where it is, never the matched text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase

from knowl_build.config import SecurityConfig
from knowl_build.diagnostics import Finding
from knowl_build.model import Located, Span, TextIndex
from knowl_build.parse.yamlnodes import YMap, YNode, YScalar, YSeq, key_text

Locate = Callable[[int, int], Span]

# (kind, regular expression), in priority order: at one position the first kind wins.
_KINDS: tuple[tuple[str, str], ...] = (
    ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("URL with credentials", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
    ("OpenAI-style API key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("AWS access key id", r"\bAKIA[0-9A-Z]{16}"),
    ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}"),
    ("Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    (
        "named secret",
        r"(?i:\b(?:bearer|api[_-]?key|access[_-]?token|secret|password)\b\s*[:=]?\s*[A-Za-z0-9_\-./+=]{16,})",
    ),
    ("high-entropy string", r"\b[A-Za-z0-9_-]{32,}\b"),
)
_HIGH_ENTROPY = len(_KINDS) - 1
_HEX = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_DIGIT = re.compile(r"[0-9]")
# A cheap test first: most values and bodies hold nothing that could start a secret.
_MAYBE = re.compile(r"-----BEGIN|://|sk-|AKIA|gh[pousr]_|xox|[A-Za-z0-9_\-./+=]{16,}")


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    start: int
    end: int


def _high_entropy(word: str) -> bool:
    return bool(
        _LOWER.search(word)
        and _UPPER.search(word)
        and _DIGIT.search(word)
        and not _HEX.fullmatch(word)
        and not _UUID.fullmatch(word)
    )


class SecretScanner:
    """Every secret kind in one regular expression, scanned once per text."""

    def __init__(self, extra_patterns: tuple[str, ...] = ()) -> None:
        kinds = list(_KINDS)
        if extra_patterns:
            extra = "|".join(re.escape(p) for p in extra_patterns)
            kinds.append(("configured secret pattern", f"(?i:{extra})"))
        self.kinds = [kind for kind, _ in kinds]
        self.pattern = re.compile("|".join(f"(?P<k{i}>{rx})" for i, (_, rx) in enumerate(kinds)))
        self.has_extra = bool(extra_patterns)

    def scan(self, text: str) -> list[SecretMatch]:
        """Every secret in `text`, one match per place (the leftmost, then by priority)."""
        if not self.has_extra and not _MAYBE.search(text):
            return []
        matches: list[SecretMatch] = []
        pos = 0
        search = self.pattern.search
        while True:
            m = search(text, pos)
            if m is None:
                return matches
            index = int(str(m.lastgroup)[1:])
            if index == _HIGH_ENTROPY and not _high_entropy(m.group(0)):
                pos = m.start() + 1  # not a secret; a token may still start inside it
                continue
            matches.append(SecretMatch(self.kinds[index], m.start(), m.end()))
            pos = m.end()


_SECRET_HINT = "remove the value from the page (and rotate it); knowl never prints it"


def _finding(code: str, span: Span, message: str, hint: str | None = None) -> Finding:
    return Finding(code, span.line, span.column, message, hint, span.end_line, span.end_column)


def _strings(node: YNode, key: str) -> Iterator[tuple[str, YScalar]]:
    """Every string value below `node` with the dotted key of the mapping that holds it."""
    if isinstance(node, YScalar):
        if isinstance(node.value, str):
            yield key, node
    elif isinstance(node, YSeq):
        for item in node.items:
            yield from _strings(item, key)
    else:
        for k, value in node.items:
            yield from _strings(value, f"{key}.{key_text(k)}" if key else key_text(k))


def check_frontmatter(
    root: YMap,
    fm_text: str,
    locate: Locate,
    key_spans: dict[str, Span],
    config: SecurityConfig,
    scanner: SecretScanner,
) -> list[Finding]:
    findings: list[Finding] = []
    for key, node in _strings(root, ""):
        value: str = node.value
        if len(value) > config.max_field_chars:
            findings.append(
                _finding(
                    "KB403",
                    key_spans.get(key) or locate(node.start, node.end),
                    f"'{key}' is {len(value)} characters long, more than max_field_chars ({config.max_field_chars})",
                )
            )
        if not config.reject_secrets:
            continue
        # Search the source text of the value first, so the position is exact; escapes or
        # folding can hide a secret from the source text, then the value start is used.
        raw = fm_text[node.start : node.end]
        hits = scanner.scan(raw)
        if hits:
            for hit in hits:
                findings.append(
                    _finding(
                        "KB401",
                        locate(node.start + hit.start, node.start + hit.end),
                        f"'{key}' holds a secret ({hit.kind})",
                        _SECRET_HINT,
                    )
                )
        else:
            for hit in scanner.scan(value):
                findings.append(
                    _finding(
                        "KB401",
                        locate(node.start, node.end),
                        f"'{key}' holds a secret ({hit.kind})",
                        _SECRET_HINT,
                    )
                )
    return findings


def check_body(
    text: str, body_offset: int, index: TextIndex, config: SecurityConfig, scanner: SecretScanner
) -> list[Finding]:
    findings: list[Finding] = []
    body_chars = len(text) - body_offset
    if body_chars > config.max_body_chars:
        findings.append(
            Finding(
                "KB403",
                1,
                1,
                f"body is {body_chars} characters long, more than max_body_chars ({config.max_body_chars})",
            )
        )
    if config.reject_secrets:
        for hit in scanner.scan(text[body_offset:] if body_offset else text):
            line, column = index.position(body_offset + hit.start)
            end_line, end_column = index.position(body_offset + hit.end - 1)
            findings.append(
                Finding(
                    "KB401",
                    line,
                    column,
                    f"body holds a secret ({hit.kind})",
                    _SECRET_HINT,
                    end_line,
                    end_column,
                )
            )
    return findings


_ALLOWED_SUFFIXES = (".example", ".sample", ".template", ".dist")
_SENSITIVE_GLOBS = (
    ".env",
    ".env.*",
    "*credential*",
    "*secret*",
    "id_rsa",
    "id_rsa.pub",
    "*.pem",
    "*.p12",
    "*.pfx",
    "*.key",
)


def _base_name(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def is_sensitive_path(path: str) -> bool:
    name = _base_name(path).lower()
    if not name or name.endswith(_ALLOWED_SUFFIXES):
        return False
    return any(fnmatchcase(name, glob) for glob in _SENSITIVE_GLOBS)


def check_paths(
    affected: tuple[Located, ...], source: Located | None, config: SecurityConfig
) -> list[Finding]:
    if not config.reject_secrets:
        return []
    findings: list[Finding] = []
    for item, field in [(a, "affected_paths") for a in affected] + (
        [(source, "source")] if source is not None else []
    ):
        if is_sensitive_path(item.value):
            findings.append(
                _finding(
                    "KB402",
                    item.span,
                    f"'{field}' names a sensitive file '{_base_name(item.value)}'",
                    "knowledge must not point at credentials; use a .example file if one exists",
                )
            )
    return findings
