"""knowl-build: a git-native static knowledge compiler."""

from __future__ import annotations

__version__ = "0.1.0"
