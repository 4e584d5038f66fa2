// Blood Pressure characteristics (GSS §3.31 Blood Pressure Measurement, §3.127 Intermediate
// Cuff Pressure, §3.30 Blood Pressure Feature).
import BluetoothWire

/// Blood Pressure Measurement (0x2A35): Flags (u8), systolic, diastolic and mean arterial
/// pressure (SFLOAT each, mmHg or kPa by flag bit 0), then by flags: Time Stamp (bit 1, Date
/// Time), Pulse Rate (bit 2, SFLOAT beats/min), User ID (bit 3, u8, 0xFF = unknown user),
/// Measurement Status (bit 4, u16). Bits 5...7 are reserved and kept.
///
/// Holds only scalars. An error value from the device reads as SFLOAT NaN (`kind == .nan`),
/// never as a number. Trailing bytes are an error.
public struct BloodPressureMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field: which optional fields follow, and the unit.
    public struct Flags: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Pressures in kPa (else mmHg) (0x01).
        public static let kPa = Flags(rawValue: 0x01)
        /// Timestamp present (0x02).
        public static let timestampPresent = Flags(rawValue: 0x02)
        /// Pulse rate present (0x04).
        public static let pulseRatePresent = Flags(rawValue: 0x04)
        /// User ID present (0x08).
        public static let userIDPresent = Flags(rawValue: 0x08)
        /// Measurement status present (0x10).
        public static let measurementStatusPresent = Flags(rawValue: 0x10)
    }

    /// The Flags field as received.
    public var flags: Flags
    /// Systolic pressure (in ``unit``).
    public var systolic: SFloat
    /// Diastolic pressure (in ``unit``).
    public var diastolic: SFloat
    /// Mean arterial pressure (in ``unit``).
    public var meanArterialPressure: SFloat
    /// When it was measured (when the flags say so).
    public var timestamp: DateTime?
    /// Beats per minute.
    public var pulseRate: SFloat?
    /// 0...0xFE a user index, 0xFF unknown user.
    public var userID: UInt8?
    /// Measurement Status bits (when the flags say so).
    public var measurementStatus: BloodPressureMeasurementStatus?

    /// mmHg, or kPa when flag bit 0 is set.
    @inlinable public var unit: PressureUnit { flags.rawValue & 0x01 != 0 ? .kPa : .mmHg }

    /// A measurement; the flags follow from what is given.
    public init(systolic: SFloat, diastolic: SFloat, meanArterialPressure: SFloat, unit: PressureUnit = .mmHg,
                timestamp: DateTime? = nil, pulseRate: SFloat? = nil, userID: UInt8? = nil,
                measurementStatus: BloodPressureMeasurementStatus? = nil) {
        self.flags = Flags(rawValue: unit == .kPa ? 0x01 : 0)
        self.systolic = systolic
        self.diastolic = diastolic
        self.meanArterialPressure = meanArterialPressure
        self.timestamp = timestamp
        self.pulseRate = pulseRate
        self.userID = userID
        self.measurementStatus = measurementStatus
        self.flags = Flags(rawValue: encodedFlags)
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("Blood Pressure flags")
        systolic = SFloat(rawValue: try r.u16("systolic (SFLOAT)"))
        diastolic = SFloat(rawValue: try r.u16("diastolic (SFLOAT)"))
        meanArterialPressure = SFloat(rawValue: try r.u16("mean arterial pressure (SFLOAT)"))
        if f & 0x02 != 0 { timestamp = try DateTime.read(&r) } else { timestamp = nil }
        if f & 0x04 != 0 { pulseRate = SFloat(rawValue: try r.u16("pulse rate (SFLOAT)")) } else { pulseRate = nil }
        if f & 0x08 != 0 { userID = try r.u8("user ID") } else { userID = nil }
        if f & 0x10 != 0 {
            measurementStatus = BloodPressureMeasurementStatus(rawValue: try r.u16("measurement status"))
        } else {
            measurementStatus = nil
        }
        try r.expectEnd("bytes after the fields the Blood Pressure flags announce")
        flags = Flags(rawValue: f)
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags.rawValue & ~0x1E
        if timestamp != nil { f |= 0x02 }
        if pulseRate != nil { f |= 0x04 }
        if userID != nil { f |= 0x08 }
        if measurementStatus != nil { f |= 0x10 }
        return f
    }

    public var encodedLength: Int {
        7 + (timestamp == nil ? 0 : 7) + (pulseRate == nil ? 0 : 2) + (userID == nil ? 0 : 1)
            + (measurementStatus == nil ? 0 : 2)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(encodedFlags)
        try w.u16(systolic.rawValue)
        try w.u16(diastolic.rawValue)
        try w.u16(meanArterialPressure.rawValue)
        try timestamp?.write(&w)
        if let p = pulseRate { try w.u16(p.rawValue) }
        if let u = userID { try w.u8(u) }
        if let s = measurementStatus { try w.u16(s.rawValue) }
    }

    /// Fields after the three pressures (shared with Intermediate Cuff Pressure).
    func optionalFields() -> [Field] {
        var f: [Field] = []
        if let t = timestamp { f.append(Field("timestamp", .text(t.description))) }
        if let p = pulseRate {
            f.append(Field("pulse_rate", p.fieldValue))
            f.append(Field("pulse_rate_unit", .text("beats/min")))
        }
        if let u = userID { f.append(Field("user_id", u == 0xFF ? .named(0xFF, "unknown user") : .uint(UInt64(u)))) }
        if let s = measurementStatus { f.append(Field("measurement_status", s.fieldValue)) }
        if flags.rawValue & 0xE0 != 0 { f.append(Field("reserved_flags", .uint(UInt64(flags.rawValue & 0xE0)))) }
        return f
    }

    var fields: [Field] {
        [
            Field("flags", .uint(UInt64(flags.rawValue))),
            Field("systolic", systolic.fieldValue),
            Field("diastolic", diastolic.fieldValue),
            Field("mean_arterial_pressure", meanArterialPressure.fieldValue),
            Field("unit", .text(unit.symbol)),
        ] + optionalFields()
    }

    func optionalSummary() -> [String] {
        var parts: [String] = []
        if let p = pulseRate { parts.append("pulse \(p.description) bpm") }
        if let u = userID { parts.append(u == 0xFF ? "unknown user" : "user \(u)") }
        if let s = measurementStatus, s.rawValue != 0 { parts.append(s.summary) }
        if let t = timestamp { parts.append(t.description) }
        return parts
    }

    /// "120/80 mmHg, MAP 93, pulse 72 bpm, 2026-11-29 17:33:05"; an error value prints "NaN".
    public var summary: String {
        (["\(systolic.description)/\(diastolic.description) \(unit.symbol)", "MAP \(meanArterialPressure.description)"]
            + optionalSummary()).joined(separator: ", ")
    }
}

/// Intermediate Cuff Pressure (0x2A36): the Blood Pressure Measurement layout where the first
/// SFLOAT is the current cuff pressure and the diastolic and MAP fields are unused (NaN). A
/// non-NaN unused field is kept and reported (`unusedFieldsAreNaN`), not rejected.
public struct IntermediateCuffPressure: WireEncodable, Hashable, Sendable {
    /// The value in the Blood Pressure Measurement layout.
    public var value: BloodPressureMeasurement

    /// The cuff pressure (carried in the systolic field).
    @inlinable public var currentCuffPressure: SFloat { value.systolic }
    /// mmHg or kPa.
    @inlinable public var unit: PressureUnit { value.unit }
    /// Whether the unused diastolic and MAP fields are NaN, as the specification requires.
    @inlinable public var unusedFieldsAreNaN: Bool { value.diastolic == .nan && value.meanArterialPressure == .nan }

    /// A cuff pressure; the unused fields are NaN.
    public init(currentCuffPressure: SFloat, unit: PressureUnit = .mmHg, timestamp: DateTime? = nil,
                pulseRate: SFloat? = nil, userID: UInt8? = nil, measurementStatus: BloodPressureMeasurementStatus? = nil) {
        value = BloodPressureMeasurement(systolic: currentCuffPressure, diastolic: .nan, meanArterialPressure: .nan,
                                         unit: unit, timestamp: timestamp, pulseRate: pulseRate, userID: userID,
                                         measurementStatus: measurementStatus)
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        value = try BloodPressureMeasurement(parsing: bytes)
    }

    public var encodedLength: Int { value.encodedLength }
    public func encode(into w: inout ByteWriter) throws(WireError) { try value.encode(into: &w) }

    var fields: [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(value.flags.rawValue))),
            Field("current_cuff_pressure", currentCuffPressure.fieldValue),
            Field("unit", .text(unit.symbol)),
        ]
        if !unusedFieldsAreNaN {
            f.append(Field("unused_fields_not_nan", .list([value.diastolic.fieldValue, value.meanArterialPressure.fieldValue])))
        }
        return f + value.optionalFields()
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        (["cuff \(currentCuffPressure.text(unit.symbol))"] + value.optionalSummary()).joined(separator: ", ")
    }
}

/// Blood Pressure Measurement Status (u16 bit field in 0x2A35/0x2A36).
public struct BloodPressureMeasurementStatus: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Body movement detected (bit 0).
    public static let bodyMovementDetected = Self(rawValue: 1 << 0)
    /// Cuff too loose (bit 1).
    public static let cuffTooLoose = Self(rawValue: 1 << 1)
    /// Irregular pulse detected (bit 2).
    public static let irregularPulseDetected = Self(rawValue: 1 << 2)
    /// Improper measurement position (bit 5).
    public static let improperMeasurementPosition = Self(rawValue: 1 << 5)

    /// Bits 3-4: 0 within range, 1 exceeds upper limit, 2 below lower limit, 3 reserved.
    @inlinable public var pulseRateRange: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 3) & 0x3 }

    /// The Pulse Rate Range field (bits 3-4): 0 within range, 1 above, 2 below.
    public static func pulseRateRange(_ v: UInt8) -> Self { Self(rawValue: UInt16(v & 3) << 3) }

    /// The pulse rate range in words ("within range", "exceeds upper limit"...).
    public var pulseRateRangeName: String {
        switch pulseRateRange {
        case 0: "pulse rate within range"
        case 1: "pulse rate exceeds upper limit"
        case 2: "pulse rate below lower limit"
        default: "pulse rate range reserved value"
        }
    }

    static let names: [Int: String] = [0: "body movement detected", 1: "cuff too loose",
                                       2: "irregular pulse detected", 5: "improper measurement position"]

    var flagNames: [String] {
        Display.bitNames(UInt64(rawValue & ~0x18), width: 16, Self.names)
    }

    var fieldValue: FieldValue {
        .object([
            Field("raw", .uint(UInt64(rawValue))),
            Field("body_movement", .bool(contains(.bodyMovementDetected))),
            Field("cuff_too_loose", .bool(contains(.cuffTooLoose))),
            Field("irregular_pulse", .bool(contains(.irregularPulseDetected))),
            Field("pulse_rate_range", .named(UInt64(pulseRateRange), pulseRateRangeName)),
            Field("improper_measurement_position", .bool(contains(.improperMeasurementPosition))),
        ] + (rawValue & 0xFFC0 != 0 ? [Field("reserved_bits", .uint(UInt64(rawValue & 0xFFC0)))] : []))
    }

    var summary: String {
        var names = flagNames
        if pulseRateRange != 0 { names.append(pulseRateRangeName) }
        return names.joined(separator: ", ")
    }
}

/// Blood Pressure Feature (0x2A49): u16 bit field of supported features.
public struct BloodPressureFeature: OptionSet, Hashable, Sendable, WireEncodable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Body movement detection (bit 0).
    public static let bodyMovementDetection = Self(rawValue: 1 << 0)
    /// Cuff fit detection (bit 1).
    public static let cuffFitDetection = Self(rawValue: 1 << 1)
    /// Irregular pulse detection (bit 2).
    public static let irregularPulseDetection = Self(rawValue: 1 << 2)
    /// Pulse rate range detection (bit 3).
    public static let pulseRateRangeDetection = Self(rawValue: 1 << 3)
    /// Measurement position detection (bit 4).
    public static let measurementPositionDetection = Self(rawValue: 1 << 4)
    /// Multiple bond (bit 5).
    public static let multipleBond = Self(rawValue: 1 << 5)
    /// E2E-CRC (bit 6).
    public static let e2eCRC = Self(rawValue: 1 << 6)
    /// User data service (bit 7).
    public static let userDataService = Self(rawValue: 1 << 7)
    /// User facing time (bit 8).
    public static let userFacingTime = Self(rawValue: 1 << 8)

    static let names: [Int: String] = [
        0: "body movement detection", 1: "cuff fit detection", 2: "irregular pulse detection",
        3: "pulse rate range detection", 4: "measurement position detection", 5: "multiple bond",
        6: "E2E-CRC", 7: "user data service", 8: "user facing time",
    ]

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u16("Blood Pressure Feature")
        try r.expectEnd()
    }

    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u16(rawValue) }

    var fieldValue: FieldValue { Display.bitField(UInt64(rawValue), width: 16, Self.names) }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        let n = Display.bitNames(UInt64(rawValue), width: 16, Self.names)
        return n.isEmpty ? "no optional features" : n.joined(separator: ", ")
    }
}
