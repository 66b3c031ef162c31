"""The context-menu actions for a selection, and the requests each one sends. Pure."""

import collections

from .model import display_state
from .rpc import path_params

# A selected file or folder as the daemon knows it: `daemon` is its socket, `path` the
# daemon's relative path, `entry` what `list` said (None when not known yet).
Target = collections.namedtuple("Target", "daemon path entry is_folder")

# `requests` is a list of (daemon socket, method, params); `kind` is "requests" for actions
# that only send them, "versions" for the dialog of one file's versions.
Action = collections.namedtuple("Action", "name label kind requests")

CONFLICT_CHOICES = (
    ("KeepLocal", "Keep this device's version", "local"),
    ("KeepCloud", "Keep the cloud's version", "cloud"),
    ("KeepBoth", "Keep both", "both"),
)


def _shown(target):
    return display_state(target.entry.get("state")) if target.entry else None


def _pinned(target):
    return bool(target.entry) and target.entry.get("residency") == "pinned"


def _requests(targets, method, extra=None):
    return [(t.daemon, method, dict(path_params(t.path), **(extra or {}))) for t in targets]


def actions_for(targets):
    """The actions offered for a selection, in menu order; empty when nothing selected is synced."""
    targets = [t for t in targets if t.entry is not None or t.is_folder]
    actions = []

    def offer(name, label, chosen, method, extra=None):
        if chosen:
            actions.append(Action(name, label, "requests", _requests(chosen, method, extra)))

    # Folders may hold anything, so every residency action applies to them.
    offer("Download", "Download now",
          [t for t in targets if t.is_folder or _shown(t) in ("notDownloaded", "error")],
          "download", {"wait": False})
    offer("Evict", "Free up space",
          [t for t in targets if t.is_folder or (_shown(t) == "inSync" and not _pinned(t))], "evict")
    offer("Pin", "Always keep on this device", [t for t in targets if not _pinned(t)], "pin")
    offer("Unpin", "Unpin", [t for t in targets if _pinned(t)], "unpin")
    files = [t for t in targets if not t.is_folder]
    if len(targets) == 1 and len(files) == 1:
        actions.append(Action("Versions", "Show versions…", "versions",
                              [(files[0].daemon, "versions", path_params(files[0].path))]))
    in_conflict = [t for t in targets if _shown(t) == "conflict"]
    for name, label, keep in CONFLICT_CHOICES:
        offer(name, label, in_conflict, "resolve", {"keep": keep})
    return actions


def version_rows(result):
    """(id, text) per version of a `versions` answer, newest first, for the dialog."""
    rows = []
    for version in result.get("versions", []):
        when = version.get("mtime", "")[:19].replace("T", " ")
        rows.append((version["id"], "%s UTC   %s" % (when, human_size(version.get("size", 0)))))
    return rows


def restore_request(daemon, path, version_id):
    return (daemon, "restore", dict(path_params(path), version=version_id))


def human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return ("%d %s" % (size, unit)) if unit == "bytes" else ("%.1f %s" % (size, unit))
        size /= 1000.0
    return ""
