import BluetoothHost
import BluetoothWire
@testable import HCIGATTFormat
import Testing

/// `replay --packets` writes HCI_LE_Advertising_Report events straight; the bytes must be
/// the events' descriptions through the field writer, in both formats, for every AD type,
/// malformed values and layouts, odd names, the assigned event and address types and
/// reserved ones, and the RSSI's "not available".
@Suite struct DirectAdvertisingPacketTests {
    /// AD payloads tried with every AD type (one structure each): empty, a byte, a 16-bit
    /// value, four and sixteen bytes, an iBeacon frame, an Eddystone frame, and so on.
    static let payloads: [[UInt8]] = [
        [], [0x06], [0x4C, 0x00], [0x0F, 0x18, 0x0A, 0x18], [0xFF, 0xFF, 0x01], [0x00, 0x0F, 0xAA],
        [0xFE, 0xFF, 0x01, 0x02], Array(0 ..< 16),
        [0x4C, 0x00, 0x02, 0x15] + Array(0 ..< 16) + [0x00, 0x01, 0x00, 0x02, 0xC5],  // iBeacon
        [0xAA, 0xFE, 0x10, 0xEB, 0x03, 0x67, 0x6F, 0x6F, 0x00],  // Eddystone-URL
        [0xAA, 0xFE, 0x20, 0x00, 0x0B, 0xB8, 0x18, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20],  // TLM
        Array("a\"b\\c\u{01}é".utf8), [0xFF, 0xFE, 0x41],  // a name to escape; invalid UTF-8
    ]

    /// Data fields: every AD type with every payload that fits, and layouts that end early
    /// or break (a length past the end, a zero length, a lone length byte).
    static func dataFields() -> [[UInt8]] {
        var out: [[UInt8]] = []
        for type in 0 ... 255 {
            for p in payloads where p.count <= 29 {
                out.append([UInt8(p.count + 1), UInt8(type)] + p)
            }
        }
        out.append([0x02, 0x01, 0x06, 0x05, 0x09, 0x41])  // second structure runs past the end
        out.append([0x02, 0x01, 0x06, 0x00, 0x03, 0x03, 0x0F, 0x18])  // zero length ends the data
        out.append([0x02, 0x01, 0x06, 0x03])  // a length byte alone
        out.append([0x02, 0x01, 0x06, 0x09, 0x09] + Array("Sensor-0".utf8) + [0x05, 0x03, 0x09, 0x18, 0x0F, 0x18,
                    0x07, 0xFF, 0x4C, 0x00, 0x01, 0x02, 0x03, 0x04])
        out.append([])
        // Written directly and through the writer in one report: flags, service data,
        // appearance, a name; and 31 bytes (the most a legacy report holds).
        out.append([0x02, 0x01, 0x06, 0x03, 0x16, 0x0F, 0x18, 0x03, 0x19, 0x41, 0x03, 0x05, 0x09] + Array("abcd".utf8))
        out.append([0x1E, 0xFF, 0xFF, 0xFF] + Array(0 ..< 27))
        return out
    }

    /// Events of one to three reports, cycling through event types, address types and RSSIs.
    static func events() -> [[UInt8]] {
        let eventTypes: [UInt8] = [0, 1, 2, 3, 4, 5, 0xFF]
        let addressTypes: [UInt8] = [0, 1, 2, 3, 4, 0xFF]
        let rssis: [UInt8] = [0xC4, 127, 0x80, 0, 20]
        var events: [[UInt8]] = []
        var reports: [[UInt8]] = []
        let fields = dataFields()
        for (i, data) in fields.enumerated() {
            let address: [UInt8] = [UInt8(i & 0xFF), UInt8(i >> 8), 0x00, 0x00, 0xC0, 0xFF]
            reports.append([eventTypes[i % eventTypes.count], addressTypes[i % addressTypes.count]] + address
                           + [UInt8(data.count)] + data + [rssis[i % rssis.count]])
            if reports.count == 1 + events.count % 3 || i == fields.count - 1 {
                let parameters: [UInt8] = [0x02, UInt8(reports.count)] + reports.flatMap { $0 }
                events.append([0x04, 0x3E, UInt8(parameters.count)] + parameters)
                reports = []
            }
        }
        return events
    }

    static func capture(_ packets: [[UInt8]]) -> [UInt8] {
        // Now and then recorded as sent: the header says so.
        CaptureFixtures.capture(packets, step: 1_234_567) { BTSnoopRecordFlags(.event, received: $0 % 7 != 3) }
    }

    func replay(_ file: [UInt8], json: Bool, direct: Bool) -> (text: String, direct: Int) {
        let r = CaptureFixtures.replay(file, json: json) { $0.directAdvertisingPackets = direct }
        return (r.writer.out.string, r.directAdvertisingWritten)
    }

    @Test(arguments: [false, true])
    func directReportsAreTheDescriptionsBytes(json: Bool) {
        let events = Self.events()
        let file = Self.capture(events)
        let (direct, written) = replay(file, json: json, direct: true)
        let (tree, none) = replay(file, json: json, direct: false)
        #expect(written == events.count && none == 0)
        if direct != tree {
            // The first line that differs (the whole output is thousands of lines).
            let a = direct.split(separator: "\n", omittingEmptySubsequences: false)
            let b = tree.split(separator: "\n", omittingEmptySubsequences: false)
            let i = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset ?? min(a.count, b.count)
            Issue.record("differs at line \(i) of \(a.count) / \(b.count):\n direct: \(i < a.count ? a[i] : "(end)")\n   tree: \(i < b.count ? b[i] : "(end)")")
        }
        // Not a vacuous match: values decoded directly and through the writer are there.
        #expect(direct.contains("Apple, Inc.") && direct.contains("ibeacon") && direct.contains("eddystone"))
        #expect(direct.contains("not available") && direct.contains("Reserved") && direct.contains("error"))
        #expect(direct.contains("\u{FFFD}") && direct.contains("test / no company") && direct.contains("unknown"))
    }
}
