import Testing
@testable import BluetoothWire


struct DeframedPacket: Equatable, CustomStringConvertible {
    var type: UInt8
    var bytes: [UInt8]
    var description: String { "\(type): \(Hex.string(bytes, separator: " "))" }
}

/// Takes every complete frame out of the deframer.
func drain(_ d: inout H4Deframer) throws -> [DeframedPacket] {
    var out: [DeframedPacket] = []
    while let f = try d.next() { out.append(DeframedPacket(type: f.type.rawValue, bytes: Array(f.packet))) }
    return out
}

func append(_ d: inout H4Deframer, _ bytes: ArraySlice<UInt8>) {
    Array(bytes).withUnsafeBytes { d.append($0) }
}

/// The error `next()` throws now, or nil if it returns.
func nextError(_ d: inout H4Deframer) -> WireError? {
    do throws(WireError) { _ = try d.next(); return nil } catch { return error }
}

@Suite struct H4Tests {
    /// Command, event, ACL (first flushable + empty), SCO, ISO (with TS and RFU length bits set).
    static let packets: [DeframedPacket] = [
        DeframedPacket(type: 0x01, bytes: h("03 0c 00")),
        DeframedPacket(type: 0x04, bytes: h("0e 04 01 03 0c 00")),
        DeframedPacket(type: 0x02, bytes: h("40 20 07 00 03 00 04 00 0a 03 00")),
        DeframedPacket(type: 0x02, bytes: h("41 00 00 00")),
        DeframedPacket(type: 0x03, bytes: h("01 00 02 aa bb")),
        DeframedPacket(type: 0x05, bytes: h("01 60 03 c0 11 22 33")),
        DeframedPacket(type: 0x04, bytes: h("3e 0c 02 01 00 00 01 02 03 04 05 06 00 c5")),
        DeframedPacket(type: 0x01, bytes: h("0c 20 02 01 01")),
    ]

    static var stream: [UInt8] { packets.flatMap { [$0.type] + $0.bytes } }

    @Test func wholeStreamInOneAppend() throws {
        var d = H4Deframer()
        append(&d, Self.stream[...])
        #expect(try drain(&d) == Self.packets)
        #expect(d.bufferedByteCount == 0)
        #expect(d.offset == Self.stream.count)
        #expect(try d.next() == nil)
    }

    @Test func oneByteAtATime() throws {
        var d = H4Deframer(initialCapacity: 16)
        var got: [DeframedPacket] = []
        for i in Self.stream.indices {
            append(&d, Self.stream[i ... i])
            got += try drain(&d)
        }
        #expect(got == Self.packets)
    }

    @Test func randomCutPoints() throws {
        let stream = Self.stream
        for seed in UInt64(1) ... 200 {
            var rng = SplitMix64(seed: seed)
            var d = H4Deframer(initialCapacity: 16)
            var got: [DeframedPacket] = []
            var i = 0
            while i < stream.count {
                let n = min(1 + rng.next(below: 24), stream.count - i)
                append(&d, stream[i ..< i + n])
                i += n
                got += try drain(&d)
            }
            #expect(got == Self.packets, "seed \(seed)")
        }
    }

    @Test func repeatedStreamReusesBuffer() throws {
        var d = H4Deframer(initialCapacity: 64)
        var count = 0
        for _ in 0 ..< 50 {
            append(&d, Self.stream[...])
            count += try drain(&d).count
        }
        #expect(count == 50 * Self.packets.count)
        #expect(d.capacity == 64) // whole packets in steady state: never grows
    }

    @Test func growsForLargePackets() throws {
        var packet: [UInt8] = [0x02, 0x40, 0x00, 0xE8, 0x03] // ACL, 1000 bytes of data
        packet += (0 ..< 1000).map { UInt8(truncatingIfNeeded: $0) }
        var d = H4Deframer(initialCapacity: 16)
        append(&d, packet[0 ..< 7])
        #expect(try d.next() == nil)
        append(&d, packet[7...])
        let frames = try drain(&d)
        #expect(frames == [DeframedPacket(type: 2, bytes: Array(packet[1...]))])
    }

    @Test func badIndicatorIsStickyUntilReset() throws {
        var d = H4Deframer()
        append(&d, (h("01 03 0c 00") + h("07 01 02 03"))[...])
        #expect(try d.next()?.type == .command)
        let e = nextError(&d)
        #expect(e == WireError(.unknownPacketType, at: 4, ""))
        // Valid bytes after the failure do not resynchronise the stream.
        append(&d, h("04 0e 04 01 03 0c 00")[...])
        #expect(nextError(&d) == e)
        #expect(nextError(&d) == e)
        #expect(d.error == e)
        d.reset()
        #expect(d.error == nil)
        append(&d, h("04 0e 04 01 03 0c 00")[...])
        #expect(try drain(&d) == [DeframedPacket(type: 4, bytes: h("0e 04 01 03 0c 00"))])
    }

    @Test func zeroIndicatorFailsAtOnce() {
        var d = H4Deframer()
        append(&d, [0x00][...])
        #expect(nextError(&d)?.code == .unknownPacketType)
    }

    @Test func oversizePacketFails() throws {
        var d = H4Deframer(maximumPacketLength: 104)
        // ACL with 100 data bytes: exactly the cap.
        append(&d, ([0x02, 0x01, 0x00, 100, 0x00] + [UInt8](repeating: 0xAB, count: 100))[...])
        #expect(try drain(&d).count == 1)
        // ACL announcing 101 bytes: refused as soon as the header is in, before the data.
        append(&d, [0x02, 0x01, 0x00, 101, 0x00][...])
        let e = nextError(&d)
        #expect(e == WireError(.invalidLength, at: 105, ""))
        #expect(nextError(&d) == e)
        // Full-range default accepts the largest ACL length field.
        var big = H4Deframer()
        append(&big, [0x02, 0x01, 0x00, 0xFF, 0xFF][...])
        #expect(try big.next() == nil)
        #expect(big.error == nil)
    }

    @Test func isoLengthUsesFourteenBits() throws {
        var d = H4Deframer(maximumPacketLength: 16)
        // Length field 0xFFFF → 0x3FFF, still above the cap; 0xC002 → 2.
        append(&d, h("05 01 00 02 c0 aa bb")[...])
        #expect(try drain(&d) == [DeframedPacket(type: 5, bytes: h("01 00 02 c0 aa bb"))])
    }

    @Test func frameBodySkipsHeader() throws {
        var d = H4Deframer()
        append(&d, h("04 0e 04 01 03 0c 00")[...])
        let body = try #require(try d.next()).body
        #expect(Array(body) == h("01 03 0c 00"))
    }

    @Test func statelessParseOfOnePacket() throws {
        let (type, packet, body) = try withBytes(h("02 40 20 02 00 aa bb")) { buf in
            let f = try H4Frame.parse(buf)
            return (f.type, Array(f.packet), Array(f.body))
        }
        #expect(type == .acl && packet == h("40 20 02 00 aa bb") && body == h("aa bb"))
        let event = try withBytes(h("04 0e 00")) { buf in try H4Frame.parse(buf).type }
        #expect(event == .event)

        #expect(wireError([]) { buf in try H4Frame.parse(buf) }?.code == .truncated)
        #expect(wireError(h("04 0e")) { buf in try H4Frame.parse(buf) }?.code == .truncated)
        #expect(wireError(h("06 00 00")) { buf in try H4Frame.parse(buf) } == WireError(.unknownPacketType, at: 0, ""))
        // Length field must match exactly: one short, one long.
        #expect(wireError(h("02 40 20 02 00 aa")) { buf in try H4Frame.parse(buf) }?.code == .invalidLength)
        #expect(wireError(h("02 40 20 02 00 aa bb cc")) { buf in try H4Frame.parse(buf) }?.code == .invalidLength)
        // Every prefix of a valid packet fails.
        let full = h("01 0c 20 02 01 01")
        for n in 0 ..< full.count {
            #expect(wireError(Array(full[0 ..< n])) { buf in try H4Frame.parse(buf) } != nil, "prefix \(n)")
        }
    }

    @Test func h4PacketAddsIndicator() throws {
        #expect(try H4Packet(.command, ResetCommand()).encoded() == h("01 03 0c 00"))
        #expect(try ResetCommand().encodedH4() == h("01 03 0c 00"))
        #expect(H4PacketType.iso.headerLength == 4 && H4PacketType(rawValue: 9).headerLength == nil)
        #expect(H4PacketType.sco.description == "HCI Synchronous Data")
    }
}
