"""A stand-in for nimbusd's control socket: answers hello, status, list (paged), watch and the
file actions from a table of entries, records every request, and can push notifications or
stay silent (to test timeouts)."""

import json
import os
import socket
import threading
import time


def entry(path, state="downloaded", kind="file", residency="auto", **extra):
    return dict({"path": path, "kind": kind, "size": 0 if kind == "directory" else 3, "state": state,
                 "residency": residency, "mtime": "2026-01-01T00:00:00.000000000Z",
                 "mtimeNs": 1767225600000000000}, **extra)


def eventually(what, check, timeout=10.0):
    """Polls `check` until it returns true or the deadline passes (then fails with `what`)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(0.005)


class StandIn:
    def __init__(self, socket_path, root, entries=(), style="suffix", silent=False, page=1000):
        self.socket_path = socket_path
        self.root = root
        self.entries = list(entries)
        self.style = style
        self.silent = silent
        self.page = page
        self.requests = []
        self.watchers = []
        self.errors = {}  # method -> (name, reason) to answer with an error
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(socket_path)
        self.listener.listen(16)
        self.connections = []
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self.listener.close()
        with self.lock:
            for connection in self.connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                connection.close()
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)

    def methods(self, name=None):
        with self.lock:
            return [(m, p) for m, p in self.requests if name is None or m == name]

    def push(self, method, params):
        line = (json.dumps({"jsonrpc": "2.0", "method": method, "params": params}) + "\n").encode()
        with self.lock:
            watchers = list(self.watchers)
        for connection in watchers:
            connection.sendall(line)

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection):
        buffer = b""
        cursors = {}
        while True:
            try:
                chunk = connection.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                method, params = request["method"], request.get("params", {})
                with self.lock:
                    self.requests.append((method, params))
                if self.silent:
                    continue
                answer = {"jsonrpc": "2.0", "id": request["id"]}
                if method in self.errors:
                    name, reason = self.errors[method]
                    answer["error"] = {"code": -32007, "message": name, "data": {"name": name, "reason": reason,
                                                                                   "suggestion": "try again"}}
                else:
                    answer["result"] = self._result(connection, method, params, cursors)
                try:
                    connection.sendall((json.dumps(answer) + "\n").encode())
                except OSError:
                    return

    def _result(self, connection, method, params, cursors):
        if method == "hello":
            return {"version": 1, "localRoot": self.root, "instance": "standin", "cloudRoot": "/cloud"}
        if method == "status":
            return {"phase": "idle", "placeholderStyle": self.style}
        if method == "watch":
            with self.lock:
                self.watchers.append(connection)
            return {"watching": True}
        if method == "list":
            return self._list(params, cursors)
        if method == "versions":
            return {"path": params.get("path"), "versions": [
                {"id": "v2", "size": 1500, "mtime": "2026-01-02T10:00:00.5Z"},
                {"id": "v1", "size": 3, "mtime": "2026-01-01T09:00:00Z"}]}
        if method in ("pin", "unpin", "evict", "download"):
            with self.lock:
                found = [e for e in self.entries if e["path"] == params.get("path")]
                if found:
                    changed = {"pin": {"residency": "pinned"}, "unpin": {"residency": "auto"},
                               "evict": {"state": "notDownloaded"}, "download": {"state": "downloading"}}[method]
                    found[0].update(changed)
                    return dict(found[0])
        return dict(params)

    def _list(self, params, cursors):
        if "cursor" in params:
            rest = cursors.pop(params["cursor"])
        else:
            folder = params.get("path", "")
            recursive = params.get("recursive", False)

            def inside(path):
                parent = path.rsplit("/", 1)[0] if "/" in path else ""
                return path.startswith(folder + "/") if (recursive and folder) else (recursive or parent == folder)

            rest = [e for e in self.entries if inside(e["path"])
                    and ("state" not in params or e["state"] == params["state"])]
        result = {"entries": rest[: self.page]}
        if len(rest) > self.page:
            cursor = "c%d" % len(cursors)
            cursors[cursor] = rest[self.page:]
            result["nextCursor"] = cursor
        return result
