"""The fixed words of knowl: page field values, severities, exit codes, and the bounds the
configuration and every artifact are held to. Imports nothing, so a front end can offer them
as choices without loading the model or the diagnostics (start-up time of every command)."""

from __future__ import annotations

# The vocabularies of page fields (SPEC 2.2), for validation, options and MCP schemas alike.
USAGE_MODES = ("reference", "caveat", "policy", "definition")
PROVENANCES = ("board_approved", "human_curated", "inferred")
CATEGORIES = ("fact", "decision", "goal", "constraint", "architecture", "state", "skill")
# `draft`: written by an agent and not yet reviewed by a person (`[writes] agent_status`).
DRAFT = "draft"
STATUSES = ("active", "deprecated", "rejected", "archived", "superseded", DRAFT)
FRESHNESS = ("fresh", "needs_review", "stale")
VISIBILITIES = ("repo", "workspace")

# Finding severities, and what a rule may be set to.
SEVERITIES = ("error", "warning", "info")
SEVERITY_CHOICES = (*SEVERITIES, "off")

# Search boosts: a bound that keeps every score finite (also checked when an artifact is read).
MAX_BOOST = 1000.0
# Caveats riding along with one search: a bound every artifact is checked against too.
MAX_CAVEATS = 10_000

# Exit codes (0 clean, 1 findings, 2 usage, configuration or internal error).
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """`1 page`, `2 pages`, `1 entity`, `0 entities`: a count with its noun agreeing."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"
