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
        if path == "/ok":
            self.send(200)
        elif path == "/toggle":  # whatever the test sets
            self.send(self.server.toggle)
        elif path == "/missing":
            self.send(404)
        elif path == "/gone":
            self.send(410)
        elif path == "/login":
            self.send(401)
        elif path == "/flaky":  # 500 to the first try (its HEAD and GET), then 200
            self.send(500 if count <= 2 else 200)
        elif path == "/always-500":
            self.send(503)
        elif path == "/busy":  # 429 with Retry-After on the first request, then 200
            self.send(429, {"Retry-After": "0"}) if count == 1 else self.send(200)
        elif path == "/busy-for-an-hour":
            self.send(429, {"Retry-After": "3600"})
        elif path == "/slow":
            time.sleep(1.0)
            self.send(200)
        elif path.startswith("/chain/"):
            left = int(path.rsplit("/", 1)[1])
            self.send(200) if left == 0 else self.send(302, {"Location": f"/chain/{left - 1}"})
        elif path == "/to-file":
            self.send(302, {"Location": "file:///etc/passwd"})
        elif path == "/to-ftp":
            self.send(301, {"Location": "ftp://127.0.0.1/pub/file"})
        elif path == "/to-metadata":
            self.send(302, {"Location": "http://169.254.169.254/latest/meta-data/"})
        elif path == "/loop-a":
            self.send(307, {"Location": "/loop-b"})
        elif path == "/loop-b":
            self.send(308, {"Location": "/loop-a"})
        elif path.startswith("/forever/"):
            step = int(path.rsplit("/", 1)[1])
            self.send(302, {"Location": f"/forever/{step + 1}"})
        elif path == "/no-head":
            self.send(405) if method == "HEAD" else self.send(200)
        elif path == "/huge":
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
        else:
            self.send(404)


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
