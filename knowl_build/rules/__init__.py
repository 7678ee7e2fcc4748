"""Rules: the registry and one module per family of checks."""

from __future__ import annotations

from knowl_build.rules.registry import RULES, RULES_BY_CODE, Rule

__all__ = ["RULES", "RULES_BY_CODE", "Rule"]
