"""A rule's declaration: its code, name, default severity and user documentation.

Each rule module declares its rules next to the checks that emit them and lists them in its
`RULES`; `registry.py` collects them. Codes never change meaning and are never reused.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowl_build.core.config import Config


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule. `summary` is its line in `knowl rules`; `doc` is its user documentation
    (Markdown), read by SARIF's rule list and the docs site's rule reference.

    `about_a_value`: the rule's finding is about a value (a secret, a sensitive path) that its
    span points at, so another value in the same place is another finding: `--baseline`
    compares such findings by a keyed digest of that value too (`pipeline.baseline`)."""

    code: str
    name: str
    default: str
    summary: str
    doc: str
    about_a_value: bool = False

    def __post_init__(self) -> None:
        # A doc is written as indented triple-quoted text and read as one paragraph.
        object.__setattr__(self, "doc", " ".join(self.doc.split()))

    def severity(self, config: Config, path: str | None = None) -> str:
        """The severity of this rule's finding in `path`: as configured, else the default."""
        return config.configured(self.code, path) or self.default
