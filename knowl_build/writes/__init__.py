"""Writes: every change to knowledge is a minimal, reviewable file edit."""
