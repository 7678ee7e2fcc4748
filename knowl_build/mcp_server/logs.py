"""The server's log on stderr: one line per event, never a box or a traceback.

The SDK logs through the standard `logging` module and, left alone, installs rich's handler
(a framed, wrapped record with the traceback drawn in it: 80 lines in a client's MCP log for
one prompt asked without its argument). Installed before the SDK's server is made, this
handler is the root's, so the SDK's own set-up (`logging.basicConfig`) leaves it in place.
An exception becomes its type and message on the same line; `-v` adds the traceback, for a
fault of knowl's. Every line is redacted and printable: requests are a client's text.
"""

from __future__ import annotations

import logging
import sys

from knowl_build.mcp_server.text import one_line
from knowl_build.secrets.scanner import redact

MAX_LINE = 2_000  # characters of one log line; a longer message is cut


class OneLine(logging.Formatter):
    def __init__(self, tracebacks: bool) -> None:
        super().__init__()
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format
            message = str(record.msg)
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message = f"{message}: {type(error).__name__}: {error}"
        line = one_line(redact(f"knowl mcp: {record.levelname.lower()}: {message}"))
        if len(line) > MAX_LINE:
            line = line[: MAX_LINE - 1] + "…"
        if self.tracebacks and record.exc_info:
            line += "\n" + redact(self.formatException(record.exc_info))
        return line


def one_line_logging(verbose: int = 0) -> None:
    """Log to stderr one line per record (INFO and above; DEBUG with -vv). A process whose
    logging is already set up (a test run's, an embedding program's) keeps its own."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine(tracebacks=verbose > 0))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
