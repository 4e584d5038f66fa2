// Health Thermometer characteristics (GSS §3.214 Temperature Measurement, §3.128 Intermediate
// Temperature, §3.216 Temperature Type, §3.147 Measurement Interval; Core Vol 3 Part G §3.3.3.5
// Valid Range descriptor).
import BluetoothWire

/// Temperature Measurement (0x2A1C) and Intermediate Temperature (0x2A1E): Flags (u8), a FLOAT
/// temperature, then a Date Time time stamp (flag bit 1) and a Temperature Type (flag bit 2).
/// Flag bit 0 selects °F instead of °C. Bits 3...7 are reserved and kept.
///
/// Holds only scalars: safe to keep after the input buffer is gone. Trailing bytes after the
/// fields the flags announce are an error (`.trailingBytes`).
public struct TemperatureMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field: which optional fields follow, and the unit.
    public struct Flags: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Temperatures in °F (else °C) (0x01).
        public static let fahrenheit = Flags(rawValue: 0x01)
        /// Timestamp present (0x02).
        public static let timestampPresent = Flags(rawValue: 0x02)
        /// Temperature type present (0x04).
        public static let temperatureTypePresent = Flags(rawValue: 0x04)
    }

    /// The flags as received (encoding recomputes bits 1 and 2 from the optional fields).
    public var flags: Flags
    /// The temperature, possibly NaN/NRes/±INF; in `unit`.
    public var temperature: MedFloat32
    /// When it was measured (when the flags say so).
    public var timestamp: DateTime?
    /// Where the temperature was taken (when the flags say so).
    public var temperatureType: TemperatureType?

    /// °C, or °F when flag bit 0 is set.
    @inlinable public var unit: TemperatureUnit { flags.rawValue & 0x01 != 0 ? .fahrenheit : .celsius }

    /// A measurement; the flags follow from what is given.
    public init(temperature: MedFloat32, unit: TemperatureUnit = .celsius, timestamp: DateTime? = nil,
                temperatureType: TemperatureType? = nil) {
        self.flags = Flags(rawValue: unit == .fahrenheit ? 0x01 : 0x00)
        self.temperature = temperature
        self.timestamp = timestamp
        self.temperatureType = temperatureType
        self.flags = Flags(rawValue: encodedFlags)
    }

    /// Parses a whole Temperature Measurement / Intermediate Temperature value.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("Temperature Measurement flags")
        temperature = MedFloat32(rawValue: try r.u32("Temperature Measurement value (FLOAT)"))
        if f & 0x02 != 0 { timestamp = try DateTime.read(&r) } else { timestamp = nil }
        if f & 0x04 != 0 {
            temperatureType = TemperatureType(rawValue: try r.u8("Temperature Type"))
        } else {
            temperatureType = nil
        }
        try r.expectEnd("bytes after the fields the Temperature Measurement flags announce")
        flags = Flags(rawValue: f)
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags.rawValue & ~0x06
        if timestamp != nil { f |= 0x02 }
        if temperatureType != nil { f |= 0x04 }
        return f
    }

    public var encodedLength: Int { 5 + (timestamp == nil ? 0 : 7) + (temperatureType == nil ? 0 : 1) }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(encodedFlags)
        try w.u32(temperature.rawValue)
        try timestamp?.write(&w)
        if let t = temperatureType { try w.u8(t.rawValue) }
    }

    func fields(title: String) -> [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(flags.rawValue))),
            Field("temperature", temperature.fieldValue),
            Field("unit", .text(unit.symbol)),
        ]
        if let t = timestamp { f.append(Field("timestamp", .text(t.description))) }
        if let t = temperatureType { f.append(Field("temperature_type", t.fieldValue)) }
        if flags.rawValue & 0xF8 != 0 { f.append(Field("reserved_flags", .uint(UInt64(flags.rawValue & 0xF8)))) }
        return f
    }

    /// "36.4 °C, mouth, 2026-11-29 17:33:05".
    public var summary: String {
        var parts = [temperature.text(unit.symbol)]
        if let t = temperatureType { parts.append(t.name) }
        if let t = timestamp { parts.append(t.description) }
        return parts.joined(separator: ", ")
    }
}

/// Temperature Type (0x2A1D, also the optional field of Temperature Measurement): where the
/// temperature was taken. Open set: values 0 and 10...255 are reserved and read as "reserved".
public struct TemperatureType: RawRepresentable, Hashable, Sendable, WireEncodable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Armpit (1).
    public static let armpit = TemperatureType(rawValue: 1)
    /// Body (2).
    public static let body = TemperatureType(rawValue: 2)
    /// Ear (3).
    public static let ear = TemperatureType(rawValue: 3)
    /// Finger (4).
    public static let finger = TemperatureType(rawValue: 4)
    /// Gastrointestinal tract (5).
    public static let gastrointestinalTract = TemperatureType(rawValue: 5)
    /// Mouth (6).
    public static let mouth = TemperatureType(rawValue: 6)
    /// Rectum (7).
    public static let rectum = TemperatureType(rawValue: 7)
    /// Toe (8).
    public static let toe = TemperatureType(rawValue: 8)
    /// Tympanum (9).
    public static let tympanum = TemperatureType(rawValue: 9)

    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "armpit"
        case 2: "body"
        case 3: "ear"
        case 4: "finger"
        case 5: "GI tract"
        case 6: "mouth"
        case 7: "rectum"
        case 8: "toe"
        case 9: "tympanum"
        default: "reserved"
        }
    }
    public var description: String { name }
    var fieldValue: FieldValue { .named(UInt64(rawValue), name) }

    /// Parses the Temperature Type characteristic: exactly one byte.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u8("Temperature Type")
        try r.expectEnd()
    }

    public var encodedLength: Int { 1 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u8(rawValue) }
}

/// Measurement Interval (0x2A21): seconds between periodic measurements (u16); 0 means no
/// periodic measurement.
public struct MeasurementInterval: RawRepresentable, Hashable, Sendable, WireEncodable {
    /// Seconds.
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// An interval of `seconds` (0: no periodic measurement).
    @inlinable public init(seconds: UInt16) { rawValue = seconds }
    /// Seconds between measurements.
    @inlinable public var seconds: UInt16 { rawValue }
    /// Measurements are sent periodically (not 0).
    @inlinable public var isPeriodic: Bool { rawValue != 0 }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u16("Measurement Interval")
        try r.expectEnd()
    }

    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u16(rawValue) }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String { rawValue == 0 ? "no periodic measurement" : "\(rawValue) s" }
}

/// Valid Range descriptor (0x2906) of a u16 characteristic such as Measurement Interval: lower
/// and upper inclusive bounds (two u16). A range whose lower bound exceeds the upper is kept
/// and reported (`isEmpty`), not rejected.
public struct ValidRange: Hashable, Sendable, WireEncodable {
    /// The smallest value allowed.
    public var lower: UInt16
    /// The largest value allowed.
    public var upper: UInt16
    /// A range as given.
    @inlinable public init(lower: UInt16, upper: UInt16) {
        self.lower = lower
        self.upper = upper
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        lower = try r.u16("Valid Range lower bound")
        upper = try r.u16("Valid Range upper bound")
        try r.expectEnd()
    }

    /// The range is empty (lower above upper: a device error, reported).
    @inlinable public var isEmpty: Bool { lower > upper }
    /// Whether `v` is within the range.
    @inlinable public func contains(_ v: UInt16) -> Bool { lower <= v && v <= upper }

    public var encodedLength: Int { 4 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u16(lower)
        try w.u16(upper)
    }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String { "\(lower)...\(upper)" + (isEmpty ? " (empty: lower > upper)" : "") }
}
