"""Nimbus in GNOME Files (Nautilus 43+, python3-nautilus): an emblem per sync state, a
"Sync state" column with progress, and the Nimbus actions in the context menu.

The daemons are reached by nimbus_shell.monitor over non-blocking sockets watched by GLib's
main loop (Python threads would not run: nautilus-python keeps the interpreter lock on the
UI thread). Questions from Nautilus are answered at once from what the daemons said; later
answers invalidate the files concerned. With no daemon running it shows nothing and never waits.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gi  # noqa: E402

gi.require_version("Nautilus", "4.0")
gi.require_version("Gtk", "4.0")
from gi.repository import GLib, GObject, Gio, Gtk, Nautilus  # noqa: E402

from nimbus_shell import actions, monitor, rpc  # noqa: E402

# For tests and for measuring: a file that gets one line per emblem set.
TRACE = os.environ.get("NIMBUS_NAUTILUS_TRACE")


def trace(text):
    if TRACE:
        with open(TRACE, "a", encoding="utf-8", errors="surrogateescape") as out:
            out.write("%.3f %s\n" % (time.time(), text))


def log(text):
    monitor._log(text)
    trace(text)


class GLibLoop:
    """The loop nimbus_shell runs on: Nautilus's own GLib main loop."""

    def __init__(self):
        self.live = set()

    def watch(self, fd, callback):
        def ready(_fd, _condition):
            callback()
            return GLib.SOURCE_CONTINUE

        return self._track(GLib.io_add_watch(fd, GLib.PRIORITY_DEFAULT,
                                             GLib.IOCondition.IN | GLib.IOCondition.HUP | GLib.IOCondition.ERR, ready))

    def after(self, seconds, callback):
        def fire():
            self.live.discard(source)
            callback()
            return GLib.SOURCE_REMOVE

        source = self._track(GLib.timeout_add(max(0, int(seconds * 1000)), fire))
        return source

    def cancel(self, handle):
        if handle in self.live:
            self.live.discard(handle)
            GLib.source_remove(handle)

    def _track(self, source):
        self.live.add(source)
        return source


class NimbusExtension(GObject.GObject, Nautilus.InfoProvider, Nautilus.MenuProvider, Nautilus.ColumnProvider):
    def __init__(self):
        super().__init__()
        self.loop = GLibLoop()
        self.monitor = monitor.Monitor(self.loop, self._changed, log=log)
        self.monitor.start()

    # --- Emblems and the column -----------------------------------------------------------------

    def _changed(self, paths):
        """Invalidated from an idle callback: never inside one of Nautilus's own calls into us."""
        GLib.idle_add(self._invalidate, list(paths))

    def _invalidate(self, paths):
        for path in paths:
            info = Nautilus.FileInfo.lookup(Gio.File.new_for_path(path))
            if info is not None:
                info.invalidate_extension_info()
        return GLib.SOURCE_REMOVE

    def update_file_info(self, file):
        if file.get_uri_scheme() != "file":
            return
        path = file.get_location().get_path()
        found = self.monitor.info(path, file.is_directory()) if path else None
        if found is None:
            return
        emblems, text, _ = found
        for emblem in emblems:
            file.add_emblem(emblem)
        file.add_string_attribute("nimbus_state", text)
        if TRACE:
            trace("emblems %s %s" % (" ".join(emblems), path))

    def get_columns(self):
        return [Nautilus.Column(name="Nimbus::state", attribute="nimbus_state", label="Sync state",
                                description="What Nimbus is doing with the file")]

    # --- Context menu ---------------------------------------------------------------------------

    def get_file_items(self, files):
        targets = []
        for file in files:
            path = file.get_location().get_path() if file.get_uri_scheme() == "file" else None
            target = self.monitor.target(path, file.is_directory()) if path else None
            if target is None:
                return []  # a selection reaching outside the synced folders gets no Nimbus menu
            targets.append(target)
        offered = actions.actions_for(targets)
        if not offered:
            return []
        top = Nautilus.MenuItem(name="Nimbus::Menu", label="Nimbus", tip="Nimbus sync", icon="")
        submenu = Nautilus.Menu()
        top.set_submenu(submenu)
        for action in offered:
            item = Nautilus.MenuItem(name="Nimbus::" + action.name, label=action.label, tip="", icon="")
            item.connect("activate", self._activate, action)
            submenu.append_item(item)
        return [top]

    def _activate(self, _item, action):
        if action.kind == "versions":
            socket_path, _, params = action.requests[0]
            self.monitor.run(action.requests, lambda outcomes: self._versions_loaded(socket_path, params, outcomes))
        else:
            self.monitor.run(action.requests, lambda outcomes: self._sent(action.label, outcomes))

    def _sent(self, label, outcomes):
        failures = [(params, outcome) for params, outcome in outcomes if isinstance(outcome, Exception)]
        for params, outcome in failures:
            log("%s %s: %s" % (label, params, outcome))
        if failures:
            show_message("%s did not work" % label, "\n".join(rpc_text(outcome) for _, outcome in failures))

    def _versions_loaded(self, socket_path, params, outcomes):
        [(_, outcome)] = outcomes
        if isinstance(outcome, Exception):
            show_message("Cannot list the versions", rpc_text(outcome))
            return
        path = rpc.entry_path(outcome) or rpc.entry_path(params)
        self._show_versions(socket_path, path, actions.version_rows(outcome))

    def _show_versions(self, socket_path, path, rows):
        window = Gtk.Window(title="Versions of %s" % os.path.basename(path))
        window.set_default_size(460, 320)
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6, margin_top=12, margin_bottom=12,
                      margin_start=12, margin_end=12)
        window.set_child(box)
        if not rows:
            box.append(Gtk.Label(label="No earlier versions of %s are kept." % path, wrap=True))
        else:
            box.append(Gtk.Label(label="Restoring puts that version back under this name; the current "
                                 "content is kept as a version too.", wrap=True, xalign=0))
            listing = Gtk.ListBox(selection_mode=Gtk.SelectionMode.NONE)
            scroller = Gtk.ScrolledWindow(vexpand=True, child=listing)
            box.append(scroller)
            for version_id, text in rows:
                row = Gtk.Box(spacing=12)
                row.append(Gtk.Label(label=text, hexpand=True, xalign=0))
                button = Gtk.Button(label="Restore")
                request = actions.restore_request(socket_path, path, version_id)
                button.connect("clicked", lambda _b, r=request: self._restore(window, r))
                row.append(button)
                listing.append(row)
        window.present()

    def _restore(self, window, request):
        window.close()
        self.monitor.run([request], lambda outcomes: self._sent("Restore", outcomes))


def rpc_text(error):
    return error.explain() if isinstance(error, rpc.RPCError) else "Nimbus is not running: %s" % error


def show_message(title, text):
    dialog = Gtk.MessageDialog(message_type=Gtk.MessageType.ERROR, buttons=Gtk.ButtonsType.CLOSE,
                               text=title, secondary_text=text)
    dialog.connect("response", lambda d, _r: d.destroy())
    dialog.present()
    return GLib.SOURCE_REMOVE
