"""Where processes sharing one model meet: a per-user directory, a lock file and a Unix socket.

The key names the model a process would load (resolved directory, name, cut,
token cap, query kernel setting) and the user, so only processes that would
compute the same vectors meet. The lock is an ``flock`` on ``<key>.lock``: the
kernel drops it when its holder exits, however it exits (SIGKILL included), so
there is no pid file to go stale. The socket ``<key>.sock`` carries the /embed contract over HTTP/1.1;
``UnixHTTPConnection`` is the stdlib HTTP client on such a socket.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS) including the NUL.
MAX_SOCKET_PATH = 100


class RendezvousError(OSError):
    """The runtime directory cannot be used safely (not ours, open to others, path too long)."""


def sharing_key(
    model_dir: Path, model_name: str, dimension: int, max_tokens: int, uid: int, *, query_kernel: str
) -> str:
    """16 hex characters naming one (model files, cut, token cap, query kernel setting, user); short so
    the socket path fits. A client's queries are embedded by its host, so a process set to
    ``CPERSONA_EMBED_QUERY_KERNEL=exact`` must never be served by an ``auto`` host (int8 query vectors)."""
    text = f"{model_dir.resolve()}\0{model_name}\0{dimension}\0{max_tokens}\0{query_kernel}\0{uid}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700, or check an existing one is ours and closed to others."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise RendezvousError(f"cannot create {path}: {exc}") from exc
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise RendezvousError(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise RendezvousError(f"{path} belongs to uid {info.st_uid}, not this user ({os.getuid()})")
    if info.st_mode & 0o077:
        # Another user able to create files here could impersonate the model host.
        raise RendezvousError(
            f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); use 0700"
        )
    return path


@dataclass(frozen=True)
class Rendezvous:
    """The lock and socket paths for one sharing key."""

    directory: Path
    key: str

    @property
    def lock_path(self) -> Path:
        """The file whose flock elects the model host."""
        return self.directory / f"{self.key}.lock"

    @property
    def socket_path(self) -> Path:
        """The host's Unix socket."""
        return self.directory / f"{self.key}.sock"

    def check(self) -> None:
        """Raise RendezvousError when the directory is unsafe or the socket path too long."""
        if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH:
            raise RendezvousError(
                f"socket path {self.socket_path} is longer than {MAX_SOCKET_PATH} bytes (AF_UNIX limit)"
            )
        ensure_private_dir(self.directory)


class HostLock:
    """One open file description on the lock file; ``acquire`` is non-blocking."""

    def __init__(self, path: Path) -> None:
        """Remember the path; nothing is opened until ``acquire``."""
        self.path = path
        # filelock opens the file afresh per acquire: flock belongs to the open file description, so
        # two HostLock objects in one process conflict exactly like two processes do. Not thread-local:
        # the lock is this object's, whichever thread releases it.
        self._lock = FileLock(path, mode=0o600, thread_local=False)

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._lock.is_locked

    def acquire(self) -> bool:
        """Take the lock if nobody holds it; True when this object holds it now."""
        if self._lock.is_locked:
            return True  # held already: not a second, nested hold
        try:
            self._lock.acquire(blocking=False)
        except Timeout:
            return False
        return True

    def release(self) -> None:
        """Release the lock (a no-op when this object does not hold it)."""
        if self._lock.is_locked:
            self._lock.release()


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client.HTTPConnection`` whose transport is a Unix stream socket."""

    def __init__(self, path: str, timeout: float) -> None:
        """Connect to ``path`` on first use; ``timeout`` bounds connect and each read."""
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        """Open the Unix socket (FileNotFoundError / ConnectionRefusedError when no host serves it)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.unix_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


#: Errors meaning "no live host behind the socket" (as opposed to a slow or failing one).
HOST_GONE_ERRORS: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    ConnectionRefusedError,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
    http.client.RemoteDisconnected,
    http.client.BadStatusLine,
    http.client.IncompleteRead,
)
