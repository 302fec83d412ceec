"""Headless Chromium for the matrix page: a browser driven over the DevTools protocol, standard library only.

Used by ``tests/test_matrix_browser.py`` (the page opens, the table renders, a
click opens a cell's detail) and ``scripts/matrix_screenshot.py`` (the
screenshot in docs/matrix.md). No selenium, no websocket package: the
DevTools protocol is JSON over one websocket, and a client for the few
frames it needs is short. The browser runs with a fresh profile and every
network feature off (the page needs none: it is one self-contained file).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["BROWSERS", "Browser", "BrowserError", "find_browser"]

#: the programs tried, in order (Debian's package installs /usr/bin/chromium)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio",
         "--hide-scrollbars")


class BrowserError(RuntimeError):
    pass


def find_browser() -> str | None:
    """The Chromium to run: ``$GUARDSCAN_CHROMIUM``, else the first of ``BROWSERS`` on PATH."""
    chosen = os.environ.get("GUARDSCAN_CHROMIUM")
    if chosen:
        return chosen
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class _Socket:
    """A websocket client: text frames out (masked, as a client must), frames in."""

    def __init__(self, url: str, timeout: float) -> None:
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BrowserError("the browser closed the DevTools connection")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise BrowserError(f"DevTools handshake refused: {status.decode(errors='replace')}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise BrowserError("the browser closed the DevTools connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:count], self.buffer[count:]
        return out

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 1 << 16:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._read(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(size)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise BrowserError("the browser closed the DevTools connection")
            if opcode in (0x9, 0xA):  # ping / pong: not for us
                continue
            message += payload
            if first & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with one page, driven over DevTools.

    ``with Browser() as b: b.open(path); b.evaluate("document.title")``.
    """

    def __init__(self, program: str | None = None, timeout: float = 60.0,
                 size: tuple[int, int] = (1400, 900)) -> None:
        found = program or find_browser()
        if found is None:
            raise BrowserError("no Chromium found (apt-get install chromium, or set "
                               "$GUARDSCAN_CHROMIUM)")
        self.program = found
        self.timeout = timeout
        self.size = size
        self.profile = tempfile.mkdtemp(prefix="guardscan-chromium-")
        self.process: subprocess.Popen[bytes] | None = None
        self.socket: _Socket | None = None
        self.counter = 0

    def __enter__(self) -> Self:
        self.process = subprocess.Popen(
            [self.program, *FLAGS, f"--user-data-dir={self.profile}",
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--window-size={self.size[0]},{self.size[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                            timeout=5) as response:
                    pages = [t for t in json.load(response) if t.get("type") == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise BrowserError("Chromium started but shows no page")
            time.sleep(0.1)
        self.socket = _Socket(pages[0]["webSocketDebuggerUrl"], self.timeout)
        self.call("Page.enable")
        self.call("Runtime.enable")
        return self

    def _port(self) -> int:
        marker = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise BrowserError(f"Chromium exited at start (status {self.process.returncode})")
            try:
                text = marker.read_text().split()
                if text:
                    return int(text[0])
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise BrowserError("Chromium did not open its DevTools port")

    def __exit__(self, *exc: object) -> None:
        if self.socket is not None:
            self.socket.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its ``result`` (events that arrive meanwhile
        are dropped)."""
        assert self.socket is not None
        self.counter += 1
        number = self.counter
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.receive())
            if message.get("id") == number:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error'].get('message')}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable);
        a thrown exception is a BrowserError."""
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"script failed: {text}")
        return answer.get("result", {}).get("value")

    def open(self, path: Path, fragment: str = "") -> None:
        """Load a local file and wait until its script has run (``data-ready``)."""
        url = path.resolve().as_uri() + (f"#{fragment}" if fragment else "")
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            state = self.evaluate("document.readyState + ':' + "
                                  "(document.body && document.body.getAttribute('data-ready'))")
            if state == "complete:1":
                return
            time.sleep(0.05)
        raise BrowserError(f"{url} did not finish loading")

    def screenshot(self, out: Path) -> None:
        """A PNG of the viewport."""
        data = self.call("Page.captureScreenshot", format="png")["data"]
        out.write_bytes(base64.b64decode(data))
