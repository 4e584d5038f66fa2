/// What an IEEE 11073-20601 medical float holds: a finite decimal `mantissa × 10^exponent`
/// or one of the five reserved special values (IEEE 11073-20601 §F.8, used by GATT
/// characteristics such as Temperature Measurement 0x2A1C).
public enum IEEE11073Kind: Hashable, Sendable {
    case finite(mantissa: Int32, exponent: Int8)
    /// Not a Number (mantissa 0x7FF / 0x7FFFFF, exponent 0).
    case nan
    /// Not at this Resolution (mantissa 0x800 / 0x800000, exponent 0).
    case nres
    /// + infinity (mantissa 0x7FE / 0x7FFFFE, exponent 0).
    case positiveInfinity
    /// − infinity (mantissa 0x802 / 0x800002, exponent 0).
    case negativeInfinity
    /// Reserved for future use (mantissa 0x801 / 0x800001, exponent 0).
    case reserved
}

/// Shared arithmetic and formatting for ``SFloat`` and ``MedFloat32``.
public enum IEEE11073 {
    /// 10^e for 0 ≤ e ≤ 22, all exactly representable in a Double. A switch over constants
    /// compiles to a read-only lookup table: no global initialisation, no `pow`.
    @inlinable
    static func exactPowerOfTen(_ e: Int) -> Double {
        switch e {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        case 9: 1e9
        case 10: 1e10
        case 11: 1e11
        case 12: 1e12
        case 13: 1e13
        case 14: 1e14
        case 15: 1e15
        case 16: 1e16
        case 17: 1e17
        case 18: 1e18
        case 19: 1e19
        case 20: 1e20
        case 21: 1e21
        default: 1e22
        }
    }

    /// `mantissa × 10^exponent`, correctly rounded for |exponent| ≤ 22 (every SFLOAT and
    /// all FLOAT values in practice): negative exponents divide by an exact power of ten
    /// so 364 × 10^-1 gives the Double nearest 36.4.
    @inlinable
    public static func scale(_ mantissa: Int32, _ exponent: Int8) -> Double {
        let m = Double(mantissa)
        let e = Int(exponent)
        if e >= 0 {
            if e <= 22 { return m * exactPowerOfTen(e) }
        } else if e >= -22 {
            return m / exactPowerOfTen(0 &- e)
        }
        return scaleSlow(m, e)
    }

    /// Exponents beyond ±22 (only reachable with the 32-bit FLOAT; not the hot path):
    /// the stdlib's decimal parser rounds correctly where repeated multiplication would not.
    @usableFromInline
    static func scaleSlow(_ m: Double, _ e: Int) -> Double {
        Double("\(Int64(m))e\(e)") ?? .nan
    }

    /// The exact decimal text of `mantissa × 10^exponent`: "36.4", "-0.05", "1200".
    public static func decimalString(_ mantissa: Int32, _ exponent: Int8) -> String {
        // Written in place (one string, no pieces joined): every decoded measurement has one.
        let magnitude = mantissa.magnitude
        var d = 1
        var x = magnitude
        while x >= 10 { x /= 10; d += 1 }
        let e = Int(exponent)
        let sign = mantissa < 0 ? 1 : 0
        let length = e >= 0 ? sign + d + (mantissa != 0 ? e : 0) : sign + max(d, 1 - e) + 1
        return String(unsafeUninitializedCapacity: length) { buf in
            if sign == 1 { buf[0] = UInt8(ascii: "-") }
            var v = magnitude
            if e >= 0 {
                var k = sign + d
                while k > sign { k -= 1; buf[k] = UInt8(ascii: "0") + UInt8(v % 10); v /= 10 }
                for z in sign + d ..< length { buf[z] = UInt8(ascii: "0") }
            } else {
                // From the end: the fraction's -e digits, the point, then the integer part
                // (at least one digit, zeros where the mantissa has none left).
                let point = length - 1 + e
                var k = length
                while k > sign {
                    k -= 1
                    if k == point { buf[k] = UInt8(ascii: "."); continue }
                    buf[k] = UInt8(ascii: "0") + UInt8(v % 10)
                    v /= 10
                }
            }
            return length
        }
    }

    static func description(_ kind: IEEE11073Kind) -> String {
        switch kind {
        case .finite(let m, let e): decimalString(m, e)
        case .nan: "NaN"
        case .nres: "NRes"
        case .positiveInfinity: "+INF"
        case .negativeInfinity: "-INF"
        case .reserved: "reserved"
        }
    }

    @inlinable
    static func doubleValue(_ kind: IEEE11073Kind) -> Double {
        switch kind {
        case .finite(let m, let e): scale(m, e)
        case .positiveInfinity: .infinity
        case .negativeInfinity: -.infinity
        case .nan, .nres, .reserved: .nan
        }
    }

    static func fieldValue(_ kind: IEEE11073Kind) -> FieldValue {
        switch kind {
        case .finite(let m, let e): .double(scale(m, e))
        default: .text(description(kind))
        }
    }
}

/// IEEE 11073-20601 16-bit SFLOAT: a 4-bit signed exponent (high nibble) and a 12-bit
/// signed mantissa, little-endian on the wire (GATT Specification Supplement §2.2.2).
///
/// Bytes `6C F1` are raw 0xF16C: mantissa 0x16C = 364, exponent 0xF = −1, value 36.4.
public struct SFloat: RawRepresentable, Hashable, Sendable, CustomStringConvertible, WireEncodable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Not a number (0x07FF).
    public static let nan = SFloat(rawValue: 0x07FF)
    /// Not at this resolution (NRes, 0x0800).
    public static let nres = SFloat(rawValue: 0x0800)
    /// +Infinity (0x07FE).
    public static let positiveInfinity = SFloat(rawValue: 0x07FE)
    /// -Infinity (0x0802).
    public static let negativeInfinity = SFloat(rawValue: 0x0802)
    /// Reserved for future use (0x0801).
    public static let reserved = SFloat(rawValue: 0x0801)

    /// The 12-bit mantissa's range.
    public static let mantissaRange: ClosedRange<Int> = -2048 ... 2047
    /// The 4-bit exponent's range.
    public static let exponentRange: ClosedRange<Int> = -8 ... 7

    /// The 12-bit mantissa, sign-extended.
    @inlinable public var mantissa: Int16 { Int16(bitPattern: rawValue &<< 4) &>> 4 }
    /// The 4-bit exponent, sign-extended.
    @inlinable public var exponent: Int8 { Int8(truncatingIfNeeded: Int16(bitPattern: rawValue) &>> 12) }

    /// Finite value or the reserved special it encodes (specials have exponent 0).
    @inlinable public var kind: IEEE11073Kind {
        switch rawValue {
        case 0x07FF: .nan
        case 0x0800: .nres
        case 0x07FE: .positiveInfinity
        case 0x0802: .negativeInfinity
        case 0x0801: .reserved
        default: .finite(mantissa: Int32(mantissa), exponent: exponent)
        }
    }

    /// Not one of the special values.
    @inlinable public var isFinite: Bool {
        rawValue < 0x07FE || rawValue > 0x0802
    }

    /// The finite value, or nil for NaN, NRes, ±INF and reserved.
    @inlinable public var value: Double? {
        guard isFinite else { return nil }
        return IEEE11073.scale(Int32(mantissa), exponent)
    }

    /// The value as a Double: ±infinity for ±INF, `.nan` for NaN, NRes and reserved.
    @inlinable public var doubleValue: Double {
        guard isFinite else { return IEEE11073.doubleValue(kind) }
        return IEEE11073.scale(Int32(mantissa), exponent)
    }

    /// Encodes `mantissa × 10^exponent`. Throws `.valueOutOfRange` when the mantissa does
    /// not fit 12 bits, the exponent does not fit 4 bits, or (exponent 0) the mantissa
    /// would collide with a reserved special value.
    @inlinable
    public init(mantissa: Int, exponent: Int) throws(WireError) {
        guard SFloat.mantissaRange.contains(mantissa), SFloat.exponentRange.contains(exponent) else {
            throw WireError(.valueOutOfRange, at: 0, "SFLOAT mantissa or exponent out of range")
        }
        let raw = UInt16(truncatingIfNeeded: exponent) &<< 12 | UInt16(truncatingIfNeeded: mantissa) & 0x0FFF
        self.init(rawValue: raw)
        guard isFinite else {
            throw WireError(.valueOutOfRange, at: 0, "SFLOAT mantissa is a reserved special value")
        }
    }

    /// Reads an SFLOAT (two bytes, little endian).
    @inlinable
    public static func read(_ r: inout ByteReader) throws(WireError) -> SFloat {
        SFloat(rawValue: try r.u16("SFLOAT"))
    }

    /// Parses exactly two bytes.
    @inlinable
    public init(wire bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        self = try SFloat.read(&r)
        try r.expectEnd()
    }

    /// Appends the encoded value.
    @inlinable
    public func write(_ w: inout ByteWriter) throws(WireError) { try w.u16(rawValue) }

    public var encodedLength: Int { 2 }
    public func encode(into writer: inout ByteWriter) throws(WireError) { try write(&writer) }

    public var description: String { IEEE11073.description(kind) }
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue { IEEE11073.fieldValue(kind) }
}

/// IEEE 11073-20601 32-bit FLOAT: an 8-bit signed exponent (high byte) and a 24-bit
/// signed mantissa, little-endian on the wire (GATT Specification Supplement §2.2.1).
///
/// Bytes `72 01 00 FF` are raw 0xFF000172: mantissa 370, exponent −1, value 37.0.
public struct MedFloat32: RawRepresentable, Hashable, Sendable, CustomStringConvertible, WireEncodable {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Not a number (0x007FFFFF).
    public static let nan = MedFloat32(rawValue: 0x007F_FFFF)
    /// Not at this resolution (NRes, 0x00800000).
    public static let nres = MedFloat32(rawValue: 0x0080_0000)
    /// +Infinity (0x007FFFFE).
    public static let positiveInfinity = MedFloat32(rawValue: 0x007F_FFFE)
    /// -Infinity (0x00800002).
    public static let negativeInfinity = MedFloat32(rawValue: 0x0080_0002)
    /// Reserved for future use (0x00800001).
    public static let reserved = MedFloat32(rawValue: 0x0080_0001)

    /// The 24-bit mantissa's range.
    public static let mantissaRange: ClosedRange<Int> = -0x80_0000 ... 0x7F_FFFF
    /// The 8-bit exponent's range.
    public static let exponentRange: ClosedRange<Int> = -128 ... 127

    /// The 24-bit mantissa, sign-extended.
    @inlinable public var mantissa: Int32 { Int32(bitPattern: rawValue &<< 8) &>> 8 }
    /// The 8-bit exponent.
    @inlinable public var exponent: Int8 { Int8(truncatingIfNeeded: rawValue &>> 24) }

    /// A number or which special value.
    @inlinable public var kind: IEEE11073Kind {
        switch rawValue {
        case 0x007F_FFFF: .nan
        case 0x0080_0000: .nres
        case 0x007F_FFFE: .positiveInfinity
        case 0x0080_0002: .negativeInfinity
        case 0x0080_0001: .reserved
        default: .finite(mantissa: mantissa, exponent: exponent)
        }
    }

    /// Not one of the special values.
    @inlinable public var isFinite: Bool {
        rawValue < 0x007F_FFFE || rawValue > 0x0080_0002
    }

    /// The finite value, or nil for NaN, NRes, ±INF and reserved.
    @inlinable public var value: Double? {
        guard isFinite else { return nil }
        return IEEE11073.scale(mantissa, exponent)
    }

    /// The value as a Double: ±infinity for ±INF, `.nan` for NaN, NRes and reserved.
    @inlinable public var doubleValue: Double {
        guard isFinite else { return IEEE11073.doubleValue(kind) }
        return IEEE11073.scale(mantissa, exponent)
    }

    /// Encodes `mantissa × 10^exponent`; throws `.valueOutOfRange` when either does not fit
    /// or (exponent 0) the mantissa would collide with a reserved special value.
    @inlinable
    public init(mantissa: Int, exponent: Int) throws(WireError) {
        guard MedFloat32.mantissaRange.contains(mantissa), MedFloat32.exponentRange.contains(exponent) else {
            throw WireError(.valueOutOfRange, at: 0, "FLOAT mantissa or exponent out of range")
        }
        let raw = UInt32(truncatingIfNeeded: exponent) &<< 24 | UInt32(truncatingIfNeeded: mantissa) & 0x00FF_FFFF
        self.init(rawValue: raw)
        guard isFinite else {
            throw WireError(.valueOutOfRange, at: 0, "FLOAT mantissa is a reserved special value")
        }
    }

    /// Reads a FLOAT (four bytes, little endian).
    @inlinable
    public static func read(_ r: inout ByteReader) throws(WireError) -> MedFloat32 {
        MedFloat32(rawValue: try r.u32("FLOAT"))
    }

    /// Parses exactly four bytes.
    @inlinable
    public init(wire bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        self = try MedFloat32.read(&r)
        try r.expectEnd()
    }

    /// Appends the encoded value.
    @inlinable
    public func write(_ w: inout ByteWriter) throws(WireError) { try w.u32(rawValue) }

    public var encodedLength: Int { 4 }
    public func encode(into writer: inout ByteWriter) throws(WireError) { try write(&writer) }

    public var description: String { IEEE11073.description(kind) }
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue { IEEE11073.fieldValue(kind) }
}
