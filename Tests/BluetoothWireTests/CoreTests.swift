import Testing
@testable import BluetoothWire

@Suite struct ByteReaderTests {
    @Test func readsLittleEndianAndReportsOffsets() throws {
        let bytes: [UInt8] = [0x01, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 0xAA]
        let (a, b, c, off, err, rem, end) = try withBytes(bytes) { buf in
            var r = ByteReader(buf, baseOffset: 10)
            let a = try r.u8(), b = try r.u16(), c = try r.u32()
            let off = r.offset
            var err: WireError?
            do throws(WireError) { _ = try r.u16() } catch { err = error }
            var end: WireError?
            do throws(WireError) { try r.expectEnd() } catch { end = error }
            return (a, b, c, off, err, r.remaining, end)
        }
        #expect(a == 0x01 && b == 0x1234 && c == 0x1234_5678)
        #expect(off == 17)
        #expect(err == WireError(.truncated, at: 17, ""))
        #expect(rem == 1) // a failed read consumes nothing
        #expect(end == WireError(.trailingBytes, at: 17, ""))
    }

    @Test func negativeAndOversizeCountsThrowInsteadOfTrapping() {
        #expect(wireError([0, 0, 0, 0]) { buf in var r = ByteReader(buf); _ = try r.bytes(-1) } != nil)
        #expect(wireError([0, 0, 0, 0]) { buf in var r = ByteReader(buf); _ = try r.bytes(5) } != nil)
        #expect(wireError([0, 0, 0, 0]) { buf in var r = ByteReader(buf); try r.skip(Int.max) } != nil)
    }
}

@Suite struct HexTests {
    @Test func parsesCommonForms() throws {
        #expect(try Hex.parse("04 3e 0a").get() == [0x04, 0x3E, 0x0A])
        #expect(try Hex.parse("0x1b2A").get() == [0x1B, 0x2A])
        #expect(try Hex.parse("E4:72:17").get() == [0xE4, 0x72, 0x17])
        #expect(throws: HexError.self) { try Hex.parse("0g").get() }
        #expect(throws: HexError.self) { try Hex.parse("abc").get() }
        #expect(throws: HexError.self) { try Hex.parse("a bc").get() }
    }
}

@Suite struct AddressTests {
    @Test func wireOrderIsLeastSignificantFirst() throws {
        let bytes: [UInt8] = [0x01, 0xE2, 0xFD, 0x17, 0x72, 0xE4]
        let a = try withBytes(bytes) { buf in
            var r = ByteReader(buf)
            return try BluetoothAddress.read(&r)
        }
        #expect(a.description == "E4:72:17:FD:E2:01")
        #expect(BluetoothAddress("e4:72:17:fd:e2:01") == a)
        #expect(BluetoothAddress("E4:72:17:FD:E2") == nil)
        var out = [UInt8](repeating: 0, count: 6)
        try out.withUnsafeMutableBytes { buf in
            var w = ByteWriter(buf)
            try a.write(&w)
        }
        #expect(out == bytes)
    }

    @Test func randomSubtypesFromTopBits() {
        #expect(LEAddress(BluetoothAddress("C0:00:00:00:00:01")!, type: .random).kind == .randomStatic)
        #expect(LEAddress(BluetoothAddress("40:00:00:00:00:01")!, type: .random).kind == .resolvablePrivate)
        #expect(LEAddress(BluetoothAddress("3F:00:00:00:00:01")!, type: .random).kind == .nonResolvablePrivate)
        #expect(LEAddress(BluetoothAddress("80:00:00:00:00:01")!, type: .random).kind == .reservedRandom)
        #expect(LEAddress(BluetoothAddress("C0:00:00:00:00:01")!, type: .public).kind == .public)
    }

    @Test func leAddressTextRoundTrips() throws {
        let a = try #require(BluetoothAddress("C0:01:02:03:04:05"))
        #expect(LEAddress("C0:01:02:03:04:05") == LEAddress(a, type: .public))
        #expect(LEAddress("C0:01:02:03:04:05/random") == LEAddress(a, type: .random))
        #expect(LEAddress("C0:01:02:03:04:05/public") == LEAddress(a, type: .public))
        #expect(LEAddress("c0:01:02:03:04:05/Random") == LEAddress(a, type: .random))
        for t in [LEAddressType.public, .random] {
            #expect(LEAddress(LEAddress(a, type: t).description) == LEAddress(a, type: t), "description parses back")
        }
        for bad in ["", "C0:01:02:03:04", "C0:01:02:03:04:05/other", "C0:01:02:03:04:05 (anonymous)", "C0:01:02:03:04:05:06",
                    "C0:01:02:03:04:05 (", "C0:01:02:03:04:05 )", "C0:01:02:03:04:05 ()"] {
            #expect(LEAddress(bad) == nil, "\(bad)")
        }
    }
}

@Suite struct UUIDTests {
    @Test func aliasesAreEqualAcrossWidths() throws {
        let u16 = BluetoothUUID(0x180D)
        let u32 = BluetoothUUID(uuid32: 0x0000_180D)
        let u128 = try #require(BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB"))
        #expect(u16 == u32 && u32 == u128)
        #expect(u128.uuid16 == 0x180D)
        #expect(u128.description == "180D")
        #expect(BluetoothUUID(uuid32: 0x1234_5678).description == "12345678")
        #expect(BluetoothUUID(uuid32: 0x1234_5678).uuid16 == nil)
    }

    @Test func parsesStringForms() {
        #expect(BluetoothUUID("0x2a1c") == BluetoothUUID(0x2A1C))
        #expect(BluetoothUUID("f000aa00-0451-4000-b000-000000000000")?.uuidString == "F000AA00-0451-4000-B000-000000000000")
        #expect(BluetoothUUID("f000aa0004514000b000000000000000") != nil)
        #expect(BluetoothUUID("f000aa00-0451-4000-b000-00000000000") == nil)
        #expect(BluetoothUUID("18 0D") == nil)
        #expect(BluetoothUUID("zz0D") == nil)
        #expect(BluetoothUUID("") == nil)
    }

    @Test func wireRoundTripAllWidths() throws {
        let base128: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x0D, 0x18, 0x00, 0x00]
        let u = try withBytes(base128) { buf in try BluetoothUUID(wire: buf) }
        #expect(u == BluetoothUUID(0x180D))
        for width in [2, 4, 16] {
            var out = [UInt8](repeating: 0, count: width)
            try out.withUnsafeMutableBytes { buf in
                var w = ByteWriter(buf)
                try u.write(&w, width: width)
            }
            let back = try withBytes(out) { buf in try BluetoothUUID(wire: buf) }
            #expect(back == u)
        }
        #expect(wireError([0, 0, 0]) { buf in try BluetoothUUID(wire: buf) } != nil)
    }
}
