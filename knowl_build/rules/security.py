"""Security rules (SPEC 9): secrets (KB401), sensitive paths (KB402), sizes (KB403).

Findings name the kind of secret and where it is, never the matched text. A KB401 finding
spans the match (`knowl_build.secrets`): inside a URL that is the credential itself, so the
column points at a parameter's value (the `X-Amz-Signature=`, `sig=` or `access_token=` before
it stays readable), at the secret part of a webhook's path, or, for a password in userinfo, at
the URL's scheme (the match runs from the scheme to the `@`, as before).

The frontmatter is scanned where it is written: each key and string value, and each YAML
comment (`# token: ghp_…` is committed with the file as much as a value is). A comment lies
outside every key and value, so nothing is reported twice.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase

from knowl_build.core.config import SecurityConfig
from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Located, Span, TextIndex
from knowl_build.parse.yamlnodes import YMap, YNode, YScalar, YSeq, as_text, key_text
from knowl_build.rules.rule import Rule

# The scanner lives apart (standard library only) so that messages can be redacted anywhere;
# the pipeline still builds it from here.
from knowl_build.secrets.patterns import URL_PARAMETER_KIND, WEBHOOK_KIND
from knowl_build.secrets.scanner import SecretScanner, redact

SECRET = Rule(
    code="KB401",
    name="secret",
    default="error",
    summary="a secret in the page",
    doc="""A private key, a URL with credentials, a named secret, a known token prefix, a
      high-entropy word or an `extra_patterns` match in a frontmatter value, a
      frontmatter key (at any depth, such as a key inside `meta`), a frontmatter comment
      (`# token: …`), the whole frontmatter when it is not valid YAML, or the body (code
      included). Inside a URL (from its `scheme://` or `www.` to whitespace, a backtick or
      one of `< > " ' ) ] |`, less trailing punctuation) only credentials where they live are
      reported: a password in the userinfo (`scheme://user:password@`, the user may be
      empty), a query or fragment parameter named like a credential (`token`, `key`,
      `secret`, `password`, `pwd`, `sig`, `signature`, `auth`, `jwt`, or a name ending
      in one, such as `access_token`, `X-Amz-Signature`, `client_secret`, `apiKey`)
      whose value has 16 characters or more and is no placeholder, the path of a Slack,
      Discord, Telegram or Teams webhook, and known token prefixes; ids and slugs in a
      URL's path and other parameters are not secrets. Public values are no high-entropy
      words (other kinds still apply to them): Subresource Integrity hashes (`sha256-`,
      `sha384-` or `sha512-` and the base64 of exactly that digest, as in `integrity="…"`),
      SVG path data (digits, `-` and path commands only), and the id after a key that holds
      public ids (`documentId`, `revisionId`, `spreadsheetId`, `presentationId`, `videoId`,
      `playlistId`, `channelId`, `youtube`; in frontmatter, YAML, JSON or attributes) or in
      Hugo's `{{< youtube ID >}}`. The message names the kind and where it is, never the
      value or the key; a credential in a URL is located at its value. With `--baseline`,
      another secret in the same place is a new finding.""",
    about_a_value=True,
)

SENSITIVE_PATH = Rule(
    code="KB402",
    name="sensitive-path",
    default="error",
    summary="a sensitive path in `affected_paths` or `source`",
    doc="""`.env`, `.env.*`, names containing `credential` or `secret`, `id_rsa`, `*.pem`,
      `*.p12`, `*.pfx`, `*.key` (names ending `.example`, `.sample`, `.template` or
      `.dist` are allowed). With `--baseline`, another path in the same place is a new
      finding.""",
    about_a_value=True,
)

TOO_LARGE = Rule(
    code="KB403",
    name="too-large",
    default="error",
    summary="a frontmatter string or the body is too long",
    doc="""A frontmatter string longer than `[security] max_field_chars` (each list item
      counted alone) or a body longer than `max_body_chars`, in characters (the line break
      that ends the file does not count).""",
)

RULES: tuple[Rule, ...] = (SECRET, SENSITIVE_PATH, TOO_LARGE)

Locate = Callable[[int, int], Span]

_SECRET_HINT = "remove the value from the page (and rotate it); knowl never prints it"
_KEY_SECRET_HINT = "rename the key (and rotate the secret it holds); knowl never prints it"
_COMMENT_SECRET_HINT = "remove it from the comment (and rotate it); knowl never prints it"
# A credential in a link: the link itself is usually wanted, without the credential.
_KIND_HINTS = {
    URL_PARAMETER_KIND: "link without the credential (drop the parameter, or share an "
    "unsigned URL) and rotate it; knowl never prints it",
    WEBHOOK_KIND: "a webhook URL is itself the credential: keep it out of the page (and "
    "rotate it); knowl never prints it",
}


def _secret_hint(kind: str) -> str:
    return _KIND_HINTS.get(kind, _SECRET_HINT)


def _finding(
    code: str, span: Span, message: str, hint: str | None = None, subject: str | None = None
) -> Finding:
    return Finding(
        code, span.line, span.column, message, hint, span.end_line, span.end_column, subject
    )


def _strings(node: YNode, key: str) -> Iterator[tuple[str, YScalar]]:
    """Every string value below `node` with the dotted key of the mapping that holds it; a
    number, date or boolean too, as the text written that a text field takes."""
    if isinstance(node, YScalar):
        if as_text(node) is not None:
            yield key, node
    elif isinstance(node, YSeq):
        for item in node.items:
            yield from _strings(item, key)
    else:
        for k, value in node.items:
            yield from _strings(value, f"{key}.{key_text(k)}" if key else key_text(k))


def _keys(node: YNode, key: str) -> Iterator[tuple[str, YScalar]]:
    """Every key below `node` with the dotted key of the mapping that holds it."""
    if isinstance(node, YSeq):
        for item in node.items:
            yield from _keys(item, key)
    elif isinstance(node, YMap):
        for k, value in node.items:
            yield key, k
            yield from _keys(value, f"{key}.{key_text(k)}" if key else key_text(k))


def _scalars(node: YNode) -> Iterator[YScalar]:
    """Every key and scalar value below `node`."""
    if isinstance(node, YScalar):
        yield node
    elif isinstance(node, YSeq):
        for item in node.items:
            yield from _scalars(item)
    else:
        for key, value in node.items:
            yield key
            yield from _scalars(value)


# A YAML comment: `#` at the start of a line or after a space or tab, to the end of the line.
# Outside keys and values (checked below) such a `#` always starts one.
_COMMENT = re.compile(r"(?:^|(?<=[ \t]))#[^\n]*", re.MULTILINE)


def _comments(root: YNode | None, fm_text: str) -> Iterator[tuple[int, str]]:
    """Each comment of the frontmatter: its offset and its text (from `#`). A `#` inside a
    key or value (a quoted string, a block scalar) is part of that scalar, not a comment."""
    if "#" not in fm_text:
        return
    spans = sorted((n.start, n.end) for n in _scalars(root)) if root is not None else []
    starts = [start for start, _ in spans]
    for match in _COMMENT.finditer(fm_text):
        at = bisect.bisect_right(starts, match.start()) - 1
        if at >= 0 and match.start() < spans[at][1]:
            continue
        yield match.start(), match.group()


def comment_spans(root: YNode | None, fm_text: str) -> list[tuple[int, int]]:
    """Where each comment of the frontmatter starts and ends: a `# knowl: disable` is a
    suppression only there, not inside a key or value (a quoted or block scalar)."""
    return [(offset, offset + len(comment)) for offset, comment in _comments(root, fm_text)]


def check_comments(
    root: YNode | None,
    fm_text: str,
    locate: Locate,
    config: SecurityConfig,
    scanner: SecretScanner,
) -> list[Finding]:
    """KB401 for secrets in the frontmatter's comments, at the start of each match."""
    if not config.reject_secrets:
        return []
    findings: list[Finding] = []
    for offset, comment in _comments(root, fm_text):
        for hit in scanner.scan(comment):
            findings.append(
                _finding(
                    SECRET.code,
                    locate(offset + hit.start, offset + hit.end),
                    f"a frontmatter comment holds a secret ({hit.kind})",
                    _KIND_HINTS.get(hit.kind, _COMMENT_SECRET_HINT),
                )
            )
    return findings


def check_unparsed(
    fm_text: str, locate: Locate, config: SecurityConfig, scanner: SecretScanner
) -> list[Finding]:
    """KB401 for frontmatter that is not valid YAML (KB001): it has no keys, values or
    comments to tell apart, and is committed all the same, so all of it is scanned."""
    if not config.reject_secrets:
        return []
    return [
        _finding(
            SECRET.code,
            locate(hit.start, hit.end),
            f"frontmatter holds a secret ({hit.kind})",
            _secret_hint(hit.kind),
        )
        for hit in scanner.scan(fm_text)
    ]


def _secrets(
    node: YScalar,
    text: str,
    fm_text: str,
    locate: Locate,
    scanner: SecretScanner,
    key: str | None = None,
) -> Iterator[tuple[Span, str]]:
    """Where each secret of a key or value is, and its kind; `key` is the key of a value (the
    scanner knows the keys whose values are public ids)."""
    # Search the source text first, so the position is exact; escapes or folding can hide a
    # secret from the source text, then the whole scalar is the place.
    hits = scanner.scan(fm_text[node.start : node.end], key)
    if hits:
        for hit in hits:
            yield locate(node.start + hit.start, node.start + hit.end), hit.kind
    else:
        for hit in scanner.scan(text, key):
            yield locate(node.start, node.end), hit.kind


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
        value = as_text(node) or ""
        # A key may itself be a secret (KB401 below): messages show the keys redacted.
        if len(value) > config.max_field_chars:
            findings.append(
                _finding(
                    TOO_LARGE.code,
                    key_spans.get(key) or locate(node.start, node.end),
                    f"'{redact(key, scanner)}' is {len(value)} characters long, more than max_field_chars ({config.max_field_chars})",
                    subject=f"{redact(key, scanner)} too long",
                )
            )
        if config.reject_secrets:
            last = key.rsplit(".", 1)[-1]
            for span, kind in _secrets(node, value, fm_text, locate, scanner, last):
                message = f"'{redact(key, scanner)}' holds a secret ({kind})"
                findings.append(_finding(SECRET.code, span, message, _secret_hint(kind)))
    if config.reject_secrets:
        for parent, key_node in _keys(root, ""):
            for span, kind in _secrets(key_node, key_text(key_node), fm_text, locate, scanner):
                where = f" in '{redact(parent, scanner)}'" if parent else ""
                findings.append(
                    _finding(
                        SECRET.code,
                        span,
                        f"a frontmatter key{where} holds a secret ({kind})",
                        _KEY_SECRET_HINT,
                    )
                )
    return findings


def check_body(
    text: str, body_offset: int, index: TextIndex, config: SecurityConfig, scanner: SecretScanner
) -> list[Finding]:
    findings: list[Finding] = []
    # The line break that ends the file is not content: `knowl store` adds it to what the
    # user gave, which may be exactly max_body_chars long.
    ending = 2 if text.endswith("\r\n") else 1 if text.endswith("\n") else 0
    body_chars = max(0, len(text) - body_offset - ending)
    if body_chars > config.max_body_chars:
        findings.append(
            Finding(
                TOO_LARGE.code,
                1,
                1,
                f"body is {body_chars} characters long, more than max_body_chars ({config.max_body_chars})",
                subject="body too long",
            )
        )
    if config.reject_secrets:
        for hit in scanner.scan(text[body_offset:] if body_offset else text):
            line, column = index.position(body_offset + hit.start)
            end_line, end_column = index.position(body_offset + hit.end - 1)
            findings.append(
                Finding(
                    SECRET.code,
                    line,
                    column,
                    f"body holds a secret ({hit.kind})",
                    _secret_hint(hit.kind),
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
                    SENSITIVE_PATH.code,
                    item.span,
                    f"'{field}' names a sensitive file '{_base_name(item.value)}'",
                    "knowledge must not point at credentials; use a .example file if one exists",
                )
            )
    return findings
