// Cycling/running (GSS §3.59 CSC Measurement, §3.196 RSC Measurement), Environmental Sensing
// (GSS §3.219 Temperature, §3.124 Humidity, §3.181 Pressure) and the TI SensorTag key press
// characteristic (vendor service 0xFFE0, characteristic 0xFFE1).
import BluetoothWire

/// CSC Measurement (0x2A5B): Flags (u8), then by flags: Wheel Revolution Data (bit 0:
/// cumulative wheel revolutions u32, last wheel event time u16 in 1/1024 s) and Crank
/// Revolution Data (bit 1: cumulative crank revolutions u16, last crank event time u16 in
/// 1/1024 s). Bits 2...7 reserved and kept. Holds only scalars; trailing bytes are an error.
public struct CSCMeasurement: WireEncodable, Hashable, Sendable {
    /// Wheel revolution data.
    public struct WheelData: Hashable, Sendable {
        /// Cumulative wheel revolutions.
        public var cumulativeRevolutions: UInt32
        /// 1/1024 s, rolls over.
        public var lastEventTime: UInt16
        /// Wheel data as given.
        public init(cumulativeRevolutions: UInt32, lastEventTime: UInt16) {
            self.cumulativeRevolutions = cumulativeRevolutions
            self.lastEventTime = lastEventTime
        }
    }
    /// Crank revolution data.
    public struct CrankData: Hashable, Sendable {
        /// Cumulative crank revolutions.
        public var cumulativeRevolutions: UInt16
        /// 1/1024 s, rolls over.
        public var lastEventTime: UInt16
        /// Crank data as given.
        public init(cumulativeRevolutions: UInt16, lastEventTime: UInt16) {
            self.cumulativeRevolutions = cumulativeRevolutions
            self.lastEventTime = lastEventTime
        }
    }

    /// The Flags field (bit 0 wheel data, bit 1 crank data; the rest reserved and kept).
    public var flags: UInt8
    /// Wheel revolutions and the time of the last wheel event (when flag bit 0 is set).
    public var wheel: WheelData?
    /// Crank revolutions and the time of the last crank event (when flag bit 1 is set).
    public var crank: CrankData?

    /// A measurement; the flags follow from what is given.
    public init(wheel: WheelData? = nil, crank: CrankData? = nil) {
        flags = (wheel == nil ? 0 : 1) | (crank == nil ? 0 : 2)
        self.wheel = wheel
        self.crank = crank
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("CSC Measurement flags")
        if f & 0x01 != 0 {
            let n = try r.u32("cumulative wheel revolutions")
            wheel = WheelData(cumulativeRevolutions: n, lastEventTime: try r.u16("last wheel event time"))
        } else {
            wheel = nil
        }
        if f & 0x02 != 0 {
            let n = try r.u16("cumulative crank revolutions")
            crank = CrankData(cumulativeRevolutions: n, lastEventTime: try r.u16("last crank event time"))
        } else {
            crank = nil
        }
        try r.expectEnd("bytes after the fields the CSC Measurement flags announce")
        flags = f
    }

    public var encodedLength: Int { 1 + (wheel == nil ? 0 : 6) + (crank == nil ? 0 : 4) }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(flags & ~0x03 | (wheel == nil ? 0 : 1) | (crank == nil ? 0 : 2))
        if let x = wheel {
            try w.u32(x.cumulativeRevolutions)
            try w.u16(x.lastEventTime)
        }
        if let x = crank {
            try w.u16(x.cumulativeRevolutions)
            try w.u16(x.lastEventTime)
        }
    }

    var fields: [Field] {
        var f = [Field("flags", .uint(UInt64(flags)))]
        if let x = wheel {
            f.append(Field("cumulative_wheel_revolutions", .uint(UInt64(x.cumulativeRevolutions))))
            f.append(Field("last_wheel_event_time", .double(Double(x.lastEventTime) / 1024)))
            f.append(Field("last_wheel_event_time_unit", .text("s (raw: 1/1024 s)")))
        }
        if let x = crank {
            f.append(Field("cumulative_crank_revolutions", .uint(UInt64(x.cumulativeRevolutions))))
            f.append(Field("last_crank_event_time", .double(Double(x.lastEventTime) / 1024)))
            f.append(Field("last_crank_event_time_unit", .text("s (raw: 1/1024 s)")))
        }
        return f
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        var parts: [String] = []
        if let x = wheel { parts.append("wheel \(x.cumulativeRevolutions) rev @ \(x.lastEventTime)/1024 s") }
        if let x = crank { parts.append("crank \(x.cumulativeRevolutions) rev @ \(x.lastEventTime)/1024 s") }
        return parts.isEmpty ? "no data" : parts.joined(separator: ", ")
    }
}

/// RSC Measurement (0x2A53): Flags (u8), Instantaneous Speed (u16, 1/256 m/s), Instantaneous
/// Cadence (u8, 1/min), then by flags: Instantaneous Stride Length (bit 0, u16 cm), Total
/// Distance (bit 1, u32 dm). Bit 2: 0 walking, 1 running. Bits 3...7 reserved and kept.
public struct RSCMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field as received.
    public var flags: UInt8
    /// 1/256 m/s.
    public var speedRaw: UInt16
    /// Steps per minute.
    public var cadence: UInt8
    /// Centimetres.
    public var strideLength: UInt16?
    /// Decimetres.
    public var totalDistance: UInt32?

    /// Running (flag bit 2), else walking.
    @inlinable public var isRunning: Bool { flags & 0x04 != 0 }
    /// Metres per second.
    @inlinable public var speed: Double { Double(speedRaw) / 256 }

    /// A measurement; the flags follow from what is given.
    public init(speedRaw: UInt16, cadence: UInt8, strideLength: UInt16? = nil, totalDistance: UInt32? = nil,
                running: Bool = false) {
        flags = (strideLength == nil ? 0 : 1) | (totalDistance == nil ? 0 : 2) | (running ? 4 : 0)
        self.speedRaw = speedRaw
        self.cadence = cadence
        self.strideLength = strideLength
        self.totalDistance = totalDistance
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("RSC Measurement flags")
        speedRaw = try r.u16("instantaneous speed")
        cadence = try r.u8("instantaneous cadence")
        strideLength = f & 0x01 != 0 ? try r.u16("instantaneous stride length") : nil
        totalDistance = f & 0x02 != 0 ? try r.u32("total distance") : nil
        try r.expectEnd("bytes after the fields the RSC Measurement flags announce")
        flags = f
    }

    public var encodedLength: Int { 4 + (strideLength == nil ? 0 : 2) + (totalDistance == nil ? 0 : 4) }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(flags & ~0x03 | (strideLength == nil ? 0 : 1) | (totalDistance == nil ? 0 : 2))
        try w.u16(speedRaw)
        try w.u8(cadence)
        if let s = strideLength { try w.u16(s) }
        if let d = totalDistance { try w.u32(d) }
    }

    var fields: [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(flags))),
            Field("speed", .double(speed)), Field("speed_unit", .text("m/s")),
            Field("cadence", .uint(UInt64(cadence))), Field("cadence_unit", .text("1/min")),
            Field("motion", .text(isRunning ? "running" : "walking")),
        ]
        if let s = strideLength {
            f.append(Field("stride_length", .double(Double(s) / 100)))
            f.append(Field("stride_length_unit", .text("m")))
        }
        if let d = totalDistance {
            f.append(Field("total_distance", .double(Double(d) / 10)))
            f.append(Field("total_distance_unit", .text("m")))
        }
        return f
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        var parts = ["\(Display.number((speed * 1000).rounded() / 1000)) m/s", "\(cadence)/min", isRunning ? "running" : "walking"]
        if let s = strideLength { parts.append("stride " + Display.fixedU(UInt64(s), decimals: 2) + " m") }
        if let d = totalDistance { parts.append("total " + Display.fixedU(UInt64(d), decimals: 1) + " m") }
        return parts.joined(separator: ", ")
    }
}

/// Environmental Sensing Temperature (0x2A6E): sint16 in 0.01 °C; 0x8000 = value not known.
public struct EnvironmentalTemperature: RawRepresentable, Hashable, Sendable, WireEncodable {
    public var rawValue: Int16
    @inlinable public init(rawValue: Int16) { self.rawValue = rawValue }
    /// False for 0x8000 (value not known).
    @inlinable public var isKnown: Bool { rawValue != Int16.min }
    /// Degrees Celsius, nil when unknown.
    @inlinable public var celsius: Double? { isKnown ? Double(rawValue) / 100 : nil }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = Int16(bitPattern: try r.u16("Temperature"))
        try r.expectEnd()
    }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u16(UInt16(bitPattern: rawValue)) }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String { isKnown ? Display.fixed(Int64(rawValue), decimals: 2) + " °C" : "unknown" }
}

/// Humidity (0x2A6F): u16 in 0.01 %; 0xFFFF = value not known. Values above 100 % are kept
/// and reported (`isInRange`), not rejected.
public struct Humidity: RawRepresentable, Hashable, Sendable, WireEncodable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// False for 0xFFFF (value not known).
    @inlinable public var isKnown: Bool { rawValue != 0xFFFF }
    /// At most 100 %.
    @inlinable public var isInRange: Bool { rawValue <= 10000 }
    /// Relative humidity in percent, nil when unknown.
    @inlinable public var percent: Double? { isKnown ? Double(rawValue) / 100 : nil }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u16("Humidity")
        try r.expectEnd()
    }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u16(rawValue) }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        isKnown ? Display.fixedU(UInt64(rawValue), decimals: 2) + " %" + (isInRange ? "" : " (above 100 %)") : "unknown"
    }
}

/// Pressure (0x2A6D): u32 in 0.1 Pa.
public struct Pressure: RawRepresentable, Hashable, Sendable, WireEncodable {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Pascals.
    @inlinable public var pascals: Double { Double(rawValue) / 10 }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u32("Pressure")
        try r.expectEnd()
    }
    public var encodedLength: Int { 4 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u32(rawValue) }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String { Display.fixedU(UInt64(rawValue), decimals: 1) + " Pa" }
}

/// TI SensorTag Simple Keys state (characteristic 0xFFE1 in service 0xFFE0): one byte, bit 0
/// right key, bit 1 left key (0 released, 1 right, 2 left, 3 both). Other bits (bit 2 is the
/// side key / reed relay on later tags) are kept and reported, not rejected.
public struct SensorTagKeys: RawRepresentable, Hashable, Sendable, WireEncodable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Released (0).
    public static let released = Self(rawValue: 0)
    /// Right (1).
    public static let right = Self(rawValue: 1)
    /// Left (2).
    public static let left = Self(rawValue: 2)
    /// Both (3).
    public static let both = Self(rawValue: 3)
    /// The right key is down (bit 0).
    @inlinable public var rightPressed: Bool { rawValue & 1 != 0 }
    /// The left key is down (bit 1).
    @inlinable public var leftPressed: Bool { rawValue & 2 != 0 }
    /// Bits other than the two keys.
    @inlinable public var otherBits: UInt8 { rawValue & ~3 }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u8("key state")
        try r.expectEnd()
    }
    public var encodedLength: Int { 1 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u8(rawValue) }

    /// The name from the specification.
    public var name: String {
        switch rawValue & 3 {
        case 0: "released"
        case 1: "right"
        case 2: "left"
        default: "both"
        }
    }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String { otherBits == 0 ? name : "\(name), other bits \(Display.hex(UInt64(otherBits), 2))" }
}
