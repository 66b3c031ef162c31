"""What the file manager shows of one pair: emblems, folder aggregation, live updates.

Pure: no sockets and no threads. It holds what the daemon said (listings of the folders the
user looks at, and every path that is not in sync) and folds the daemon's `watch`
notifications into it.
"""

import collections
import os

from .rpc import entry_path

# The protocol's states (DESIGN §2) as the user sees them.
DISPLAY = {
    "downloaded": "inSync",
    "uploading": "syncing",
    "downloading": "syncing",
    "local": "syncing",  # new here and waiting to upload
    "outdated": "syncing",  # the cloud has a newer version not fetched yet
    "notDownloaded": "notDownloaded",
    "conflict": "conflict",
    "error": "error",
}

# Most urgent first: a folder shows the first of these that anything inside it has.
URGENCY = ("error", "conflict", "syncing", "notDownloaded", "inSync")

# Themed names where the icon theme has one; ours (Packaging/icons) for the rest.
EMBLEMS = {
    "inSync": "emblem-default",
    "syncing": "emblem-synchronizing",
    "notDownloaded": "emblem-nimbus-cloud",
    "pinned": "emblem-nimbus-pinned",
    "conflict": "emblem-nimbus-conflict",
    "error": "emblem-important",
}

# The protocol states that are not "in sync": fetched once for the whole tree at connect time.
UNSETTLED_STATES = tuple(state for state, shown in DISPLAY.items() if shown != "inSync")

PLACEHOLDER_SUFFIX = ".nimbus"


def display_state(state):
    return DISPLAY.get(state, "error")


def most_urgent(shown_states):
    present = set(shown_states)
    return next((shown for shown in URGENCY if shown in present), None)


def emblems_for(shown, pinned):
    """A pinned file in sync shows the pin (it is in sync and will stay on this device)."""
    if shown == "inSync" and pinned:
        return [EMBLEMS["pinned"]]
    return [EMBLEMS[shown]]


def describe(entry, shown):
    """The text of the "Sync state" column: the state, with progress while copying."""
    state = entry.get("state") if entry else None
    progress = entry.get("progress") if entry else None
    if state in ("uploading", "downloading"):
        verb = "Uploading" if state == "uploading" else "Downloading"
        return "%s %d %%" % (verb, round(100 * progress)) if progress is not None else verb
    if state == "error":
        return "Error: " + entry.get("message", "see nimbusctl status")
    if state == "local":
        return "Waiting to upload"
    if state == "outdated":
        return "Newer version in the cloud"
    text = {"inSync": "In sync", "syncing": "Syncing", "notDownloaded": "In the cloud only",
            "conflict": "Conflict", "error": "Error"}[shown]
    if entry and entry.get("residency") == "pinned":
        text += ", always kept here"
    return text


def parent_of(relative):
    return relative.rsplit("/", 1)[0] if "/" in relative else ""


def ancestors(relative):
    """The folders above `relative`, nearest first, ending with the root ""."""
    while relative:
        relative = parent_of(relative)
        yield relative


class PairModel:
    """One daemon's pair. `root` is the local folder, `style` the placeholder style."""

    def __init__(self, root, style="suffix"):
        self.root = os.path.normpath(root)
        self.style = style
        self.folders = {}  # relative folder -> {name: entry}, for folders the user looks at
        self.unsettled = {}  # relative path -> shown state, for every path not in sync
        self.below = collections.defaultdict(collections.Counter)  # folder -> shown states inside

    # --- Paths -----------------------------------------------------------------------------

    def relative(self, absolute):
        """The path relative to the local folder, or None when outside it (or Nimbus's marker)."""
        absolute = os.path.normpath(absolute)
        if absolute == self.root:
            return ""
        if not absolute.startswith(self.root.rstrip("/") + "/"):
            return None
        relative = absolute[len(self.root.rstrip("/")) + 1:]
        return None if relative == ".nimbus-root" else relative

    def absolute(self, relative):
        return os.path.join(self.root, relative) if relative else self.root

    # --- What the daemon said -----------------------------------------------------------------

    def set_unsettled(self, entries):
        """The answer of `list` (recursive, one per unsettled state) for the whole tree."""
        self.unsettled.clear()
        self.below.clear()
        for entry in entries:
            self._set_shown(entry_path(entry), display_state(entry.get("state")))

    def set_folder(self, folder, entries):
        """The answer of `list` for one folder; also refreshes what it says about unsettled paths."""
        listing = {}
        for entry in entries:
            path = entry_path(entry)
            if parent_of(path) != folder or not path:
                continue
            listing[path.rsplit("/", 1)[-1]] = entry
            self._set_shown(path, display_state(entry.get("state")))
        self.folders[folder] = listing

    def has_folder(self, folder):
        return folder in self.folders

    def entry(self, relative):
        """The entry for a name as the file manager shows it (`a.txt.nimbus` is `a.txt` in the
        suffix style), and the relative path the daemon knows it by; (None, None) if unknown."""
        listing = self.folders.get(parent_of(relative))
        if listing is None:
            return None, None
        name = relative.rsplit("/", 1)[-1]
        if name in listing:
            return listing[name], relative
        if self.style == "suffix" and name.endswith(PLACEHOLDER_SUFFIX):
            real = name[: -len(PLACEHOLDER_SUFFIX)]
            entry = listing.get(real)
            if entry is not None and entry.get("state") in ("notDownloaded", "downloading", "error"):
                return entry, relative[: -len(PLACEHOLDER_SUFFIX)]
        return None, None

    def shown(self, relative, entry, is_folder):
        """The state shown for a path: a folder's is the most urgent of itself and its contents."""
        own = display_state(entry.get("state")) if entry else ("inSync" if relative == "" else None)
        if not is_folder:
            return own
        inside = [shown for shown, count in self.below.get(relative, {}).items() if count > 0]
        return most_urgent(inside + ([own] if own else []))

    def info(self, relative, is_folder):
        """(emblems, column text, daemon's path) for a path, or None while unknown."""
        entry, known_as = self.entry(relative) if relative else (None, "")
        if relative and entry is None:
            return None
        shown = self.shown(known_as, entry, is_folder)
        if shown is None:
            return None
        pinned = bool(entry) and entry.get("residency") == "pinned"
        return emblems_for(shown, pinned), describe(entry, shown), known_as

    def absorb(self, entry):
        """An entry a request answered with (pin, unpin, evict, download); returns what changed."""
        path = entry_path(entry)
        self._update_entry(path, {key: entry.get(key) for key in ("state", "residency", "progress", "message")})
        return self._set_shown(path, display_state(entry.get("state")))

    # --- Live updates ----------------------------------------------------------------------------

    def apply(self, message):
        """Folds one `watch` notification in. Returns the relative paths whose emblems may have
        changed (with their folders up to the root), or None when everything must be re-read."""
        method = message.get("method")
        params = message.get("params") or {}
        if method == "progress":
            path = entry_path(params)
            self._update_entry(path, {"progress": params.get("fraction")})
            return {path}
        if method != "event":
            return set()
        kind = params.get("type")
        if kind == "overflow":
            return None
        if kind in ("state", "conflict", "error"):
            path = entry_path(params)
            state = {"conflict": "conflict", "error": "error"}.get(kind, params.get("state"))
            fields = {"state": state}
            for key in ("progress", "message", "conflictCopy"):
                if key in params:
                    fields[key] = params[key]
            if state not in ("uploading", "downloading"):
                fields["progress"] = None
            self._update_entry(path, fields)
            return self._set_shown(path, display_state(state))
        if kind == "deleted" and params.get("side") == "local":
            return self._forget(entry_path(params))
        if kind == "renamed" and params.get("side") == "local":
            changed = self._forget(entry_path(params, "from"))
            target = entry_path(params)
            self.folders.pop(parent_of(target), None)  # re-read where it arrived
            return changed | {target} | set(ancestors(target))
        return set()

    def _update_entry(self, path, fields):
        listing = self.folders.get(parent_of(path))
        if listing is None:
            return
        name = path.rsplit("/", 1)[-1]
        entry = dict(listing.get(name) or {"path": path, "kind": "file", "residency": "auto"})
        for key, value in fields.items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
        listing[name] = entry

    def _set_shown(self, path, shown):
        """Records a path's shown state; returns it and its folders (their aggregate may change)."""
        old = self.unsettled.get(path)
        new = None if shown == "inSync" else shown
        if old != new:
            for folder in ancestors(path):
                if old:
                    self.below[folder][old] -= 1
                if new:
                    self.below[folder][new] += 1
            if new:
                self.unsettled[path] = new
            else:
                self.unsettled.pop(path, None)
        return {path} | set(ancestors(path))

    def _forget(self, path):
        changed = {path} | set(ancestors(path))
        for other in [p for p in self.unsettled if p == path or p.startswith(path + "/")]:
            changed |= self._set_shown(other, "inSync")
        listing = self.folders.get(parent_of(path))
        if listing is not None:
            listing.pop(path.rsplit("/", 1)[-1], None)
        for folder in [f for f in self.folders if f == path or f.startswith(path + "/")]:
            del self.folders[folder]
        return changed
