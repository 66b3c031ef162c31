"""JSON-RPC over nimbusd's Unix socket (Sources/NimbusProtocol/PROTOCOL.md), without blocking.

Nautilus runs Python extensions with the interpreter lock held by its UI thread while it
waits in its C main loop, so Python threads in an extension do not run between callbacks.
Hence no threads here: sockets are non-blocking and driven by the host's main loop (GLib in
Nautilus, a selector in the tests, see loop.py); every request has a deadline, and nothing
ever waits on a socket. One JSON object per line.
"""

import base64
import errno
import glob
import json
import os
import socket

MAX_LINE = 1 << 20
PROTOCOL_VERSIONS = [1]
CALL_TIMEOUT = 2.0


class RPCError(Exception):
    """The daemon answered with an error; `name` is the stable name (`pinned`, `not_found`...)."""

    def __init__(self, name, message, reason="", suggestion=""):
        super().__init__(reason or message)
        self.name = name
        self.message = message
        self.reason = reason
        self.suggestion = suggestion

    def explain(self):
        """One or two plain sentences for a dialog."""
        text = self.reason or self.message
        return text + (".\n" + self.suggestion[0].upper() + self.suggestion[1:] + "." if self.suggestion else "")


class Unreachable(Exception):
    """No daemon answered on the socket (missing, refused, timed out, closed)."""


def socket_paths(environ=None, uid=None, system_dir="/run/nimbus"):
    """Every instance's socket, as Locations.swift places them: $XDG_RUNTIME_DIR/nimbus/*.sock
    (or /tmp/nimbus-UID/*.sock without XDG_RUNTIME_DIR) and the system units' /run/nimbus/*.sock."""
    environ = os.environ if environ is None else environ
    uid = os.getuid() if uid is None else uid
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    user_dir = os.path.join(runtime, "nimbus") if runtime.startswith("/") else "/tmp/nimbus-%d" % uid
    found = []
    for directory in (user_dir, system_dir):
        found.extend(sorted(glob.glob(os.path.join(glob.escape(directory), "*.sock"))))
    return found


def path_params(relative, key="path"):
    """`{"path": ...}`, or `{"pathBytes": ...}` for a name that is not valid UTF-8."""
    raw = os.fsencode(relative)
    try:
        return {key: raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {key + "Bytes": base64.b64encode(raw).decode("ascii")}


def entry_path(entry, key="path"):
    """An entry's path as this process names files: exact bytes when the daemon sent them."""
    raw = entry.get(key + "Bytes")
    if raw is not None:
        return os.fsdecode(base64.b64decode(raw))
    return entry.get(key, "")


class Connection:
    """One connection to a daemon, driven by `loop`. Requests are answered through callbacks
    `done(result, error)`; notifications go to `on_notification(message)`; when the connection
    ends (closed by either side, or a request's deadline passed) `on_close(error)` is called
    once and every request still waiting fails with that error."""

    def __init__(self, loop, path, timeout=CALL_TIMEOUT, on_notification=None, on_close=None):
        self.loop = loop
        self.path = path
        self.timeout = timeout
        self.on_notification = on_notification
        self.on_close = on_close
        self.next_id = 0
        self.buffer = b""
        self.waiting = {}  # id -> (done, deadline handle)
        self.closed = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        try:
            self.sock.connect(path)
        except OSError as error:
            self.sock.close()
            self.closed = True
            # EAGAIN: the daemon's backlog is full, it is not accepting; no waiting for it.
            reason = "busy, not accepting" if error.errno == errno.EAGAIN else (error.strerror or str(error))
            raise Unreachable("%s: %s" % (path, reason)) from None
        self.watch = loop.watch(self.sock.fileno(), self._readable)

    def request(self, method, params, done):
        if self.closed:
            done(None, Unreachable("%s: the connection is closed" % self.path))
            return
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params:
            message["params"] = params
        line = json.dumps(message).encode("utf-8") + b"\n"
        deadline = self.loop.after(self.timeout, lambda: self.close(
            Unreachable("%s: no answer to %s within %g s" % (self.path, method, self.timeout))))
        self.waiting[self.next_id] = (done, deadline)
        try:
            # A request is a short line and the socket buffer holds far more: a daemon that
            # does not take it in is stuck, which is no reason to wait.
            if self.sock.send(line) != len(line):
                raise BlockingIOError(errno.EAGAIN, "partial send")
        except OSError as error:
            self.close(Unreachable("%s: %s" % (self.path, error.strerror or error)))

    def call(self, method, params=None):
        """The request as something a task (loop.spawn) can await."""
        from .loop import Pending
        return Pending(lambda complete: self.request(method, params, complete))

    async def list_all(self, params):
        """Every entry of a `list`, following `nextCursor` on this connection."""
        result = await self.call("list", params)
        entries = list(result.get("entries", []))
        while result.get("nextCursor"):
            result = await self.call("list", {"cursor": result["nextCursor"]})
            entries.extend(result.get("entries", []))
        return entries

    def close(self, error=None):
        if self.closed:
            return
        self.closed = True
        self.loop.cancel(self.watch)
        self.sock.close()
        waiting, self.waiting = self.waiting, {}
        failure = error or Unreachable("%s: the connection was closed" % self.path)
        for done, deadline in waiting.values():
            self.loop.cancel(deadline)
            done(None, failure)
        if self.on_close:
            self.on_close(error)

    def _readable(self):
        while not self.closed:
            try:
                chunk = self.sock.recv(1 << 20)
            except BlockingIOError:
                return
            except OSError as error:
                self.close(Unreachable("%s: %s" % (self.path, error.strerror or error)))
                return
            if not chunk:
                self.close(Unreachable("%s: the daemon closed the connection" % self.path))
                return
            self.buffer += chunk
            self._dispatch_lines()

    def _dispatch_lines(self):
        while b"\n" in self.buffer and not self.closed:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.close(Unreachable("%s: not JSON: %r" % (self.path, line[:80])))
                return
            if "id" not in message and "method" in message:
                if self.on_notification:
                    self.on_notification(message)
                continue
            done, deadline = self.waiting.pop(message.get("id"), (None, None))
            if done is None:
                continue
            self.loop.cancel(deadline)
            error = message.get("error")
            if error is not None:
                data = error.get("data") or {}
                done(None, RPCError(data.get("name", "unknown"), error.get("message", ""),
                                    data.get("reason", ""), data.get("suggestion", "")))
            else:
                done(message.get("result") or {}, None)
        if len(self.buffer) > MAX_LINE:
            self.close(Unreachable("%s: a line longer than 1 MiB" % self.path))
