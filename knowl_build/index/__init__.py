"""The Whoosh full-text index: schema, analyzer, writer, and the ranking model.

Whoosh is `whoosh3` (pinned; it imports without warnings on Python 3.11-3.13, keeps the
2.7 index format and rankings); everything Whoosh-specific stays in this module.

Ranking is BM25F (Whoosh's per-field BM25, fields weighted by the boosts recorded in the
artifact) with collection statistics over the *live* documents *the caller may see* only:
the document count, each term's document frequency (deleted documents, and those in scopes
the caller may not see, are left out at query time) and the summed field lengths (kept per
scope in `index/stats.json`, written by the build). Whoosh itself counts deleted documents
until a merge, so without this an incrementally updated index would rank slightly
differently from a full build; and statistics over every scope would let one user's pages
change another user's scores. With it, both rank identically, and nothing of a user's pages
reaches anyone else's ranking.
"""
