import Testing
@testable import BluetoothWire

@Suite struct IEEE11073Tests {
    @Test func sfloatBodyTemperature() throws {
        let v = try withBytes(h("6C F1")) { buf in try SFloat(wire: buf) }
        #expect(v.rawValue == 0xF16C)
        #expect(v.mantissa == 364 && v.exponent == -1)
        #expect(v.kind == .finite(mantissa: 364, exponent: -1))
        #expect(v.value == 36.4)
        #expect(v.doubleValue == 36.4)
        #expect(v.description == "36.4")
        #expect(v.fieldValue == .double(36.4))
    }

    @Test func medFloat32Temperature() throws {
        let v = try withBytes(h("72 01 00 FF")) { buf in try MedFloat32(wire: buf) }
        #expect(v.mantissa == 370 && v.exponent == -1)
        #expect(v.value == 37.0)
        #expect(v.description == "37.0")
    }

    @Test func negativeMantissasAndExponents() throws {
        // mantissa -5 (0xFFB), exponent -2 (0xE) → -0.05
        let s = SFloat(rawValue: 0xEFFB)
        #expect(s.mantissa == -5 && s.exponent == -2)
        #expect(s.value == -0.05)
        #expect(s.description == "-0.05")
        // mantissa 12, exponent +2 → 1200
        let p = SFloat(rawValue: 0x200C)
        #expect(p.value == 1200 && p.description == "1200")
        // Most negative mantissa and exponents.
        let minimum = SFloat(rawValue: 0x8800)
        #expect(minimum.mantissa == -2048 && minimum.exponent == -8)
        #expect(minimum.description == "-0.00002048")
        let f = MedFloat32(rawValue: 0x80FF_FFFF) // mantissa -1, exponent -128
        #expect(f.mantissa == -1 && f.exponent == -128)
        #expect(f.value == -1e-128)
        let g = MedFloat32(rawValue: 0x7F00_0001) // 1e127
        #expect(g.value == 1e127)
        #expect(MedFloat32(rawValue: 0x0000_0000).description == "0")
        #expect(MedFloat32(rawValue: 0xFD00_0000).description == "0.000")
    }

    @Test func sfloatReservedValuesAreDistinct() {
        let cases: [(UInt16, IEEE11073Kind, String)] = [
            (0x07FF, .nan, "NaN"), (0x0800, .nres, "NRes"), (0x07FE, .positiveInfinity, "+INF"),
            (0x0802, .negativeInfinity, "-INF"), (0x0801, .reserved, "reserved"),
        ]
        for (raw, kind, text) in cases {
            let v = SFloat(rawValue: raw)
            #expect(v.kind == kind)
            #expect(v.description == text)
            #expect(v.value == nil)
            #expect(!v.isFinite)
        }
        #expect(SFloat.positiveInfinity.doubleValue == .infinity)
        #expect(SFloat.negativeInfinity.doubleValue == -.infinity)
        #expect(SFloat.nan.doubleValue.isNaN && SFloat.nres.doubleValue.isNaN && SFloat.reserved.doubleValue.isNaN)
        // The same mantissas with a non-zero exponent are ordinary numbers.
        #expect(SFloat(rawValue: 0x17FF).value == 20470)
        #expect(SFloat(rawValue: 0x1800).kind == .finite(mantissa: -2048, exponent: 1))
    }

    @Test func medFloat32ReservedValuesAreDistinct() {
        let cases: [(UInt32, IEEE11073Kind, String)] = [
            (0x007F_FFFF, .nan, "NaN"), (0x0080_0000, .nres, "NRes"), (0x007F_FFFE, .positiveInfinity, "+INF"),
            (0x0080_0002, .negativeInfinity, "-INF"), (0x0080_0001, .reserved, "reserved"),
        ]
        for (raw, kind, text) in cases {
            let v = MedFloat32(rawValue: raw)
            #expect(v.kind == kind)
            #expect(v.description == text)
            #expect(v.value == nil)
            #expect(v.fieldValue == .text(text))
        }
        #expect(MedFloat32(rawValue: 0x017F_FFFF).value == 83886070)
    }

    @Test func encoderRangeChecks() throws {
        #expect(try SFloat(mantissa: 364, exponent: -1).rawValue == 0xF16C)
        #expect(try SFloat(mantissa: -2048, exponent: -8).rawValue == 0x8800)
        #expect(try SFloat(mantissa: 2047, exponent: 7).rawValue == 0x77FF)
        #expect(try MedFloat32(mantissa: 370, exponent: -1).rawValue == 0xFF00_0172)
        for (m, e) in [(2048, 0), (-2049, 0), (1, 8), (1, -9), (2047, 0), (2046, 0), (-2048, 0), (-2047, 0), (-2046, 0)] {
            #expect(throws: WireError.self) { try SFloat(mantissa: m, exponent: e) }
        }
        for (m, e) in [(0x80_0000, 0), (-0x80_0001, 0), (1, 128), (1, -129), (0x7F_FFFF, 0), (-0x80_0000, 0), (-0x7F_FFFE, 0)] {
            #expect(throws: WireError.self) { try MedFloat32(mantissa: m, exponent: e) }
        }
        #expect(try SFloat(mantissa: 2045, exponent: 0).value == 2045)
        #expect(try SFloat(mantissa: -2045, exponent: 0).value == -2045)
    }

    @Test func roundTripEveryRawSFloat() throws {
        for raw in UInt16.min ... UInt16.max {
            let v = SFloat(rawValue: raw)
            let bytes = try encode(v)
            #expect(bytes == [UInt8(raw & 0xFF), UInt8(raw >> 8)])
            if case .finite(let m, let e) = v.kind {
                let back = try SFloat(mantissa: Int(m), exponent: Int(e))
                if back != v { Issue.record("SFLOAT \(raw) did not round trip"); return }
            }
        }
        let f = MedFloat32(rawValue: 0xFF00_0172)
        #expect(try encode(f) == h("72 01 00 FF"))
    }

    @Test func truncatedAndOversize() {
        for n in 0 ..< 2 { #expect(wireError(Array(h("6C F1").prefix(n))) { buf in try SFloat(wire: buf) }?.code == .truncated) }
        for n in 0 ..< 4 { #expect(wireError(Array(h("72 01 00 FF").prefix(n))) { buf in try MedFloat32(wire: buf) }?.code == .truncated) }
        #expect(wireError(h("6C F1 00")) { buf in try SFloat(wire: buf) } == WireError(.trailingBytes, at: 2, ""))
        #expect(wireError(h("72 01 00 FF 00")) { buf in try MedFloat32(wire: buf) } == WireError(.trailingBytes, at: 4, ""))
    }

    /// Health Thermometer Temperature Measurement (0x2A1C): flags (bit0 Fahrenheit,
    /// bit1 time stamp present, bit2 temperature type present), a 32-bit FLOAT, then the
    /// optional Date Time and type byte — the layout the seed document's parser reads.
    @Test func temperatureMeasurementLayout() throws {
        let packet = h("07 72 01 00 FF E2 07 0B 1D 11 21 05 02")
        let (flags, temp, stamp, type) = try withBytes(packet) { buf in
            var r = ByteReader(buf)
            let flags = try r.u8()
            let temp = try MedFloat32.read(&r)
            let stamp: DateTime? = flags & 0x02 != 0 ? try DateTime.read(&r) : nil
            let type: UInt8? = flags & 0x04 != 0 ? try r.u8() : nil
            try r.expectEnd()
            return (flags, temp, stamp, type)
        }
        #expect(flags & 0x01 != 0) // Fahrenheit
        #expect(temp.value == 37.0 && temp.description == "37.0")
        #expect(stamp?.description == "2018-11-29 17:33:05")
        #expect(type == 2) // body (general)
        // A negative temperature: mantissa -125 (0xFFFF83), exponent -1 → -12.5 °C.
        let cold = try withBytes(h("00 83 FF FF FF")) { buf in
            var r = ByteReader(buf); _ = try r.u8(); return try MedFloat32.read(&r)
        }
        #expect(cold.value == -12.5)
        // The "invalid temperature" the seed checks for is the FLOAT NaN.
        #expect(try withBytes(h("FF FF 7F 00")) { buf in try MedFloat32(wire: buf) }.kind == .nan)
    }
}
