"""The HTTP server the URL check's tests ask (tests/test_url_check.py): on 127.0.0.1, on a
port of its own, one answer per path, every request recorded."""

from __future__ import annotations

import http.server
import threading
import time
from typing import Any

HUGE = 1 << 30  # the Content-Length of /huge


class Handler(http.server.BaseHTTPRequestHandler):
    """The answers the tests need, by path; `server.seen` records every request."""

    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self.answer("HEAD")

    def do_GET(self) -> None:
        self.answer("GET")

    def send(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", "0")
        self.end_headers()

    def answer(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        with self.server.lock:
            self.server.seen.append((method, path))
            count = sum(1 for _, p in self.server.seen if p == path)
        if path in FIXED:
            self.send(*FIXED[path])
        elif path == "/toggle":  # whatever the test sets
            self.send(self.server.toggle)
        elif path == "/flaky":  # 500 to the first try (its HEAD and GET), then 200
            self.send(500 if count <= 2 else 200)
        elif path == "/busy":  # 429 with Retry-After on the first request, then 200
            self.send(429, {"Retry-After": "0"}) if count == 1 else self.send(200)
        elif path == "/slow":
            time.sleep(1.0)
            self.send(200)
        elif path.startswith(("/chain/", "/forever/")):
            self.redirect_step(path)
        elif path == "/no-head":
            self.send(405) if method == "HEAD" else self.send(200)
        elif path == "/huge":
            self.huge(method)
        else:
            self.send(404)

    def redirect_step(self, path: str) -> None:
        """`/chain/N` redirects N times then answers 200; `/forever/N` redirects for ever."""
        step = int(path.rsplit("/", 1)[1])
        if path.startswith("/forever/"):
            self.send(302, {"Location": f"/forever/{step + 1}"})
        elif step == 0:
            self.send(200)
        else:
            self.send(302, {"Location": f"/chain/{step - 1}"})

    def huge(self, method: str) -> None:
        """A body of HUGE bytes, sent until the client closes (no HEAD)."""
        if method == "HEAD":
            self.send(405)
            return
        self.send(200, {"Content-Length": str(HUGE)})
        chunk = b"x" * 65536
        try:
            while self.server.sent < HUGE:
                self.wfile.write(chunk)
                with self.server.lock:
                    self.server.sent += len(chunk)
        except OSError:
            pass  # the client closed: what it should do


# The paths whose answer is always the same: (status, headers).
FIXED: dict[str, tuple[int, dict[str, str] | None]] = {
    "/ok": (200, None),
    "/missing": (404, None),
    "/gone": (410, None),
    "/login": (401, None),
    "/always-500": (503, None),
    "/busy-for-an-hour": (429, {"Retry-After": "3600"}),
    "/to-file": (302, {"Location": "file:///etc/passwd"}),
    "/to-ftp": (301, {"Location": "ftp://127.0.0.1/pub/file"}),
    "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}),
    "/loop-a": (307, {"Location": "/loop-b"}),
    "/loop-b": (308, {"Location": "/loop-a"}),
}


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str]] = []
        self.sent = 0
        self.toggle = 200

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def paths(self) -> list[str]:
        with self.lock:
            return [path for _, path in self.seen]
