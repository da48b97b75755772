"""A small Chrome DevTools Protocol client over a stdlib WebSocket, for driving Debian's headless Chromium.

Only what the browser-view tests need: launch Chromium with a private profile, attach to its
page, navigate, evaluate JavaScript (to fill forms and click like a person), wait for the next
document, record every network request, and take screenshots. No third-party packages.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """The Chromium executable on PATH, if any."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class WebSocket:
    """A minimal RFC 6455 client: masked text frames out, text frames in (pings answered)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        self.reader = self.sock.makefile("rb")
        status = self.reader.readline()
        if b" 101 " not in status:
            raise ConnectionError(f"websocket handshake refused: {status!r}")
        while self.reader.readline() not in (b"\r\n", b""):
            pass

    def _frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, text: str) -> None:
        """Send one text message."""
        self._frame(0x1, text.encode())

    def _read(self, n: int) -> bytes:
        data = self.reader.read(n)
        if data is None or len(data) < n:
            raise ConnectionError("websocket closed")
        return data

    def recv(self) -> str:
        """The next complete text message."""
        chunks: list[bytes] = []
        while True:
            first, second = self._read(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._read(8))[0]
            if second & 0x80:  # servers do not mask, but tolerate it
                mask = self._read(4)
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(length)))
            else:
                payload = self._read(length) if length else b""
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            chunks.append(payload)
            if first & 0x80:
                return b"".join(chunks).decode()

    def close(self) -> None:
        """Drop the connection."""
        with contextlib.suppress(OSError):
            self._frame(0x8, b"")
        self.sock.close()


class Browser:
    """Headless Chromium with one page under CDP control."""

    def __init__(self, executable: str, profile: Path) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                executable,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-sync",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-default-apps",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        page_url = ""
        while not page_url:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                targets = json.load(response)
            page_url = next((t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page"), "")
            if not page_url:
                time.sleep(0.1)
        self.ws = WebSocket(page_url)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Network.enable")

    # -- protocol ------------------------------------------------------------------------------
    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events received meanwhile are kept in ``events``)."""
        self.next_id += 1
        wanted = self.next_id
        self.ws.send(json.dumps({"id": wanted, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        """Run JavaScript in the page and return its (JSON-able) value."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    # -- a person's actions ----------------------------------------------------------------------
    def _mark(self) -> None:
        self.evaluate("window.__cpersonaOld = true")

    def _wait_new_document(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                fresh = self.evaluate("window.__cpersonaOld !== true && document.readyState === 'complete'")
            except RuntimeError:
                fresh = False  # the old context went away mid-call
            if fresh:
                return
            time.sleep(0.05)
        raise TimeoutError("the page did not load a new document")

    def goto(self, url: str) -> None:
        """Open ``url`` and wait until it has loaded."""
        self._mark()
        self.call("Page.navigate", url=url)
        self._wait_new_document()

    def click(self, selector: str) -> None:
        """Click the element (a link or a submit button) and wait for the page it leads to."""
        self._mark()
        found = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); "
            "if (!el) return false; el.click(); return true; })()"
        )
        if not found:
            raise AssertionError(f"nothing on {self.url()} matches {selector!r}")
        self._wait_new_document()

    def fill(self, selector: str, value: str) -> None:
        """Type ``value`` into an input or textarea (replacing what was there)."""
        ok = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return false; "
            f"el.focus(); el.value = {json.dumps(value)}; el.dispatchEvent(new Event('input', {{bubbles: true}})); "
            "return true; })()"
        )
        if not ok:
            raise AssertionError(f"nothing on {self.url()} matches {selector!r}")

    def choose(self, selector: str, value: str) -> None:
        """Pick an option in a select the way a person does (the page's script reacts to 'change')."""
        self._mark()
        ok = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return false; "
            f"el.value = {json.dumps(value)}; el.dispatchEvent(new Event('change', {{bubbles: true}})); "
            "return true; })()"
        )
        if not ok:
            raise AssertionError(f"nothing on {self.url()} matches {selector!r}")
        self._wait_new_document()

    # -- reading the page ----------------------------------------------------------------------------
    def url(self) -> str:
        """The current address."""
        return str(self.evaluate("location.href"))

    def text(self, selector: str = "body") -> str:
        """innerText of the first match ('' when none)."""
        value = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); return el ? el.innerText : ''; }})()"
        )
        return str(value or "")

    def texts(self, selector: str) -> list[str]:
        """innerText of every match."""
        return list(
            self.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.innerText)")
        )

    def attrs(self, selector: str, name: str) -> list[str]:
        """An attribute of every match."""
        return list(
            self.evaluate(
                f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.getAttribute({json.dumps(name)}))"
            )
        )

    def viewport(self, width: int, height: int = 900) -> None:
        """Lay pages out as a window ``width`` CSS pixels wide (a desktop window, not a zoomed phone:
        ``innerWidth`` stays ``width`` however wide the content, so overflow is measurable)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def overflow(self) -> dict[str, Any]:
        """The page's width against the window's (``clientWidth``: the window less its scroll bar) and the
        visible elements that stick out past the right edge (inside a ``data-scrolls`` box they may)."""
        value: dict[str, Any] = self.evaluate(
            "(() => { const w = document.documentElement.clientWidth; const out = [];"
            " for (const el of document.body.querySelectorAll('*')) {"
            "   const r = el.getBoundingClientRect();"
            "   if (r.width && r.right > w + 0.5 && !el.closest('[data-scrolls]')) {"
            "     out.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '')"
            "       + ' right=' + Math.round(r.right)); } }"
            " return {scrollWidth: document.documentElement.scrollWidth, clientWidth: w,"
            " innerWidth: window.innerWidth, outside: out.slice(0, 8)}; })()"
        )
        return value

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page, as wide as the window (the capture lays the page out without its
        scroll bar; clipping to the window's width keeps the right edge in the picture)."""
        width, height = self.evaluate(
            "[Math.max(window.innerWidth, document.documentElement.scrollWidth),"
            " Math.max(window.innerHeight, document.documentElement.scrollHeight)]"
        )
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        # A .jpg path gets a JPEG (smaller, for docs); anything else a PNG.
        shape: dict[str, Any] = (
            {"format": "jpeg", "quality": 72} if path.suffix in (".jpg", ".jpeg") else {"format": "png"}
        )
        data = self.call("Page.captureScreenshot", captureBeyondViewport=True, clip=clip, **shape)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def requested_urls(self) -> list[str]:
        """Every URL the page asked the network for since the browser started."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def close(self) -> None:
        """Close the connection and end the browser."""
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
