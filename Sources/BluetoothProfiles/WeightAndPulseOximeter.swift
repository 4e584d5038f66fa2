// Weight Measurement (GSS §3.246) and Pulse Oximeter (GSS §3.175 PLX Spot-Check Measurement,
// §3.174 PLX Continuous Measurement).
import BluetoothWire

/// Weight Measurement (0x2A9D): Flags (u8), Weight (u16: 0.005 kg, or 0.01 lb with flag bit 0;
/// 0xFFFF = measurement unsuccessful), then by flags: Time Stamp (bit 1), User ID (bit 2, u8,
/// 0xFF unknown), BMI (u16, 0.1 kg/m²) + Height (u16: 0.001 m, or 0.1 in) (bit 3). Bits 4...7
/// reserved and kept. Holds only scalars; trailing bytes are an error.
public struct WeightMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field as received.
    public var flags: UInt8
    /// Raw weight in resolution units (see `weight`).
    public var weightRaw: UInt16
    /// When it was measured (when the flags say so).
    public var timestamp: DateTime?
    /// The user (0xFF unknown), when the flags say so.
    public var userID: UInt8?
    /// Raw BMI (0.1 kg/m²) and height (0.001 m or 0.1 in), present together.
    public var bmiRaw: UInt16?
    /// Raw height (see ``height``), with the BMI.
    public var heightRaw: UInt16?

    /// Pounds and inches (flag bit 0), else kilograms and metres.
    @inlinable public var isImperial: Bool { flags & 0x01 != 0 }
    /// Weight in kg or lb; nil when the device reports "measurement unsuccessful" (0xFFFF).
    @inlinable public var weight: Double? {
        weightRaw == 0xFFFF ? nil : Double(weightRaw) * (isImperial ? 0.01 : 0.005)
    }
    /// "lb" or "kg".
    public var weightUnit: String { isImperial ? "lb" : "kg" }
    /// "in" or "m".
    public var heightUnit: String { isImperial ? "in" : "m" }
    /// kg/m², when present.
    @inlinable public var bmi: Double? { bmiRaw.map { Double($0) / 10 } }
    /// Metres or inches, when present.
    @inlinable public var height: Double? { heightRaw.map { Double($0) * (isImperial ? 0.1 : 0.001) } }

    /// A measurement; the flags follow from what is given.
    public init(weightRaw: UInt16, imperial: Bool = false, timestamp: DateTime? = nil, userID: UInt8? = nil,
                bmiRaw: UInt16? = nil, heightRaw: UInt16? = nil) {
        self.flags = imperial ? 1 : 0
        self.weightRaw = weightRaw
        self.timestamp = timestamp
        self.userID = userID
        self.bmiRaw = bmiRaw
        self.heightRaw = heightRaw
        self.flags = encodedFlags
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("Weight Measurement flags")
        weightRaw = try r.u16("weight")
        if f & 0x02 != 0 { timestamp = try DateTime.read(&r) } else { timestamp = nil }
        userID = f & 0x04 != 0 ? try r.u8("user ID") : nil
        if f & 0x08 != 0 {
            bmiRaw = try r.u16("BMI")
            heightRaw = try r.u16("height")
        } else {
            bmiRaw = nil
            heightRaw = nil
        }
        try r.expectEnd("bytes after the fields the Weight Measurement flags announce")
        flags = f
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags & ~0x0E
        if timestamp != nil { f |= 0x02 }
        if userID != nil { f |= 0x04 }
        if bmiRaw != nil || heightRaw != nil { f |= 0x08 }
        return f
    }

    public var encodedLength: Int {
        3 + (timestamp == nil ? 0 : 7) + (userID == nil ? 0 : 1) + (bmiRaw != nil || heightRaw != nil ? 4 : 0)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard (bmiRaw == nil) == (heightRaw == nil) else {
            throw WireError(.valueOutOfRange, at: w.count, "BMI and height go together")
        }
        try w.u8(encodedFlags)
        try w.u16(weightRaw)
        try timestamp?.write(&w)
        if let u = userID { try w.u8(u) }
        if let b = bmiRaw, let h = heightRaw {
            try w.u16(b)
            try w.u16(h)
        }
    }

    var weightText: String {
        weightRaw == 0xFFFF ? "measurement unsuccessful"
            : (isImperial ? Display.fixedU(UInt64(weightRaw), decimals: 2)
                : Display.trimmed(Display.fixedU(UInt64(weightRaw) * 5, decimals: 3)))
                + " " + weightUnit
    }
    var heightText: String? {
        heightRaw.map { (isImperial ? Display.fixedU(UInt64($0), decimals: 1) : Display.fixedU(UInt64($0), decimals: 3)) + " " + heightUnit }
    }

    var fields: [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(flags))),
            Field("weight", weight.map { .double($0) } ?? .named(0xFFFF, "measurement unsuccessful")),
            Field("weight_unit", .text(weightUnit)),
        ]
        if let t = timestamp { f.append(Field("timestamp", .text(t.description))) }
        if let u = userID { f.append(Field("user_id", u == 0xFF ? .named(0xFF, "unknown user") : .uint(UInt64(u)))) }
        if let b = bmi, let h = height {
            f.append(Field("bmi", .double(b)))
            f.append(Field("bmi_unit", .text("kg/m²")))
            f.append(Field("height", .double(h)))
            f.append(Field("height_unit", .text(heightUnit)))
        }
        return f
    }

    /// "72.5 kg, BMI 22.3, 1.803 m, user 1, 2026-11-29 17:33:05".
    public var summary: String {
        var parts = [weightText]
        if let b = bmiRaw { parts.append("BMI " + Display.fixedU(UInt64(b), decimals: 1)) }
        if let h = heightText { parts.append(h) }
        if let u = userID { parts.append(u == 0xFF ? "unknown user" : "user \(u)") }
        if let t = timestamp { parts.append(t.description) }
        return parts.joined(separator: ", ")
    }
}

// MARK: - Pulse oximeter

/// An SpO2 (%) and pulse rate (beats/min) pair of SFLOATs.
public struct SpO2PulseRate: Hashable, Sendable {
    /// Oxygen saturation, percent.
    public var spo2: SFloat
    /// Beats per minute.
    public var pulseRate: SFloat
    /// A reading as given.
    @inlinable public init(spo2: SFloat, pulseRate: SFloat) {
        self.spo2 = spo2
        self.pulseRate = pulseRate
    }
    @inlinable static func read(_ r: inout ByteReader) throws(WireError) -> SpO2PulseRate {
        let s = SFloat(rawValue: try r.u16("SpO2 (SFLOAT)"))
        return SpO2PulseRate(spo2: s, pulseRate: SFloat(rawValue: try r.u16("pulse rate (SFLOAT)")))
    }
    func write(_ w: inout ByteWriter) throws(WireError) {
        try w.u16(spo2.rawValue)
        try w.u16(pulseRate.rawValue)
    }
    var fieldValue: FieldValue {
        .object([Field("spo2", spo2.fieldValue), Field("spo2_unit", .text("%")),
                 Field("pulse_rate", pulseRate.fieldValue), Field("pulse_rate_unit", .text("beats/min"))])
    }
    var summary: String { "SpO2 \(spo2.description) %, pulse \(pulseRate.description) bpm" }
}

/// PLX Measurement Status (u16 bit field; bits 0...4 reserved).
public struct PLXMeasurementStatus: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Measurement ongoing (bit 5).
    public static let measurementOngoing = Self(rawValue: 1 << 5)
    /// Early estimated data (bit 6).
    public static let earlyEstimatedData = Self(rawValue: 1 << 6)
    /// Validated data (bit 7).
    public static let validatedData = Self(rawValue: 1 << 7)
    /// Fully qualified data (bit 8).
    public static let fullyQualifiedData = Self(rawValue: 1 << 8)
    /// Data from measurement storage (bit 9).
    public static let dataFromMeasurementStorage = Self(rawValue: 1 << 9)
    /// Data for demonstration (bit 10).
    public static let dataForDemonstration = Self(rawValue: 1 << 10)
    /// Data for testing (bit 11).
    public static let dataForTesting = Self(rawValue: 1 << 11)
    /// Calibration ongoing (bit 12).
    public static let calibrationOngoing = Self(rawValue: 1 << 12)
    /// Measurement unavailable (bit 13).
    public static let measurementUnavailable = Self(rawValue: 1 << 13)
    /// Questionable measurement detected (bit 14).
    public static let questionableMeasurementDetected = Self(rawValue: 1 << 14)
    /// Invalid measurement detected (bit 15).
    public static let invalidMeasurementDetected = Self(rawValue: 1 << 15)
    static let names: [Int: String] = [
        5: "measurement ongoing", 6: "early estimated data", 7: "validated data", 8: "fully qualified data",
        9: "data from measurement storage", 10: "data for demonstration", 11: "data for testing",
        12: "calibration ongoing", 13: "measurement unavailable", 14: "questionable measurement detected",
        15: "invalid measurement detected",
    ]
}

/// PLX Device and Sensor Status (24-bit field; bits 16...23 reserved).
public struct PLXDeviceSensorStatus: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Extended display update ongoing (bit 0).
    public static let extendedDisplayUpdateOngoing = Self(rawValue: 1 << 0)
    /// Equipment malfunction (bit 1).
    public static let equipmentMalfunction = Self(rawValue: 1 << 1)
    /// Signal processing irregularity (bit 2).
    public static let signalProcessingIrregularity = Self(rawValue: 1 << 2)
    /// Inadequate signal (bit 3).
    public static let inadequateSignal = Self(rawValue: 1 << 3)
    /// Poor signal (bit 4).
    public static let poorSignal = Self(rawValue: 1 << 4)
    /// Low perfusion (bit 5).
    public static let lowPerfusion = Self(rawValue: 1 << 5)
    /// Erratic signal (bit 6).
    public static let erraticSignal = Self(rawValue: 1 << 6)
    /// Nonpulsatile signal (bit 7).
    public static let nonpulsatileSignal = Self(rawValue: 1 << 7)
    /// Questionable pulse (bit 8).
    public static let questionablePulse = Self(rawValue: 1 << 8)
    /// Signal analysis ongoing (bit 9).
    public static let signalAnalysisOngoing = Self(rawValue: 1 << 9)
    /// Sensor interference (bit 10).
    public static let sensorInterference = Self(rawValue: 1 << 10)
    /// Sensor unconnected to user (bit 11).
    public static let sensorUnconnectedToUser = Self(rawValue: 1 << 11)
    /// Unknown sensor connected (bit 12).
    public static let unknownSensorConnected = Self(rawValue: 1 << 12)
    /// Sensor displaced (bit 13).
    public static let sensorDisplaced = Self(rawValue: 1 << 13)
    /// Sensor malfunctioning (bit 14).
    public static let sensorMalfunctioning = Self(rawValue: 1 << 14)
    /// Sensor disconnected (bit 15).
    public static let sensorDisconnected = Self(rawValue: 1 << 15)
    static let names: [Int: String] = [
        0: "extended display update ongoing", 1: "equipment malfunction detected",
        2: "signal processing irregularity detected", 3: "inadequate signal detected", 4: "poor signal detected",
        5: "low perfusion detected", 6: "erratic signal detected", 7: "nonpulsatile signal detected",
        8: "questionable pulse detected", 9: "signal analysis ongoing", 10: "sensor interference detected",
        11: "sensor unconnected to user", 12: "unknown sensor connected", 13: "sensor displaced",
        14: "sensor malfunctioning", 15: "sensor disconnected",
    ]
}

/// Fields and summary parts shared by the two PLX measurements.
private func plxOptionalFields(_ ms: PLXMeasurementStatus?, _ ds: PLXDeviceSensorStatus?, _ pai: SFloat?) -> [Field] {
    var f: [Field] = []
    if let m = ms { f.append(Field("measurement_status", Display.bitField(UInt64(m.rawValue), width: 16, PLXMeasurementStatus.names))) }
    if let d = ds { f.append(Field("device_and_sensor_status", Display.bitField(UInt64(d.rawValue), width: 24, PLXDeviceSensorStatus.names))) }
    if let p = pai {
        f.append(Field("pulse_amplitude_index", p.fieldValue))
        f.append(Field("pulse_amplitude_index_unit", .text("%")))
    }
    return f
}

private func plxOptionalSummary(_ ms: PLXMeasurementStatus?, _ ds: PLXDeviceSensorStatus?, _ pai: SFloat?) -> [String] {
    var parts: [String] = []
    if let p = pai { parts.append("PAI \(p.description) %") }
    if let m = ms { parts += Display.bitNames(UInt64(m.rawValue), width: 16, PLXMeasurementStatus.names) }
    if let d = ds { parts += Display.bitNames(UInt64(d.rawValue), width: 24, PLXDeviceSensorStatus.names) }
    return parts
}

/// PLX Spot-Check Measurement (0x2A5E): Flags (u8), SpO2PR-Spot-Check (two SFLOAT), then by
/// flags: Time Stamp (bit 0), Measurement Status (bit 1, u16), Device and Sensor Status
/// (bit 2, u24), Pulse Amplitude Index (bit 3, SFLOAT %). Bit 4 = device clock not set.
/// Bits 5...7 reserved and kept. Holds only scalars; trailing bytes are an error.
public struct PLXSpotCheckMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field as received.
    public var flags: UInt8
    /// SpO2 and pulse rate.
    public var reading: SpO2PulseRate
    /// When it was measured (when the flags say so).
    public var timestamp: DateTime?
    /// Measurement Status (when the flags say so).
    public var measurementStatus: PLXMeasurementStatus?
    /// Device and Sensor Status (when the flags say so).
    public var deviceAndSensorStatus: PLXDeviceSensorStatus?
    /// Pulse Amplitude Index, percent (when the flags say so).
    public var pulseAmplitudeIndex: SFloat?

    /// The device's clock is not set (flag bit 4): the timestamp is not meaningful.
    @inlinable public var deviceClockNotSet: Bool { flags & 0x10 != 0 }

    /// A measurement; the flags follow from what is given.
    public init(reading: SpO2PulseRate, timestamp: DateTime? = nil, measurementStatus: PLXMeasurementStatus? = nil,
                deviceAndSensorStatus: PLXDeviceSensorStatus? = nil, pulseAmplitudeIndex: SFloat? = nil,
                deviceClockNotSet: Bool = false) {
        self.flags = deviceClockNotSet ? 0x10 : 0
        self.reading = reading
        self.timestamp = timestamp
        self.measurementStatus = measurementStatus
        self.deviceAndSensorStatus = deviceAndSensorStatus
        self.pulseAmplitudeIndex = pulseAmplitudeIndex
        self.flags = encodedFlags
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("PLX Spot-Check flags")
        reading = try SpO2PulseRate.read(&r)
        if f & 0x01 != 0 { timestamp = try DateTime.read(&r) } else { timestamp = nil }
        measurementStatus = f & 0x02 != 0 ? PLXMeasurementStatus(rawValue: try r.u16("measurement status")) : nil
        deviceAndSensorStatus = f & 0x04 != 0 ? PLXDeviceSensorStatus(rawValue: try r.u24("device and sensor status")) : nil
        pulseAmplitudeIndex = f & 0x08 != 0 ? SFloat(rawValue: try r.u16("pulse amplitude index (SFLOAT)")) : nil
        try r.expectEnd("bytes after the fields the PLX Spot-Check flags announce")
        flags = f
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags & ~0x0F
        if timestamp != nil { f |= 0x01 }
        if measurementStatus != nil { f |= 0x02 }
        if deviceAndSensorStatus != nil { f |= 0x04 }
        if pulseAmplitudeIndex != nil { f |= 0x08 }
        return f
    }

    public var encodedLength: Int {
        5 + (timestamp == nil ? 0 : 7) + (measurementStatus == nil ? 0 : 2) + (deviceAndSensorStatus == nil ? 0 : 3)
            + (pulseAmplitudeIndex == nil ? 0 : 2)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(encodedFlags)
        try reading.write(&w)
        try timestamp?.write(&w)
        if let m = measurementStatus { try w.u16(m.rawValue) }
        if let d = deviceAndSensorStatus { try w.u24(d.rawValue) }
        if let p = pulseAmplitudeIndex { try w.u16(p.rawValue) }
    }

    var fields: [Field] {
        var f: [Field] = [Field("flags", .uint(UInt64(flags))), Field("spo2pr_spot_check", reading.fieldValue)]
        if let t = timestamp { f.append(Field("timestamp", .text(t.description))) }
        f += plxOptionalFields(measurementStatus, deviceAndSensorStatus, pulseAmplitudeIndex)
        f.append(Field("device_clock_not_set", .bool(deviceClockNotSet)))
        return f
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        var parts = [reading.summary]
        if let t = timestamp { parts.append(t.description + (deviceClockNotSet ? " (clock not set)" : "")) }
        return (parts + plxOptionalSummary(measurementStatus, deviceAndSensorStatus, pulseAmplitudeIndex)).joined(separator: ", ")
    }
}

/// PLX Continuous Measurement (0x2A5F): Flags (u8), SpO2PR-Normal (two SFLOAT), then by flags:
/// SpO2PR-Fast (bit 0), SpO2PR-Slow (bit 1), Measurement Status (bit 2, u16), Device and Sensor
/// Status (bit 3, u24), Pulse Amplitude Index (bit 4, SFLOAT %). Bits 5...7 reserved and kept.
public struct PLXContinuousMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field as received.
    public var flags: UInt8
    /// SpO2 and pulse rate, normal response.
    public var normal: SpO2PulseRate
    /// The fast response (when the flags say so).
    public var fast: SpO2PulseRate?
    /// The slow response (when the flags say so).
    public var slow: SpO2PulseRate?
    /// Measurement Status (when the flags say so).
    public var measurementStatus: PLXMeasurementStatus?
    /// Device and Sensor Status (when the flags say so).
    public var deviceAndSensorStatus: PLXDeviceSensorStatus?
    /// Pulse Amplitude Index, percent (when the flags say so).
    public var pulseAmplitudeIndex: SFloat?

    /// A measurement; the flags follow from what is given.
    public init(normal: SpO2PulseRate, fast: SpO2PulseRate? = nil, slow: SpO2PulseRate? = nil,
                measurementStatus: PLXMeasurementStatus? = nil, deviceAndSensorStatus: PLXDeviceSensorStatus? = nil,
                pulseAmplitudeIndex: SFloat? = nil) {
        self.flags = 0
        self.normal = normal
        self.fast = fast
        self.slow = slow
        self.measurementStatus = measurementStatus
        self.deviceAndSensorStatus = deviceAndSensorStatus
        self.pulseAmplitudeIndex = pulseAmplitudeIndex
        self.flags = encodedFlags
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("PLX Continuous flags")
        normal = try SpO2PulseRate.read(&r)
        fast = f & 0x01 != 0 ? try SpO2PulseRate.read(&r) : nil
        slow = f & 0x02 != 0 ? try SpO2PulseRate.read(&r) : nil
        measurementStatus = f & 0x04 != 0 ? PLXMeasurementStatus(rawValue: try r.u16("measurement status")) : nil
        deviceAndSensorStatus = f & 0x08 != 0 ? PLXDeviceSensorStatus(rawValue: try r.u24("device and sensor status")) : nil
        pulseAmplitudeIndex = f & 0x10 != 0 ? SFloat(rawValue: try r.u16("pulse amplitude index (SFLOAT)")) : nil
        try r.expectEnd("bytes after the fields the PLX Continuous flags announce")
        flags = f
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags & ~0x1F
        if fast != nil { f |= 0x01 }
        if slow != nil { f |= 0x02 }
        if measurementStatus != nil { f |= 0x04 }
        if deviceAndSensorStatus != nil { f |= 0x08 }
        if pulseAmplitudeIndex != nil { f |= 0x10 }
        return f
    }

    public var encodedLength: Int {
        5 + (fast == nil ? 0 : 4) + (slow == nil ? 0 : 4) + (measurementStatus == nil ? 0 : 2)
            + (deviceAndSensorStatus == nil ? 0 : 3) + (pulseAmplitudeIndex == nil ? 0 : 2)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(encodedFlags)
        try normal.write(&w)
        try fast?.write(&w)
        try slow?.write(&w)
        if let m = measurementStatus { try w.u16(m.rawValue) }
        if let d = deviceAndSensorStatus { try w.u24(d.rawValue) }
        if let p = pulseAmplitudeIndex { try w.u16(p.rawValue) }
    }

    var fields: [Field] {
        var f: [Field] = [Field("flags", .uint(UInt64(flags))), Field("spo2pr_normal", normal.fieldValue)]
        if let x = fast { f.append(Field("spo2pr_fast", x.fieldValue)) }
        if let x = slow { f.append(Field("spo2pr_slow", x.fieldValue)) }
        return f + plxOptionalFields(measurementStatus, deviceAndSensorStatus, pulseAmplitudeIndex)
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        var parts = [normal.summary]
        if let x = fast { parts.append("fast: " + x.summary) }
        if let x = slow { parts.append("slow: " + x.summary) }
        return (parts + plxOptionalSummary(measurementStatus, deviceAndSensorStatus, pulseAmplitudeIndex)).joined(separator: ", ")
    }
}
