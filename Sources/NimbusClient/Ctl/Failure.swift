/// Any error nimbusctl reports, in one shape: what failed, why, what to do, and the exit
/// status (0 success, 1 the operation failed or, for `status`, something needs you, 64 usage
/// error, 69 daemon not reachable: sysexits.h's EX_USAGE and EX_UNAVAILABLE).
struct Failure: Error, Equatable, Sendable {
    var name: String
    /// The JSON-RPC code, for errors the daemon sent.
    var code: Int?
    var message: String
    var reason: String
    var suggestion: String
    var exitCode: Int32
    /// The path it concerns, when a command works on several.
    var path: String?

    static let operationFailed: Int32 = 1
    /// `status` only: the daemon runs, but something needs the user (held deletions,
    /// conflicts, errors, a pause, a missing folder).
    static let needsAttention: Int32 = 1
    static let usage: Int32 = 64  // EX_USAGE, sysexits.h
    static let unavailable: Int32 = 69  // EX_UNAVAILABLE, sysexits.h

    init(name: String, code: Int? = nil, message: String, reason: String, suggestion: String, exitCode: Int32,
         path: String? = nil) {
        self.name = name
        self.code = code
        self.message = message
        self.reason = reason
        self.suggestion = suggestion
        self.exitCode = exitCode
        self.path = path
    }

    init(_ usage: UsageError) {
        self.init(name: "usage", message: usage.message, reason: usage.reason, suggestion: usage.suggestion,
                  exitCode: Self.usage)
    }

    init(_ error: NimbusClientError) {
        let exit: Int32 = switch error {
        case _ where error.isUnreachable: Self.unavailable
        case .invalidArgument: Self.usage
        default: Self.operationFailed
        }
        self.init(name: error.name, code: error.code, message: error.message, reason: error.reason,
                  suggestion: error.suggestion, exitCode: exit)
    }

    /// Whatever was thrown, as a Failure.
    static func from(_ error: any Error) -> Failure {
        switch error {
        case let failure as Failure: failure
        case let usage as UsageError: Failure(usage)
        case let client as NimbusClientError: Failure(client)
        default:
            Failure(name: "failed", message: "nimbusctl failed", reason: "\(error)",
                    suggestion: "try again; if it keeps failing, report it with the command you ran",
                    exitCode: operationFailed)
        }
    }

    /// Three lines for stderr; "error:" in red when colour is on.
    func human(color: Bool) -> String {
        // The path, and the daemon's words about it, may hold a file name's control characters.
        let subject = path.map { "\(TerminalText.printable($0)): " } ?? ""
        return Paint.red.apply("error:", enabled: color) + " " + subject + TerminalText.printable(message) + "\n"
            + "  reason: " + TerminalText.printable(reason) + "\n"
            + "  " + Paint.bold.apply("suggestion:", enabled: color) + " " + TerminalText.printable(suggestion)
    }

    /// `{"error": {...}}` on one line.
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "name": .string(name), "message": .string(message), "reason": .string(reason),
            "suggestion": .string(suggestion), "exitCode": .integer(Int64(exitCode)),
        ]
        if let code { members["code"] = .integer(Int64(code)) }
        if let path { members["path"] = .string(path) }
        return .object(["error": .object(members)])
    }
}
