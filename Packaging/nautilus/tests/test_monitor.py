"""The extension's connections against stand-in daemons, on a selector loop: discovery,
listings, live updates, actions → requests, timeouts, no daemon, several instances, a folder
of 10 000 files."""

import os
import shutil
import socket
import tempfile
import unittest

from nimbus_shell import rpc
from nimbus_shell.actions import actions_for, restore_request, version_rows
from nimbus_shell.loop import SelectorLoop
from nimbus_shell.model import EMBLEMS
from nimbus_shell.monitor import Monitor
from standin import StandIn, entry


class MonitorTestCase(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="nimbus-nautilus-test-")
        self.runtime = os.path.join(self.work, "runtime")
        os.makedirs(os.path.join(self.runtime, "nimbus"))
        self.system_dir = os.path.join(self.work, "run-nimbus")
        self.servers = []
        self.changed = set()
        self.loop = SelectorLoop()
        self.monitor = None

    def tearDown(self):
        if self.monitor:
            self.monitor.stop()
        for server in self.servers:
            server.stop()
        shutil.rmtree(self.work)

    def daemon(self, name, root, entries, **options):
        server = StandIn(os.path.join(self.runtime, "nimbus", name + ".sock"), root, entries, **options)
        self.servers.append(server)
        return server

    def start_monitor(self, timeout=2.0):
        self.monitor = Monitor(self.loop, self.changed.update, environ={"XDG_RUNTIME_DIR": self.runtime},
                               system_dir=self.system_dir, timeout=timeout, log=lambda text: None)
        self.monitor.start()
        return self.monitor

    def connected(self, *roots):
        self.loop.run_until("connections to %s" % (roots,), lambda: all(self.monitor.owner(r) and self.monitor.owner(r).model.root == r for r in roots))

    def shown(self, path, is_folder=False):
        """Asks like Nautilus does, and waits for the answer the listing brings."""
        self.changed.discard(path)
        first = self.monitor.info(path, is_folder)
        if first is not None:
            return first
        self.loop.run_until("the listing of %s's folder" % path, lambda: path in self.changed)
        return self.monitor.info(path, is_folder)

    def send(self, requests):
        outcomes = []
        self.monitor.run(requests, outcomes.extend)
        self.loop.run_until("answers to %s" % (requests,), lambda: outcomes)
        return outcomes


class DiscoveryTests(MonitorTestCase):
    def test_sockets_are_found_where_the_daemon_puts_them(self):
        os.makedirs(self.system_dir)
        for path in (os.path.join(self.runtime, "nimbus", "b.sock"), os.path.join(self.system_dir, "sys.sock")):
            open(path, "w").close()
        self.assertEqual(rpc.socket_paths({"XDG_RUNTIME_DIR": self.runtime}, system_dir=self.system_dir),
                         [os.path.join(self.runtime, "nimbus", "b.sock"), os.path.join(self.system_dir, "sys.sock")])
        self.assertEqual(rpc.socket_paths({}, uid=4321, system_dir=self.system_dir),
                         [os.path.join(self.system_dir, "sys.sock")])

    def test_no_daemon_means_no_emblems_and_no_menu(self):
        monitor = self.start_monitor()
        self.assertEqual(monitor.daemons, {})
        self.assertIsNone(monitor.info("/home/u/Nimbus/a", False))
        self.assertIsNone(monitor.target("/home/u/Nimbus/a", False))

    def test_a_stale_socket_with_no_daemon_behind_it_is_given_up_at_once(self):
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(os.path.join(self.runtime, "nimbus", "crashed.sock"))
        stale.close()  # the file stays, nobody listens: connect is refused
        monitor = self.start_monitor()
        self.assertFalse(monitor.daemons[os.path.join(self.runtime, "nimbus", "crashed.sock")].alive)
        self.assertIsNone(monitor.info("/anything", False))

    def test_a_daemon_started_later_is_found_and_the_files_already_shown_are_asked_again(self):
        root = os.path.join(self.work, "Later")
        os.makedirs(root + "/sub")
        open(root + "/sub/f", "w").close()
        monitor = self.start_monitor()
        monitor.rescan_seconds = 0.05
        self.assertIsNone(monitor.info(root + "/sub/f", False), "no daemon yet")
        self.daemon("later", root, [entry("sub", kind="directory"), entry("sub/f")])
        self.connected(root)
        self.assertIn(root + "/sub/f", self.changed, "Nautilus is told to ask again")
        self.assertEqual(self.shown(root + "/sub/f")[0], [EMBLEMS["inSync"]])


class ListingTests(MonitorTestCase):
    def test_emblems_come_from_one_list_per_folder_and_stay_cached(self):
        root = os.path.join(self.work, "Nimbus")
        entries = [entry("docs", kind="directory"), entry("docs/a"), entry("docs/b", "notDownloaded"),
                   entry("docs/c", "error", message="no space")]
        server = self.daemon("default", root, entries)
        self.start_monitor()
        self.connected(root)
        self.assertEqual(self.shown(root + "/docs/a")[0], [EMBLEMS["inSync"]])
        self.assertEqual(self.shown(root + "/docs/b.nimbus")[0], [EMBLEMS["notDownloaded"]])
        self.assertEqual(self.shown(root + "/docs", True)[0], [EMBLEMS["error"]], "from the unsettled paths")
        folder_lists = [p for m, p in server.methods("list") if not p.get("recursive")]
        self.assertEqual(folder_lists, [{"path": "docs", "limit": 10000}, {"limit": 10000}])

    def test_a_folder_of_ten_thousand_files_is_one_paged_listing(self):
        root = os.path.join(self.work, "Big")
        entries = [entry("many", kind="directory")] + [entry("many/f%05d" % i) for i in range(10000)]
        entries[5000]["state"] = "uploading"
        server = self.daemon("big", root, entries, page=1000)
        self.start_monitor()
        self.connected(root)
        for i in range(10000):  # Nautilus asks for every file before the listing is back
            self.assertIsNone(self.monitor.info(root + "/many/f%05d" % i, False))
        self.loop.run_until("every file reported", lambda: root + "/many/f09999" in self.changed)
        infos = [self.monitor.info(root + "/many/f%05d" % i, False) for i in range(10000)]
        self.assertEqual(sum(1 for i in infos if i and i[0] == [EMBLEMS["syncing"]]), 1)
        self.assertEqual(sum(1 for i in infos if i and i[0] == [EMBLEMS["inSync"]]), 9999)
        self.assertEqual(len([p for m, p in server.methods("list") if p.get("path") == "many"]), 1,
                         "one listing for the folder")
        self.assertEqual(len([p for m, p in server.methods("list") if "cursor" in p]), 9, "10 pages of 1000")

    def test_watch_notifications_update_the_emblems_live(self):
        root = os.path.join(self.work, "Live")
        server = self.daemon("live", root, [entry("f"), entry("g")])
        self.start_monitor()
        self.connected(root)
        self.assertEqual(self.shown(root + "/f")[0], [EMBLEMS["inSync"]])
        self.changed.clear()
        server.push("event", {"type": "conflict", "path": "f", "conflictCopy": "f (conflict)"})
        self.loop.run_until("the conflict to be reported", lambda: root + "/f" in self.changed)
        self.assertEqual(self.monitor.info(root + "/f", False)[0], [EMBLEMS["conflict"]])
        self.assertEqual(self.monitor.info(root, True)[0], [EMBLEMS["conflict"]])

    def test_a_daemon_that_stops_takes_its_emblems_with_it(self):
        root = os.path.join(self.work, "Gone")
        server = self.daemon("gone", root, [entry("f")])
        self.start_monitor()
        self.connected(root)
        self.assertIsNotNone(self.shown(root + "/f"))
        self.changed.clear()
        server.stop()
        self.loop.run_until("the emblems to be withdrawn", lambda: root + "/f" in self.changed)
        self.assertIsNone(self.monitor.info(root + "/f", False))


class TimeoutTests(MonitorTestCase):
    def test_a_daemon_that_never_answers_is_given_up_after_the_timeout(self):
        server = self.daemon("hung", "/never", [], silent=True)
        monitor = self.start_monitor(timeout=0.2)
        daemon = monitor.daemons[server.socket_path]
        self.assertIsNone(monitor.info("/never/f", False), "answered at once, from nothing")
        self.loop.run_until("the session to give up", lambda: not daemon.alive)
        [(_, outcome)] = self.send([(server.socket_path, "pin", {"path": "f"})])
        self.assertIsInstance(outcome, rpc.Unreachable)
        self.assertIn("no answer to pin within 0.2 s", str(outcome))


class ActionTests(MonitorTestCase):
    def test_each_action_sends_its_request_to_the_daemon_that_owns_the_file(self):
        outer = os.path.join(self.work, "Outer")
        inner = os.path.join(outer, "Inner")  # a second pair inside the first
        first = self.daemon("first", outer, [entry("cloud", "notDownloaded"), entry("kept", residency="pinned"),
                                             entry("clash", "conflict"), entry("Inner", kind="directory")])
        second = self.daemon("second", inner, [entry("ok")], style="real-name")
        self.start_monitor()
        self.connected(outer, inner)
        for path in (outer + "/cloud.nimbus", outer + "/kept", outer + "/clash", inner + "/ok"):
            self.shown(path)
        targets = [self.monitor.target(outer + "/cloud.nimbus", False), self.monitor.target(outer + "/kept", False),
                   self.monitor.target(outer + "/clash", False), self.monitor.target(inner + "/ok", False)]
        self.assertEqual([t.daemon for t in targets], [first.socket_path] * 3 + [second.socket_path])
        offered = {a.name: a for a in actions_for(targets)}
        self.assertEqual(list(offered), ["Download", "Evict", "Pin", "Unpin", "KeepLocal", "KeepCloud", "KeepBoth"])
        self.assertEqual(offered["Download"].requests, [(first.socket_path, "download", {"path": "cloud", "wait": False})])
        self.assertEqual(offered["Evict"].requests, [(second.socket_path, "evict", {"path": "ok"})])
        self.assertEqual([r[2]["path"] for r in offered["Pin"].requests], ["cloud", "clash", "ok"])
        self.assertEqual(offered["Unpin"].requests, [(first.socket_path, "unpin", {"path": "kept"})])
        self.assertEqual(offered["KeepCloud"].requests,
                         [(first.socket_path, "resolve", {"path": "clash", "keep": "cloud"})])
        for action in offered.values():
            self.send(action.requests)
        sent_first = [(m, p) for m, p in first.methods() if m not in ("hello", "status", "watch", "list")]
        self.assertEqual(sent_first, [("download", {"path": "cloud", "wait": False}), ("pin", {"path": "cloud"}),
                                      ("pin", {"path": "clash"}), ("unpin", {"path": "kept"}),
                                      ("resolve", {"path": "clash", "keep": "local"}),
                                      ("resolve", {"path": "clash", "keep": "cloud"}),
                                      ("resolve", {"path": "clash", "keep": "both"})])
        self.assertEqual([(m, p) for m, p in second.methods() if m in ("evict", "pin")],
                         [("evict", {"path": "ok"}), ("pin", {"path": "ok"})])

    def test_one_file_offers_its_versions_and_a_refusal_is_explained(self):
        root = os.path.join(self.work, "V")
        server = self.daemon("v", root, [entry("doc")])
        server.errors["evict"] = ("in_use", "doc is open in a program")
        self.start_monitor()
        self.connected(root)
        self.shown(root + "/doc")
        offered = {a.name: a for a in actions_for([self.monitor.target(root + "/doc", False)])}
        self.assertEqual(offered["Versions"].kind, "versions")
        [(_, result)] = self.send(offered["Versions"].requests)
        self.assertEqual([v["id"] for v in result["versions"]], ["v2", "v1"])
        self.assertEqual(version_rows(result), [("v2", "2026-01-02 10:00:00 UTC   1.5 KB"),
                                                ("v1", "2026-01-01 09:00:00 UTC   3 bytes")])
        self.send([restore_request(server.socket_path, "doc", "v1")])
        self.assertEqual(server.methods("restore"), [("restore", {"path": "doc", "version": "v1"})])
        self.changed.clear()
        self.send(offered["Pin"].requests)
        self.assertIn(root + "/doc", self.changed, "the pin is shown at once")
        self.assertEqual(self.monitor.info(root + "/doc", False)[0], [EMBLEMS["pinned"]])
        [(_, refusal)] = self.send(offered["Evict"].requests)
        self.assertIsInstance(refusal, rpc.RPCError)
        self.assertEqual((refusal.name, refusal.explain()), ("in_use", "doc is open in a program.\nTry again."))

    def test_a_selection_outside_every_pair_offers_nothing(self):
        self.assertEqual(actions_for([]), [])


if __name__ == "__main__":
    unittest.main()
