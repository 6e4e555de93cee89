"""Waiting for the detached compile helpers a benchmark's commands left running."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_processes_with(env_entry: str, limit: float = 600) -> None:
    """Wait (up to `limit` seconds) until no process has `env_entry` ("NAME=value") in its
    environment: the helpers that compile into a case's own cache are known by it."""
    marker = env_entry.encode() + b"\0"
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        busy = False
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                busy = busy or marker in environ.read_bytes()
            except OSError:
                continue
        if not busy:
            return
        time.sleep(1)
