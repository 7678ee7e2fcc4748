"""The exceptions that stop a run. Findings are values (see diagnostics.py), not these."""

from __future__ import annotations


class KnowlError(Exception):
    """Base of every error that ends a run with a one-line message and exit code 2."""

    exit_code = 2


class UsageError(KnowlError):
    """The command line asks for something that cannot be done."""


class ConfigError(KnowlError):
    """The configuration file is unreadable or invalid."""


class ArtifactError(KnowlError):
    """A build artifact is missing, corrupt or incompatible."""
