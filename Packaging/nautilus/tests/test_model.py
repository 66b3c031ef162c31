"""States → emblems, folder aggregation and live updates, on PairModel alone."""

import unittest

from nimbus_shell.model import EMBLEMS, PairModel
from standin import entry


def model_with(entries, unsettled=None, style="suffix"):
    model = PairModel("/home/u/Nimbus", style)
    folders = {}
    for e in entries:
        folders.setdefault(e["path"].rsplit("/", 1)[0] if "/" in e["path"] else "", []).append(e)
    for folder, listed in folders.items():
        model.set_folder(folder, listed)
    model.set_unsettled(unsettled if unsettled is not None else [e for e in entries if e["state"] != "downloaded"])
    return model


class EmblemTests(unittest.TestCase):
    def test_every_state_has_its_emblem(self):
        expected = {
            "downloaded": EMBLEMS["inSync"], "uploading": EMBLEMS["syncing"], "downloading": EMBLEMS["syncing"],
            "local": EMBLEMS["syncing"], "outdated": EMBLEMS["syncing"], "notDownloaded": EMBLEMS["notDownloaded"],
            "conflict": EMBLEMS["conflict"], "error": EMBLEMS["error"],
        }
        model = model_with([entry("f-" + state, state) for state in expected])
        for state, emblem in expected.items():
            emblems, _, _ = model.info("f-" + state, is_folder=False)
            self.assertEqual(emblems, [emblem], state)
        self.assertEqual(len(set(EMBLEMS.values())), 6, "six different emblems")

    def test_a_pinned_file_in_sync_shows_the_pin_and_its_text_says_so(self):
        model = model_with([entry("p", residency="pinned"), entry("q", "conflict", residency="pinned")])
        self.assertEqual(model.info("p", False)[:2], ([EMBLEMS["pinned"]], "In sync, always kept here"))
        self.assertEqual(model.info("q", False)[0], [EMBLEMS["conflict"]])

    def test_progress_shows_in_the_column_text(self):
        model = model_with([entry("big", "downloading", progress=0.42), entry("up", "uploading")])
        self.assertEqual(model.info("big", False)[1], "Downloading 42 %")
        self.assertEqual(model.info("up", False)[1], "Uploading")

    def test_an_unknown_folder_or_name_has_no_emblem_and_outside_paths_are_not_ours(self):
        model = model_with([entry("a")])
        self.assertIsNone(model.info("missing", False))
        self.assertIsNone(model.info("sub/a", False))
        self.assertIsNone(model.relative("/home/u/Nimbus2/a"))
        self.assertIsNone(model.relative("/home/u/Nimbus/.nimbus-root"))
        self.assertEqual(model.relative("/home/u/Nimbus/sub/a"), "sub/a")
        self.assertEqual(model.relative("/home/u/Nimbus"), "")

    def test_a_suffix_placeholder_is_shown_as_the_file_it_stands_for(self):
        model = model_with([entry("docs/report.pdf", "notDownloaded")])
        emblems, _, known_as = model.info("docs/report.pdf.nimbus", False)
        self.assertEqual((emblems, known_as), ([EMBLEMS["notDownloaded"]], "docs/report.pdf"))
        real_names = model_with([entry("docs/report.pdf", "notDownloaded")], style="real-name")
        self.assertIsNone(real_names.info("docs/report.pdf.nimbus", False))
        self.assertEqual(real_names.info("docs/report.pdf", False)[0], [EMBLEMS["notDownloaded"]])


class FolderTests(unittest.TestCase):
    def test_a_folder_shows_the_most_urgent_state_inside_it(self):
        entries = [entry("a", kind="directory"), entry("a/b", kind="directory"), entry("a/b/ok"),
                   entry("a/b/cloud", "notDownloaded"), entry("a/sync", "uploading"), entry("a/b/clash", "conflict"),
                   entry("calm", kind="directory"), entry("calm/x")]
        model = model_with(entries)
        self.assertEqual(model.info("a", True)[0], [EMBLEMS["conflict"]])
        self.assertEqual(model.info("a/b", True)[0], [EMBLEMS["conflict"]])
        self.assertEqual(model.info("calm", True)[0], [EMBLEMS["inSync"]])
        self.assertEqual(model.info("", True)[0], [EMBLEMS["conflict"]], "the synced folder itself")

    def test_updates_from_watch_change_the_folder_and_name_its_ancestors(self):
        entries = [entry("a", kind="directory"), entry("a/b", kind="directory"), entry("a/b/f"), entry("a/b/g")]
        model = model_with(entries)
        changed = model.apply({"method": "event", "params": {"type": "error", "path": "a/b/f", "message": "disk full"}})
        self.assertEqual(changed, {"a/b/f", "a/b", "a", ""})
        self.assertEqual(model.info("a", True)[0], [EMBLEMS["error"]])
        self.assertEqual(model.info("a/b/f", False)[1], "Error: disk full")
        model.apply({"method": "event", "params": {"type": "state", "path": "a/b/g", "state": "uploading"}})
        model.apply({"method": "progress", "params": {"path": "a/b/g", "direction": "upload", "fraction": 0.5}})
        self.assertEqual(model.info("a/b/g", False)[1], "Uploading 50 %")
        model.apply({"method": "event", "params": {"type": "state", "path": "a/b/f", "state": "downloaded"}})
        self.assertEqual(model.info("a", True)[0], [EMBLEMS["syncing"]])
        model.apply({"method": "event", "params": {"type": "state", "path": "a/b/g", "state": "downloaded"}})
        self.assertEqual(model.info("a", True)[0], [EMBLEMS["inSync"]])
        self.assertEqual(model.info("a/b/g", False)[1], "In sync")

    def test_a_deleted_or_renamed_path_leaves_no_urgent_state_behind(self):
        entries = [entry("a", kind="directory"), entry("a/f", "conflict"), entry("b", kind="directory"),
                   entry("b/g", "error")]
        model = model_with(entries)
        model.apply({"method": "event", "params": {"type": "deleted", "path": "a/f", "side": "local"}})
        self.assertEqual(model.info("a", True)[0], [EMBLEMS["inSync"]])
        self.assertIsNone(model.info("a/f", False))
        model.apply({"method": "event", "params": {"type": "renamed", "from": "b", "path": "c", "side": "local"}})
        self.assertEqual(model.unsettled, {})
        self.assertFalse(model.has_folder(""), "the folder it moved into is read again")

    def test_an_overflow_asks_for_everything_again(self):
        self.assertIsNone(model_with([]).apply({"method": "event", "params": {"type": "overflow"}}))


if __name__ == "__main__":
    unittest.main()
