import BluetoothCrypto
import COpenSSLReference
import BluetoothHost
import BluetoothWire
import Synchronization
import Testing
@testable import BluetoothGATT

/// Hex "0A 03 00" → bytes.
func bytes(_ hex: String) -> [UInt8] {
    let digits = hex.filter { !$0.isWhitespace }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i ..< j], radix: 16)!)
        i = j
    }
    return out
}

/// A test server: the database below, one or more clients, PDUs in and out.
///
///     0x0001 Primary Service 1800 (end 0x0005)     0x000E Primary Service 1809 (end 0x001B)
///     0x0002/03 Device Name "hcigatt" (read)       0x000F/10 2A1C (indicate; not readable) 0x0011 CCCD
///     0x0004/05 Appearance 00 00 (read)            0x0012/13 2A21 (read, write; 1...10) 0x0014 2906
///     0x0006 Primary Service 1801 (end 0x000D)     0x0015/16 128-bit (read encrypted, write, notify; 100 bytes) 0x0017 CCCD
///     0x0007/08 Service Changed 0x0009 CCCD        0x0018/19 write-only (write)
///     0x000A/0B Client Supported Features          0x001A/1B read needs authentication: 42
///     0x000C/0D Database Hash
struct ServerHarness {
    static let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!
    var server: ATTServer
    let a = ATTServerClientID(rawValue: 1)
    let b = ATTServerClientID(rawValue: 2)
    var events: [ATTServerEvent] = []

    static func services() -> [GATTLocalService] {
        [
            .genericAccess(deviceName: "hcigatt"),
            .genericAttribute(),
            GATTLocalService(uuid: BluetoothUUID(0x1809), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1C), properties: .indicate),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A21), properties: [.read, .write], value: .stored([5, 0]),
                                        descriptors: [GATTLocalDescriptor(uuid: BluetoothUUID(0x2906), value: .stored([1, 0, 10, 0]))],
                                        maximumLength: 2,
                                        onWrite: { _, v in
                                            guard v.count == 2 else { return .invalidAttributeValueLength }
                                            let n = Int(v[0]) | Int(v[1]) << 8
                                            return (1 ... 10).contains(n) ? nil : .outOfRange
                                        }),
                GATTLocalCharacteristic(uuid: custom, properties: [.read, .write, .notify],
                                        permissions: [.readable, .readEncryptionRequired, .writeable],
                                        value: .stored((0 ..< 100).map { UInt8($0) })),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A9F), properties: .write),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A3D), properties: .read,
                                        permissions: [.readable, .readAuthenticationRequired], value: .stored([0x42])),
            ]),
        ]
    }

    init(options: ATTServer.Options = .init()) throws {
        server = ATTServer(table: try GATTAttributeTable(services: Self.services()), options: options)
        server.connect(a)
        server.connect(b)
    }

    /// Sends `pdu` from `client`; returns the response (nil: none was sent).
    mutating func send(_ pdu: [UInt8], from client: ATTServerClientID? = nil, now: UInt64 = 0) -> [UInt8]? {
        var response: [UInt8]?
        let e = pdu.withUnsafeBytes { raw in
            server.receive(from: client ?? a, pdu: raw, now: now) { out in
                #expect(response == nil, "one response per request")
                response = Array(out)
            }
        }
        events += e
        return response
    }

    mutating func send(_ hex: String, from client: ATTServerClientID? = nil, now: UInt64 = 0) -> String? {
        send(bytes(hex), from: client, now: now).map { $0.map { String($0, radix: 16, uppercase: true).leftPad() }.joined(separator: " ") }
    }

    /// A bonded, encrypted link's security.
    static let encrypted = LinkSecurity(encrypted: true, keySize: 16, authenticated: false, secureConnections: true, bonded: true)

    /// `client`'s link is now encrypted (the 128-bit characteristic needs it to be read).
    mutating func encrypt(_ client: ATTServerClientID) { server.setSecurity(Self.encrypted, for: client) }

    mutating func takeEvents() -> [ATTServerEvent] {
        defer { events = [] }
        return events
    }
}

extension String {
    func leftPad() -> String { count == 1 ? "0" + self : self }
}

func hexString(_ b: [UInt8]) -> String { b.map { String($0, radix: 16, uppercase: true).leftPad() }.joined(separator: " ") }

/// Server conformance tests named by their PTS test IDs (GATT/SR/...): the PDUs in and the
/// PDUs out, byte for byte, at the default ATT_MTU of 23 unless the test exchanges one.
@Suite struct ATTServerConformanceTests {
    @Test("GATT/SR/GAC/BV-01-C: Exchange MTU; the first exchange sets ATT_MTU, a second changes nothing")
    func exchangeMTU() throws {
        var h = try ServerHarness()
        #expect(h.send("02 F7 00") == "03 05 02")
        #expect(h.server.mtu(of: h.a) == 247)
        #expect(h.takeEvents() == [.mtuChanged(h.a, mtu: 247)])
        #expect(h.send("02 17 00") == "03 05 02")
        #expect(h.server.mtu(of: h.a) == 247)
        #expect(h.server.mtu(of: h.b) == 23, "each client has its own MTU")
        // Below the minimum counts as 23.
        #expect(h.send("02 05 00", from: h.b) == "03 05 02")
        #expect(h.server.mtu(of: h.b) == 23)
    }

    @Test("GATT/SR/GAD/BV-01-C: Discover All Primary Services")
    func discoverAllPrimaryServices() throws {
        var h = try ServerHarness()
        #expect(h.send("10 01 00 FF FF 00 28") == "11 06 01 00 05 00 00 18 06 00 0D 00 01 18 0E 00 1B 00 09 18")
        #expect(h.send("10 1C 00 FF FF 00 28") == "01 10 1C 00 0A")
        // 128-bit services come in their own response (one length per response).
        var services = ServerHarness.services()
        services.append(GATTLocalService(uuid: ServerHarness.custom))
        var s = ATTServer(table: try GATTAttributeTable(services: services))
        s.connect(h.a)
        var out: [UInt8] = []
        _ = bytes("10 1C 00 FF FF 00 28").withUnsafeBytes { s.receive(from: h.a, pdu: $0, now: 0) { out = Array($0) } }
        #expect(out == bytes("11 14 1C 00 1C 00") + GATTAttributeTable.uuidBytes(ServerHarness.custom))
    }

    @Test("GATT/SR/GAD/BV-02-C: Discover Primary Services by UUID (Find By Type Value)")
    func discoverPrimaryServiceByUUID() throws {
        var h = try ServerHarness()
        #expect(h.send("06 01 00 FF FF 00 28 09 18") == "07 0E 00 1B 00")
        #expect(h.send("06 1C 00 FF FF 00 28 09 18") == "01 06 1C 00 0A")
        #expect(h.send("06 01 00 FF FF 00 28 0F 18") == "01 06 01 00 0A")
        #expect(h.send("06 00 00 FF FF 00 28 09 18") == "01 06 00 00 01")
    }

    @Test("GATT/SR/GAD/BV-03-C: Find Included Services (the specification's example database)")
    func findIncludedServices() throws {
        var s = ATTServer(table: try GATTAttributeTable(services: SpecExampleDatabase.services))
        let c = ATTServerClientID(rawValue: 1)
        s.connect(c)
        func ask(_ hex: String) -> [UInt8] {
            var out: [UInt8] = []
            _ = bytes(hex).withUnsafeBytes { s.receive(from: c, pdu: $0, now: 0) { out = Array($0) } }
            return out
        }
        #expect(ask("08 0E 00 16 00 02 28") == bytes("09 08 0F 00 14 00 16 00 0F 18"))
        #expect(ask("08 10 00 16 00 02 28") == bytes("01 08 10 00 0A"))
        // The secondary service is not a primary one, and is found as a secondary.
        #expect(ask("10 01 00 FF FF 01 28") == bytes("11 06 14 00 16 00 0F 18"))
    }

    @Test("GATT/SR/GAD/BV-04-C: Discover All Characteristics of a Service")
    func discoverAllCharacteristics() throws {
        var h = try ServerHarness()
        #expect(h.send("08 01 00 05 00 03 28") == "09 07 02 00 02 03 00 00 2A 04 00 02 05 00 01 2A")
        #expect(h.send("08 05 00 05 00 03 28") == "01 08 05 00 0A")
        // A 128-bit declaration (21 bytes) ends the list of 7-byte ones and starts its own.
        #expect(h.send("08 12 00 1B 00 03 28") == "09 07 12 00 0A 13 00 21 2A")
        #expect(h.send("08 13 00 1B 00 03 28") == "09 15 15 00 1A 16 00 " + hexString(GATTAttributeTable.uuidBytes(ServerHarness.custom)))
    }

    @Test("GATT/SR/GAD/BV-05-C: Discover Characteristics by UUID (declarations read, the client filters)")
    func discoverCharacteristicsByUUID() throws {
        var h = try ServerHarness()
        #expect(h.send("08 0E 00 1B 00 03 28") == "09 07 0F 00 20 10 00 1C 2A 12 00 0A 13 00 21 2A")
    }

    @Test("GATT/SR/GAD/BV-06-C: Discover All Characteristic Descriptors (Find Information)")
    func discoverDescriptors() throws {
        var h = try ServerHarness()
        #expect(h.send("04 11 00 11 00") == "05 01 11 00 02 29")
        #expect(h.send("04 13 00 14 00") == "05 01 13 00 21 2A 14 00 06 29")
        // The 128-bit value gets its own format-2 response.
        #expect(h.send("04 16 00 17 00") == "05 02 16 00 " + hexString(GATTAttributeTable.uuidBytes(ServerHarness.custom)))
        #expect(h.send("04 1C 00 FF FF") == "01 04 1C 00 0A")
        #expect(h.send("04 05 00 04 00") == "01 04 05 00 01")
    }

    @Test("GATT/SR/GAR/BV-01-C: Read Characteristic Value")
    func read() throws {
        var h = try ServerHarness()
        #expect(h.send("0A 03 00") == "0B " + hexString(Array("hcigatt".utf8)))
        #expect(h.send("0A 13 00") == "0B 05 00")
        // Cut to ATT_MTU−1 (22 bytes) on an encrypted link.
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 16), for: h.a)
        #expect(h.send(bytes("0A 16 00")) == [0x0B] + (0 ..< 22).map { UInt8($0) })
    }

    @Test("GATT/SR/GAR/BI-01-C: Read of a value without read permission: Read Not Permitted")
    func readNotPermitted() throws {
        var h = try ServerHarness()
        #expect(h.send("0A 10 00") == "01 0A 10 00 02")
        #expect(h.send("0A 19 00") == "01 0A 19 00 02")
    }

    @Test("GATT/SR/GAR/BI-02-C: Read of an invalid handle: Invalid Handle")
    func readInvalidHandle() throws {
        var h = try ServerHarness()
        #expect(h.send("0A 00 00") == "01 0A 00 00 01")
        #expect(h.send("0A 1C 00") == "01 0A 1C 00 01")
        #expect(h.send("0A FF FF") == "01 0A FF FF 01")
    }

    @Test("Security: Insufficient Authentication, then Insufficient Encryption, then Encryption Key Size")
    func securityChecks() throws {
        var h = try ServerHarness()
        #expect(h.send("0A 1B 00") == "01 0A 1B 00 05", "authentication needed, unencrypted link")
        #expect(h.send("0A 16 00") == "01 0A 16 00 0F", "encryption needed, unencrypted link")
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 7), for: h.a)
        #expect(h.send("0A 16 00") == "01 0A 16 00 0C", "7-byte key, 16 required")
        #expect(h.send("0A 1B 00") == "01 0A 1B 00 05", "encrypted but not authenticated")
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 16), for: h.a)
        #expect(h.send("0C 16 00 60 00") == "0D 60 61 62 63")
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 16, authenticated: true), for: h.a)
        #expect(h.send("0A 1B 00") == "0B 42")
        #expect(h.send("0A 1B 00", from: h.b) == "01 0A 1B 00 05", "security is per link")
        // Read Not Permitted comes before the security checks.
        #expect(h.send("0A 10 00") == "01 0A 10 00 02")
    }

    @Test("GATT/SR/GAR/BV-03-C: Read Using Characteristic UUID")
    func readByCharacteristicUUID() throws {
        var h = try ServerHarness()
        #expect(h.send("08 01 00 FF FF 21 2A") == "09 04 13 00 05 00")
        #expect(h.send("08 01 00 FF FF 00 2A") == "09 09 03 00 " + hexString(Array("hcigatt".utf8)))
    }

    @Test("GATT/SR/GAR/BI-06-C: Read Using Characteristic UUID, read not permitted")
    func readByTypeNotPermitted() throws {
        var h = try ServerHarness()
        #expect(h.send("08 01 00 FF FF 1C 2A") == "01 08 10 00 02")
        #expect(h.send("08 01 00 FF FF " + hexString(GATTAttributeTable.uuidBytes(ServerHarness.custom))) == "01 08 16 00 0F")
    }

    @Test("GATT/SR/GAR/BI-07-C: Read Using Characteristic UUID, attribute not found")
    func readByTypeNotFound() throws {
        var h = try ServerHarness()
        #expect(h.send("08 01 00 FF FF F0 0F") == "01 08 01 00 0A")
    }

    @Test("GATT/SR/GAR/BI-08-C: Read By Type with an invalid range: Invalid Handle")
    func readByTypeInvalidRange() throws {
        var h = try ServerHarness()
        #expect(h.send("08 02 00 01 00 00 28") == "01 08 02 00 01")
        #expect(h.send("08 00 00 FF FF 00 28") == "01 08 00 00 01")
        #expect(h.send("08 05 00 00 00 00 28") == "01 08 00 00 01")
    }

    @Test("Read By Group Type: start > end is Invalid Handle, not Attribute Not Found; other groups unsupported")
    func readByGroupTypeErrors() throws {
        var h = try ServerHarness()
        #expect(h.send("10 02 00 01 00 00 28") == "01 10 02 00 01")
        #expect(h.send("10 00 00 FF FF 00 28") == "01 10 00 00 01")
        #expect(h.send("10 01 00 FF FF 03 28") == "01 10 01 00 10")
        #expect(h.send("10 01 00 FF FF 01 28") == "01 10 01 00 0A", "no secondary services")
    }

    @Test("GATT/SR/GAR/BV-04-C: Read Long Characteristic Value (Read Blob)")
    func readBlob() throws {
        var h = try ServerHarness()
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 16), for: h.a)
        #expect(h.send(bytes("0C 16 00 00 00")) == [0x0D] + (0 ..< 22).map { UInt8($0) })
        #expect(h.send(bytes("0C 16 00 16 00")) == [0x0D] + (22 ..< 44).map { UInt8($0) })
        #expect(h.send(bytes("0C 16 00 58 00")) == [0x0D] + (88 ..< 100).map { UInt8($0) })
        #expect(h.send("0C 16 00 64 00") == "0D", "offset = length: empty part")
    }

    @Test("GATT/SR/GAR/BI-12-C: Read Blob, read not permitted")
    func readBlobNotPermitted() throws {
        var h = try ServerHarness()
        #expect(h.send("0C 10 00 00 00") == "01 0C 10 00 02")
    }

    @Test("GATT/SR/GAR/BI-13-C: Read Blob past the end: Invalid Offset")
    func readBlobInvalidOffset() throws {
        var h = try ServerHarness()
        #expect(h.send("0C 03 00 F0 00") == "01 0C 03 00 07")
        #expect(h.send("0C 03 00 08 00") == "01 0C 03 00 07")
        #expect(h.send("0C 03 00 07 00") == "0D")
    }

    @Test("GATT/SR/GAR/BI-14-C: Read Blob of an invalid handle")
    func readBlobInvalidHandle() throws {
        var h = try ServerHarness()
        #expect(h.send("0C F0 0F 00 00") == "01 0C F0 0F 01")
    }

    @Test("GATT/SR/GAR/BV-05-C: Read Multiple Characteristic Values")
    func readMultiple() throws {
        var h = try ServerHarness()
        #expect(h.send("0E 03 00 05 00") == "0F " + hexString(Array("hcigatt".utf8)) + " 00 00")
        #expect(h.send("0E 13 00 14 00 05 00") == "0F 05 00 01 00 0A 00 00 00")
    }

    @Test("GATT/SR/GAR/BI-18-C: Read Multiple, one value not readable")
    func readMultipleNotPermitted() throws {
        var h = try ServerHarness()
        #expect(h.send("0E 03 00 10 00") == "01 0E 10 00 02")
    }

    @Test("GATT/SR/GAR/BI-19-C: Read Multiple, one handle invalid")
    func readMultipleInvalidHandle() throws {
        var h = try ServerHarness()
        #expect(h.send("0E 03 00 F0 0F") == "01 0E F0 0F 01")
    }

    @Test("GATT/SR/GAR/BV-09-C: Read Multiple Variable Length Characteristic Values")
    func readMultipleVariable() throws {
        var h = try ServerHarness()
        #expect(h.send("20 03 00 05 00") == "21 07 00 " + hexString(Array("hcigatt".utf8)) + " 02 00 00 00")
        // Cut at ATT_MTU: the last tuple keeps its full Value Length (100) so the client sees the cut.
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 16), for: h.a)
        let r = h.send(bytes("20 13 00 16 00"))
        #expect(r == bytes("21 02 00 05 00 64 00") + (0 ..< 16).map { UInt8($0) })
    }

    @Test("GATT/SR/GAW/BV-01-C: Write Without Response, read back")
    func writeWithoutResponse() throws {
        var h = try ServerHarness()
        #expect(h.send("52 13 00 07 00") == nil)
        #expect(h.takeEvents() == [.wrote(h.a, handle: 0x13, value: [7, 0], withResponse: false)])
        #expect(h.send("0A 13 00") == "0B 07 00")
        // Errors are dropped silently: not permitted, out of range, invalid handle.
        #expect(h.send("52 03 00 41") == nil)
        #expect(h.send("52 13 00 0B 00") == nil)
        #expect(h.send("52 F0 0F 01") == nil)
        #expect(h.send("0A 13 00") == "0B 07 00")
        #expect(h.takeEvents().allSatisfy { if case .peerFault = $0 { true } else { false } })
    }

    @Test("GATT/SR/GAW/BV-03-C: Write Characteristic Value")
    func writeRequest() throws {
        var h = try ServerHarness()
        #expect(h.send("12 13 00 0A 00") == "13")
        #expect(h.takeEvents() == [.wrote(h.a, handle: 0x13, value: [10, 0], withResponse: true)])
        #expect(h.send("0A 13 00", from: h.b) == "0B 0A 00", "one database for every client")
        #expect(h.send("12 19 00 01 02 03") == "13", "write-only value")
    }

    @Test("Write: the application's error (Out of Range for an interval outside its Valid Range)")
    func applicationError() throws {
        var h = try ServerHarness()
        #expect(h.send("12 13 00 0B 00") == "01 12 13 00 FF")
        #expect(h.send("12 13 00 00 00") == "01 12 13 00 FF")
        #expect(h.send("0A 13 00") == "0B 05 00", "a rejected write stores nothing")
        #expect(h.takeEvents().isEmpty)
    }

    @Test("GATT/SR/GAW/BI-02-C: Write of an invalid handle")
    func writeInvalidHandle() throws {
        var h = try ServerHarness()
        #expect(h.send("12 00 00 01 02 03") == "01 12 00 00 01")
        #expect(h.send("12 F0 0F 01 02 03") == "01 12 F0 0F 01")
    }

    @Test("GATT/SR/GAW/BI-03-C: Write without write permission: Write Not Permitted")
    func writeNotPermitted() throws {
        var h = try ServerHarness()
        #expect(h.send("12 03 00 41") == "01 12 03 00 03")
        #expect(h.send("12 01 00 0F 18") == "01 12 01 00 03", "a service declaration")
        #expect(h.send("12 02 00 02 03 00 00 2A") == "01 12 02 00 03", "a characteristic declaration")
        #expect(h.send("12 0D 00 00") == "01 12 0D 00 03", "the Database Hash")
        #expect(h.send("12 1B 00 00") == "01 12 1B 00 03")
    }

    @Test("GATT/SR/GAW/BV-05-C: Write Long Characteristic Value")
    func writeLong() throws {
        var h = try ServerHarness()
        let first = (0 ..< 18).map { UInt8(0xA0 &+ $0) }
        let second = (0 ..< 18).map { UInt8(0xC0 &+ $0) }
        #expect(h.send(bytes("16 16 00 00 00") + first) == bytes("17 16 00 00 00") + first)
        #expect(h.send(bytes("16 16 00 12 00") + second) == bytes("17 16 00 12 00") + second)
        #expect(h.takeEvents().isEmpty, "nothing is written before Execute")
        #expect(h.send("18 01") == "19")
        #expect(h.takeEvents() == [.wrote(h.a, handle: 0x16, value: first + second, withResponse: true)])
        #expect(h.server.table.storedValue(0x16) == first + second)
    }

    @Test("GATT/SR/GAW/BV-06-C: Reliable Writes")
    func reliableWrite() throws {
        var h = try ServerHarness()
        #expect(h.send("16 13 00 00 00 03 00") == "17 13 00 00 00 03 00")
        #expect(h.send("18 01") == "19")
        #expect(h.send("0A 13 00") == "0B 03 00")
    }

    @Test("GATT/SR/GAW/BV-07-C: Cancel prepared writes")
    func cancelPreparedWrites() throws {
        var h = try ServerHarness()
        #expect(h.send("16 13 00 00 00 03 00") == "17 13 00 00 00 03 00")
        #expect(h.send("18 00") == "19")
        #expect(h.send("0A 13 00") == "0B 05 00")
        #expect(h.takeEvents().isEmpty)
    }

    @Test("GATT/SR/GAW/BV-10-C: Nested reliable writes to two characteristics")
    func nestedReliableWrites() throws {
        var h = try ServerHarness()
        #expect(h.send("16 13 00 00 00 02") == "17 13 00 00 00 02")
        #expect(h.send("16 19 00 00 00 01 02 03") == "17 19 00 00 00 01 02 03")
        #expect(h.send("16 13 00 01 00 00") == "17 13 00 01 00 00")
        #expect(h.send("16 19 00 03 00 04 05 06") == "17 19 00 03 00 04 05 06")
        #expect(h.send("18 01") == "19")
        #expect(h.takeEvents() == [.wrote(h.a, handle: 0x13, value: [2, 0], withResponse: true),
                                   .wrote(h.a, handle: 0x19, value: [1, 2, 3, 4, 5, 6], withResponse: true)])
    }

    @Test("Execute Write asks the application once per value, and stores what it accepted")
    func executeWriteAsksOnce() throws {
        let calls = Counter()
        let services = [GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .write],
                                    onWrite: { _, _ in calls.increment(); return nil }),
        ])]
        var s = ATTServer(table: try GATTAttributeTable(services: services))
        let c = ATTServerClientID(rawValue: 1)
        s.connect(c)
        var out: [UInt8] = []
        for pdu in [bytes("16 03 00 00 00 01 02"), bytes("16 03 00 02 00 03"), bytes("18 01")] {
            _ = pdu.withUnsafeBytes { s.receive(from: c, pdu: $0, now: 0) { out = Array($0) } }
        }
        #expect(out == [0x19])
        #expect(calls.value == 1)
        #expect(s.table.storedValue(0x03) == [1, 2, 3])
    }

    @Test("GATT/SR/GAW/BV-11-C: Execute Write with nothing prepared")
    func executeNothing() throws {
        var h = try ServerHarness()
        #expect(h.send("18 01") == "19")
        #expect(h.send("18 02") == "01 18 00 00 04", "unknown flags: Invalid PDU")
        #expect(h.takeEvents().isEmpty)
    }

    @Test("GATT/SR/GAW/BI-07-C: Prepare Write of an invalid handle")
    func prepareInvalidHandle() throws {
        var h = try ServerHarness()
        #expect(h.send("16 00 00 00 00 01") == "01 16 00 00 01")
        #expect(h.send("16 F0 0F 00 00 01") == "01 16 F0 0F 01")
    }

    @Test("GATT/SR/GAW/BI-08-C: Prepare Write without write permission")
    func prepareNotPermitted() throws {
        var h = try ServerHarness()
        #expect(h.send("16 03 00 00 00 01") == "01 16 03 00 03")
    }

    @Test("GATT/SR/GAW/BI-09-C: Prepared write at an offset past the value: Invalid Offset on Execute")
    func executeInvalidOffset() throws {
        var h = try ServerHarness()
        #expect(h.send("16 16 00 65 00 01") == "17 16 00 65 00 01")
        #expect(h.send("18 01") == "01 18 16 00 07")
        // Nothing was written, and the queue is gone.
        h.server.setSecurity(LinkSecurity(encrypted: true, keySize: 16), for: h.a)
        #expect(h.send("0C 16 00 63 00") == "0D 63")
        #expect(h.send("18 01") == "19")
    }

    @Test("GATT/SR/GAW/BI-32-C: Write of a value that is too long: Invalid Attribute Value Length")
    func writeTooLong() throws {
        var h = try ServerHarness()
        #expect(h.send("12 13 00 01 00 00") == "01 12 13 00 0D", "the interval is 2 bytes")
        #expect(h.send("02 05 02") == "03 05 02")
        #expect(h.send(bytes("12 19 00") + [UInt8](repeating: 1, count: 513)) == bytes("01 12 19 00 0D"))
        #expect(h.send(bytes("12 19 00") + [UInt8](repeating: 1, count: 512)) == bytes("13"))
    }

    @Test("GATT/SR/GAW/BI-33-C: Long write past the maximum length: Invalid Attribute Value Length on Execute")
    func writeLongTooLong() throws {
        var h = try ServerHarness()
        #expect(h.send("16 13 00 00 00 01 00") == "17 13 00 00 00 01 00")
        #expect(h.send("16 13 00 02 00 01") == "17 13 00 02 00 01")
        #expect(h.send("18 01") == "01 18 13 00 0D")
        #expect(h.send("0A 13 00") == "0B 05 00")
        // Past 512 for an attribute without its own limit.
        for i in 0 ..< 29 {
            let offset = UInt16(i * 18)
            #expect(h.send(bytes("16 19 00") + [UInt8(offset & 0xFF), UInt8(offset >> 8)] + [UInt8](repeating: 7, count: 18)) != nil)
        }
        #expect(h.send("18 01") == "01 18 19 00 0D")
    }

    @Test("GATT/SR/GAN/BV-01-C: Notifications to the client that enabled them")
    func notifications() throws {
        var h = try ServerHarness()
        let value: [UInt8] = [1, 2, 3]
        #expect(throws: ATTServerError.notSubscribed(h.a, handle: 0x16)) {
            _ = try h.server.notify(h.a, handle: 0x16, value: value) { _ in }
        }
        // Its read needs encryption: so does subscribing (Insufficient Encryption on a plain link).
        #expect(h.send("12 17 00 01 00") == "01 12 17 00 0F")
        #expect(h.takeEvents().isEmpty && h.send("0A 17 00") == "0B 00 00")
        h.encrypt(h.a)
        #expect(h.send("12 17 00 01 00") == "13")
        #expect(h.takeEvents() == [.subscriptionChanged(h.a, valueHandle: 0x16, .notify)])
        #expect(h.send("0A 17 00") == "0B 01 00")
        #expect(h.send("0A 17 00", from: h.b) == "0B 00 00", "CCCDs are per client")
        var out: [UInt8] = []
        let truncated = try h.server.notify(h.a, handle: 0x16, value: value) { out = Array($0) }
        #expect(out == bytes("1B 16 00 01 02 03"))
        #expect(!truncated)
        // Longer than ATT_MTU−3: the first 20 bytes go.
        let long = [UInt8](repeating: 9, count: 30)
        let cut = try h.server.notify(h.a, handle: 0x16, value: long) { out = Array($0) }
        #expect(cut && out.count == 23)
        #expect(h.server.subscribers(of: 0x16).map(\.0) == [h.a])
    }

    @Test("A value whose read needs encryption is never notified in clear, a kept subscription included")
    func protectedValuesAreNotSentOnAPlainLink() throws {
        var h = try ServerHarness()
        h.encrypt(h.a)
        #expect(h.send("12 17 00 01 00") == "13")
        #expect(h.send("12 0B 00 04") == "13")  // Multiple Handle Value Notifications
        // The same client later on a plain link (the subscription as a bonded client's came back).
        h.server.setSecurity(.unencrypted, for: h.a)
        #expect(throws: ATTServerError.insufficientSecurity(h.a, handle: 0x16, .insufficientEncryption)) {
            _ = try h.server.notify(h.a, handle: 0x16, value: [1]) { _ in Issue.record("sent in clear") }
        }
        #expect(throws: ATTServerError.insufficientSecurity(h.a, handle: 0x16, .insufficientEncryption)) {
            _ = try h.server.notifyMultiple(h.a, [(0x16, [1])]) { _ in Issue.record("sent in clear") }
        }
        // A key too short counts as well (minimum 16 here).
        var strict = try ServerHarness(options: ATTServer.Options(minimumKeySize: 16))
        strict.server.setSecurity(LinkSecurity(encrypted: true, keySize: 7), for: strict.a)
        #expect(strict.send("12 17 00 01 00") == "01 12 17 00 0C", "Encryption Key Size")
        // Turning notifications off never needs security.
        #expect(h.send("12 17 00 00 00") == "13")
    }

    @Test("GATT/SR/GAN/BV-02-C: Multiple Handle Value Notification; a value that cannot fit sends nothing")
    func multipleHandleValueNotifications() throws {
        var h = try ServerHarness()
        // Client Supported Features: Multiple Handle Value Notifications (bit 2).
        #expect(h.send("12 0B 00 04") == "13")
        h.encrypt(h.a)
        #expect(h.send("12 17 00 01 00") == "13")
        var sent: [[UInt8]] = []
        #expect(try h.server.notifyMultiple(h.a, [(0x16, [1, 2, 3])]) { sent.append(Array($0)) } == 1)
        #expect(sent == [bytes("23 16 00 03 00 01 02 03")])
        // Handle, length and 30 bytes exceed ATT_MTU − 1: none sent, and no empty PDU either
        // (the caller notifies it alone, cut).
        sent = []
        #expect(try h.server.notifyMultiple(h.a, [(0x16, [UInt8](repeating: 9, count: 30))]) { sent.append(Array($0)) } == 0)
        #expect(sent.isEmpty)
    }

    @Test func anOutputHoldsOnlyTheLastCallsPDU() throws {
        var h = try ServerHarness()
        ATTServerOutput.withOutput { out in
            _ = bytes("0A 03 00").withUnsafeBytes { h.server.receive(from: h.a, pdu: $0, now: 0, into: &out) }
            #expect(hexString(out.bytes) == "0B 68 63 69 67 61 74 74")
            // A Write Command gets no response: the output is empty, not the read's again.
            _ = bytes("52 13 00 03 00").withUnsafeBytes { h.server.receive(from: h.a, pdu: $0, now: 0, into: &out) }
            #expect(out.isEmpty && out.pdu.isEmpty)
        }
    }

    @Test("GATT/SR/GAI/BV-01-C: Indications: one outstanding per client, confirmed")
    func indications() throws {
        var h = try ServerHarness()
        #expect(h.send("12 11 00 02 00") == "13")
        #expect(h.takeEvents() == [.subscriptionChanged(h.a, valueHandle: 0x10, .indicate)])
        var out: [UInt8] = []
        let value: [UInt8] = [0x06, 0x6C, 0x01, 0x00, 0xFF]
        try h.server.indicate(h.a, handle: 0x10, value: value, now: 0) { out = Array($0) }
        #expect(out == bytes("1D 10 00 06 6C 01 00 FF"))
        #expect(throws: ATTServerError.indicationPending(h.a, handle: 0x10)) {
            try h.server.indicate(h.a, handle: 0x10, value: value, now: 1) { _ in }
        }
        #expect(h.server.nextDeadline == 30_000_000_000)
        #expect(h.send("1E") == nil)
        #expect(h.takeEvents() == [.indicationConfirmed(h.a, handle: 0x10)])
        #expect(h.server.nextDeadline == nil)
        // A confirmation nobody asked for is dropped and reported.
        #expect(h.send("1E") == nil)
        #expect(h.takeEvents().count == 1)
    }

    @Test("CCCD: a bit the characteristic does not support is CCCD Improperly Configured; bad length is 0x0D")
    func cccdChecks() throws {
        var h = try ServerHarness()
        h.encrypt(h.a)
        #expect(h.send("12 11 00 01 00") == "01 12 11 00 FD")
        #expect(h.send("12 17 00 02 00") == "01 12 17 00 FD")
        #expect(h.send("12 17 00 01") == "01 12 17 00 0D")
        #expect(h.send("12 17 00 00 00") == "13")
        #expect(h.takeEvents().isEmpty, "no change, no event")
    }

    @Test("GATT/SR/GAS/BV-01-C: Service Changed is indicated after a database change to a client that asked")
    func serviceChanged() throws {
        var h = try ServerHarness()
        #expect(h.send("12 09 00 02 00") == "13")
        var services = ServerHarness.services()
        services.append(GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: .read, value: .stored([99])),
        ]))
        let clients = h.server.replaceTable(try GATTAttributeTable(services: services))
        #expect(clients == [h.a])
        var out: [UInt8] = []
        try h.server.serviceChangedIndication(to: h.a, now: 0) { out = Array($0) }
        #expect(out == bytes("1D 08 00 01 00 FF FF"))
        #expect(h.send("1E") == nil)
        #expect(h.server.isChangeAware(h.a) == true)
        #expect(h.send("0A 1E 00") == "0B 63")
    }
}
