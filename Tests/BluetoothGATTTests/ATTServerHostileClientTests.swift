import BluetoothCrypto
import COpenSSLReference
import BluetoothHost
import BluetoothWire
import Synchronization
import Testing
@testable import BluetoothGATT

/// A hostile client through the sans-I/O server: nothing it sends crashes the server, makes
/// it answer twice, grow without bound, or read what it may not.
@Suite struct ATTServerHostileClientTests {
    static let requests: [UInt8] = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]

    @Test("GATT/SR/UNS/BI-01-C: an unknown request gets Request Not Supported")
    func unknownRequest() throws {
        var h = try ServerHarness()
        #expect(h.send("BF 00") == "01 BF 00 00 06")
        #expect(h.send("3F") == "01 3F 00 00 06")
    }

    @Test("GATT/SR/UNS/BI-02-C: an unknown command is ignored")
    func unknownCommand() throws {
        var h = try ServerHarness()
        #expect(h.send("FF 00") == nil)
        #expect(h.send("7F 01 02") == nil)
    }

    @Test("Every request truncated at every length: Invalid PDU, never a crash or a second answer")
    func truncatedRequests() throws {
        var h = try ServerHarness()
        let full: [UInt8: [UInt8]] = [
            0x02: bytes("02 17 00"), 0x04: bytes("04 01 00 FF FF"), 0x06: bytes("06 01 00 FF FF 00 28"),
            0x08: bytes("08 01 00 FF FF 03 28"), 0x0A: bytes("0A 03 00"), 0x0C: bytes("0C 03 00 00 00"),
            0x0E: bytes("0E 03 00 05 00"), 0x10: bytes("10 01 00 FF FF 00 28"), 0x12: bytes("12 13 00"),
            0x16: bytes("16 13 00 00 00"), 0x18: bytes("18 01"), 0x20: bytes("20 03 00 05 00"),
        ]
        for op in Self.requests {
            let pdu = full[op]!
            for n in 1 ..< pdu.count {
                let r = h.send(Array(pdu[0 ..< n]))
                #expect(r == [0x01, op, 0, 0, 0x04], "opcode \(op) cut to \(n) bytes")
            }
        }
        // Read By Type with a 3-byte UUID, a Set Of Handles with one handle, trailing bytes.
        #expect(h.send("08 01 00 FF FF 03 28 00") == "01 08 00 00 04")
        #expect(h.send("0E 03 00") == "01 0E 00 00 04")
        #expect(h.send("0A 03 00 00") == "01 0A 00 00 04")
        #expect(h.send("18 01 00") == "01 18 00 00 04")
        #expect(h.send("1E 00") == nil, "a malformed confirmation is dropped")
        #expect(h.send("52 13") == nil, "a truncated command is dropped")
    }

    @Test("A PDU larger than ATT_MTU: Invalid PDU for a request, dropped for a command")
    func oversize() throws {
        var h = try ServerHarness()
        #expect(h.send(bytes("12 19 00") + [UInt8](repeating: 0, count: 21)) == bytes("01 12 00 00 04"))
        #expect(h.send(bytes("52 19 00") + [UInt8](repeating: 0, count: 21)) == nil)
        #expect(h.send(bytes("12 19 00") + [UInt8](repeating: 0, count: 20)) == bytes("13"))
    }

    @Test("Prepare queue flooding: Prepare Queue Full past the per-client bound; other clients unaffected")
    func prepareQueueFlood() throws {
        var h = try ServerHarness()
        for _ in 0 ..< 32 { #expect(h.send("16 19 00 00 00 01") == "17 19 00 00 00 01") }
        #expect(h.send("16 19 00 00 00 01") == "01 16 19 00 09")
        #expect(h.send("16 19 00 00 00 01", from: h.b) == "17 19 00 00 00 01")
        #expect(h.send("18 00") == "19")
        #expect(h.send("16 19 00 00 00 01") == "17 19 00 00 00 01", "cancel empties the queue")
    }

    @Test("Disconnect mid-prepare writes nothing; the client's state is gone")
    func disconnectMidPrepare() throws {
        var h = try ServerHarness()
        #expect(h.send("16 13 00 00 00 03 00") == "17 13 00 00 00 03 00")
        h.server.disconnect(h.a)
        #expect(h.send("18 01") == nil, "an unknown client gets nothing")
        #expect(h.send("0A 13 00", from: h.b) == "0B 05 00")
        h.server.connect(h.a)
        #expect(h.send("18 01") == "19", "a new bearer starts with an empty queue")
        #expect(h.send("0A 13 00") == "0B 05 00")
    }

    @Test("An indication never confirmed: after 30 s the bearer is dead and the server goes quiet")
    func indicationNeverConfirmed() throws {
        var h = try ServerHarness()
        #expect(h.send("12 11 00 02 00") == "13")
        let v: [UInt8] = [0]
        try h.server.indicate(h.a, handle: 0x10, value: v, now: 5) { _ in }
        #expect(h.server.timerFired(now: 30_000_000_004).isEmpty)
        #expect(h.server.timerFired(now: 30_000_000_005) == [.indicationTimedOut(h.a, handle: 0x10)])
        #expect(h.send("0A 03 00") == nil)
        #expect(throws: ATTServerError.bearerDead(h.a)) {
            try h.server.indicate(h.a, handle: 0x10, value: v, now: 6) { _ in }
        }
        #expect(h.server.nextDeadline == nil)
        #expect(h.send("0A 03 00", from: h.b) != nil, "other clients go on")
    }

    @Test("Response PDUs sent to the server are dropped and reported")
    func responsesAreNotRequests() throws {
        var h = try ServerHarness()
        for hex in ["01 0A 03 00 01", "0B 00", "13", "1B 03 00 01", "1D 03 00 01"] { #expect(h.send(hex) == nil) }
        #expect(h.takeEvents().count == 5)
        #expect(ATTServer.isServerBound(0x1E) && !ATTServer.isServerBound(0x1B) && ATTServer.isServerBound(0xD2))
    }

    @Test("A signed write is dropped until CSRKs exist")
    func signedWrite() throws {
        var h = try ServerHarness()
        #expect(h.send(bytes("D2 13 00 07 00") + [UInt8](repeating: 0, count: 12)) == nil)
        #expect(h.send("0A 13 00") == "0B 05 00")
    }

    @Test("Random PDUs: every request gets exactly one answer, commands none; state stays bounded")
    func randomPDUs() throws {
        var h = try ServerHarness()
        var rng = SplitMix(seed: 42)
        for _ in 0 ..< 20_000 {
            let n = Int(rng.next() % 24) + 1
            var pdu = (0 ..< n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0 { pdu[0] = Self.requests[Int(rng.next() % UInt64(Self.requests.count))] }
            let op = ATTOpcode(rawValue: pdu[0])
            let r = h.send(pdu)
            if op.isCommand || !ATTServer.isServerBound(pdu[0]) || op == .handleValueConfirmation {
                #expect(r == nil)
            } else {
                #expect(r != nil, "request \(hexString(pdu)) unanswered")
            }
            _ = h.takeEvents()
        }
        #expect(h.server.clientStates[h.a]!.prepared.count <= 32)
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The example database of Core Vol 3 Part G §7.3 (Database Hash), rebuilt with the builder.
enum SpecExampleDatabase {
    static var services: [GATTLocalService] {
        [
            GATTLocalService(uuid: BluetoothUUID(0x1800), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A00), properties: [.read, .write]),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A01), properties: .read),
            ]),
            .genericAttribute(),
            GATTLocalService(uuid: BluetoothUUID(0x1808), includedServices: [BluetoothUUID(0x180F)], characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A18), properties: [.read, .indicate, .extendedProperties],
                                        descriptors: [.extendedProperties()]),
            ]),
            GATTLocalService(uuid: BluetoothUUID(0x180F), isPrimary: false, characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: .read),
            ]),
        ]
    }
}
