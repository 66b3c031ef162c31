// swift-tools-version:6.0
import PackageDescription

// Layers (DESIGN §1): executables → NimbusDaemon → NimbusJournal → NimbusSystem → CNimbus, and
// NimbusDaemon → NimbusCore → NimbusVocabulary ← NimbusSystem. NimbusVocabulary (paths, metadata,
// content hashes, errors, the `FileSystem` protocol, `Side`, `TimeSource`) imports nothing but the
// standard library, so the core, which sees only it, cannot reach a syscall: the compiler keeps
// I/O out of the sync decision. NimbusSimulation (the in-memory and fault-injecting filesystems)
// is test support, under Tests/ beside NimbusTestSupport, whose seeded generator it uses; apart
// from that it sees only NimbusVocabulary, and nimbusd and nimbusctl link neither. NimbusProtocol
// is the wire vocabulary shared by the daemon and the control tool.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Nimbus",
    products: [
        .executable(name: "nimbusd", targets: ["nimbusd"]),
        .executable(name: "nimbusctl", targets: ["nimbusctl"]),
        .executable(name: "nimbus-bench", targets: ["nimbus-bench"]),
        .library(name: "NimbusClient", targets: ["NimbusClient"]),
    ],
    targets: [
        .target(name: "CNimbus"),
        // No Glibc, no Foundation: value types and the `FileSystem` protocol only.
        .target(name: "NimbusVocabulary", swiftSettings: strict),
        .target(name: "NimbusSystem", dependencies: ["CNimbus", "NimbusVocabulary"], swiftSettings: strict),
        .target(name: "NimbusCore", dependencies: ["NimbusVocabulary"], swiftSettings: strict),
        .target(name: "NimbusJournal", dependencies: ["NimbusSystem", "NimbusVocabulary"], swiftSettings: strict),
        .target(name: "NimbusProtocol", dependencies: ["NimbusCore", "NimbusVocabulary"], exclude: ["PROTOCOL.md"],
                swiftSettings: strict),
        .target(name: "NimbusDaemon",
                dependencies: ["NimbusCore", "NimbusJournal", "NimbusProtocol", "NimbusSystem", "NimbusVocabulary"],
                swiftSettings: strict),
        // What tests (and nimbus-bench) share: the one seeded generator, the one failure type, polls
        // with deadlines, temporary folders, the nimbusd child-process harness. No XCTest or
        // Testing, so that nimbus-bench can link it; nimbusd never does.
        .target(name: "NimbusTestSupport", dependencies: ["NimbusSystem", "NimbusVocabulary"], path: "Tests/NimbusTestSupport",
                swiftSettings: strict),
        // The Swift Testing trait that runs a test on a thread of its own (OwnThreadExecutor), for
        // the test targets: apart from NimbusTestSupport, which nimbus-bench links without Testing.
        .target(name: "NimbusTestTraits", dependencies: ["NimbusTestSupport"], path: "Tests/NimbusTestTraits",
                swiftSettings: strict),
        // In-memory filesystem, fault injection and a manual clock for whole-engine simulation.
        // For tests only (no executable links it), so it lives under Tests/ beside the support it uses.
        .target(name: "NimbusSimulation", dependencies: ["NimbusTestSupport", "NimbusVocabulary"], path: "Tests/NimbusSimulation",
                swiftSettings: strict),
        .executableTarget(name: "nimbusd", dependencies: ["NimbusDaemon"], swiftSettings: strict),
        // The client side of the control protocol, for nimbusctl and for applications.
        .target(name: "NimbusClient", dependencies: ["NimbusCore", "NimbusProtocol", "NimbusSystem", "NimbusVocabulary"],
                swiftSettings: strict),
        .executableTarget(name: "nimbusctl", dependencies: ["NimbusClient", "NimbusProtocol", "NimbusSystem"],
                          swiftSettings: strict),
        .executableTarget(name: "nimbus-bench",
                          dependencies: ["NimbusDaemon", "NimbusJournal", "NimbusSystem", "NimbusCore", "NimbusTestSupport",
                                         "NimbusVocabulary"],
                          swiftSettings: strict),
        .testTarget(name: "NimbusSystemTests", dependencies: ["CNimbus", "NimbusSystem", "NimbusTestSupport", "NimbusVocabulary"]),
        .testTarget(name: "NimbusCoreTests", dependencies: ["NimbusCore", "NimbusSystem", "NimbusTestSupport", "NimbusVocabulary"]),
        .testTarget(name: "NimbusJournalTests", dependencies: ["NimbusJournal", "NimbusSystem", "NimbusTestSupport"]),
        .testTarget(name: "NimbusDaemonTests",
                    dependencies: ["NimbusCore", "NimbusDaemon", "NimbusJournal", "NimbusProtocol", "NimbusSimulation", "NimbusSystem",
                                   "NimbusTestSupport", "NimbusVocabulary"]),
        .testTarget(name: "NimbusSimulationTests",
                    dependencies: ["NimbusSimulation", "NimbusSystem", "NimbusTestSupport", "NimbusVocabulary"]),
        .testTarget(name: "NimbusClientTests",
                    dependencies: ["NimbusClient", "NimbusCore", "NimbusProtocol", "NimbusSimulation", "NimbusSystem",
                                   "NimbusTestSupport", "NimbusTestTraits", "NimbusVocabulary"]),
        // Runs the real binaries on real folders; depends on them so they are built first.
        .testTarget(name: "IntegrationTests",
                    dependencies: ["NimbusSystem", "NimbusClient", "NimbusTestSupport", "NimbusTestTraits", "nimbusd", "nimbusctl"]),
    ],
    swiftLanguageModes: [.v6]
)
