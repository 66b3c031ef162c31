import Foundation

/// The command line of `nimbus-bench`, and the sizes and run counts it implies.
struct BenchOptions: Sendable {
    var quick = false
    /// Figure names or name prefixes (`sync.initial`, `journal`); empty: every figure.
    var only: [String] = []
    /// Tree size for the scan and the largest initial sync (default 100 000; 10 000 quick).
    var files: Int?
    /// Runs per figure (latency figures take samples instead).
    var runs: Int?
    /// Where the temporary data goes (default: the system's temporary directory).
    var directory: String?
    /// Keep the data folder afterwards, for inspection.
    var keep = false
    /// The `nimbusd` to measure (default: the one built next to nimbus-bench).
    var nimbusd: String?

    static let usage = """
        Usage: nimbus-bench [--quick] [--only NAME[,NAME…]] [--files N] [--runs N] [--dir PATH] [--keep] [--nimbusd PATH]
        Measures Nimbus against cp -a, rsync -a and find on this machine, in the same run.

          --quick        small sizes and few runs (about a minute)
          --only NAME    only the figures named NAME or starting with NAME. (e.g. sync.initial, journal)
          --files N      tree size of the scan and of the largest initial sync (default 100000)
          --runs N       runs per figure; each figure is the median of its runs
          --dir PATH     put the temporary data below PATH (default /tmp); it is removed at the end
          --keep         keep the temporary data
          --nimbusd PATH the nimbusd to measure, e.g. the packaged one (static Swift runtime) in
                         .build-pkg/release/ or /usr/bin/nimbusd (default: the one built next to
                         nimbus-bench, which loads the Swift runtime as shared libraries)
          -h, --help     this help

        Prints a table, then one JSON line per figure. Build it in release mode:
          swift run -c release nimbus-bench
        """

    enum Parsed {
        case run(BenchOptions)
        case help
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ arguments: [String]) throws -> Parsed {
        // --flag=value is accepted too.
        let arguments = arguments.flatMap { argument -> [String] in
            guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return [argument] }
            return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
        }
        var options = BenchOptions()
        var index = 0
        func value(_ name: String) throws -> String {
            guard index < arguments.count else { throw UsageError(description: "\(name) needs a value") }
            defer { index += 1 }
            return arguments[index]
        }
        func positive(_ name: String) throws -> Int {
            let text = try value(name)
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number > 0 else {
                throw UsageError(description: "\(name) needs a positive number, not \"\(text)\"")
            }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--quick": options.quick = true
            case "--keep": options.keep = true
            case "--only":
                options.only += try value(argument).split(separator: ",").map(String.init).filter { !$0.isEmpty }
            case "--files": options.files = try positive(argument)
            case "--runs": options.runs = try positive(argument)
            case "--dir": options.directory = try value(argument)
            case "--nimbusd": options.nimbusd = try value(argument)
            case "-h", "--help": return .help
            default: throw UsageError(description: "unknown argument \(argument)")
            }
        }
        return .run(options)
    }

    /// True when the figure `name` was asked for: no `--only`, or a name equal to it, or a
    /// prefix of it at a dot (`sync` selects `sync.latency.up`; `idle.cpu` selects `idle.cpu.100k`).
    func wants(_ name: String) -> Bool {
        if only.isEmpty { return true }
        return only.contains { selector in
            name == selector || name.hasPrefix(selector.hasSuffix(".") ? selector : selector + ".")
        }
    }

    func wantsAny(_ names: [String]) -> Bool { names.contains(where: wants) }

    // MARK: - Sizes

    func runs(full: Int, quick: Int) -> Int { runs ?? (self.quick ? quick : full) }

    var journalEntries: Int { 100_000 }
    var scanFiles: Int { files ?? (quick ? 10_000 : 100_000) }
    var copyBytes: Int64 { quick ? 64 << 20 : 512 << 20 }
    var uploadBytes: Int64? { quick ? nil : 1 << 30 }

    /// The initial-sync ladder: 1 000, 10 000, 100 000 (quick: 1 000), or with `--files N` the
    /// standard sizes below N and N itself (quick: N alone).
    var syncSizes: [Int] {
        guard let files else { return quick ? [1_000] : [1_000, 10_000, 100_000] }
        if quick { return [files] }
        return [1_000, 10_000, 100_000].filter { $0 < files } + [files]
    }

    func initialRuns(files: Int) -> Int { runs ?? (quick ? 3 : (files >= 10_000 ? 3 : 5)) }

    /// The tree the 30 s idle figure (#3) uses: 10 000 files when that size is run, else the largest.
    var idleTreeSize: Int { syncSizes.contains(10_000) ? 10_000 : syncSizes.last! }
    var idleWindowSeconds: Int { quick ? 10 : 30 }
    var latencySamples: Int { quick ? 50 : 200 }
    var burstFiles: Int { quick ? 1_000 : 10_000 }
    var restartRuns: Int { runs(full: 3, quick: 2) }
}
