import Foundation
import Testing

/// The core decides, it does no I/O (DESIGN §1): it sees only NimbusVocabulary, which sees only
/// the standard library. Package.swift says so, but SwiftPM lets a file import any module that
/// happens to be built already, so the imports themselves are checked here.
@Suite struct LayeringTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")

    /// Every `import` line of the Swift files in `module`, as "File.swift: Module".
    static func imports(of module: String) throws -> [String] {
        let folder = sources.appendingPathComponent(module)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty, "no Swift files in \(folder.path)")
        return try files.sorted().flatMap { file in
            try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n")
                .compactMap { line -> String? in
                    let words = line.split(separator: " ")
                    guard let index = words.firstIndex(of: "import"), index == words.count - 2,
                          words[..<index].allSatisfy({ $0.hasPrefix("@") }) else { return nil }
                    return "\(file): \(words[index + 1])"
                }
        }
    }

    @Test func theCoreImportsOnlyTheVocabulary() throws {
        let allowed: Set<Substring> = ["NimbusVocabulary", "Synchronization"]
        let imports = try Self.imports(of: "NimbusCore")
        #expect(imports.contains { $0.hasSuffix(": NimbusVocabulary") })
        #expect(imports.filter { !allowed.contains($0.split(separator: " ").last!) } == [])
    }

    @Test func theVocabularyImportsNothing() throws {
        #expect(try Self.imports(of: "NimbusVocabulary") == [])
    }
}
