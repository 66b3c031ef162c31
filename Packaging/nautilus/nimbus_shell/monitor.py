"""Keeps each daemon's PairModel current, on the host's main loop (see loop.py).

Per daemon, one connection holds the `watch` subscription (after hello and status, and after
reading every unsettled path of the tree); a folder's listing is read on a connection of its
own when the file manager first asks about something in it. Nothing here blocks: a question
about a path is answered at once from what is known, and `on_change(absolute paths)` reports
later answers so that the file manager asks again.
"""

import collections
import os
import sys

from . import rpc
from .actions import Target
from .loop import spawn
from .model import PLACEHOLDER_SUFFIX, UNSETTLED_STATES, PairModel, parent_of


def _log(text):
    print("nimbus-nautilus: " + text, file=sys.stderr, flush=True)


class Daemon:
    """One daemon, reached on `socket_path`. `alive` turns false when its session ends."""

    def __init__(self, loop, socket_path, on_change, timeout=rpc.CALL_TIMEOUT, log=_log, on_connect=None):
        self.loop = loop
        self.socket_path = socket_path
        self.on_change = on_change
        self.on_connect = on_connect or (lambda root: on_change([root]))
        self.timeout = timeout
        self.log = log
        self.model = None
        self.alive = True
        self.watch = None
        self.early = []  # notifications that came before the model was ready
        self.waiting = {}  # folder -> absolute paths asked about before its listing came

    def start(self):
        spawn(self._session(), self._session_failed)

    def stop(self):
        if self.watch:
            self.watch.close()

    def connect(self, **handlers):
        return rpc.Connection(self.loop, self.socket_path, self.timeout, **handlers)

    # --- Questions from the file manager (answered at once) ------------------------------------

    def info(self, absolute, is_folder):
        """(emblems, text, path) or None; asks for the folder's listing when it is not known."""
        model = self.model
        relative = model.relative(absolute) if model else None
        if relative is None:
            return None
        folder = parent_of(relative)
        if relative and not model.has_folder(folder):
            if folder not in self.waiting:
                self.waiting[folder] = set()
                spawn(self._fetch_folder(model, folder), lambda _, error: error and self.log(
                    "cannot list %r: %s" % (folder, error)))
            self.waiting.get(folder, set()).add(absolute)
            return None
        return model.info(relative, is_folder)

    def target(self, absolute, is_folder):
        model = self.model
        relative = model.relative(absolute) if model else None
        if relative is None:
            return None
        entry, known_as = model.entry(relative) if relative else (None, "")
        return Target(self.socket_path, known_as if entry else relative, entry, is_folder)

    # --- The session -------------------------------------------------------------------------------

    async def _session(self):
        self.watch = self.connect(on_notification=self._notification, on_close=self._closed)
        hello = await self.watch.call("hello", {"versions": rpc.PROTOCOL_VERSIONS, "client": "nimbus-nautilus"})
        status = await self.watch.call("status")
        # Subscribe before reading the tree: a change meanwhile arrives as a notification and
        # is applied after the snapshot, so nothing is missed.
        await self.watch.call("watch", {"progress": True})
        model = PairModel(hello["localRoot"], status.get("placeholderStyle", "suffix"))
        await self._load_unsettled(model)
        if self.watch.closed:
            return
        self.model = model
        self.log("connected to %s (%s, %s placeholders)" % (self.socket_path, model.root, model.style))
        self.on_connect(model.root)
        early, self.early = self.early, []
        for message in early:
            self._notification(message)

    def _session_failed(self, _, error):
        if error is not None:
            self.log("%s: %s" % (self.socket_path, error))
            if self.watch:
                self.watch.close(error)
            else:
                self.alive = False

    async def _load_unsettled(self, model):
        entries = []
        connection = self.connect()
        try:
            for state in UNSETTLED_STATES:
                entries.extend(await connection.list_all({"recursive": True, "state": state, "limit": 10000}))
        finally:
            connection.close()
        model.set_unsettled(entries)

    async def _fetch_folder(self, model, folder):
        params = dict(rpc.path_params(folder), limit=10000) if folder else {"limit": 10000}
        try:
            connection = self.connect()
            try:
                entries = await connection.list_all(params)
            finally:
                connection.close()
        except (rpc.Unreachable, rpc.RPCError):
            # Asked again in a while (the file manager asks when told that something changed).
            asked = self.waiting.pop(folder, set())
            self.loop.after(2.0, lambda: self.model is model and self.on_change(sorted(asked)))
            raise
        asked = self.waiting.pop(folder, set())
        if self.model is model:
            model.set_folder(folder, entries)
            self.on_change(sorted(asked))

    def _notification(self, message):
        model = self.model
        if model is None:
            self.early.append(message)
            return
        changed = model.apply(message)
        if changed is None:  # overflow: events were dropped, read everything again
            model.folders.clear()
            spawn(self._load_unsettled(model), lambda _, error: self.on_change([model.root]))
            return
        paths = []
        for relative in changed:
            paths.append(model.absolute(relative))
            if relative and model.style == "suffix":
                paths.append(model.absolute(relative) + PLACEHOLDER_SUFFIX)
        self.on_change(paths)

    def _closed(self, error):
        """The watch connection ended: the emblems go until the daemon is back."""
        self.alive = False
        model, self.model = self.model, None
        paths = [a for asked in self.waiting.values() for a in asked]
        self.waiting.clear()
        if model:
            self.log("lost %s: %s" % (self.socket_path, error or "closed"))
            paths.append(model.root)
            for folder, listing in model.folders.items():
                for name in listing:
                    path = model.absolute(folder + "/" + name if folder else name)
                    paths += [path, path + PLACEHOLDER_SUFFIX] if model.style == "suffix" else [path]
        if paths:
            self.on_change(paths)


class Monitor:
    """Finds the daemons by their sockets (again every few seconds) and answers for any path."""

    def __init__(self, loop, on_change, environ=None, system_dir="/run/nimbus", rescan_seconds=5.0,
                 timeout=rpc.CALL_TIMEOUT, log=_log):
        self.loop = loop
        self.on_change = on_change
        self.environ = environ
        self.system_dir = system_dir
        self.rescan_seconds = rescan_seconds
        self.timeout = timeout
        self.log = log
        self.daemons = {}
        self.timer = None
        # Folders shown while no daemon owned them (it was not running yet, or restarting): when
        # one connects, what they show is asked for again. The most recent few are enough.
        self.unowned = collections.OrderedDict()

    def start(self):
        """Discovers now and then every `rescan_seconds` (a daemon started or restarted later)."""
        self.discover()
        self.timer = self.loop.after(self.rescan_seconds, self.start)

    def stop(self):
        self.loop.cancel(self.timer)
        for daemon in self.daemons.values():
            daemon.stop()

    def discover(self):
        try:
            paths = rpc.socket_paths(self.environ, system_dir=self.system_dir)
        except OSError as error:
            self.log("cannot look for daemons: %s" % error)
            return
        for path in paths:
            current = self.daemons.get(path)
            if current and current.alive:
                continue
            daemon = self.daemons[path] = Daemon(self.loop, path, self.on_change, self.timeout, self.log,
                                                 on_connect=self._connected)
            try:
                daemon.start()
            except rpc.Unreachable as error:
                daemon.alive = False
                self.log(str(error))

    def owner(self, absolute):
        """The daemon whose local folder holds `absolute` (the innermost one)."""
        absolute = os.path.normpath(absolute)
        best, best_root = None, ""
        for daemon in self.daemons.values():
            root = daemon.model.root if daemon.model else None
            if root and (absolute == root or absolute.startswith(root.rstrip("/") + "/")) and len(root) > len(best_root):
                best, best_root = daemon, root
        return best

    def info(self, absolute, is_folder):
        daemon = self.owner(absolute)
        if daemon is None:
            folder = os.path.dirname(os.path.normpath(absolute))
            self.unowned[folder] = True
            self.unowned.move_to_end(folder)
            while len(self.unowned) > 32:
                self.unowned.popitem(last=False)
            return None
        return daemon.info(absolute, is_folder)

    def _connected(self, root):
        """A daemon is ready: the folders of its tree already on screen are asked for again."""
        paths = [root]
        for folder in [f for f in self.unowned if f == root or f.startswith(root.rstrip("/") + "/")]:
            del self.unowned[folder]
            try:
                paths += [folder] + [os.path.join(folder, name) for name in os.listdir(folder)]
            except OSError:
                pass
        self.on_change(paths)

    def target(self, absolute, is_folder):
        daemon = self.owner(absolute)
        return daemon.target(absolute, is_folder) if daemon else None

    def run(self, requests, done):
        """Sends (socket, method, params) requests, one connection each; `done(outcomes)` with
        [(params, result or RPCError/Unreachable)] in order."""
        async def send_all():
            outcomes = []
            for socket_path, method, params in requests:
                try:
                    connection = rpc.Connection(self.loop, socket_path, self.timeout)
                    try:
                        result = await connection.call(method, params)
                    finally:
                        connection.close()
                    outcomes.append((params, result))
                    self._absorb(socket_path, result)
                except (rpc.RPCError, rpc.Unreachable) as error:
                    outcomes.append((params, error))
            return outcomes

        spawn(send_all(), lambda outcomes, error: done(outcomes if error is None else [(None, error)]))

    def _absorb(self, socket_path, result):
        """Shows at once what an action changed (a pin is not a state change the daemon announces)."""
        daemon = self.daemons.get(socket_path)
        model = daemon.model if daemon else None
        if model and "residency" in result and "state" in result:
            changed = model.absorb(result)
            self.on_change([model.absolute(path) for path in changed]
                           + [model.absolute(path) + PLACEHOLDER_SUFFIX for path in changed if path and model.style == "suffix"])
