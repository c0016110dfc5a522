"""Keep an embedded Ray runtime off the network: run this process in a private network namespace.

Ray 2.60 binds its gRPC servers (GCS, raylet, object manager, every core worker) to the wildcard
address whatever ``_node_ip_address`` says, and has no option to bind them to loopback. An embedded
run therefore enters, before it starts Ray, a new unprivileged user + network namespace whose only
interface is ``lo``: every socket Ray opens, wildcard or not, is reachable from this process tree only.
Files, users and processes are unchanged (the user namespace maps our own uid and gid 1:1).

Outbound traffic (object storage, a Hugging Face hub dataset) still works, through an *egress
helper*: before entering the namespace the process forks a small helper that stays in the host's
network namespace; after entering it, the process opens a listening socket on 127.0.0.1 *inside* the
namespace and hands its file descriptor to the helper (SCM_RIGHTS). The helper accepts there (only this
process tree can connect: nothing else shares the namespace) and connects out from the host's
namespace, as an HTTP proxy: ``CONNECT host:port`` tunnels (https) and absolute-form requests (plain
http, one request per connection). ``HTTP(S)_PROXY`` point every HTTP client of the tree at it (s3fs
through botocore, gcsfs, huggingface_hub); Ray's own gRPC ignores these variables
(``RAY_grpc_enable_http_proxy`` is off by default). Nothing listens on the host's interfaces.

Limits: the call must come before the process has a second thread (importing numpy starts
OpenBLAS threads), so it belongs at the very start of the entry point, before heavy imports; only HTTP
clients that honour ``HTTP(S)_PROXY`` reach out (no cluster: use it only for the embedded runtime); a
proxy the user had set in ``HTTP(S)_PROXY`` is replaced by the helper (which connects directly). It fails (returns False, with the reason logged) where unprivileged user
namespaces are disabled (``kernel.unprivileged_userns_clone=0``, some AppArmor profiles).

Only the standard library is imported here, so that importing this module starts no thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import signal
import socket
import struct
import sys

log = logging.getLogger(__name__)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
ENV_FLAG = "CURATE_PRIVATE_NETNS"  # set to "1" once this process tree is inside its private namespace
EGRESS_ENV = "CURATE_EGRESS_PROXY"  # http://127.0.0.1:PORT of the egress helper, inside the namespace
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
PR_SET_PDEATHSIG = 1


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, req)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def enter_private_network(*, egress: bool = True) -> bool:
    """Move this process into a new user + network namespace with only loopback, up.

    With ``egress`` (the default) an egress helper outside the namespace serves as this process tree's
    HTTP proxy (see the module docstring), so object storage stays reachable.

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
    helper = _fork_egress_helper(libc) if egress else None
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        if helper is not None:
            helper[1].close()  # the helper exits when its end of the pair closes
            os.waitpid(helper[0], 0)
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
    if helper is not None:
        _hand_over_listener(helper[1])
    log.info("running in a private network namespace (loopback only)")
    return True


# -- the egress helper -------------------------------------------------------------------------------------
def _fork_egress_helper(libc: ctypes.CDLL) -> tuple[int, socket.socket]:
    """Fork the helper (it stays in this, the host's, namespace); return its pid and our end of the pair."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the helper
        ours.close()
        code = 0
        try:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the run
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
            if os.getppid() == parent:
                _serve_egress(theirs)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    theirs.close()
    return pid, ours


def _hand_over_listener(pair: socket.socket) -> None:
    """Listen on 127.0.0.1 inside the namespace, pass the socket to the helper, point HTTP clients at it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(256)
        port = lsock.getsockname()[1]
        socket.send_fds(pair, [b"L"], [lsock.fileno()])
    # Our end stays open for the life of this process (never read; not inherited by children): when
    # the process exits it closes, and the helper exits too.
    pair.detach()
    url = f"http://127.0.0.1:{port}"
    for var in PROXY_VARS:
        os.environ[var] = url
    os.environ[EGRESS_ENV] = url
    for var in ("NO_PROXY", "no_proxy"):  # the host's loopback is out there too, behind the helper
        os.environ.pop(var, None)


def _serve_egress(pair: socket.socket) -> None:
    import threading

    _msg, fds, _, _ = socket.recv_fds(pair, 1, 1)
    if not fds:
        return  # the parent could not enter the namespace
    lsock = socket.socket(fileno=fds[0])

    def watch_parent() -> None:
        pair.recv(1)  # returns when the parent closes its end (exit, kill)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=_proxy_one, args=(conn,), daemon=True).start()


def _proxy_one(conn: socket.socket) -> None:
    """One client connection: ``CONNECT host:port`` (a tunnel) or an absolute-form http request."""
    upstream = None
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk or len(head) > 1 << 16:
                return
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        method, target, version = lines[0].split(b" ", 2)
        if method == b"CONNECT":
            host, port = _host_port(target.decode("latin-1"), 443)
            upstream = _connect(conn, host, port)
            if upstream is None:
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            _relay(conn, upstream, close_after_response=False)
            return
        url = target.decode("latin-1")
        if not url.startswith("http://"):
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            return
        hostport, slash, path = url[len("http://") :].partition("/")
        host, port = _host_port(hostport, 80)
        upstream = _connect(conn, host, port)
        if upstream is None:
            return
        # One request per connection: the upstream closes after its response, so a client that pools
        # connections to the proxy never sends a second host's request down this one.
        keep = [
            ln
            for ln in lines[1:]
            if ln.split(b":", 1)[0].strip().lower() not in (b"connection", b"proxy-connection", b"keep-alive")
        ]
        first = b" ".join([method, ("/" + path if slash else "/").encode("latin-1"), version])
        upstream.sendall(b"\r\n".join([first, *keep, b"Connection: close"]) + b"\r\n\r\n" + rest)
        _relay(conn, upstream, close_after_response=True)
    except (OSError, ValueError):
        pass
    finally:
        for s in (conn, upstream):
            if s is not None:
                s.close()


def _host_port(hostport: str, default: int) -> tuple[str, int]:
    if hostport.startswith("["):  # [v6]:port
        host, _, port = hostport[1:].partition("]")
        return host, int(port.lstrip(":") or default)
    host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
    return host, int(port or default)


def _connect(conn: socket.socket, host: str, port: int) -> socket.socket | None:
    try:
        return socket.create_connection((host, port), timeout=30)
    except OSError as e:
        reason = str(e).replace("\r", " ").replace("\n", " ")
        body = f"egress helper: cannot connect to {host}:{port}: {reason}".encode()
        conn.sendall(
            b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Type: text/plain\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        return None


def _relay(client: socket.socket, upstream: socket.socket, *, close_after_response: bool) -> None:
    import threading

    upstream.settimeout(None)

    def pump(src: socket.socket, dst: socket.socket, last: bool) -> None:
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_RDWR if last else socket.SHUT_WR)

    up = threading.Thread(target=pump, args=(client, upstream, False), daemon=True)
    up.start()
    pump(upstream, client, close_after_response)
    if close_after_response:
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)
    up.join()


if __name__ == "__main__":  # pragma: no cover - manual check: python -m curate.runtime.netns URL
    enter_private_network()
    import urllib.request

    print(urllib.request.urlopen(sys.argv[1], timeout=10).read()[:200])
