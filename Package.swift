// swift-tools-version:6.0
import PackageDescription

// Layers (DESIGN §1): executables → NimbusDaemon → NimbusJournal → NimbusCore → NimbusSystem → CNimbus.
// NimbusProtocol is pure vocabulary shared by the daemon and the control tool.
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
        .target(name: "NimbusSystem", dependencies: ["CNimbus"], swiftSettings: strict),
        .target(name: "NimbusCore", dependencies: ["NimbusSystem"], swiftSettings: strict),
        .target(name: "NimbusJournal", dependencies: ["NimbusCore", "NimbusSystem"], swiftSettings: strict),
        .target(name: "NimbusProtocol", dependencies: ["NimbusCore"], exclude: ["PROTOCOL.md"], swiftSettings: strict),
        .target(name: "NimbusDaemon",
                dependencies: ["NimbusCore", "NimbusJournal", "NimbusProtocol", "NimbusSystem"],
                swiftSettings: strict),
        // What tests (and nimbus-bench) share: the one seeded generator, the one failure type, polls
        // with deadlines, temporary folders, the nimbusd child-process harness. No XCTest or
        // Testing, so that nimbus-bench can link it; nimbusd never does.
        .target(name: "NimbusTestSupport", dependencies: ["NimbusSystem"], path: "Tests/NimbusTestSupport",
                swiftSettings: strict),
        // In-memory filesystem, fault injection and a manual clock for whole-engine simulation.
        .target(name: "NimbusSimulation", dependencies: ["NimbusCore", "NimbusSystem", "NimbusTestSupport"],
                swiftSettings: strict),
        .executableTarget(name: "nimbusd", dependencies: ["NimbusDaemon"], swiftSettings: strict),
        // The client side of the control protocol, for nimbusctl and for applications.
        .target(name: "NimbusClient", dependencies: ["NimbusCore", "NimbusProtocol", "NimbusSystem"], swiftSettings: strict),
        .executableTarget(name: "nimbusctl", dependencies: ["NimbusClient", "NimbusProtocol", "NimbusSystem"],
                          swiftSettings: strict),
        .executableTarget(name: "nimbus-bench",
                          dependencies: ["NimbusDaemon", "NimbusJournal", "NimbusSystem", "NimbusCore", "NimbusTestSupport"],
                          swiftSettings: strict),
        .testTarget(name: "NimbusSystemTests", dependencies: ["NimbusSystem", "NimbusTestSupport"]),
        .testTarget(name: "NimbusCoreTests", dependencies: ["NimbusCore", "NimbusTestSupport"]),
        .testTarget(name: "NimbusJournalTests", dependencies: ["NimbusJournal", "NimbusTestSupport"]),
        .testTarget(name: "NimbusDaemonTests", dependencies: ["NimbusDaemon", "NimbusSimulation", "NimbusTestSupport"]),
        .testTarget(name: "NimbusSimulationTests", dependencies: ["NimbusSimulation", "NimbusTestSupport"]),
        .testTarget(name: "NimbusClientTests", dependencies: ["NimbusClient", "NimbusSimulation", "NimbusTestSupport"]),
        // Runs the real binaries on real folders; depends on them so they are built first.
        .testTarget(name: "IntegrationTests",
                    dependencies: ["NimbusSystem", "NimbusClient", "NimbusTestSupport", "nimbusd", "nimbusctl"]),
    ],
    swiftLanguageModes: [.v6]
)
