"""Rules: one module per family of checks, each declaring its rules beside them, and the
registry that collects the declarations."""

from __future__ import annotations

from knowl_build.rules.registry import RULES, RULES_BY_CODE, Rule

__all__ = ["RULES", "RULES_BY_CODE", "Rule"]
