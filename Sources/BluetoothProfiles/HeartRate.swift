// Heart Rate characteristics (GSS §3.113 Heart Rate Measurement, §3.35 Body Sensor Location).
import BluetoothWire

/// Heart Rate Measurement (0x2A37): Flags (u8), the heart rate (u8, or u16 with flag bit 0),
/// Energy Expended (flag bit 3, u16 kJ, 0xFFFF = maximum reached) and RR-Intervals (flag bit 4,
/// one or more u16 in 1/1024 s filling the rest of the value). Flag bits 1-2 are the sensor
/// contact status; bits 5...7 are reserved and kept.
///
/// A view: `rrIntervalBytes` is a slice of the caller's buffer, valid only while it is alive.
/// Parsing checks the RR list is a whole number of u16 (at least one when flag bit 4 is set);
/// without flag bit 4 trailing bytes are an error.
public struct HeartRateMeasurement: WireEncodable {
    /// The Flags field: which optional fields follow, and the unit.
    public struct Flags: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The heart rate is a UInt16 (else a UInt8) (0x01).
        public static let valueIsUInt16 = Flags(rawValue: 0x01)
        /// Sensor contact detected (0x02).
        public static let sensorContactDetected = Flags(rawValue: 0x02)
        /// Sensor contact supported (0x04).
        public static let sensorContactSupported = Flags(rawValue: 0x04)
        /// Energy expended present (0x08).
        public static let energyExpendedPresent = Flags(rawValue: 0x08)
        /// RR intervals present (0x10).
        public static let rrIntervalsPresent = Flags(rawValue: 0x10)
    }

    /// The Flags field as received.
    public var flags: Flags
    /// Beats per minute.
    public var heartRate: UInt16
    /// Kilojoules since the last reset; 0xFFFF means the maximum was reached.
    public var energyExpended: UInt16?
    /// The RR-Interval field bytes (empty when absent).
    public var rrIntervalBytes: UnsafeRawBufferPointer

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("Heart Rate flags")
        if f & 0x01 != 0 {
            heartRate = try r.u16("heart rate (u16)")
        } else {
            heartRate = UInt16(try r.u8("heart rate (u8)"))
        }
        if f & 0x08 != 0 { energyExpended = try r.u16("energy expended") } else { energyExpended = nil }
        if f & 0x10 != 0 {
            guard r.remaining >= 2 else { throw r.error(.truncated, "RR-Interval") }
            guard r.remaining & 1 == 0 else {
                throw WireError(.truncated, at: r.offset &+ r.remaining &- 1, "RR-Interval (odd byte count)")
            }
            rrIntervalBytes = r.rest()
        } else {
            try r.expectEnd("bytes after the fields the Heart Rate flags announce")
            rrIntervalBytes = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        flags = Flags(rawValue: f)
    }

    /// Sensor contact (flag bits 1-2).
    @inlinable public var sensorContact: SensorContactStatus { SensorContactStatus(rawValue: (flags.rawValue >> 1) & 3) }
    /// The RR intervals, in order (allocation-free sequence).
    @inlinable public var rrIntervals: RRIntervals { RRIntervals(bytes: rrIntervalBytes) }

    @inlinable var encodedFlags: UInt8 {
        var f = flags.rawValue & ~0x18
        if energyExpended != nil { f |= 0x08 }
        if !rrIntervalBytes.isEmpty { f |= 0x10 }
        return f
    }

    public var encodedLength: Int {
        1 + (flags.rawValue & 1 != 0 ? 2 : 1) + (energyExpended == nil ? 0 : 2) + rrIntervalBytes.count
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(encodedFlags)
        if flags.rawValue & 1 != 0 {
            try w.u16(heartRate)
        } else {
            guard heartRate <= 0xFF else { throw WireError(.valueOutOfRange, at: w.count, "heart rate above 255 needs the u16 format") }
            try w.u8(UInt8(heartRate))
        }
        if let e = energyExpended { try w.u16(e) }
        guard rrIntervalBytes.count & 1 == 0 else { throw WireError(.valueOutOfRange, at: w.count, "RR-Interval bytes must be even") }
        try w.bytes(rrIntervalBytes)
    }

    var fields: [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(flags.rawValue))),
            Field("heart_rate", .uint(UInt64(heartRate))),
            Field("unit", .text("beats/min")),
            Field("value_format", .text(flags.rawValue & 1 != 0 ? "uint16" : "uint8")),
            Field("sensor_contact", .named(UInt64(sensorContact.rawValue), sensorContact.name)),
        ]
        if let e = energyExpended {
            f.append(Field("energy_expended", e == 0xFFFF ? .named(0xFFFF, "maximum reached") : .uint(UInt64(e))))
            f.append(Field("energy_expended_unit", .text("kJ")))
        }
        if flags.rawValue & 0x10 != 0 {
            f.append(Field("rr_intervals", .list(rrIntervals.map { .double($0.seconds) })))
            f.append(Field("rr_intervals_raw", .list(rrIntervals.map { .uint(UInt64($0.rawValue)) })))
            f.append(Field("rr_interval_unit", .text("s (raw: 1/1024 s)")))
        }
        if flags.rawValue & 0xE0 != 0 { f.append(Field("reserved_flags", .uint(UInt64(flags.rawValue & 0xE0)))) }
        return f
    }

    /// "72 bpm, contact detected, 12 kJ, RR 0.800 0.812 s".
    public var summary: String {
        var parts = ["\(heartRate) bpm"]
        if sensorContact.isSupported { parts.append(sensorContact.name) }
        if let e = energyExpended { parts.append(e == 0xFFFF ? "energy ≥ 65535 kJ" : "\(e) kJ") }
        if flags.rawValue & 0x10 != 0 {
            parts.append("RR " + rrIntervals.map { Display.fixed(Int64($0.milliseconds), decimals: 3) }.joined(separator: " ") + " s")
        }
        return parts.joined(separator: ", ")
    }

    /// An owned Heart Rate Measurement for the peripheral role.
    public struct Owned: WireEncodable, Hashable, Sendable {
        /// Beats per minute.
        public var heartRate: UInt16
        /// Whether the sensor touches the skin (if it can tell).
        public var sensorContact: SensorContactStatus
        /// Kilojoules since the last reset (when the flags say so).
        public var energyExpended: UInt16?
        /// In 1/1024 s.
        public var rrIntervals: [UInt16]
        /// Use the u16 format even for rates below 256 (it is always used above 255).
        public var forceUInt16: Bool

        /// A measurement; the flags follow from what is given.
        public init(heartRate: UInt16, sensorContact: SensorContactStatus = .notSupported,
                    energyExpended: UInt16? = nil, rrIntervals: [UInt16] = [], forceUInt16: Bool = false) {
            self.heartRate = heartRate
            self.sensorContact = sensorContact
            self.energyExpended = energyExpended
            self.rrIntervals = rrIntervals
            self.forceUInt16 = forceUInt16
        }

        var wide: Bool { forceUInt16 || heartRate > 0xFF }
        /// The Flags field the value encodes with.
        public var flags: UInt8 {
            (wide ? 1 : 0) | (sensorContact.rawValue & 3) << 1 | (energyExpended == nil ? 0 : 0x08)
                | (rrIntervals.isEmpty ? 0 : 0x10)
        }
        public var encodedLength: Int { 1 + (wide ? 2 : 1) + (energyExpended == nil ? 0 : 2) + 2 * rrIntervals.count }
        public func encode(into w: inout ByteWriter) throws(WireError) {
            try w.u8(flags)
            if wide { try w.u16(heartRate) } else { try w.u8(UInt8(truncatingIfNeeded: heartRate)) }
            if let e = energyExpended { try w.u16(e) }
            for rr in rrIntervals { try w.u16(rr) }
        }
    }
}

/// One RR interval: time between two R waves in 1/1024 s.
public struct RRInterval: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// The interval in seconds (the field is in 1/1024 s).
    @inlinable public var seconds: Double { Double(rawValue) / 1024 }
    /// Rounded to the nearest millisecond.
    @inlinable public var milliseconds: Int { (Int(rawValue) &* 1000 &+ 512) / 1024 }
}

/// The RR-Interval list of a Heart Rate Measurement, iterated without allocating.
public struct RRIntervals: Sequence {
    /// The RR-interval bytes (UInt16 little endian each).
    public var bytes: UnsafeRawBufferPointer
    /// The intervals in `bytes` (not copied).
    @inlinable public init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    /// How many intervals there are.
    @inlinable public var count: Int { bytes.count / 2 }
    @inlinable public var underestimatedCount: Int { count }

    /// Iterates the intervals in order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var reader: ByteReader
        @inlinable init(_ bytes: UnsafeRawBufferPointer) { reader = ByteReader(bytes) }
        @inlinable public mutating func next() -> RRInterval? {
            guard reader.remaining >= 2 else { return nil }
            do throws(WireError) { return RRInterval(rawValue: try reader.u16("RR-Interval")) } catch { return nil }
        }
    }
    @inlinable public func makeIterator() -> Iterator { Iterator(bytes) }
}

/// Sensor Contact Status (Heart Rate flag bits 1-2): 0 and 1 not supported, 2 supported but
/// no contact, 3 contact detected.
public struct SensorContactStatus: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue & 3 }
    /// Not supported (0).
    public static let notSupported = SensorContactStatus(rawValue: 0)
    /// Not detected (2).
    public static let notDetected = SensorContactStatus(rawValue: 2)
    /// Detected (3).
    public static let detected = SensorContactStatus(rawValue: 3)
    /// The sensor can tell whether it touches the skin.
    @inlinable public var isSupported: Bool { rawValue & 2 != 0 }
    /// It touches the skin.
    @inlinable public var isDetected: Bool { rawValue == 3 }
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 2: "no contact"
        case 3: "contact detected"
        default: "contact not supported"
        }
    }
}

/// Body Sensor Location (0x2A38): u8; values 7...255 are reserved and read as "reserved".
public struct BodySensorLocation: RawRepresentable, Hashable, Sendable, WireEncodable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Other (0).
    public static let other = Self(rawValue: 0)
    /// Chest (1).
    public static let chest = Self(rawValue: 1)
    /// Wrist (2).
    public static let wrist = Self(rawValue: 2)
    /// Finger (3).
    public static let finger = Self(rawValue: 3)
    /// Hand (4).
    public static let hand = Self(rawValue: 4)
    /// Ear lobe (5).
    public static let earLobe = Self(rawValue: 5)
    /// Foot (6).
    public static let foot = Self(rawValue: 6)

    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 0: "other"
        case 1: "chest"
        case 2: "wrist"
        case 3: "finger"
        case 4: "hand"
        case 5: "ear lobe"
        case 6: "foot"
        default: "reserved"
        }
    }
    public var description: String { name }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u8("Body Sensor Location")
        try r.expectEnd()
    }
    public var encodedLength: Int { 1 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u8(rawValue) }
}
