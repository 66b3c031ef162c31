import Testing
import NimbusVocabulary
@testable import NimbusSystem

/// `getxattrat`/`setxattrat` are used where the kernel has them (Linux 6.13), and the calls
/// through /proc everywhere else, whatever refuses the new calls (issue 15).
@Suite struct XattrAtCallsTests {
    /// Counts the calls of each kind; each answers what it is told to.
    final class Calls {
        var at = 0
        var proc = 0
        func at(_ answer: Errno?) -> () throws -> Int {
            { self.at += 1; if let answer { throw answer }; return 1 }
        }
        func proc(_ answer: Errno?) -> () throws -> Int {
            { self.proc += 1; if let answer { throw answer }; return 2 }
        }
    }

    @Test func aKernelWithoutTheCallsIsAskedThroughProcFromThenOn() throws {
        let calls = XattrAtCalls(), counted = Calls()
        #expect(try calls.run(counted.at(.notImplemented), else: counted.proc(nil)) == 2)
        #expect(try calls.run(counted.at(nil), else: counted.proc(nil)) == 2)
        #expect((counted.at, counted.proc) == (1, 2))
        #expect(!calls.areUsed)
    }

    @Test func aFilterRefusingTheCallsIsToldFromARefusingFile() throws {
        let calls = XattrAtCalls(), counted = Calls()
        // The file refuses too (a symlink's user.* attributes): the error stands, and the
        // new calls are still tried next time.
        #expect(throws: Errno.notPermitted) { try calls.run(counted.at(.notPermitted), else: counted.proc(.notPermitted)) }
        #expect(calls.areUsed)
        // Only the new call is refused (a seccomp filter): /proc from then on.
        #expect(try calls.run(counted.at(.notPermitted), else: counted.proc(nil)) == 2)
        #expect(try calls.run(counted.at(nil), else: counted.proc(nil)) == 2)
        #expect((counted.at, counted.proc) == (2, 3))
        #expect(!calls.areUsed)
    }

    @Test func onceTheCallsWorkedTheirRefusalIsTheFiles() throws {
        let calls = XattrAtCalls(), counted = Calls()
        #expect(try calls.run(counted.at(nil), else: counted.proc(nil)) == 1)
        #expect(throws: Errno.notPermitted) { try calls.run(counted.at(.notPermitted), else: counted.proc(nil)) }
        #expect(throws: Errno.noSuchFile) { try calls.run(counted.at(.noSuchFile), else: counted.proc(nil)) }
        #expect((counted.at, counted.proc) == (3, 0))
        #expect(calls.areUsed)
    }
}
