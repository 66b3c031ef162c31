import FoundationEssentials
import NimbusCore
import NimbusSystem
import NimbusProtocol
import NimbusVocabulary

/// The commands of files on demand (DESIGN §5): several paths each, one request per path.
/// A path the daemon refuses is reported and the others go on; the exit status is 1 if any
/// failed. A path that cannot be read at all stops everything first (usage error).
extension Session {
    func each(_ arguments: [String], _ done: String,
              _ action: @Sendable (String) async throws -> JSONValue) async throws -> Int32 {
        let paths = try arguments.map { try resolver.protocolPath($0) }
        var status: Int32 = 0
        for path in paths {
            do {
                let result = try await action(path)
                emit(result) { Render.done(done, path) }
            } catch let error as NimbusClientError where !error.isUnreachable {
                var failure = Failure(error)
                failure.path = path
                report(failure)
                status = Failure.operationFailed
            }
        }
        return status
    }

    /// Downloads every path at once; with a progress bar on a terminal; waits for all unless
    /// `--no-wait`.
    func download(_ arguments: [String], wait: Bool) async throws -> Int32 {
        guard wait else {
            return try await each(arguments, "Started downloading") { try await connection.download($0, wait: false) }
        }
        return try await downloadWaiting(arguments).status
    }

    /// Downloads every path at once and waits; returns the exit status and the file each
    /// path turned out to name (`report.pdf` for `report.pdf.nimbus`: the daemon decides,
    /// since a cloud file may itself be called `x.nimbus`).
    func downloadWaiting(_ arguments: [String]) async throws -> (status: Int32, files: [String?]) {
        // The daemon names a placeholder's file in its answer; progress comes under that name.
        let paths = try arguments.map { try resolver.protocolPath($0) }
        let bar = ProgressLine(console: console, enabled: style.progressBars, width: style.progressWidth)
        let watcher = style.progressBars ? try await progressWatcher(for: paths, bar: bar) : nil
        defer { watcher?.cancel() }
        let outcomes = await withTaskGroup(of: (Int, Result<JSONValue, any Error>).self) { group in
            for (index, path) in paths.enumerated() {
                group.addTask {
                    do { return (index, .success(try await connection.download(path))) } catch { return (index, .failure(error)) }
                }
            }
            var outcomes: [(Int, Result<JSONValue, any Error>)] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes.sorted { $0.0 < $1.0 }
        }
        bar.clear()
        var status: Int32 = 0
        var files = [String?](repeating: nil, count: paths.count)
        for (index, outcome) in outcomes {
            switch outcome {
            case .success(let result):
                files[index] = result["path"]?.stringValue ?? paths[index]
                emit(result) { Render.done("Downloaded", paths[index]) }
            case .failure(let error as NimbusClientError) where !error.isUnreachable:
                var failure = Failure(error)
                failure.path = paths[index]
                report(failure)
                status = Failure.operationFailed
            case .failure(let error):
                throw error
            }
        }
        return (status, files)
    }

    /// Draws the bar from the daemon's progress notifications for files at or below `paths`.
    func progressWatcher(for paths: [String], bar: ProgressLine) async throws -> Task<Void, Never> {
        let stream = try await connection.watch(progress: true)
        return Task {
            for await notification in stream {
                guard case .progress(let progress) = notification.payload, progress.direction == "download",
                      paths.contains(where: { $0.isEmpty || progress.path == $0 || progress.path + ".nimbus" == $0 || progress.path.hasPrefix($0 + "/") })
                else { continue }
                bar.update(label: progress.path, fraction: progress.fraction, detail: "")
            }
        }
    }

    /// Downloads the file, then hands it to the desktop's default application.
    func open(_ argument: String) async throws -> Int32 {
        let (status, files) = try await downloadWaiting([argument])
        guard status == 0, let relative = files.first ?? nil else { return status }
        let file = resolver.localPath(relative)
        let opened: Int32
        do {
            opened = try await ChildProcess.exitStatus(of: try ChildProcess.spawn("xdg-open", arguments: [file]))
        } catch where Errno(of: error) == .noSuchFile {
            opened = 127  // Not found in PATH, as a shell would say.
        } catch {
            throw Failure(name: "failed", message: "cannot open \(relative)", reason: "running xdg-open failed: \(error)",
                          suggestion: "open \(ShellWord.quote(file)) yourself", exitCode: Failure.operationFailed)
        }
        guard opened == 0 else {
            let missing = opened == 127
            throw Failure(name: "failed", message: "cannot open \(relative)",
                          reason: missing ? "xdg-open is not installed" : "xdg-open exited with status \(opened)",
                          suggestion: missing ? "install xdg-utils, or open \(ShellWord.quote(file)) yourself" : "open \(ShellWord.quote(file)) yourself",
                          exitCode: Failure.operationFailed)
        }
        return 0
    }
}
