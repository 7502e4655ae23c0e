"""Headless Chromium driven over the DevTools protocol (a small standard-library websocket client
on 127.0.0.1, no extra dependency): a page opened at a window width, measured (document width,
console errors, requests beyond the page, where the headline is drawn) and photographed.

Used by the screenshot command (``reteco.workbench.commands.screenshots``) and the page's browser test.
Debian's ``chromium`` (or ``$RETECO_CHROMIUM``), started with the flags this sandbox needs.
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
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

WIDTHS = (1280, 390)


MOBILE_BELOW = 600  # narrower windows are emulated as a phone (the viewport meta tag applies)


HEIGHT = 900


CHROMIUM_ENV = "RETECO_CHROMIUM"


# Headless, and nothing that reaches the network or a profile on its own.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--mute-audio",
)


# Read in the page after it loaded: widths, and where and how the headline figure is drawn.
MEASURE = """(() => {
  const d = document.documentElement;
  const h = document.getElementById('headline-value');
  let headline = null;
  if (h) {
    const r = h.getBoundingClientRect(), s = getComputedStyle(h);
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    headline = {text: h.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                width: r.width, height: r.height, visibility: s.visibility, display: s.display,
                opacity: parseFloat(s.opacity), fontSize: parseFloat(s.fontSize),
                onTop: !!hit && (hit === h || h.contains(hit))};
  }
  return {scrollWidth: d.scrollWidth, innerWidth: window.innerWidth, innerHeight: window.innerHeight,
          headline: headline};
})()"""


class BrowserUnavailable(RuntimeError):
    """No Chromium here, or it did not start: the browser checks cannot run."""


def find_chromium() -> str | None:
    """The Chromium binary: ``$RETECO_CHROMIUM``, else ``chromium`` on PATH; None when neither exists."""
    configured = os.environ.get(CHROMIUM_ENV)
    if configured:
        return configured if Path(configured).is_file() else shutil.which(configured)
    return shutil.which("chromium")


@dataclass
class PageReport:
    """What the browser saw of one page at one width."""

    width: int
    scroll_width: int
    inner_width: int
    inner_height: int
    headline: dict | None
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL but the page itself

    def problems(self, expected_headline: str | None) -> list[str]:
        """What is wrong with the page as displayed (empty: nothing).

        ``expected_headline``: what ``#headline-value`` must read ("0.4583", or "absent" for
        "absent (a)"), drawn whole on the first screen; None for a page without a headline.
        """
        out = []
        if self.inner_width != self.width:
            out.append(f"the window is {self.inner_width} px wide, not {self.width} (the viewport tag is ignored?)")
        if self.scroll_width > self.width:
            out.append(f"the page is {self.scroll_width} px wide in a {self.width} px window")
        out += [f"console: {m}" for m in self.console_errors]
        out += [f"request: {u}" for u in self.requests]
        h = self.headline
        if expected_headline is None:
            return out
        if h is None:
            out.append("no headline figure (#headline-value)")
        else:
            if not (h["width"] > 0 and h["height"] > 0 and h["display"] != "none" and h["visibility"] == "visible"
                    and h["opacity"] > 0):  # fmt: skip
                out.append("the headline figure is not drawn")
            elif not (0 <= h["left"] <= h["right"] <= self.width and 0 <= h["top"] <= h["bottom"] <= self.inner_height):
                out.append(f"the headline figure is outside the first screen ({h['left']:.0f}..{h['right']:.0f} px)")
            elif not h["onTop"]:
                out.append("the headline figure is covered by another element")
            # A figure reads exactly so; an absent one "absent (a)", for which "absent" is expected.
            text = h["text"].strip()
            if text != expected_headline and not text.startswith(f"{expected_headline} ("):
                out.append(f"the headline reads {text!r}, not {expected_headline!r}")
        return out


class Chromium:
    """A headless Chromium on a fresh profile, one tab, driven through the DevTools protocol."""

    def __init__(self, executable: str | None = None, *, timeout: float = 60.0):
        self.executable = executable or find_chromium()
        if not self.executable:
            raise BrowserUnavailable(
                f"no Chromium found: install Debian's chromium (apt-get install -y chromium) or set {CHROMIUM_ENV}"
            )
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="reteco-chromium-")
        self._process: subprocess.Popen | None = None
        self._socket: _WebSocket | None = None
        self._next_id = 0
        self._events: list[dict] = []

    def __enter__(self) -> "Chromium":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        args = [self.executable, *FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-port=0", "about:blank"]
        try:
            self._process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        except OSError as exc:
            raise BrowserUnavailable(f"{self.executable} does not start: {exc}") from None
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.is_file() and len(port_file.read_text().split()) >= 2):
            if self._process.poll() is not None:
                tail = self._process.stderr.read().decode(errors="replace")[-400:] if self._process.stderr else ""
                raise BrowserUnavailable(f"{self.executable} exited with {self._process.returncode}: {tail}")
            if time.monotonic() > deadline:
                raise BrowserUnavailable(f"{self.executable} did not open its DevTools port in {self.timeout:.0f} s")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        # The tab Chromium opened on about:blank; its stderr is drained so it never blocks on a full pipe.
        self._drain_stderr()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as response:
            targets = json.load(response)
        page = next(t for t in targets if t.get("type") == "page")
        self._socket = _WebSocket(page["webSocketDebuggerUrl"], self.timeout)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def _drain_stderr(self) -> None:
        stream = self._process.stderr if self._process else None
        if stream is not None:
            threading.Thread(target=lambda: [None for _ in iter(lambda: stream.read(65536), b"")], daemon=True).start()

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        shutil.rmtree(self._profile, ignore_errors=True)

    def send(self, method: str, **params) -> dict:
        """One DevTools command; its result (events that arrive meanwhile are kept)."""
        if self._socket is None:
            raise BrowserUnavailable("the browser is not running")
        self._next_id += 1
        ident = self._next_id
        self._socket.send_text(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while True:
            message = json.loads(self._socket.recv_text(deadline))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            if "method" in message:
                self._events.append(message)

    def _wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self._events:
                if event["method"] == method:
                    return event
            message = json.loads(self._socket.recv_text(deadline))
            if "method" in message:
                self._events.append(message)

    def open(self, path: Path, width: int, height: int = HEIGHT) -> PageReport:
        """Load a page in a window ``width`` px wide (a phone below 600 px) and measure it."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width, height=height, deviceScaleFactor=1, mobile=width < MOBILE_BELOW,
        )  # fmt: skip
        url = Path(path).resolve().as_uri()
        self._events.clear()
        self.send("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired")
        # One frame after the load event, so layout and paint are done before measuring.
        frame = "new Promise(r => requestAnimationFrame(() => r(1)))"
        self.send("Runtime.evaluate", expression=frame, awaitPromise=True)
        value = self.send("Runtime.evaluate", expression=MEASURE, returnByValue=True)["result"]["value"]
        report = PageReport(width, value["scrollWidth"], value["innerWidth"], value["innerHeight"], value["headline"])
        for event in self._events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                words = (str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                report.console_errors.append(" ".join(words))
            elif method == "Runtime.exceptionThrown":
                report.console_errors.append(params.get("exceptionDetails", {}).get("text", "exception"))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                report.console_errors.append(f"{entry.get('text', '')} {entry.get('url', '')}".strip())
            elif method == "Network.requestWillBeSent":
                requested = params.get("request", {}).get("url", "")
                if requested != url and not requested.startswith("data:"):
                    report.requests.append(requested)
        return report

    def screenshot(self, out: Path) -> None:
        """A PNG of the whole page as loaded (its full height, at the window's width)."""
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        viewport = metrics.get("cssLayoutViewport") or metrics["layoutViewport"]
        clip = {"x": 0, "y": 0, "width": viewport["clientWidth"], "height": size["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)["data"]
        Path(out).write_bytes(base64.b64decode(data))


class _WebSocket:
    """The client side of RFC 6455, enough for DevTools on 127.0.0.1: text frames, fragments, ping."""

    def __init__(self, url: str, timeout: float):
        parts = urlsplit(url)
        self._sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self._sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self._sock.recv(4096)
            if not chunk:
                raise BrowserUnavailable("the DevTools websocket closed during the handshake")
            response += chunk
        head, rest = response.split(b"\r\n\r\n", 1)
        self._buffer = bytearray(rest)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise BrowserUnavailable(f"the DevTools websocket refused: {head.splitlines()[0].decode(errors='replace')}")

    def send_text(self, text: str) -> None:
        self._send(0x1, text.encode())

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self._sock.sendall(header + mask + masked)

    def recv_text(self, deadline: float) -> str:
        message = bytearray()
        while True:
            first, second = self._read(2, deadline)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2, deadline))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8, deadline))
            mask = self._read(4, deadline) if second & 0x80 else None
            payload = self._read(n, deadline)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise BrowserUnavailable("the browser closed the DevTools connection")
            if opcode == 0x9:
                self._send(0xA, payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()

    def _read(self, n: int, deadline: float) -> bytes:
        while len(self._buffer) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the browser did not answer in time")
            self._sock.settimeout(remaining)
            chunk = self._sock.recv(max(65536, n - len(self._buffer)))
            if not chunk:
                raise BrowserUnavailable("the DevTools websocket closed")
            self._buffer += chunk
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
