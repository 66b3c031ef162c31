import Foundation
@testable import NimbusClient
import Synchronization

/// A console that keeps what nimbusctl writes, for the tests to read.
final class RecordingConsole: Sendable {
    private let streams = Mutex((output: "", error: ""))

    var console: Console {
        Console { [self] text, stream in
            streams.withLock { s in
                if stream == .output { s.output += text } else { s.error += text }
            }
        }
    }

    var output: String { streams.withLock { $0.output } }
    var error: String { streams.withLock { $0.error } }

    /// Standard output read as one JSON document.
    func outputJSON() throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(output.utf8))
    }
}
