import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Testing

/// How each kind of cloud filesystem is written (DESIGN §3).
@Suite struct WriteProtocolChoiceTests {
    static func filesystem(noReplace: Bool, exchange: Bool, links: Bool, precision: Duration = .nanoseconds(1),
                           network: Bool) -> FilesystemCapabilities {
        FilesystemCapabilities(type: "test", renameNoReplace: noReplace, renameExchange: exchange, hardLinks: links,
                               extendedAttributes: true, mtimePrecision: precision, isNetwork: network)
    }

    @Test func aLocalDiskSwapsAndTrustsMetadata() {
        #expect(WriteProtocol.choose(for: .complete) == .local)
        #expect(WriteProtocol.choose(for: Self.filesystem(noReplace: true, exchange: true, links: true, network: false))
                == WriteProtocol(replace: .exchange, create: .renameNoReplace, verifiesContent: false))
    }

    /// sshfs and NFS: no renameat2 flags, hard links on the server, cached attributes.
    @Test func sshfsAndNFSMoveAsideLinkAndVerifyContent() {
        let sshfs = Self.filesystem(noReplace: false, exchange: false, links: true, precision: .seconds(1), network: true)
        #expect(WriteProtocol.choose(for: sshfs) == WriteProtocol(replace: .moveAside, create: .hardLink, verifiesContent: true))
    }

    /// rclone and other FUSE filesystems without hard links: the name is claimed with O_EXCL.
    @Test func withoutHardLinksANameIsClaimedExclusively() {
        let rclone = Self.filesystem(noReplace: false, exchange: false, links: false, network: true)
        #expect(WriteProtocol.choose(for: rclone) == WriteProtocol(replace: .moveAside, create: .exclusiveOpen, verifiesContent: true))
    }

    /// Whatever else it supports, content is verified where metadata can hide another device's write.
    @Test func contentIsVerifiedOnNetworksCoarseClocksAndWithoutExchange() {
        #expect(WriteProtocol.choose(for: Self.filesystem(noReplace: true, exchange: true, links: true, network: true)).verifiesContent)
        #expect(WriteProtocol.choose(for: Self.filesystem(noReplace: true, exchange: true, links: true,
                                                          precision: .seconds(1), network: false)).verifiesContent)
        #expect(WriteProtocol.choose(for: Self.filesystem(noReplace: true, exchange: true, links: true,
                                                          precision: .milliseconds(10), network: false)).verifiesContent)
        #expect(!WriteProtocol.choose(for: Self.filesystem(noReplace: true, exchange: true, links: true,
                                                           precision: .milliseconds(1), network: false)).verifiesContent,
                "a millisecond is fine enough to trust metadata")
        #expect(WriteProtocol.choose(for: Self.filesystem(noReplace: true, exchange: false, links: true, network: false)).verifiesContent)
        #expect(!WriteProtocol.choose(for: Self.filesystem(noReplace: false, exchange: true, links: true, network: false)).verifiesContent)
    }
}
