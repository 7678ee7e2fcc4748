"""knowl-build: a git-native static knowledge compiler."""

from __future__ import annotations

__version__ = "0.3.0"

# The documentation site, defined once: SARIF's helpUri for each rule is
# f"{DOCS_URL}/rules/#{code.lower()}" (the rule's anchor on the rules page).
DOCS_URL = "https://knowl-build.readthedocs.io/en/latest"
