"""Is the process that claims a run still the one running it?

A pid alone is not enough: after a crash the pid can be reused by an unrelated process. So a run
records an owner string `host/pid/start` where `start` is the process start time from
`/proc/<pid>/stat` on Linux (empty elsewhere). An owner is alive when it is this process, or when
a process with that pid exists on this host, is not a zombie and (where known) started at the
recorded time. Runs owned by another host are left alone: we cannot see its processes.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name, or None (no /proc, or no such pid)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    return text[text.rindex(")") + 2 :].split()


def _start_time(pid: int) -> str:
    fields = _proc_stat(pid)
    return fields[19] if fields else ""  # field 22 of stat; we dropped the first two


def owner_token(pid: int | None = None) -> str:
    """`host/pid/start` for a process (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{pid}/{_start_time(pid)}"


def pid_alive(pid: int) -> bool:
    """True if a non-zombie process with this pid exists (a killed child not yet reaped is not)."""
    if pid <= 0:
        return False
    fields = _proc_stat(pid)
    if fields is not None:
        return fields[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def owner_alive(owner: str | None, pid: int | None) -> bool:
    """Whether the process recorded as running a run is still that process."""
    if pid is None:
        return False
    if not owner:
        return pid == os.getpid() or pid_alive(pid)
    host, _, rest = owner.partition("/")
    owner_pid, _, start = rest.partition("/")
    if host != socket.gethostname():
        return True  # another machine's run: not ours to judge
    if owner == owner_token():
        return True
    if not owner_pid.isdigit() or not pid_alive(int(owner_pid)):
        return False
    return not start or start == _start_time(int(owner_pid))
