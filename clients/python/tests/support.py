"""A real `hopper serve` for the tests and the benchmark: on a fresh SQLite file and a free
port, with or without an API key, killed (and restarted) at will."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hopper import Limits

TEST_LIMITS = Limits(error_bytes=64 << 10, reason_bytes=4 << 10, progress_message_bytes=4 << 10, error_code_len=128,
                     run_at_future=5 * 365 * 24 * 3600.0)
"""TEST_LIMITS are input limits for the unit tests, which run without a server to serve them: a
test's own values (those of a default server), not limits of the SDK."""

_bin: str | None = None


def hopper_binary() -> str:
    """hopper_binary is $HOPPER_BIN, or the hopper command built from this repository once."""
    global _bin
    if os.environ.get("HOPPER_BIN"):
        return os.environ["HOPPER_BIN"]
    if _bin is None:
        root = Path(__file__).resolve().parents[3]
        out = Path(tempfile.mkdtemp(prefix="hopper-bin-")) / "hopper"
        subprocess.run(["go", "build", "-o", str(out), "./cmd/hopper"], cwd=root, check=True)
        _bin = str(out)
        os.environ["HOPPER_BIN"] = _bin
    return _bin


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HopperServer:
    """HopperServer is one `hopper serve` process, on its own database and port."""

    def __init__(self, api_key: bool = False, args: list[str] | None = None) -> None:
        self.bin = hopper_binary()
        self.dir = tempfile.mkdtemp(prefix="hopper-py-")
        self.db = os.path.join(self.dir, "hopper.db")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = args or []
        self.api_key: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = open(os.path.join(self.dir, "serve.log"), "ab")
        if api_key:
            subprocess.run([self.bin, "migrate", "--database", self.db], check=True, capture_output=True)
            out = subprocess.run([self.bin, "keys", "create", "--database", self.db, "--name", "sdk-test", "--scope",
                                  "enqueue,work,read,admin", "--json"], check=True, capture_output=True).stdout
            self.api_key = json.loads(out)["key"]
        self.restart()

    def restart(self) -> None:
        """restart starts the server (same database, same port) and waits until it is ready."""
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--database", self.db, "--addr", f"127.0.0.1:{self.port}", "--no-echo", *self.args],
            stdout=self.log, stderr=self.log,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hopper serve exited with {self.proc.returncode}: {self.output()}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"hopper serve not ready after 20 s: {self.output()}")

    def kill(self) -> None:
        """kill ends the server at once (SIGKILL: a crash) and waits for it to exit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cli(self, *args: str) -> str:
        """cli runs a hopper command against the server's database."""
        return subprocess.run([self.bin, *args, "--database", self.db], check=True, capture_output=True).stdout.decode()

    def close(self) -> None:
        self.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def output(self) -> str:
        self.log.flush()
        return Path(self.dir, "serve.log").read_text(errors="replace")[-4000:]


_queues = 0


def queue_name(test: str) -> str:
    """queue_name is a queue no other test uses."""
    global _queues
    _queues += 1
    return f"{''.join(c if c.isalnum() else '-' for c in test)[:40]}-{os.getpid()}-{_queues}"


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 10.0) -> None:
    """eventually polls check every 20 ms until it is true, or fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def wait_for_state(c: Any, id: str, state: str, timeout: float = 10.0) -> Any:
    """wait_for_state waits until job id is in state and returns it."""
    job: Any = None

    async def check() -> bool:
        nonlocal job
        job = await c.get(id)
        return bool(job.state == state)

    try:
        await eventually(check, f"job {id} to be {state}", timeout)
    except AssertionError:
        raise AssertionError(f"job {id} is {job.state if job else None}, not {state}; last error {job.last_error if job else ''}") from None
    return job
