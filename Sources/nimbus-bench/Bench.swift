import Foundation
import NimbusTestSupport

/// The whole run: header, the groups of figures in order, the table and the JSON lines.
enum Bench {
    static func main(arguments: [String]) -> Int32 {
        let options: BenchOptions
        do {
            switch try BenchOptions.parse(arguments) {
            case .help:
                print(BenchOptions.usage)
                return 0
            case .run(let parsed):
                options = parsed
            }
        } catch {
            FileHandle.standardError.write(Data("nimbus-bench: \(error)\n\(BenchOptions.usage)\n".utf8))
            return 64
        }

        if let nimbusd = options.nimbusd {
            guard FileManager.default.isExecutableFile(atPath: nimbusd) else {
                FileHandle.standardError.write(Data("nimbus-bench: --nimbusd \(nimbusd) is not an executable file\n".utf8))
                return 66
            }
            Daemon.chosenExecutable.withLock { $0 = nimbusd }
        }
        let base = options.directory ?? (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
        let workspace: Workspace
        do {
            workspace = try Workspace(base: base)
        } catch {
            FileHandle.standardError.write(Data("nimbus-bench: cannot create a folder below \(base): \(error)\n".utf8))
            return 73
        }
        Cleanup.shared.install(removing: options.keep ? nil : workspace.root)
        let started = Monotonic.now
        let header = Report.header(machine: Machine.describe(benchDirectory: workspace.root))
        progress(header)
        progress("nimbusd: \(options.nimbusd ?? NimbusdProcess.nimbusd)")
        progress("mode: \(options.quick ? "quick" : "full")\(options.only.isEmpty ? "" : ", only \(options.only.joined(separator: ","))"); data in \(workspace.root)")

        var report = Report()
        JournalFigures(options: options, workspace: workspace).run(into: &report)
        ScanCopyFigures(options: options, workspace: workspace).run(into: &report)
        SyncFigures(options: options, workspace: workspace).run(into: &report)
        PlaceholderFigures(options: options, workspace: workspace).run(into: &report)
        HydrationFigures(options: options, workspace: workspace).run(into: &report)

        if options.keep {
            progress("kept \(workspace.root)")
        } else {
            workspace.remove()
        }
        print(header)
        print("command: nimbus-bench \(arguments.joined(separator: " ")) — \(format(Monotonic.seconds(since: started))) s")
        print("")
        print(report.figures.isEmpty ? "(no figure matches --only \(options.only.joined(separator: ",")))" : report.table())
        print("")
        print(report.jsonLines())
        return report.figures.contains { $0.failure != nil } ? 1 : 0
    }
}
