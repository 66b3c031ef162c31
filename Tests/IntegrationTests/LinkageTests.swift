import Foundation
import Testing

/// nimbusd and nimbusctl need FoundationEssentials only: all of Foundation brings ICU's data
/// and about 10 MB of resident pages to a daemon that never formats a date or a number for a
/// locale (issue 15). The debug build links the Swift libraries dynamically, so `ldd` shows
/// what each program pulls in.
@Suite struct LinkageTests {
    @Test("nimbusd and nimbusctl link FoundationEssentials, not Foundation or ICU", arguments: ["nimbusd", "nimbusctl"])
    func essentialsOnly(program: String) throws {
        let binary = SyncHarness.binaryDirectory.appendingPathComponent(program).path
        let ldd = try PackageUnderTest.run("/usr/bin/ldd", [binary])
        try #require(ldd.status == 0, "ldd \(binary): \(ldd.all)")
        let libraries = ldd.stdout.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
        let heavy = libraries.filter {
            $0.hasPrefix("libFoundation.so") || $0.hasPrefix("libFoundationInternationalization") || $0.hasPrefix("lib_FoundationICU")
                || $0.hasPrefix("libicu")
        }
        #expect(heavy.isEmpty, "\(program) links \(heavy); only libFoundationEssentials is expected")
        #expect(libraries.contains { $0.hasPrefix("libFoundationEssentials") }, "\(program): \(ldd.stdout)")
    }
}
