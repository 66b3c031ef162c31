"""Time to first paint of a folder of N files in GNOME Files, with and without the Nimbus
extension, under Xvfb (issue 14). A measurement, not a test: run it on a quiet machine.

    python3 Packaging/nautilus/bench/first_paint.py --nimbusd .build/release/nimbusd [--files 10000] [--runs 7]

It syncs a folder Big holding N small files with a real nimbusd, then starts Nautilus on it
again and again, alternating without the extension, with it, and with it but no daemon
running (same Xvfb, a private session bus each time). A run's time is from starting Nautilus to the first screen (polled with xwd, about
every 20-40 ms) whose first file label is drawn as in the settled window; with the extension
the trace also gives when the first emblem was set. Prints each run and the medians.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXTENSION = os.path.dirname(HERE)
REPOSITORY = os.path.dirname(os.path.dirname(EXTENSION))
WIDTH, HEIGHT = 890, 550
# The first item's label in the icon grid (under the first icon, left of any emblem).
LABEL = (262, 172, 410, 200)


def rpc(path, method, params=None):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        return json.loads(data)


def wait_for(what, check, timeout=120):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit("timed out waiting for " + what)
        time.sleep(0.05)


def grab(display):
    """The label region of the screen, as raw pixels (xwd's ZPixmap, 32 bits per pixel)."""
    done = subprocess.run(["xwd", "-root", "-silent", "-display", display], capture_output=True)
    if done.returncode != 0:
        sys.exit("xwd failed: %s" % done.stderr.decode(errors="replace"))
    data = done.stdout
    header = int.from_bytes(data[0:4], "big")
    colors = int.from_bytes(data[76:80], "big")
    line = int.from_bytes(data[48:52], "big")
    pixels = data[header + 12 * colors:]
    x0, y0, x1, y1 = LABEL
    return b"".join(pixels[y * line + 4 * x0: y * line + 4 * x1] for y in range(y0, y1))


def drawn(frame):
    """Whether the label region shows something: more than a few colours (not the bare root)."""
    return len({frame[i:i + 4] for i in range(0, len(frame), 4)}) > 8


def run_nautilus(work, display, folder, with_extension, daemon=True):
    wait_for("the previous window to go", lambda: not drawn(grab(display)), timeout=30)
    share = os.path.join(work, "share")
    trace = os.path.join(work, "trace.log")
    if os.path.exists(trace):
        os.unlink(trace)
    env = {
        "PATH": "/usr/bin:/bin", "HOME": os.path.join(work, "home"),
        "XDG_RUNTIME_DIR": os.path.join(work, "runtime" if daemon else "runtime-without-daemon"),
        "XDG_DATA_DIRS": (share + ":" if with_extension else "") + "/usr/share", "DISPLAY": display,
        "XDG_CONFIG_HOME": os.path.join(work, "home/.config"), "XDG_CACHE_HOME": os.path.join(work, "home/.cache"),
        "GSK_RENDERER": "cairo", "NO_AT_BRIDGE": "1", "GTK_A11Y": "none", "GIO_USE_VFS": "local",
        "GIO_USE_VOLUME_MONITOR": "unix", "GSETTINGS_BACKEND": "memory", "NIMBUS_NAUTILUS_TRACE": trace,
        "LANG": "C.UTF-8",
    }
    frames = []
    started = time.monotonic()
    wall_started = time.time()
    process = subprocess.Popen(["dbus-run-session", "--config-file=" + os.path.join(work, "session.conf"), "--",
                                "nautilus", "--new-window", folder], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    # Frames until the label region shows a label (more than a few colours: not the bare root
    # window, not an empty view) and has not changed for 2 s; at most 60 s.
    while time.monotonic() - started < 60:
        frames.append((time.monotonic() - started, grab(display)))
        stable = [f for t, f in frames if t > frames[-1][0] - 2.0]
        if drawn(frames[-1][1]) and frames[-1][0] > 3 and len(stable) > 5 and all(f == stable[-1] for f in stable):
            break
    settled = frames[-1][1]
    first = next(t for t, f in frames if f == settled)
    emblem = None
    if with_extension and os.path.exists(trace):
        for line in open(trace, encoding="utf-8", errors="replace"):
            if " emblems " in line:
                emblem = float(line.split()[0]) - wall_started
                break
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return first, emblem, len(set(f for _, f in frames)) > 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nimbusd", required=True)
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=7)
    arguments = parser.parse_args()

    work = tempfile.mkdtemp(prefix="nimbus-first-paint-", dir="/var/tmp")
    processes = []
    try:
        for folder in ("local/Big", "cloud/Big", "home", "runtime/nimbus", "runtime-without-daemon", "share/nautilus-python/extensions",
                       "share/icons/hicolor/scalable/emblems", "state"):
            os.makedirs(os.path.join(work, folder))
        os.chmod(os.path.join(work, "runtime"), 0o700)
        for name in ("nimbus_nautilus.py", "nimbus_shell"):
            copy = shutil.copytree if os.path.isdir(os.path.join(EXTENSION, name)) else shutil.copy
            copy(os.path.join(EXTENSION, name), os.path.join(work, "share/nautilus-python/extensions", name))
        for icon in os.listdir(os.path.join(REPOSITORY, "Packaging/icons")):
            shutil.copy(os.path.join(REPOSITORY, "Packaging/icons", icon), os.path.join(work, "share/icons/hicolor/scalable/emblems"))
        with open(os.path.join(work, "session.conf"), "w") as out:
            out.write('<busconfig><type>session</type><listen>unix:tmpdir=/tmp</listen><auth>EXTERNAL</auth>'
                      '<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>'
                      '<allow own="*"/></policy></busconfig>')
        # The same files on both sides: the daemon records them as in sync without copying.
        for side in ("local", "cloud"):
            for i in range(arguments.files):
                with open(os.path.join(work, side, "Big", "f%05d.txt" % i), "w") as out:
                    out.write("file %d\n" % i)
        sock = os.path.join(work, "runtime/nimbus/bench.sock")
        log = open(os.path.join(work, "nimbusd.log"), "w")
        processes.append(subprocess.Popen([arguments.nimbusd, "--local", os.path.join(work, "local"), "--cloud",
                                           os.path.join(work, "cloud"), "--state-dir", os.path.join(work, "state"),
                                           "--socket", sock], stdout=log, stderr=log, start_new_session=True))

        def synced():
            try:
                status = rpc(sock, "status").get("result", {})
                return status.get("tracked", 0) > arguments.files and status.get("phase") == "idle"
            except OSError:
                return False

        wait_for("the daemon to sync Big", synced, timeout=600)
        read, write = os.pipe()
        processes.append(subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "%dx%dx24" % (WIDTH, HEIGHT),
                                           "-nolisten", "tcp", "-noreset"], pass_fds=[write], stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        os.close(write)
        number = b""
        while not number.endswith(b"\n"):
            chunk = os.read(read, 64)
            if not chunk:
                sys.exit("Xvfb did not say which display it took")
            number += chunk
        display = ":" + number.decode().strip()
        os.close(read)
        wait_for("Xvfb to accept clients", lambda: subprocess.run(["xdpyinfo", "-display", display],
                                                                   capture_output=True).returncode == 0, timeout=30)

        configurations = [("without extension", False, True), ("with extension", True, True),
                          ("extension, no daemon", True, False)]
        results = {name: [] for name, _, _ in configurations}
        big = os.path.join(work, "local/Big")
        run_nautilus(work, display, big, True)  # warm-up (page cache, font cache), not counted
        for run in range(arguments.runs):
            for name, with_extension, daemon in configurations:
                first, emblem, changed = run_nautilus(work, display, big, with_extension, daemon)
                results[name].append((first, emblem))
                print("run %d %-20s first paint %.3f s%s%s" % (
                    run + 1, name, first, "" if emblem is None else ", first emblem set %.3f s" % emblem,
                    "" if changed else " (screen never changed: check the label region)"), flush=True)
        base = statistics.median(t for t, _ in results["without extension"])
        print("%d files, %d runs each, median time to first paint:" % (arguments.files, arguments.runs))
        for name, _, _ in configurations:
            median = statistics.median(t for t, _ in results[name])
            emblems = [e for _, e in results[name] if e is not None]
            print("  %-20s %.3f s (ratio %.2f)%s" % (name, median, median / base,
                  "; first emblem set %.3f s" % statistics.median(emblems) if emblems else ""))
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
