import Foundation
import NimbusTestSupport
import Testing

/// The core decides, it does no I/O (DESIGN §1): it sees only NimbusVocabulary, which sees only
/// the standard library. Package.swift says so, but SwiftPM lets a file import any module that
/// happens to be built already, so the imports themselves are checked here.
@Suite struct LayeringTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let sources = package.appendingPathComponent("Sources")

    /// Every `import` line of the Swift files in `module` (a folder of Sources/, or a path
    /// from the package's root), as "File.swift: Module".
    static func imports(of module: String) throws -> [String] {
        let folder = module.contains("/") ? package.appendingPathComponent(module) : sources.appendingPathComponent(module)
        let files = try swiftFiles(in: folder)
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

    /// The Swift files in `folder` and its subfolders, as paths relative to it.
    static func swiftFiles(in folder: URL) throws -> [String] {
        guard FileManager.default.fileExists(atPath: folder.path) else { throw HarnessFailure("no folder \(folder.path)") }
        return (FileManager.default.subpaths(atPath: folder.path) ?? []).filter { $0.hasSuffix(".swift") }
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

    /// What the toolchain brings (DESIGN: no third-party Swift packages); anything else a file
    /// imports must be a dependency its target declares in Package.swift.
    static let toolchainModules: Set<String> = ["Dispatch", "Foundation", "FoundationEssentials", "Glibc", "Synchronization",
                                                "Testing", "XCTest"]

    /// Each target of Package.swift with its folder and declared dependencies, read from its text.
    static func targets() throws -> [(name: String, folder: String, dependencies: Set<String>)] {
        let text = try String(contentsOf: package.appendingPathComponent("Package.swift"), encoding: .utf8)
        let kinds = [".target(", ".executableTarget(", ".testTarget("]
        var starts = kinds.flatMap { kind in text.ranges(of: kind).map { ($0.lowerBound, kind) } }
        starts.sort { $0.0 < $1.0 }
        return starts.enumerated().map { index, start in
            let entry = String(text[start.0..<(index + 1 < starts.count ? starts[index + 1].0 : text.endIndex)])
            func quoted(after label: String) -> String? {
                guard let label = entry.range(of: label + " \"") else { return nil }
                return String(entry[label.upperBound...].prefix { $0 != "\"" })
            }
            let name = quoted(after: "name:")!
            var dependencies = Set<String>()
            if let list = entry.range(of: "dependencies: [") {
                let inside = entry[list.upperBound...].prefix { $0 != "]" }
                dependencies = Set(inside.split(separator: "\"", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) })
            }
            let folder = quoted(after: "path:") ?? (start.1 == ".testTarget(" ? "Tests/" : "Sources/") + name
            return (name, folder, dependencies)
        }
    }

    /// SwiftPM builds every module into one folder, so a file can import a module its target
    /// does not depend on (one reached through another dependency) and still build, until the
    /// build order changes. Every target declares what its files import.
    @Test func everyTargetDeclaresWhatItImports() throws {
        let targets = try Self.targets()
        #expect(targets.count >= 15, "Package.swift read as \(targets.map(\.name))")
        #expect(targets.contains { $0.name == "NimbusProtocol" && $0.dependencies == ["NimbusCore", "NimbusVocabulary"] })
        for target in targets where try !Self.swiftFiles(in: Self.package.appendingPathComponent(target.folder)).isEmpty {
            let undeclared = try Self.imports(of: target.folder).filter { line in
                let module = String(line.split(separator: " ").last!)
                return !Self.toolchainModules.contains(module) && !target.dependencies.contains(module)
            }
            #expect(undeclared == [], "\(target.name) imports what Package.swift does not give it")
        }
    }

    /// The engine's `state` is its own (SyncEngine.swift, "Who owns what"): others read it
    /// through queries (`SyncEngine+Queries`, `+Control`, `+Tables`). Swift has no access level
    /// between a file and the module, and a test sees the module's internals through
    /// `@testable import`, so the rule is checked here: outside the `SyncEngine*.swift` files
    /// of NimbusDaemon, no source or test file names the engine's state or its type.
    @Test func nothingOutsideTheEngineTouchesItsState() throws {
        // Simple word boundaries: Unicode's do not fall at the dots of `pair.engine.x`.
        let touch = #/\bengine\??\.state\b|\bEngineState\b/#.wordBoundaryKind(.simple)
        var found: [String] = []
        for root in ["Sources", "Tests"] {
            let folder = Self.package.appendingPathComponent(root)
            let files = try Self.swiftFiles(in: folder)
            #expect(files.contains("NimbusDaemon/SyncEngine.swift") || root == "Tests", "no SyncEngine.swift in \(folder.path)")
            for file in files.sorted() where !file.hasPrefix("NimbusDaemon/SyncEngine") {
                let lines = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                found += lines.indices.filter { lines[$0].contains(touch) }.map { "\(root)/\(file):\($0 + 1): \(lines[$0])" }
            }
        }
        #expect(found == [], "the engine's state is touched outside SyncEngine*.swift")
    }
}
