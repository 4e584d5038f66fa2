import BluetoothHost
import BluetoothWire
@testable import HCIGATTFormat
import Testing

/// `replay --packets` writes ACL packets of whole ATT PDUs straight; the bytes must be the
/// dissector's, in both formats, for every PDU, and anything else (fragments, other
/// channels, malformed PDUs) must still go to the dissector.
@Suite struct DirectATTPacketTests {
    static func hex(_ s: String) -> [UInt8] {
        let digits = s.split(separator: " ")
        return digits.map { UInt8($0, radix: 16) ?? 0 }
    }

    /// ATT PDUs of every kind, some after the discovery that names their attributes.
    static let pdus: [String] = [
        "02 F7 00", "03 17 00",
        "10 01 00 FF FF 00 28", "11 06 01 00 05 00 00 18 06 00 0D 00 09 18",
        "11 14 0E 00 11 00 00 AA 04 51 04 00 00 B0 00 40 51 04 00 AA 00 F0",  // 128-bit group value
        "08 06 00 0D 00 03 28", "09 07 07 00 20 08 00 1C 2A 0A 00 02 0B 00 1D 2A",
        "04 01 00 FF FF", "05 01 09 00 02 29 0A 00 01 29", "05 02 20 00 00 00 00 00 00 00 00 B0 00 40 51 04 00 AA 00 F0",
        "06 01 00 FF FF 00 28 0D 18", "07 01 00 05 00",
        "0A 0B 00", "0B 02", "0C 0B 00 16 00", "0D 01 02 03",
        "0E 03 00 05 00", "0F 01 02", "20 03 00 05 00", "21 02 00 01 02 00 00",
        "12 09 00 02 00", "13", "52 0B 00 01", "D2 0B 00 01 00 01 02 03 04 05 06 07 08 09 0A 0B",
        "16 0B 00 00 00 01 02", "17 0B 00 00 00 01 02", "18 01", "19",
        "1B 0B 00 02", "1D 08 00 02 6C 01 00 FF EA 07 0C 05 11 21 05", "1E",
        "23 03 00 01 00 AA 07 00 00 00",
        "01 12 09 00 03",
        "7F 01 02",  // unknown opcode: its parameters
    ]

    /// A capture of `pdus` as ACL packets (alternately sent and received), plus a
    /// fragment, a non-ATT channel and malformed PDUs that the dissector must describe.
    static func capture() -> [UInt8] {
        var acl: [[UInt8]] = pdus.map { pdu in
            let p = hex(pdu)
            let l2 = [UInt8(p.count & 0xFF), UInt8(p.count >> 8), 0x04, 0x00] + p
            return [0x02, 0x40, 0x20, UInt8(l2.count & 0xFF), UInt8(l2.count >> 8)] + l2
        }
        // Packet boundary 0b11 ("complete", BR/EDR only) around a discovery response and a
        // notification of what it found: decoded by both paths, learned from by neither.
        acl.append(hex("02 40 30 0A 00 06 00 04 00 05 01 03 00 19 2A"))
        acl.append(hex("02 40 30 08 00 04 00 04 00 1B 0B 00 02"))
        acl.append(hex("02 40 20 06 00 0A 00 04 00 1B 0B"))  // the first part of a longer frame
        acl.append(hex("02 40 10 02 00 00 02"))  // a continuing fragment
        acl.append(hex("02 40 20 07 00 03 00 06 00 01 03 00"))  // SMP
        acl.append(hex("02 40 20 05 00 01 00 04 00 0A"))  // Read Request without its handle
        acl.append(hex("02 40 20 05 00 02 00 04 00"))  // L2CAP length beyond the packet
        return CaptureFixtures.capture(acl, step: 1250) { BTSnoopRecordFlags(.acl, received: $0 % 2 == 1) }
    }

    func replay(_ file: [UInt8], json: Bool, direct: Bool) -> (text: String, direct: Int) {
        let r = CaptureFixtures.replay(file, json: json) { $0.directATTPackets = direct }
        return (r.writer.out.string, r.directATTWritten)
    }

    @Test(arguments: [false, true])
    func directPacketsAreTheDissectorsBytes(json: Bool) {
        let file = Self.capture()
        let (direct, written) = replay(file, json: json, direct: true)
        let (tree, none) = replay(file, json: json, direct: false)
        #expect(direct == tree)
        #expect(written == Self.pdus.count + 2 && none == 0)
        // Not a vacuous match: every packet is there, ATT decoded, the odd ones described.
        #expect(direct.contains("ATT_HANDLE_VALUE_IND") && direct.contains("0x000B"))
        #expect(direct.contains("reassembly needed") && direct.contains("SMP"))
        #expect(direct.contains("attribute_type_name") || direct.contains("Temperature Measurement"))
    }
}
