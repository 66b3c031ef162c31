import Foundation
import Glibc
import NimbusTestSupport
import Testing

// The Debian package (issue #6), installed into a throwaway root with `dpkg-deb -x`: its
// programs run from there and need no Swift runtime.
//
// The package is built by Packaging/build-deb.sh (a release build of several minutes), not by
// this test. `.ci/run` builds it after `swift test` and then runs this suite again with
// NIMBUS_PACKAGE_TEST=1, which turns a missing package into a failure; Packaging/check-package.sh
// makes the same checks and more (units, lintian). Without the variable and without a package
// (a plain `swift test` on a fresh checkout) the suite is skipped, and the skip says why.

enum PackageUnderTest {
    /// The repository: this file is Tests/IntegrationTests/PackagingTests.swift.
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let outputDirectory = repository.appendingPathComponent("Packaging/out")
    static let isRequired = ProcessInfo.processInfo.environment["NIMBUS_PACKAGE_TEST"] == "1"

    /// Every `nimbus_*.deb` in Packaging/out.
    static var packages: [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: outputDirectory.path)) ?? []
        return names.filter { $0.hasPrefix("nimbus_") && $0.hasSuffix(".deb") }.sorted()
            .map { outputDirectory.appendingPathComponent($0) }
    }

    static var shouldRun: Bool { isRequired || !packages.isEmpty }

    static let skipReason: Comment = """
        no Packaging/out/nimbus_*.deb to test: build it with Packaging/build-deb.sh (.ci/run does, \
        then runs this suite with NIMBUS_PACKAGE_TEST=1, which makes a missing package a failure)
        """

    /// Libraries that would mean the package needs a Swift runtime installed.
    static let swiftRuntimeLibraries = ["libswift", "libFoundation", "lib_Foundation", "libdispatch",
                                        "libBlocksRuntime", "libicu"]

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var all: String { stdout + stderr }
    }

    /// Runs a program to completion with no input (dpkg-deb on a whole package may take a while).
    static func run(_ executable: String, _ arguments: [String]) throws -> Result {
        let result = try ShellCommand.run(executable, arguments, timeout: .seconds(300))
        return Result(status: result.status, stdout: result.output, stderr: result.error)
    }

    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/nimbus-package-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

@Suite("Debian package", .serialized, .timeLimit(.minutes(2)),
       .enabled(if: PackageUnderTest.shouldRun, PackageUnderTest.skipReason))
struct PackagingTests {
    /// The one package in Packaging/out, or a failure that says what is wrong.
    func package() throws -> URL {
        let packages = PackageUnderTest.packages
        try #require(!packages.isEmpty, "NIMBUS_PACKAGE_TEST=1 but there is no Packaging/out/nimbus_*.deb: run Packaging/build-deb.sh first")
        try #require(packages.count == 1, "several packages in Packaging/out (\(packages.map(\.lastPathComponent))); remove the stale ones")
        return packages[0]
    }

    /// Extracts the package into a new temporary root; returns the root and the package's version.
    func install(_ package: URL) throws -> (root: String, version: String) {
        let root = try PackageUnderTest.temporaryDirectory()
        let extract = try PackageUnderTest.run("/usr/bin/dpkg-deb", ["-x", package.path, root])
        try #require(extract.status == 0, "dpkg-deb -x \(package.path) failed: \(extract.all)")
        let field = try PackageUnderTest.run("/usr/bin/dpkg-deb", ["-f", package.path, "Version"])
        try #require(field.status == 0, "dpkg-deb -f Version failed: \(field.all)")
        return (root, field.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("the installed nimbusd --version and nimbusctl --help run and need no Swift runtime")
    func programsRunFromAThrowawayRoot() throws {
        let package = try package()
        let (root, version) = try install(package)
        defer { _ = try? FileManager.default.removeItem(atPath: root) }
        let nimbusd = root + "/usr/bin/nimbusd", nimbusctl = root + "/usr/bin/nimbusctl"

        let daemonVersion = try PackageUnderTest.run(nimbusd, ["--version"])
        #expect(daemonVersion.status == 0, "nimbusd --version: \(daemonVersion.all)")
        #expect(daemonVersion.stdout == "nimbusd \(version)\n", "the package is version \(version)")

        let help = try PackageUnderTest.run(nimbusctl, ["--help"])
        #expect(help.status == 0, "nimbusctl --help: \(help.all)")
        #expect(help.stdout.contains("USAGE: nimbusctl"), "nimbusctl --help printed: \(help.all)")

        for program in [nimbusd, nimbusctl] {
            let ldd = try PackageUnderTest.run("/usr/bin/ldd", [program])
            #expect(ldd.status == 0, "ldd \(program): \(ldd.all)")
            let needed = ldd.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let swift = needed.filter { line in PackageUnderTest.swiftRuntimeLibraries.contains { line.hasPrefix($0) } }
            #expect(swift.isEmpty, "\(program) needs a Swift runtime: \(swift)")
            #expect(!ldd.stdout.contains("not found"), "\(program) needs libraries that are missing: \(ldd.stdout)")
        }
    }

    @Test("the package holds the units, man pages, completions, MIME type and documentation")
    func contents() throws {
        let package = try package()
        let (root, _) = try install(package)
        defer { _ = try? FileManager.default.removeItem(atPath: root) }
        let expected = [
            "usr/bin/nimbusd", "usr/bin/nimbusctl",
            "usr/lib/systemd/user/nimbusd.service", "usr/lib/systemd/user/nimbusd@.service",
            "usr/lib/systemd/system/nimbusd-system@.service", "usr/lib/systemd/system/nimbusd-user@.service",
            "usr/lib/sysusers.d/nimbus.conf",
            "usr/share/man/man8/nimbusd.8.gz", "usr/share/man/man1/nimbusctl.1.gz", "usr/share/man/man5/nimbus.conf.5.gz",
            "usr/share/bash-completion/completions/nimbusctl", "usr/share/zsh/vendor-completions/_nimbusctl",
            "usr/share/fish/vendor_completions.d/nimbusctl.fish",
            "usr/share/mime/packages/nimbus.xml", "usr/share/applications/nimbus-open.desktop",
            "usr/share/doc/nimbus/copyright", "usr/share/doc/nimbus/changelog.gz",
            "usr/share/nautilus-python/extensions/nimbus_nautilus.py", "usr/share/nautilus-python/extensions/nimbus_shell/monitor.py",
            "usr/share/icons/hicolor/scalable/emblems/emblem-nimbus-cloud.svg",
            "usr/share/kio/servicemenus/nimbus.desktop", "usr/libexec/nimbus/nimbus-dolphin",
        ]
        for path in expected {
            #expect(FileManager.default.fileExists(atPath: root + "/" + path), "the package has no /\(path)")
        }
        let desktop = (try? String(contentsOfFile: root + "/usr/share/applications/nimbus-open.desktop", encoding: .utf8)) ?? ""
        #expect(desktop.contains("\nExec=nimbusctl open %f\n"))
        #expect(desktop.contains("\nMimeType=application/x-nimbus-placeholder;\n"))
    }
}
