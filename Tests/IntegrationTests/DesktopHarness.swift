import Foundation
import Glibc
import NimbusSystem
import NimbusTestSupport

/// A throwaway desktop for end-to-end tests of the file-manager side: Xvfb, a private session
/// bus that activates nothing (no gvfs, tracker or dconf left behind) and Nautilus with the
/// extension of this tree (Packaging/nautilus, Packaging/icons) on its data path. Each program
/// runs in a process group of its own (`setsid`), started through `ChildProcess` (no descriptor
/// of this process), its output in a log file; `stop()` ends the groups.
final class DesktopSession {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let pythonExtension = "/usr/lib/\(multiarch)/nautilus/extensions-4/libnautilus-python.so"
    static var multiarch: String { "x86_64-linux-gnu" }

    /// What is missing to run Nautilus under Xvfb, or nil.
    static var missing: String? {
        if geteuid() != 0 { return "needs root (uid \(geteuid())): the daemon's error state is made with a refused download" }
        let tools = ["nautilus", "Xvfb", "dbus-run-session", "setsid", "import"]
        let absent = tools.filter { !FileManager.default.isExecutableFile(atPath: SyncHarness.tool($0)) }
            + (FileManager.default.fileExists(atPath: pythonExtension) ? [] : ["python3-nautilus (\(pythonExtension))"])
        return absent.isEmpty ? nil
            : "needs \(absent.joined(separator: ", ")) (apt-get install nautilus python3-nautilus xvfb dbus imagemagick)"
    }

    let root: String
    let home: String
    let share: String
    let runtime: String
    let trace: String
    private(set) var display = ""
    private var groups: [pid_t] = []

    /// `root`: an empty folder for the session's files. The extension finds daemons in
    /// `runtime/nimbus/*.sock` (see `expose(socket:)`).
    init(root: String) throws {
        self.root = root
        home = root + "/home"
        share = root + "/share"
        runtime = root + "/runtime"
        trace = root + "/extension-trace.log"
        let extensions = share + "/nautilus-python/extensions"
        for folder in [home, extensions, share + "/icons/hicolor/scalable", runtime + "/nimbus"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        chmod(runtime, 0o700)
        let source = Self.repository + "/Packaging/nautilus"
        try FileManager.default.copyItem(atPath: source + "/nimbus_nautilus.py", toPath: extensions + "/nimbus_nautilus.py")
        try FileManager.default.copyItem(atPath: source + "/nimbus_shell", toPath: extensions + "/nimbus_shell")
        try FileManager.default.copyItem(atPath: Self.repository + "/Packaging/icons",
                                         toPath: share + "/icons/hicolor/scalable/emblems")
        try Data(Self.busConfig.utf8).write(to: URL(fileURLWithPath: root + "/session.conf"))
        // As the package does: `*.nimbus` is a type of its own, so that Nautilus need not open
        // a placeholder to guess what it holds (which would download it).
        try FileManager.default.createDirectory(atPath: share + "/mime/packages", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.repository + "/Packaging/nimbus.xml", toPath: share + "/mime/packages/nimbus.xml")
        _ = run("update-mime-database \(q(share + "/mime")) >/dev/null 2>&1")
    }

    /// Makes a daemon's socket one the extension finds.
    func expose(socket: String, as name: String) throws {
        try FileManager.default.createSymbolicLink(atPath: runtime + "/nimbus/\(name).sock", withDestinationPath: socket)
    }

    /// Starts Xvfb and waits until it says which display it took.
    func startDisplay(size: String = "890x550") async throws {
        let file = root + "/display"
        try start("xvfb", "exec setsid Xvfb -displayfd 3 -screen 0 \(size)x24 -nolisten tcp -noreset 3>\(q(file))")
        try await Polling.eventually("Xvfb to report its display", timeout: .seconds(20)) {
            let text = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if Int(text) != nil { display = ":" + text; return nil }
            return "no display yet; log: \(log("xvfb"))"
        }
    }

    /// Starts Nautilus on `folder` on a private session bus.
    func startNautilus(_ folder: String) throws {
        let environment = [
            "HOME": home, "XDG_DATA_HOME": home + "/.local/share", "XDG_CONFIG_HOME": home + "/.config",
            "XDG_CACHE_HOME": home + "/.cache", "XDG_RUNTIME_DIR": runtime, "XDG_DATA_DIRS": share + ":/usr/share",
            "DISPLAY": display, "GSK_RENDERER": "cairo", "NO_AT_BRIDGE": "1", "GTK_A11Y": "none",
            "GIO_USE_VFS": "local", "GIO_USE_VOLUME_MONITOR": "unix", "GSETTINGS_BACKEND": "memory",
            "NIMBUS_NAUTILUS_TRACE": trace, "LANG": "C.UTF-8",
        ].map { "\($0.key)=\(q($0.value))" }.sorted().joined(separator: " ")
        try start("nautilus", "exec setsid env -i PATH=/usr/bin:/bin \(environment) dbus-run-session --config-file=\(q(root + "/session.conf")) -- nautilus --new-window \(q(folder))")
    }

    /// The last emblems the extension set on each path (from its trace file).
    func emblems() -> [String: String] {
        var last: [String: String] = [:]
        for line in ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 3)
            if words.count == 4, words[1] == "emblems" { last[String(words[3])] = String(words[2]) }
        }
        return last
    }

    /// A screenshot of the whole screen, taken when two in a row are the same (Nautilus done painting).
    /// Waits for a screen that is drawn (a PNG of more than `minimumBytes`: a blank one is a
    /// few KiB) and stays the same between two screenshots, then keeps it at `path`.
    func screenshot(to path: String, minimumBytes: Int = 10_000) async throws {
        var previous: Data?
        try await Polling.eventually("a drawn screen that stays the same between two screenshots", timeout: .seconds(60),
                                        interval: .milliseconds(300)) {
            let status = run("import -display \(q(display)) -window root \(q(path))")
            guard status == 0, let data = FileManager.default.contents(atPath: path) else { return "import exited \(status)" }
            defer { previous = data }
            if data.count <= minimumBytes { return "only \(data.count) bytes: not drawn yet" }
            return data == previous ? nil : "still changing"
        }
    }

    func log(_ name: String) -> String { (try? String(contentsOfFile: root + "/\(name).log", encoding: .utf8)) ?? "" }

    /// Ends every process group started here (SIGTERM, then SIGKILL after a few seconds).
    func stop() {
        for group in groups.reversed() {
            kill(-group, SIGTERM)
            var status: Int32 = 0
            _ = Polling.spin(timeout: .seconds(5), interval: .milliseconds(10)) { waitpid(group, &status, WNOHANG) != 0 }
            kill(-group, SIGKILL)
            _ = waitpid(group, &status, WNOHANG)
        }
        groups = []
    }

    // MARK: Helpers

    private func start(_ name: String, _ command: String) throws {
        let script = "\(command) >\(q(root + "/\(name).log")) 2>&1"
        groups.append(try ChildProcess.spawn(SyncHarness.tool("sh"), arguments: ["-c", script]))
    }

    private func run(_ command: String) -> Int32 { NetworkCloudServers.runShell(command) }

    private func q(_ word: String) -> String { NetworkCloudServers.quoted(word) }

    /// A session bus that activates no service: Nautilus runs without them.
    static let busConfig = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:tmpdir=/tmp</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
}
