"""Listening TCP sockets of a process tree, read from ``/proc``: measured, not assumed.

Every process of the tree, its socket inodes (``/proc/<pid>/fd``) matched against the LISTEN rows of
``/proc/<pid>/net/tcp{,6}`` (the view of that process's own network namespace). Used by
tests/reliability/test_security.py, in the test process and in the probe subprocesses it starts.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

import psutil


def _tree(root: int) -> list[int]:
    try:
        return [root] + [c.pid for c in psutil.Process(root).children(recursive=True)]
    except psutil.Error:
        return [root]


def _addr(hex_addr: str) -> str:
    ip_hex, port_hex = hex_addr.split(":")
    raw = bytes.fromhex(ip_hex)
    # /proc/net/tcp{,6} print the address as 32-bit words in host (little-endian) order.
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    return f"{ip}:{int(port_hex, 16)}"


def listening_sockets(root: int) -> list[dict]:
    """Every TCP socket in LISTEN state owned by ``root`` or a descendant: pid, process name, address."""
    out = []
    for pid in _tree(root):
        try:
            inodes = set()
            for fd in os.listdir(f"/proc/{pid}/fd"):
                m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
                if m:
                    inodes.add(m.group(1))
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            for table in ("tcp", "tcp6"):
                for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                    f = line.split()
                    if f[3] == "0A" and f[9] in inodes:  # 0A = LISTEN
                        out.append({"pid": pid, "name": name, "addr": _addr(f[1])})
        except OSError:
            continue
    return out
