import Testing
@testable import BluetoothWire

@Suite struct ACLTests {
    @Test func parsesHeaderFlagsAndPayload() throws {
        // Handle 0x0040, PB 0b10 (first flushable), BC 0: an ATT Exchange MTU Request in L2CAP.
        let bytes = h("40 20 07 00 03 00 04 00 02 17 00")
        let (header, payload, title) = try withBytes(bytes) { buf in
            let p = try ACLPacket(parsing: buf)
            return (p.header, Array(p.payload), p.fieldTitle)
        }
        #expect(header == ACLHeader(handle: 0x0040, packetBoundary: .firstFlushable, broadcast: .pointToPoint, dataLength: 7))
        #expect(payload == h("03 00 04 00 02 17 00"))
        #expect(title == "HCI_ACL_Data")
        #expect(header.packetBoundary.isFirst)
    }

    @Test func allFlagCombinations() throws {
        for pb in UInt8(0) ... 3 {
            for bc in UInt8(0) ... 3 {
                let hf = UInt16(0x0123) | UInt16(pb) << 12 | UInt16(bc) << 14
                let bytes: [UInt8] = [UInt8(hf & 0xFF), UInt8(hf >> 8), 0, 0]
                let header = try withBytes(bytes) { buf in try ACLPacket(parsing: buf).header }
                #expect(header.handle == 0x0123)
                #expect(header.packetBoundary.rawValue == pb && header.broadcast.rawValue == bc)
                #expect(try encode(header) == bytes)
            }
        }
    }

    @Test func encodesAndRoundTrips() throws {
        let packet = ACLDataPacket(handle: 0x0EFF, packetBoundary: .continuing, payload: [1, 2, 3])
        let bytes = try encode(packet)
        #expect(bytes == h("ff 1e 03 00 01 02 03"))
        let back = try withBytes(bytes) { buf in
            let p = try ACLPacket(parsing: buf)
            return ACLDataPacket(handle: p.header.handle, packetBoundary: p.header.packetBoundary,
                                 broadcast: p.header.broadcast, payload: Array(p.payload))
        }
        #expect(back == packet)

        var out = [UInt8](repeating: 0, count: 7)
        let n = try out.withUnsafeMutableBytes { o in
            try [UInt8(1), 2, 3].withUnsafeBytes { payload in
                var w = ByteWriter(o)
                try ACLPacket.encode(handle: 0x0EFF, packetBoundary: .continuing, payload: payload, into: &w)
                return w.count
            }
        }
        #expect(n == 7 && out == bytes)
    }

    @Test func rejectsBadValuesWhenEncoding() {
        #expect(throws: WireError.self) { try encode(ACLHeader(handle: 0x0F00, dataLength: 0)) }
        #expect(throws: WireError.self) {
            try encode(ACLHeader(handle: 1, packetBoundary: ACLPacketBoundaryFlag(rawValue: 4), dataLength: 0))
        }
        #expect(throws: WireError.self) {
            try encode(ACLDataPacket(handle: 1, payload: [UInt8](repeating: 0, count: 65536)))
        }
    }

    @Test func malformedInput() {
        let bytes = h("40 20 03 00 aa bb cc")
        for n in 0 ..< bytes.count {
            let e = wireError(Array(bytes[0 ..< n])) { buf in try ACLPacket(parsing: buf) }
            #expect(e?.code == (n < 4 ? .truncated : .invalidLength), "prefix \(n)")
        }
        #expect(wireError(bytes + [0xdd]) { buf in try ACLPacket(parsing: buf) } == WireError(.invalidLength, at: 4, ""))
        // A 12-bit handle above 0x0EFF is shown, not rejected, when parsing.
        #expect(wireError(h("ff 0f 00 00")) { buf in try ACLPacket(parsing: buf) } == nil)
    }

    @Test func scoPacket() throws {
        let (handle, status, payload) = try withBytes(h("01 30 02 aa bb")) { buf in
            let p = try SCOPacket(parsing: buf)
            return (p.handle, p.packetStatus, Array(p.payload))
        }
        #expect(handle == 0x0001 && status == 3 && payload == h("aa bb"))
        #expect(wireError(h("01 00 03 aa bb")) { buf in try SCOPacket(parsing: buf) }?.code == .invalidLength)
        #expect(wireError(h("01 00")) { buf in try SCOPacket(parsing: buf) }?.code == .truncated)
    }

    @Test func isoPacket() throws {
        // Handle 0x0061, PB 0b10 (complete SDU), TS set; length 0xC004 → 4 (RFU bits ignored).
        let (handle, pb, ts, length, payload) = try withBytes(h("61 60 04 c0 01 02 03 04")) { buf in
            let p = try ISOPacket(parsing: buf)
            return (p.handle, p.packetBoundary, p.hasTimeStamp, p.dataLoadLength, Array(p.payload))
        }
        #expect(handle == 0x0061 && pb == 2 && ts && length == 4 && payload == h("01 02 03 04"))
        #expect(wireError(h("61 60 05 00 01")) { buf in try ISOPacket(parsing: buf) }?.code == .invalidLength)
        #expect(wireError(h("61 60 05")) { buf in try ISOPacket(parsing: buf) }?.code == .truncated)
    }

    @Test func describesFields() throws {
        let fields = try withBytes(h("40 20 01 00 aa")) { buf in try ACLPacket(parsing: buf).fields }
        #expect(fields.first == Field("handle", .uint(0x40)))
        #expect(fields.contains(Field("packet_boundary_flag", .named(2, "first flushable"))))
        #expect(fields.last == Field("data", .bytes([0xAA])))
    }
}
