"""The main loop the connections run on, and small tasks written with async/await on it.

The host provides a loop with `watch(fd, callback)` (call back whenever fd is readable or hung
up), `after(seconds, callback)` (once) and `cancel(handle)`: GLibLoop in the Nautilus glue,
SelectorLoop here for the tests. A task is a coroutine whose awaits are `Pending` operations
completed by callbacks; `spawn` drives it. No asyncio: its loop would compete with GLib's.
"""

import heapq
import itertools
import selectors
import time


class Pending:
    """An operation started with `start(complete)`; `complete(value, error)` finishes it."""

    def __init__(self, start):
        self.start = start

    def __await__(self):
        return (yield self)


def spawn(coroutine, done=None):
    """Runs a task; `done(value, error)` when it ends. Errors are delivered, never raised here."""

    def step(value=None, error=None):
        try:
            pending = coroutine.throw(error) if error is not None else coroutine.send(value)
        except StopIteration as stop:
            if done:
                done(stop.value, None)
            return
        except Exception as failure:  # noqa: BLE001 - handed to the caller
            if done:
                done(None, failure)
            return
        finished = []

        def complete(value=None, error=None):
            if not finished:  # a late second completion (a timeout racing an answer) is ignored
                finished.append(True)
                step(value, error)

        pending.start(complete)

    step()


class SelectorLoop:
    """A loop on `selectors` for the tests (and any program without GLib)."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.timers = []
        self.counter = itertools.count()
        self.cancelled = set()

    def watch(self, fd, callback):
        self.selector.register(fd, selectors.EVENT_READ, callback)
        return ("fd", fd)

    def after(self, seconds, callback):
        handle = ("timer", next(self.counter))
        heapq.heappush(self.timers, (time.monotonic() + seconds, handle[1], callback))
        return handle

    def cancel(self, handle):
        if handle is None:
            return
        if handle[0] == "fd":
            try:
                self.selector.unregister(handle[1])
            except (KeyError, ValueError):
                pass
        else:
            self.cancelled.add(handle[1])

    def run_once(self, max_wait=0.05):
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, number, callback = heapq.heappop(self.timers)
            if number in self.cancelled:
                self.cancelled.discard(number)
            else:
                callback()
        wait = max_wait if not self.timers else max(0.0, min(max_wait, self.timers[0][0] - now))
        if self.selector.get_map():
            for key, _ in self.selector.select(wait):
                key.data()
        else:
            time.sleep(wait)  # nothing to watch: only a timer can be due

    def run_until(self, what, check, timeout=10.0):
        """Runs the loop until `check()` is true; fails naming `what` after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %gs waiting for %s" % (timeout, what))
            self.run_once()
