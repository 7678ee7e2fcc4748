"""One page's bytes to a ParsedPage: decoding, frontmatter, fields, body, and the rules that
need nothing but the page itself (field types, secrets, sizes), so the result is cacheable by
the page's content."""

from __future__ import annotations

from knowl_build.config import SecurityConfig
from knowl_build.diagnostics import Finding
from knowl_build.model import Fields, Located, ParsedPage, Span, TextIndex
from knowl_build.parse.body import FM_SUPPRESSION, scan_body, suppression
from knowl_build.parse.frontmatter import split
from knowl_build.parse.text import decode
from knowl_build.parse.yamlnodes import YamlProblem, YMap, compose, json_safe, plain
from knowl_build.rules import fields as field_rules
from knowl_build.rules import security


def not_text(kind: str) -> ParsedPage:
    return ParsedPage(
        frontmatter={},
        fields=Fields(),
        body_offset=0,
        links=(),
        directives=(),
        headings=(),
        h1=None,
        findings=(Finding("KB007", 1, 1, f"{kind} is not UTF-8 text"),),
        text_ok=False,
    )


def parse_page(data: bytes, config: SecurityConfig, scanner: security.SecretScanner) -> ParsedPage:
    text = decode(data)
    if text is None:
        return not_text("page")
    index = TextIndex(text)
    parts = split(text)
    findings: list[Finding] = []
    fields = Fields()
    frontmatter: dict[str, object] = {}

    if parts.unclosed:
        findings.append(
            Finding(
                "KB001",
                1,
                1,
                "frontmatter fence '---' is never closed",
                "add a line '---' after the frontmatter",
            )
        )
    elif parts.frontmatter is not None:
        fm_offset = parts.fm_offset

        def locate(start: int, end: int) -> Span:
            line, column = index.position(fm_offset + start)
            end_line, end_column = index.position(fm_offset + max(start, end - 1))
            return Span(line, column, end_line, end_column)

        try:
            composed = compose(parts.frontmatter)
        except YamlProblem as problem:
            line, column = index.position(fm_offset + min(problem.offset, len(parts.frontmatter)))
            findings.append(Finding("KB001", line, column, f"frontmatter is {problem.message}"))
            findings.extend(security.check_unparsed(parts.frontmatter, locate, config, scanner))
        else:
            root = composed.root
            # Comments hold no data but are committed with the file: scanned whatever the
            # frontmatter holds (a mapping, another value that is KB001, or only comments).
            findings.extend(
                security.check_comments(root, parts.frontmatter, locate, config, scanner)
            )
            if root is not None and not isinstance(root, YMap):
                span = locate(root.start, root.end)
                findings.append(
                    Finding(
                        "KB001",
                        span.line,
                        span.column,
                        "frontmatter is not a mapping of keys to values",
                    )
                )
            elif isinstance(root, YMap):
                for duplicate in composed.duplicates:
                    span = locate(duplicate.start, duplicate.end)
                    findings.append(
                        Finding(
                            "KB001",
                            span.line,
                            span.column,
                            f"'{duplicate.value}' is given twice in frontmatter",
                            "keep one of the two",
                            span.end_line,
                            span.end_column,
                        )
                    )
                fields, field_findings, key_spans = field_rules.validate_fields(root, locate)
                findings.extend(field_findings)
                findings.extend(
                    security.check_frontmatter(
                        root, parts.frontmatter, locate, key_spans, config, scanner
                    )
                )
                source = None
                if fields.source is not None and "source:value" in fields.anchors:
                    source = Located(fields.source, fields.anchors["source:value"])
                findings.extend(security.check_paths(fields.affected_paths, source, config))
                frontmatter = json_safe(plain(root))

    findings.extend(security.check_body(text, parts.body_offset, index, config, scanner))
    scan = scan_body(text, parts.body_offset, index)
    suppressions = list(scan.suppressions)
    if parts.frontmatter is not None and "knowl:" in parts.frontmatter:
        suppressions[:0] = [
            suppression(match, parts.fm_offset, index, frontmatter=True)
            for match in FM_SUPPRESSION.finditer(parts.frontmatter)
        ]
    return ParsedPage(
        frontmatter=frontmatter,
        fields=fields,
        body_offset=parts.body_offset,
        links=scan.links,
        directives=scan.directives,
        headings=scan.headings,
        h1=scan.h1,
        findings=tuple(sorted(findings, key=lambda f: (f.line, f.column, f.code))),
        suppressions=tuple(suppressions),
    )
