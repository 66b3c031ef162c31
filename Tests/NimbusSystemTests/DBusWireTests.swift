import Testing
@testable import NimbusSystem

/// The D-Bus wire format against bytes derived by hand from the specification
/// ("Marshaling (Wire Format)", "Message Format"); the same values read back.
@Suite struct DBusWireTests {
    /// Values written at offset 0 of an empty writer, or after `prefix` (for alignment).
    @Test(arguments: [
        ("string", [], DBusValue.string("hi"), [0x02, 0, 0, 0, 0x68, 0x69, 0]),
        ("uint32 after a byte is aligned to 4", [DBusValue.byte(7)], .uint32(1), [0x07, 0, 0, 0, 0x01, 0, 0, 0]),
        ("boolean is four bytes", [], .boolean(true), [0x01, 0, 0, 0]),
        ("int32 two's complement", [], .int32(-2), [0xfe, 0xff, 0xff, 0xff]),
        ("signature has a one-byte length", [], .signature("as"), [0x02, 0x61, 0x73, 0]),
        ("object path", [], .objectPath("/a"), [0x02, 0, 0, 0, 0x2f, 0x61, 0]),
        // Padding between elements counts in the array's length; none after the last.
        ("as", [], .strings(["a", "bc"]),
         [0x0f, 0, 0, 0, 0x01, 0, 0, 0, 0x61, 0, 0, 0, 0x02, 0, 0, 0, 0x62, 0x63, 0]),
        // The padding to the element's alignment is there even when the array is empty.
        ("empty a{sv}", [], .variantDictionary([]), [0, 0, 0, 0, 0, 0, 0, 0]),
        ("a{sv} with urgency", [], .variantDictionary([("urgency", .byte(1))]),
         [0x10, 0, 0, 0, 0, 0, 0, 0,
          0x07, 0, 0, 0, 0x75, 0x72, 0x67, 0x65, 0x6e, 0x63, 0x79, 0, 0x01, 0x79, 0, 0x01]),
        ("variant of uint32", [], .variant(.uint32(5)), [0x01, 0x75, 0, 0, 0x05, 0, 0, 0]),
        ("int64 after a byte is aligned to 8", [.byte(1)], .int64(-1),
         [0x01, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ("structure (us) is aligned to 8", [.byte(1)], .structure([.uint32(2), .string("")]),
         [0x01, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0]),
    ] as [(String, [DBusValue], DBusValue, [UInt8])])
    func marshal(_ name: String, prefix: [DBusValue], value: DBusValue, expected: [UInt8]) throws {
        var writer = DBusWriter()
        writer.write(prefix)
        writer.write(value)
        #expect(writer.bytes == expected, "\(name)")
        var reader = DBusReader(bytes: writer.bytes)
        let read = try reader.read(prefix.map(\.type) + [value.type])
        #expect(read == prefix + [value], "\(name)")
        #expect(reader.isAtEnd, "\(name)")
    }

    @Test(arguments: [
        ("susssasa{sv}i", [DBusType.string, .uint32, .string, .string, .string, .array(.string),
                           .array(.dictEntry(.string, .variant)), .int32]),
        ("a(yv)", [.array(.structure([.byte, .variant]))]),
        ("", []),
        ("aai", [.array(.array(.int32))]),
    ] as [(String, [DBusType])])
    func signatures(_ text: String, types: [DBusType]) throws {
        #expect(try DBusType.parse(text) == types)
        #expect(types.map(\.signature).joined() == text)
    }

    @Test(arguments: ["a", "(", "()", "a{vs}", "a{s}", "z", "{ss}"])
    func badSignatures(_ text: String) {
        #expect(throws: DBusError.self) { try DBusType.parse(text) }
    }

    /// A signal with path "/a", interface "b.c", member "D" and body `u` 7, serial 1, laid out
    /// by hand: 16 fixed bytes, four header fields each aligned to 8, the header padded to 8.
    static let signalBytes: [UInt8] = [
        0x6c, 0x04, 0x00, 0x01, 0x04, 0, 0, 0, 0x01, 0, 0, 0, 0x37, 0, 0, 0,
        0x01, 0x01, 0x6f, 0x00, 0x02, 0, 0, 0, 0x2f, 0x61, 0x00, 0, 0, 0, 0, 0,
        0x02, 0x01, 0x73, 0x00, 0x03, 0, 0, 0, 0x62, 0x2e, 0x63, 0x00, 0, 0, 0, 0,
        0x03, 0x01, 0x73, 0x00, 0x01, 0, 0, 0, 0x44, 0x00, 0, 0, 0, 0, 0, 0,
        0x08, 0x01, 0x67, 0x00, 0x01, 0x75, 0x00, 0x00,
        0x07, 0, 0, 0,
    ]

    @Test func encodesASignal() throws {
        var message = DBusMessage.signal(path: "/a", interface: "b.c", member: "D", body: [.uint32(7)])
        message.serial = 1
        #expect(message.encoded() == Self.signalBytes)
        #expect(DBusMessage.totalLength(ofPrefix: Self.signalBytes[..<16]) == Self.signalBytes.count)
        #expect(try DBusMessage.decode(Self.signalBytes) == message)
    }

    /// The same signal from a big-endian peer: every integer's bytes reversed.
    @Test func decodesBigEndian() throws {
        var bytes = Self.signalBytes
        bytes[0] = 0x42
        for offset in [4, 8, 12, 20, 36, 52, 72] { bytes[offset..<offset + 4].reverse() }
        let message = try DBusMessage.decode(bytes)
        #expect(message.member == "D" && message.interface == "b.c" && message.path == "/a")
        #expect(message.serial == 1 && message.body == [.uint32(7)])
    }

    @Test func roundTripsAMethodCallAndItsReply() throws {
        var call = NotificationsClient.notifyCall(DesktopNotification(summary: "Deletions held", body: "<b>&"))
        call.serial = 9
        call.sender = ":1.5"
        let decoded = try DBusMessage.decode(call.encoded())
        #expect(decoded == call)
        #expect(decoded.signature == "susssasa{sv}i")
        var reply = DBusMessage.methodReturn(to: decoded, body: [.uint32(3)])
        reply.serial = 2
        let back = try DBusMessage.decode(reply.encoded())
        #expect(back.replySerial == 9 && back.destination == ":1.5" && back.body == [.uint32(3)])
    }

    @Test func refusesBrokenMessages() {
        var truncated = Self.signalBytes
        truncated.removeLast()
        #expect(throws: DBusError.self) { try DBusMessage.decode(truncated) }
        var longString = Self.signalBytes
        longString[20] = 0x40  // the path claims 64 bytes
        #expect(throws: DBusError.self) { try DBusMessage.decode(longString) }
        var badBoolean = DBusWriter()
        badBoolean.write(.uint32(2))
        var reader = DBusReader(bytes: badBoolean.bytes)
        #expect(throws: DBusError.self) { try reader.read(.boolean) }
        #expect(DBusMessage.totalLength(ofPrefix: [0x00] + Self.signalBytes[1..<16]) == nil)
    }

    @Test(arguments: [
        ("unix:path=/run/user/1000/bus", "/run/user/1000/bus"),
        ("unix:abstract=/tmp/dbus-XYZ,guid=0123", "@/tmp/dbus-XYZ"),
        ("tcp:host=localhost,port=1;unix:path=/a%2cb", "/a,b"),
        ("unix:guid=1,path=/x", "/x"),
    ])
    func addresses(_ address: String, socket: String) throws {
        #expect(try DBusAddress.sessionSocket(environment: ["DBUS_SESSION_BUS_ADDRESS": address], exists: { _ in false }) == socket)
    }

    @Test func addressFallbacks() throws {
        #expect(try DBusAddress.sessionSocket(environment: ["XDG_RUNTIME_DIR": "/run/user/7"], exists: { $0 == "/run/user/7/bus" })
                == "/run/user/7/bus")
        #expect(throws: DBusError.self) { try DBusAddress.sessionSocket(environment: ["XDG_RUNTIME_DIR": "/r"], exists: { _ in false }) }
        #expect(throws: DBusError.self) { try DBusAddress.sessionSocket(environment: [:], exists: { _ in true }) }
        #expect(throws: DBusError.self) {
            try DBusAddress.sessionSocket(environment: ["DBUS_SESSION_BUS_ADDRESS": "tcp:host=a,port=1"], exists: { _ in true })
        }
    }

    @Test func externalAuthenticationIsTheDecimalUIDInHex() {
        #expect(DBusAddress.externalAuthentication(uid: 1000) == "31303030")
        #expect(DBusAddress.externalAuthentication(uid: 0) == "30")
    }

    @Test func signalsAreRecognised() {
        let invoked = DBusMessage.signal(path: NotificationsClient.path, interface: NotificationsClient.service,
                                         member: "ActionInvoked", body: [.uint32(4), .string("confirm")])
        #expect(NotificationsClient.signal(in: invoked) == .actionInvoked(id: 4, key: "confirm"))
        let closed = DBusMessage.signal(path: NotificationsClient.path, interface: NotificationsClient.service,
                                        member: "NotificationClosed", body: [.uint32(4), .uint32(2)])
        #expect(NotificationsClient.signal(in: closed) == .closed(id: 4, reason: 2))
        let other = DBusMessage.signal(path: "/", interface: "org.freedesktop.DBus", member: "NameAcquired", body: [.string(":1.1")])
        #expect(NotificationsClient.signal(in: other) == nil)
        #expect(NotificationsClient.escapeMarkup("a<b>&c") == "a&lt;b&gt;&amp;c")
    }
}
