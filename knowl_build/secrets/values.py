"""What a secret is, as opposed to where it is: the text that tells one secret from another.

A match is the secret itself for every kind but one: a token, a password in a URL, a named
secret with its value, a URL parameter's value, a webhook's path, an extra pattern. A private
key's match is its PEM header, `-----BEGIN RSA PRIVATE KEY-----`, which every key of that type
shares; the key is the block after it, so its value runs through the matching END line (or,
without one nearby, a bounded stretch after the header).
"""

from __future__ import annotations

import re

_BEGIN = "-----BEGIN "
# Possessive like PRIVATE_KEY: each character is read a bounded number of times.
_PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]++ )*+(?<= PRIVATE )KEY-----")
# A PEM block is a few kilobytes (an RSA-8192 key about 6.5 kB); the END line is looked for
# this far after the header, and without one this much of what follows is the key.
PEM_WINDOW = 65536
PEM_WITHOUT_END = 8192


def secret_end(text: str, start: int, end: int) -> int:
    """Where the secret of the match `text[start:end]` ends (see the module notes)."""
    if not text.startswith(_BEGIN, start):
        return end
    found = _PRIVATE_KEY_END.search(text, end, min(len(text), end + PEM_WINDOW))
    return found.end() if found is not None else min(len(text), end + PEM_WITHOUT_END)
