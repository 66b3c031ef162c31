import FoundationEssentials
import NimbusProtocol

/// The `nimbusctl` program. It lives in the library so that its parser and output can be
/// tested without a process; the executable's main only calls `main`.
public enum NimbusCtl {
    /// Runs one command line (without the program name) and returns the exit status:
    /// 0 success, 1 the operation failed (for `status`: something needs you), 64 usage error,
    /// 69 daemon not reachable.
    public static func main(arguments: [String], environment: [String: String]) async -> Int32 {
        await run(arguments: arguments, environment: environment, console: .standard)
    }

    static func run(arguments: [String], environment: [String: String], console: Console) async -> Int32 {
        let invocation: Invocation
        do {
            invocation = try ArgumentParser.parse(arguments)
        } catch {
            // --json is honoured even on a line that does not parse, so scripts get JSON.
            let json = arguments.prefix { $0 != "--" }.contains("--json")
            let style = OutputStyle.detect(global: GlobalOptions(json: json), environment: environment)
            return report(Failure(error), style: style, console: console)
        }
        let style = OutputStyle.detect(global: invocation.global, environment: environment)
        switch invocation.command {
        case .help(let topic):
            console.out(topic.flatMap(Catalogue.command(named:)).map(HelpText.command) ?? HelpText.overview())
            return 0
        case .version:
            console.out("nimbusctl \(NimbusVersion.string)")
            return 0
        case .completion(let shell):
            console.write(Completions.script(for: shell), .output)
            return 0
        default:
            break
        }
        let endpoint: NimbusEndpoint = invocation.global.socket.map { .socket($0) }
            ?? .instance(invocation.global.instance ?? Locations.defaultInstance)
        do {
            let connection = try await NimbusConnection.connect(to: endpoint, clientName: "nimbusctl \(NimbusVersion.string)",
                                                                environment: environment)
            defer { connection.close() }
            let session = Session(connection: connection, style: style, console: console,
                                  resolver: resolver(localRoot: connection.daemon.localRoot, environment: environment),
                                  reach: invocation.global.reach)
            return try await session.run(invocation.command)
        } catch {
            return report(Failure.from(error), style: style, console: console)
        }
    }

    /// Prints `failure` (JSON on stdout with --json, else three lines on stderr) and returns
    /// its exit status.
    static func report(_ failure: Failure, style: OutputStyle, console: Console) -> Int32 {
        if style.json {
            console.out(failure.json.jsonText)
        } else {
            console.err(failure.human(color: style.colorOnStandardError))
        }
        return failure.exitCode
    }

    static func resolver(localRoot: String, environment: [String: String]) -> PathResolver {
        let resolvedRoot = URL(fileURLWithPath: localRoot).resolvingSymlinksInPath().path
        return PathResolver(localRoot: localRoot, resolvedRoot: resolvedRoot,
                            currentDirectory: FileManager.default.currentDirectoryPath,
                            logicalCurrentDirectory: environment["PWD"], environment: environment)
    }
}
