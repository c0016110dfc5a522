"""Keep an embedded Ray runtime off the network: run this process in a private network namespace.

Ray 2.60 binds its gRPC servers (GCS, raylet, object manager, every core worker) to the wildcard
address whatever ``_node_ip_address`` says, and has no option to bind them to loopback. An embedded
run therefore enters, before it starts Ray, a new unprivileged user + network namespace whose only
interface is ``lo``: every socket Ray opens, wildcard or not, is reachable from this process tree only.
Files, users and processes are unchanged (the user namespace maps our own uid and gid 1:1).

Limits: the call must come before the process has a second thread (importing numpy starts
OpenBLAS threads), so it belongs at the very start of the entry point, before heavy imports; and the
namespaced process cannot reach the network at all (no cluster, no object storage) — use it only for
the embedded runtime. It fails (returns False, with the reason logged) where unprivileged user
namespaces are disabled (``kernel.unprivileged_userns_clone=0``, some AppArmor profiles).

Only the standard library is imported here, so that importing this module starts no thread.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import socket
import struct

log = logging.getLogger(__name__)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
ENV_FLAG = "CURATE_PRIVATE_NETNS"  # set to "1" once this process tree is inside its private namespace


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, req)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def enter_private_network() -> bool:
    """Move this process into a new user + network namespace with only loopback, up.

    Returns True when done (or already done for this process tree), False when the kernel refuses;
    the reason is logged. Raises RuntimeError when the process already runs other threads (the kernel
    would refuse: call this first thing, before importing numpy, pyarrow or ray).
    """
    if os.environ.get(ENV_FLAG) == "1":
        return True
    if _threads() > 1:
        raise RuntimeError(
            "enter_private_network() must run before the process starts threads "
            f"(it has {_threads()}); call it before importing numpy, pyarrow or ray"
        )
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        log.warning(
            "cannot create a private network namespace (%s); the embedded Ray runtime's servers will "
            "listen on all interfaces",
            errno.errorcode.get(err, err),
        )
        return False
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")
    _loopback_up()
    os.environ[ENV_FLAG] = "1"
    log.info("running in a private network namespace (loopback only)")
    return True
