"""Renderers of findings: text, json, github, sarif. Each returns the text for stdout."""

from __future__ import annotations
