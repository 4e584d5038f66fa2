// BluetoothProfiles: characteristic value codecs from the GATT Specification Supplement
// (GSS), above GATT. Pure and allocation-free like BluetoothWire: decoders read views,
// encoders write into a ByteWriter.
//
// Conventions shared by every decoder here:
// - `init(parsing:)` reads a whole characteristic value and throws `WireError` with the
//   offset and reason of the first problem: `.truncated` when a field the flags announce is
//   missing, `.trailingBytes` when bytes remain after the fields the flags announce (GSS
//   values have no extension point: a future field is announced by a flag bit first, and an
//   unknown flag bit is kept in `flags` and reported, never rejected), `.invalidValue` where
//   the spec forbids a value outright (Battery Level above 100, an impossible date).
// - Reserved code values (types, locations, IEEE 11073 NaN/NRes/±INF) are kept and reported by
//   name, never rejected.
// - Each value type is also `WireEncodable` (the peripheral role sends it). Encoding recomputes
//   the presence flags from the optional fields and keeps every other flag bit as stored,
//   so a parsed value re-encodes to exactly the bytes it came from.
import BluetoothWire

// MARK: - Display helpers (not the hot path)

@usableFromInline
enum Display {
    /// Names of the set bits of `raw`; unnamed set bits print as "reserved bit N".
    static func bitNames(_ raw: UInt64, width: Int, _ names: [Int: String]) -> [String] {
        var out: [String] = []
        for bit in 0 ..< width where raw & (1 << UInt64(bit)) != 0 {
            out.append(names[bit] ?? "reserved bit \(bit)")
        }
        return out
    }

    static func bitField(_ raw: UInt64, width: Int, _ names: [Int: String]) -> FieldValue {
        .object([
            Field("raw", .uint(raw)),
            Field("set", .list(bitNames(raw, width: width, names).map { .text($0) })),
        ])
    }

    /// "12.5" for a finite Double, without a trailing ".0" on integers.
    static func number(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    /// A fixed-point value `raw × scale` printed with `decimals` digits: exact, no binary noise.
    static func fixed(_ raw: Int64, decimals: Int) -> String {
        IEEE11073.decimalString(Int32(clamping: raw), Int8(-decimals))
    }

    static func fixedU(_ raw: UInt64, decimals: Int) -> String {
        if raw <= UInt64(Int32.max) { return fixed(Int64(raw), decimals: decimals) }
        // Only u32 values beyond Int32 reach here: split off the fraction by hand.
        var div: UInt64 = 1
        for _ in 0 ..< decimals { div *= 10 }
        let whole = raw / div, frac = raw % div
        guard decimals > 0 else { return String(whole) }
        let f = String(frac)
        return "\(whole)." + String(repeating: "0", count: decimals - f.count) + f
    }

    /// "72.500" → "72.5", "72.000" → "72".
    static func trimmed(_ s: String) -> String {
        guard s.contains(".") else { return s }
        var t = Substring(s)
        while t.last == "0" { t = t.dropLast() }
        if t.last == "." { t = t.dropLast() }
        return String(t)
    }

    static func hex(_ v: UInt64, _ width: Int) -> String { "0x" + Hex.pad(v, width) }
}

// MARK: - UTF-8 string values

/// A UTF-8 string characteristic value: Device Name 0x2A00 and the Device Information
/// strings 0x2A24...0x2A29 (GSS §3.66, §3.150 ...). The whole value is the string.
///
/// A view: `bytes` is a slice of the caller's buffer and is valid only while it is alive.
/// Invalid UTF-8 is not rejected (devices send it); `isValidUTF8` reports it and `text`
/// shows replacement characters. Trailing NUL bytes (a common firmware habit) are kept in
/// `bytes` and left out of `text`.
public struct UTF8Value: WireEncodable {
    /// The bytes (a view of the caller's buffer).
    public var bytes: UnsafeRawBufferPointer

    /// A view of `bytes` (not copied: valid while they are).
    @inlinable public init(parsing bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Whether `bytes` is well-formed UTF-8 (checked without allocating).
    public var isValidUTF8: Bool {
        !transcode(bytes.makeIterator(), from: UTF8.self, to: UTF32.self, stoppingOnError: true) { _ in }
    }

    /// The text without trailing NULs (allocates: display only).
    public var text: String {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0 ..< end]), as: UTF8.self)
    }

    public var encodedLength: Int { bytes.count }
    public func encode(into writer: inout ByteWriter) throws(WireError) { try writer.bytes(bytes) }

    /// An owned string value for the peripheral role.
    public struct Owned: WireEncodable, Hashable, Sendable {
        /// The bytes sent.
        public var utf8: [UInt8]
        /// The UTF-8 of `text`.
        public init(_ text: String) { utf8 = Array(text.utf8) }
        /// Bytes as given (not checked for UTF-8).
        public init(bytes: [UInt8]) { utf8 = bytes }
        public var encodedLength: Int { utf8.count }
        public func encode(into writer: inout ByteWriter) throws(WireError) { try writer.bytes(utf8) }
    }

    func fields(_ name: String) -> [Field] {
        var f = [Field(name, .text(text))]
        if !isValidUTF8 { f.append(Field("invalid_utf8", .bytes(bytes))) }
        return f
    }
}

// MARK: - Shared enumerations

/// The unit flag of pressure measurements (Blood Pressure, Intermediate Cuff Pressure).
public enum PressureUnit: Hashable, Sendable {
    case mmHg, kPa
    /// "mmHg" or "kPa".
    public var symbol: String { self == .mmHg ? "mmHg" : "kPa" }
}

/// The unit flag of temperature measurements (Temperature Measurement, Intermediate Temperature).
public enum TemperatureUnit: Hashable, Sendable {
    case celsius, fahrenheit
    /// "°C" or "°F".
    public var symbol: String { self == .celsius ? "°C" : "°F" }
}

extension SFloat {
    /// The value with its unit for summaries: "120 mmHg", "NaN mmHg".
    func text(_ unit: String) -> String { "\(description) \(unit)" }
}

extension MedFloat32 {
    func text(_ unit: String) -> String { "\(description) \(unit)" }
}
