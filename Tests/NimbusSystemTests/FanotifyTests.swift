import CNimbus
import Foundation
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSystem

@Suite struct FanotifyTests {
    /// One open-permission event, then one pre-access event with its range record, as the
    /// kernel lays them out (struct fanotify_event_metadata, then struct fanotify_event_info_range).
    @Test func eventsAndTheirRangeAreDecoded() {
        var bytes: [UInt8] = []
        func append<Field>(_ value: Field) { withUnsafeBytes(of: value) { bytes += $0 } }
        func metadata(length: UInt32, mask: UInt64, fd: Int32, pid: Int32) {
            append(length); append(UInt8(3)); append(UInt8(0)); append(UInt16(24))
            append(mask); append(fd); append(pid)
        }
        metadata(length: 24, mask: UInt64(FAN_OPEN_PERM), fd: 7, pid: 1234)
        metadata(length: 48, mask: UInt64(FAN_PRE_ACCESS), fd: 8, pid: 1235)
        append(UInt8(FAN_EVENT_INFO_TYPE_RANGE)); append(UInt8(0)); append(UInt16(24)); append(UInt32(0))
        append(UInt64(8192)); append(UInt64(4096))
        bytes += [1, 2, 3]  // a truncated tail is ignored

        let events = bytes.withUnsafeBytes { FanotifyEvent.parse($0) }
        #expect(events.count == 2)
        #expect(events[0].events == .openPermission && events[0].file.rawValue == 7 && events[0].pid == 1234)
        #expect(events[0].range == nil && events[0].needsResponse)
        #expect(events[1].events == .preAccess && events[1].file.rawValue == 8 && events[1].range == 8192..<12288)
        #expect(FanotifyEvents([.preAccess, .openPermission]).description == "open|pre-access")
    }

    @Test func refusalsCarryTheirErrnoInTheTopByte() {
        #expect(FanotifyResponse.allow.kernelValue == 1)
        #expect(FanotifyResponse.deny(.ioError).kernelValue == 0x0500_0002)
        #expect(FanotifyResponse.deny(.noSpace).kernelValue == UInt32(ENOSPC) << 24 | 2)
        // EACCES is not among the errors the kernel lets a group give: a plain deny (EPERM).
        #expect(FanotifyResponse.deny(.permissionDenied).kernelValue == 2)
        #expect(FAN_PRE_ACCESS == 0x0010_0000 && FAN_EVENT_INFO_TYPE_RANGE == 6)
        #expect(MemoryLayout<cnimbus_fanotify_range>.size == 24)
    }

    /// Fill only the untouched placeholder; anything else (already filled, truncated or
    /// written by someone while no daemon listened) is the file's own content now.
    @Test func aFillIsDecidedFromTheFileAsItIsNow() {
        #expect(RealNamePlaceholderFile.decide(notDownloaded: true, currentSize: 100, expectedSize: 100) == .fill)
        #expect(RealNamePlaceholderFile.decide(notDownloaded: true, currentSize: 4, expectedSize: 100) == .leave)
        #expect(RealNamePlaceholderFile.decide(notDownloaded: true, currentSize: 101, expectedSize: 100) == .leave)
        #expect(RealNamePlaceholderFile.decide(notDownloaded: false, currentSize: 100, expectedSize: 100) == .leave)
        #expect(RealNamePlaceholderFile.decide(notDownloaded: true, currentSize: 0, expectedSize: 0) == .fill)
    }

    @Test func statusLinesAreParsed() {
        let status = Capabilities.Status.parse("""
            Name:\tnimbusd
            CapInh:\t0000000000000000
            CapPrm:\t0000000000200000
            CapEff:\t0000000000200000
            CapBnd:\t000001ffffffffff
            CapAmb:\t0000000000000000
            NoNewPrivs:\t1
            """)
        #expect(status.permitted == 1 << 21 && status.effective == 1 << 21 && status.bounding == 0x1ff_ffff_ffff)
        #expect(status.inheritable == 0 && status.ambient == 0 && status.noNewPrivileges)
    }

    /// Capabilities belong to threads: the test runner has many, so the whole-process drop
    /// refuses rather than leave the others privileged.
    @Test func theProcessWideDropRefusesWithOtherThreadsRunning() throws {
        #expect(try Capabilities.threadCount() > 1)
        #expect(throws: SystemError.self) { try Capabilities.dropAllInProcess() }
    }

    /// The daemon's sequence, on a thread of its own so the test runner keeps root: the group
    /// is created with CAP_SYS_ADMIN, every capability is dropped, /proc shows none left, a
    /// second group is refused, and the first still marks and answers.
    @Test(.enabled(if: geteuid() == 0, "skipped: dropping capabilities needs root to have some"))
    func afterTheDropNoCapabilityIsLeftAndTheGroupStillWorks() throws {
        try Scratch.with(base: FanotifySupport.base) { scratch in
            try scratch.write("marked", Array("content".utf8), mode: 0o600)
            let outcome = Mutex<Result<(Capabilities.Status, Bool, Bool, Bool), any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let directory = scratch.directory
            let mask: FanotifyEvents = FanotifySupport.available ? .hydration : .openPermission
            Thread {
                defer { done.signal() }
                outcome.withLock {
                    $0 = Result {
                        let group = try FanotifyGroup()
                        defer { try? group.close() }
                        let hadAdmin = Capabilities.hasEffective(Capabilities.systemAdministration)
                        try Capabilities.dropAll()
                        let status = try Capabilities.Status.read()
                        let refused: Bool
                        do {
                            try FanotifyGroup().close()
                            refused = false
                        } catch let error as Errno {
                            refused = error == .notPermitted
                        }
                        try group.mark("marked", in: directory, for: mask)
                        try group.unmark("marked", in: directory, for: mask)
                        return (status, refused, hadAdmin, Capabilities.hasEffective(Capabilities.systemAdministration))
                    }
                }
            }.start()
            done.wait()
            let (status, refused, hadAdmin, stillAdmin) = try #require(outcome.withLock { $0 }).get()
            #expect(hadAdmin)
            #expect(status.effective == 0 && status.permitted == 0 && status.inheritable == 0)
            #expect(status.bounding == 0 && status.ambient == 0 && status.noNewPrivileges)
            #expect(refused && !stillAdmin)
            // The runner's own threads kept theirs.
            #expect(Capabilities.hasEffective(Capabilities.systemAdministration))
        }
    }
}
