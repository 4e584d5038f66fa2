import BluetoothWire
@testable import HCIGATTFormat
import Testing

/// `replay --packets` names ATT handles from the discovery in the capture and decodes
/// the values it knows.
@Suite struct CaptureGATTMapTests {
    /// An ACL packet (H4) carrying `att` on the ATT channel of connection 0x0040.
    static func acl(_ att: [UInt8], connection: UInt16 = 0x0040) -> [UInt8] {
        let l2cap = [UInt8(att.count & 0xFF), UInt8(att.count >> 8), 0x04, 0x00] + att
        return [0x02, UInt8(connection & 0xFF), UInt8(connection >> 8) | 0x20, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap
    }

    static let discoverCharacteristics: [UInt8] = [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28]
    /// Two declarations: 0x0010 → value 0x0011 Heart Rate Measurement, 0x0013 → 0x0014 Battery Level.
    static let declarations: [UInt8] = [0x09, 7, 0x10, 0x00, 0x10, 0x11, 0x00, 0x37, 0x2A,
                                        0x13, 0x00, 0x12, 0x14, 0x00, 0x19, 0x2A]
    static let descriptors: [UInt8] = [0x05, 0x01, 0x12, 0x00, 0x02, 0x29]

    func feed(_ map: inout CaptureGATTMap, _ packet: [UInt8], sentByHost: Bool) -> [Field] {
        packet.withUnsafeBytes { p in
            guard let (connection, pdu) = CaptureGATTMap.attPDU(p) else { return [] }
            return map.att(connection: connection, sentByHost: sentByHost, pdu: pdu)
        }
    }

    func field(_ fields: [Field], _ name: String) -> FieldValue? { fields.first { $0.name == name }?.value }

    @Test func discoveryNamesHandlesAndDecodesValues() {
        var map = CaptureGATTMap()
        _ = feed(&map, Self.acl(Self.discoverCharacteristics), sentByHost: true)
        _ = feed(&map, Self.acl(Self.declarations), sentByHost: false)
        _ = feed(&map, Self.acl([0x04, 0x12, 0x00, 0x12, 0x00]), sentByHost: true)
        _ = feed(&map, Self.acl(Self.descriptors), sentByHost: false)
        // A notification of 0x0011: Heart Rate Measurement, 72 bpm.
        let ntf = feed(&map, Self.acl([0x1B, 0x11, 0x00, 0x16, 0x48, 0x55, 0x03]), sentByHost: false)
        #expect(field(ntf, "attribute_type") == .text("2A37"))
        #expect(field(ntf, "attribute_type_name") == .text("Heart Rate Measurement"))
        guard case .object(let decoded)? = field(ntf, "decoded") else { Issue.record("not decoded: \(ntf)"); return }
        #expect(field(decoded, "heart_rate") == .uint(72))
        #expect(field(decoded, "summary") == .text("72 bpm, contact detected, RR 0.833 s"))
        // The CCCD found by Find Information, written by the host.
        let write = feed(&map, Self.acl([0x12, 0x12, 0x00, 0x01, 0x00]), sentByHost: true)
        #expect(field(write, "attribute_type") == .text("2902"))
        // A read: the request names the handle, the response is decoded by it.
        let read = feed(&map, Self.acl([0x0A, 0x14, 0x00]), sentByHost: true)
        #expect(field(read, "attribute_type") == .text("2A19"))
        let response = feed(&map, Self.acl([0x0B, 0x5A]), sentByHost: false)
        guard case .object(let level)? = field(response, "decoded") else { Issue.record("not decoded: \(response)"); return }
        #expect(field(level, "summary") == .text("90 %"))
        // A malformed value is named and its error said, not dropped.
        let bad = feed(&map, Self.acl([0x1B, 0x11, 0x00, 0x01]), sentByHost: false)
        #expect(field(bad, "attribute_type") == .text("2A37"))
        #expect(field(bad, "decode_error") != nil)
    }

    @Test func aCaptureThatStartsAfterTheDiscoveryShowsHandlesOnly() {
        var map = CaptureGATTMap()
        #expect(feed(&map, Self.acl([0x1B, 0x11, 0x00, 0x16, 0x48]), sentByHost: false).isEmpty)
        // A Read By Type Response answering another type is not taken for declarations.
        _ = feed(&map, Self.acl([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x2A]), sentByHost: true)
        _ = feed(&map, Self.acl(Self.declarations), sentByHost: false)
        #expect(feed(&map, Self.acl([0x1B, 0x11, 0x00, 0x16, 0x48]), sentByHost: false).isEmpty)
    }

    @Test func tablesFollowThePeerAcrossConnections() throws {
        var map = CaptureGATTMap()
        let peer = LEAddress(BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x01), type: .public)
        func connected(_ handle: UInt16) {
            map.event(.leMeta(.connectionComplete(LEConnectionComplete(
                status: .success, connectionHandle: handle, role: .central, peerAddress: peer, connectionInterval: 24,
                peripheralLatency: 0, supervisionTimeout: 72, centralClockAccuracy: LEClockAccuracy(rawValue: 0)))))
        }
        connected(0x0040)
        _ = feed(&map, Self.acl(Self.discoverCharacteristics), sentByHost: true)
        _ = feed(&map, Self.acl(Self.declarations), sentByHost: false)
        map.event(.disconnectionComplete(HCIDisconnectionComplete(status: .success, connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)))
        // The same device again on another handle, no discovery (a GATT cache): still named.
        connected(0x0041)
        let ntf = feed(&map, Self.acl([0x1B, 0x14, 0x00, 0x50], connection: 0x0041), sentByHost: false)
        #expect(field(ntf, "attribute_type") == .text("2A19"))
        // Another connection's handles are its own.
        #expect(feed(&map, Self.acl([0x1B, 0x14, 0x00, 0x50], connection: 0x0042), sentByHost: false).isEmpty)
    }

    @Test func whatALinkOfAnUnknownPeerTaughtEndsWithIt() {
        var map = CaptureGATTMap()
        // The capture began after 0x0040 connected: learned per connection handle.
        _ = feed(&map, Self.acl(Self.discoverCharacteristics), sentByHost: true)
        _ = feed(&map, Self.acl(Self.declarations), sentByHost: false)
        #expect(!feed(&map, Self.acl([0x1B, 0x14, 0x00, 0x50]), sentByHost: false).isEmpty)
        map.event(.disconnectionComplete(HCIDisconnectionComplete(status: .success, connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)))
        // The handle comes back for another device: nothing of the old one applies.
        map.event(.leMeta(.connectionComplete(LEConnectionComplete(
            status: .success, connectionHandle: 0x0040, role: .central,
            peerAddress: LEAddress(BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x02), type: .public), connectionInterval: 24,
            peripheralLatency: 0, supervisionTimeout: 72, centralClockAccuracy: LEClockAccuracy(rawValue: 0)))))
        #expect(feed(&map, Self.acl([0x1B, 0x14, 0x00, 0x50]), sentByHost: false).isEmpty)
        // Nor for a link of another unknown peer on the same handle.
        map.event(.disconnectionComplete(HCIDisconnectionComplete(status: .success, connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)))
        #expect(feed(&map, Self.acl([0x1B, 0x14, 0x00, 0x50]), sentByHost: false).isEmpty)
    }

    @Test func eachSideOfALinkHasItsOwnTable() {
        var map = CaptureGATTMap()
        // The peer discovers the host's database (the host serves).
        _ = feed(&map, Self.acl(Self.discoverCharacteristics), sentByHost: false)
        _ = feed(&map, Self.acl(Self.declarations), sentByHost: true)
        // The host notifies its own 0x0011: named from its table.
        let ours = feed(&map, Self.acl([0x1B, 0x11, 0x00, 0x16, 0x48]), sentByHost: true)
        #expect(field(ours, "attribute_type") == .text("2A37"))
        // The peer's 0x0011 is another attribute, not learned: handle only.
        #expect(feed(&map, Self.acl([0x1B, 0x11, 0x00, 0x16, 0x48]), sentByHost: false).isEmpty)
        // The peer reads the host's battery level: request and response named.
        #expect(field(feed(&map, Self.acl([0x0A, 0x14, 0x00]), sentByHost: false), "attribute_type") == .text("2A19"))
        #expect(field(feed(&map, Self.acl([0x0B, 0x5A]), sentByHost: true), "attribute_type") == .text("2A19"))
    }

    @Test func aResponseAnswersOnlyItsOwnRequest() {
        var map = CaptureGATTMap()
        _ = feed(&map, Self.acl(Self.discoverCharacteristics), sentByHost: true)
        _ = feed(&map, Self.acl(Self.declarations), sentByHost: false)
        // A Write Request, then a Read Response whose request the capture lost: not taken
        // for the written handle.
        _ = feed(&map, Self.acl([0x12, 0x14, 0x00, 0x01]), sentByHost: true)
        #expect(feed(&map, Self.acl([0x0B, 0x5A]), sentByHost: false).isEmpty)
        // An Error Response ends a read; a later response has nothing to answer.
        _ = feed(&map, Self.acl([0x0A, 0x14, 0x00]), sentByHost: true)
        _ = feed(&map, Self.acl([0x01, 0x0A, 0x14, 0x00, 0x02]), sentByHost: false)
        #expect(feed(&map, Self.acl([0x0B, 0x5A]), sentByHost: false).isEmpty)
        // Read Blob: named, not decoded (a piece of a value).
        _ = feed(&map, Self.acl([0x0C, 0x14, 0x00, 0x16, 0x00]), sentByHost: true)
        let blob = feed(&map, Self.acl([0x0D, 0x5A]), sentByHost: false)
        #expect(field(blob, "attribute_type") == .text("2A19") && field(blob, "decoded") == nil)
    }

    @Test func aReadThatFillsTheMTUIsNotDecodedAsWhole() {
        var map = CaptureGATTMap()
        // 128-bit descriptor types from Find Information (format 2), 0x0012 here.
        _ = feed(&map, Self.acl([0x04, 0x12, 0x00, 0x12, 0x00]), sentByHost: true)
        let uuid128: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00]
        _ = feed(&map, Self.acl([0x05, 0x02, 0x12, 0x00] + uuid128), sentByHost: false)
        // ATT_MTU 23: a Read Response of 22 bytes may be the first part of a long value.
        _ = feed(&map, Self.acl([0x0A, 0x12, 0x00]), sentByHost: true)
        let first = feed(&map, Self.acl([0x0B] + Array(repeating: 0x41, count: 22)), sentByHost: false)
        #expect(field(first, "attribute_type") == .text("2A00") && field(first, "decoded") == nil)
        // With ATT_MTU 100 (Exchange MTU 517 / 100), the same 22 bytes are the whole value.
        _ = feed(&map, Self.acl([0x02, 0x05, 0x02]), sentByHost: true)
        _ = feed(&map, Self.acl([0x03, 0x64, 0x00]), sentByHost: false)
        _ = feed(&map, Self.acl([0x0A, 0x12, 0x00]), sentByHost: true)
        let whole = feed(&map, Self.acl([0x0B] + Array(repeating: 0x41, count: 22)), sentByHost: false)
        #expect(field(whole, "decoded") != nil)
    }

    @Test func fragmentsAndOtherChannelsAreLeftAlone() {
        var packet = Self.acl([0x1B, 0x11, 0x00, 0x16])
        packet[2] = (packet[2] & 0x0F) | 0x10  // a continuation fragment
        #expect(packet.withUnsafeBytes { CaptureGATTMap.attPDU($0) } == nil)
        var smp = Self.acl([0x01, 0x03, 0x00, 0x01])
        smp[7] = 0x06
        #expect(smp.withUnsafeBytes { CaptureGATTMap.attPDU($0) } == nil)
        let truncated = Array(Self.acl([0x1B, 0x11, 0x00, 0x16]).dropLast())
        #expect(truncated.withUnsafeBytes { CaptureGATTMap.attPDU($0) } == nil)
    }
}
