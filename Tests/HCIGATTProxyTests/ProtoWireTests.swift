import Testing
@testable import HCIGATTProxy

@Suite struct ProtoWireTests {
    @Test("Varints as protobuf writes them: 0, 42, 127, 128, 300, 65536, 2⁶⁴−1")
    func varints() throws {
        for (v, bytes) in [(UInt64(0), "00"), (42, "2a"), (127, "7f"), (128, "8001"), (300, "ac02"), (65536, "808004"),
                           (.max, "ffffffffffffffffff01")] {
            var w = ProtoWriter()
            w.rawVarint(v)
            #expect(w.bytes == hex(bytes))
            #expect(ProtoWriter.varintSize(v) == w.bytes.count)
            var i = 0
            #expect(try ProtoReader.varint(w.bytes, &i, end: w.bytes.count) == v)
        }
    }

    @Test("Every field type round trips; defaults are left out; unknown fields are skipped")
    func roundTrip() throws {
        var w = ProtoWriter()
        w.uint(1, UInt32(7))
        w.sint32(2, -70)
        w.int32(3, -1)
        w.bool(4, true)
        w.string(5, "grüß")
        w.bytes(6, [1, 2, 3])
        w.packed(7, [1, 300])
        w.uint(8, UInt32(0))
        w.bool(9, false)
        w.key(99, 5); w.bytes += [1, 2, 3, 4]  // fixed32, unknown here
        w.key(98, 1); w.bytes += [UInt8](repeating: 9, count: 8)  // fixed64
        w.message(10) { $0.uint(1, UInt64(5)) }
        #expect(!w.bytes.contains(8 << 3), "a zero is not written")
        var r = ProtoReader(w.bytes)
        var seen: [UInt32] = []
        var packed: [UInt64] = []
        while let (f, v) = try r.next() {
            seen.append(f)
            switch f {
            case 1: #expect(try r.uint32(v, f) == 7)
            case 2: #expect(try r.sint32(v, f) == -70)
            case 3: #expect(try r.int32(v, f) == -1)
            case 4: #expect(try r.bool(v, f))
            case 5: #expect(try r.string(v, f) == "grüß")
            case 6: #expect(try r.data(v, f) == [1, 2, 3])
            case 7: try r.uints(v, f, into: &packed)
            case 10:
                var inner = ProtoReader(w.bytes, range: try r.range(v, f))
                let (g, x) = try #require(try inner.next())
                #expect(g == 1 && x == .varint(5))
            default: break
            }
        }
        #expect(seen == [1, 2, 3, 4, 5, 6, 7, 99, 98, 10])
        #expect(packed == [1, 300])
    }

    @Test("Malformed input: typed errors with the offset, never a trap")
    func malformed() {
        func error(_ bytes: [UInt8]) -> ProtoError? {
            var r = ProtoReader(bytes)
            do {
                while let (f, v) = try r.next() { _ = try r.string(v, f) }
                return nil
            } catch { return error }
        }
        #expect(error([0x0A, 0x05, 0x61]) == ProtoError(offset: 1, .truncated))
        #expect(error([0x0A]) == ProtoError(offset: 1, .truncated))
        #expect(error([0x08] + [UInt8](repeating: 0xFF, count: 11)) == ProtoError(offset: 1, .varintTooLong))
        #expect(error([0x0B]) == ProtoError(offset: 0, .unsupportedWireType(3)))
        #expect(error([0x00, 0x01]) == ProtoError(offset: 0, .fieldZero))
        #expect(error([0x08, 0x01]) == ProtoError(offset: 0, .wrongWireType(field: 1)))
        #expect(error([0x0A, 0x02, 0xC3, 0x28]) == ProtoError(offset: 2, .notUTF8(field: 1)))
        #expect(error([0x0D, 0x01]) == ProtoError(offset: 1, .truncated))
        // A length near 2⁶⁴ must not overflow the bounds check.
        #expect(error([0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]) == ProtoError(offset: 1, .truncated))
    }
}
