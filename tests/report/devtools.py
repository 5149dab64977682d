"""Headless Chromium driven over the DevTools protocol (``--remote-debugging-pipe``), standard
library only; started through tests/reaper.py, so it dies with pytest. Shared by the browser tests
(tests/report/test_browser.py: the report in MLflow's UI; test_first_screen.py: the report file)."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path

from ..reaper import popen
from ..stack import stop_group

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1400,1000",
]
#: why a browser test is skipped
MISSING = (
    f"Chromium not installed ({CHROMIUM}): apt-get install chromium "
    "(.ci/run --all installs it) to run the browser tests"
)


def chromium_available() -> bool:
    return os.access(CHROMIUM, os.X_OK)


class DevTools:
    """A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (fds 3 and 4):
    NUL-terminated JSON, standard library only."""

    def __init__(self, profile: Path):
        profile.mkdir(parents=True, exist_ok=True)
        to_chrome, self._out = os.pipe()
        self._in, from_chrome = os.pipe()

        def wire_fds():  # in the child: fd 3 = commands in, fd 4 = responses out
            a = fcntl.fcntl(to_chrome, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        # the launcher (tests/reaper.py) passes fds 3 and 4 on to Chromium
        self.proc = popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            preexec_fn=wire_fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome)
        os.close(from_chrome)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def _message(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._in], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(
        self,
        method: str,
        params: dict | None = None,
        *,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict:
        self._id += 1
        msg = {
            "id": self._id,
            "method": method,
            "params": params or {},
            **({"sessionId": session} if session else {}),
        }
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._message(max(0.1, deadline - time.monotonic()))
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def open_page(self) -> str:
        page = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = self.send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )["sessionId"]
        # out-of-process iframes (the artifact viewer's sandboxed report) attach as their own
        # sessions
        self.send(
            "Target.setAutoAttach",
            {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
            session=session,
        )
        self.send("Page.enable", session=session)
        return session

    def pump(self, seconds: float) -> None:
        """Collect the events Chromium sends for ``seconds`` (they only arrive while we read)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.events.append(self._message(left))
            except TimeoutError:
                return

    def iframe_sessions(self) -> list[str]:
        return [
            e["params"]["sessionId"]
            for e in self.events
            if e.get("method") == "Target.attachedToTarget"
            and e["params"]["targetInfo"]["type"] == "iframe"
        ]

    def text(self, session: str) -> str:
        r = self.send(
            "Runtime.evaluate",
            {"expression": "document.body ? document.body.innerText : ''", "returnByValue": True},
            session=session,
        )
        return r.get("result", {}).get("value") or ""

    def screenshot(self, session: str, path: Path, *, full_page: bool = False) -> None:
        params: dict = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": min(size["height"], 12000),
                    "scale": 1,
                },
            )
        path.write_bytes(
            base64.b64decode(self.send("Page.captureScreenshot", params, session=session)["data"])
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close", timeout=5)
        stop_group(self.proc, 10)
        for fd in (self._in, self._out):
            with contextlib.suppress(OSError):
                os.close(fd)
