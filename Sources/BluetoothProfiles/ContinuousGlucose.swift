// Continuous Glucose Monitoring Service (CGMS 1.0): the measurement records a CGM keeps
// behind its Record Access Control Point, and the session start time that dates them.
import BluetoothWire

/// CGM Sensor Status Annunciation (CGMS §3.2.1.5): 24 bits sent as up to three octets,
/// Status (bits 0-7), Cal/Temp (8-15), Warning (16-23), each present as the record's flags
/// say, in that order (least significant first). Some sensors built on older SDKs send
/// Warning first; such a device decodes with its octets swapped, and says so in no way the
/// collector can tell.
public struct CGMSensorStatus: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

    static let names: [(UInt32, String)] = [
        (1 << 0, "session stopped"), (1 << 1, "device battery low"), (1 << 2, "sensor type incorrect for device"),
        (1 << 3, "sensor malfunction"), (1 << 4, "device specific alert"), (1 << 5, "general device fault"),
        (1 << 8, "time synchronization required"), (1 << 9, "calibration not allowed"),
        (1 << 10, "calibration recommended"), (1 << 11, "calibration required"),
        (1 << 12, "sensor temperature too high"), (1 << 13, "sensor temperature too low"),
        (1 << 16, "below the patient low level"), (1 << 17, "above the patient high level"),
        (1 << 18, "below the hypo level"), (1 << 19, "above the hyper level"),
        (1 << 20, "rate of decrease exceeded"), (1 << 21, "rate of increase exceeded"),
        (1 << 22, "below what the device can process"), (1 << 23, "above what the device can process"),
    ]

    /// The bits set, named (a reserved bit as `bit N`).
    public var names: [String] {
        var out: [String] = []
        for bit in 0 ..< 24 where rawValue & (1 << bit) != 0 {
            out.append(Self.names.first { $0.0 == 1 << bit }?.1 ?? "bit \(bit)")
        }
        return out
    }
}

/// The CGM profiles' E2E-CRC: CRC-16/MCRF4XX (CCITT polynomial, seed 0xFFFF, reflected,
/// no final XOR), over a record from its Size field to the last field before the CRC.
public enum CGMCRC {
    /// The CRC of `bytes`.
    @inlinable
    public static func compute(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for b in bytes {
            crc ^= UInt16(b)
            for _ in 0 ..< 8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x8408 : crc >> 1 }
        }
        return crc
    }
}

/// One CGM Measurement record (0x2AA7, CGMS §3.2): Size (u8: the whole record, itself and
/// the E2E-CRC included), Flags (u8), CGM Glucose Concentration (SFLOAT, mg/dL), Time Offset
/// (u16, minutes since the session started), the Sensor Status Annunciation octets the flags
/// name (bit 7 Status, 6 Cal/Temp, 5 Warning), CGM Trend Information (SFLOAT, (mg/dL)/min,
/// bit 0) and CGM Quality (SFLOAT, %, bit 1), then the E2E-CRC (u16) when the Size leaves
/// room for it (devices that support it send it on every record).
public struct CGMMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field as received.
    public var flags: UInt8
    /// mg/dL.
    public var concentration: SFloat
    /// Minutes since the session started: the record's place (what the RACP filters on).
    public var timeOffset: UInt16
    /// The annunciation, when the flags carry any of its octets.
    public var status: CGMSensorStatus?
    /// (mg/dL)/min.
    public var trend: SFloat?
    /// Percent.
    public var quality: SFloat?
    /// The E2E-CRC as received (nil: none).
    public var crc: UInt16?
    /// Whether the CRC matched the record's bytes (nil: none).
    public var crcMatches: Bool?

    /// A record; the flags follow from what is given (all three status octets when
    /// `status` is given); `withCRC` appends the E2E-CRC.
    public init(concentration: SFloat, timeOffset: UInt16, status: CGMSensorStatus? = nil, trend: SFloat? = nil,
                quality: SFloat? = nil, withCRC: Bool = false) {
        var f: UInt8 = 0
        if trend != nil { f |= 0x01 }
        if quality != nil { f |= 0x02 }
        if status != nil { f |= 0xE0 }
        flags = f
        self.concentration = concentration
        self.timeOffset = timeOffset
        self.status = status
        self.trend = trend
        self.quality = quality
        crc = withCRC ? 0 : nil
        crcMatches = withCRC ? true : nil
    }

    /// Parses one record: `record` is exactly its Size bytes. A CRC that does not match is
    /// not an error here (``crcMatches`` says so); a record too short for its flags is.
    @inlinable
    public init(parsing record: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(record)
        let size = try r.u8("CGM Measurement size")
        guard Int(size) == record.count else { throw WireError(.invalidLength, at: 0, "CGM Measurement size is not the record's length") }
        let f = try r.u8("CGM Measurement flags")
        concentration = SFloat(rawValue: try r.u16("CGM glucose concentration (SFLOAT)"))
        timeOffset = try r.u16("time offset")
        if f & 0xE0 != 0 {
            var bits: UInt32 = 0
            if f & 0x80 != 0 { bits |= UInt32(try r.u8("status octet")) }
            if f & 0x40 != 0 { bits |= UInt32(try r.u8("cal/temp octet")) << 8 }
            if f & 0x20 != 0 { bits |= UInt32(try r.u8("warning octet")) << 16 }
            status = CGMSensorStatus(rawValue: bits)
        } else {
            status = nil
        }
        trend = f & 0x01 != 0 ? SFloat(rawValue: try r.u16("CGM trend information (SFLOAT)")) : nil
        quality = f & 0x02 != 0 ? SFloat(rawValue: try r.u16("CGM quality (SFLOAT)")) : nil
        switch r.remaining {
        case 0:
            crc = nil
            crcMatches = nil
        case 2:
            let covered = record.count - 2
            let received = try r.u16("E2E-CRC")
            crc = received
            crcMatches = CGMCRC.compute(UnsafeRawBufferPointer(rebasing: record[0 ..< covered])) == received
        default:
            throw r.error(.trailingBytes, "bytes after the fields the CGM Measurement flags announce (not an E2E-CRC)")
        }
        flags = f
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags & ~0x03
        if status == nil { f &= ~0xE0 } else if f & 0xE0 == 0 { f |= 0xE0 }
        if trend != nil { f |= 0x01 }
        if quality != nil { f |= 0x02 }
        return f
    }

    public var encodedLength: Int {
        let octets = status == nil ? 0 : (encodedFlags & 0xE0).nonzeroBitCount
        return 6 + octets + (trend == nil ? 0 : 2) + (quality == nil ? 0 : 2) + (crc == nil ? 0 : 2)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        let start = w.count
        let f = encodedFlags
        try w.u8(UInt8(encodedLength))
        try w.u8(f)
        try w.u16(concentration.rawValue)
        try w.u16(timeOffset)
        if let s = status {
            if f & 0x80 != 0 { try w.u8(UInt8(truncatingIfNeeded: s.rawValue)) }
            if f & 0x40 != 0 { try w.u8(UInt8(truncatingIfNeeded: s.rawValue >> 8)) }
            if f & 0x20 != 0 { try w.u8(UInt8(truncatingIfNeeded: s.rawValue >> 16)) }
        }
        if let t = trend { try w.u16(t.rawValue) }
        if let q = quality { try w.u16(q.rawValue) }
        if crc != nil {
            // A record made here carries its true CRC; one parsed keeps what came.
            let value: UInt16
            if crcMatches == false, let received = crc {
                value = received
            } else {
                value = CGMCRC.compute(UnsafeRawBufferPointer(rebasing: w.written[start...]))
            }
            try w.u16(value)
        }
    }

    /// The record's fields, named as Glucose Measurement's where they mean the same
    /// (`glucose_concentration` with its `unit`, `glucose_mg_per_dl`).
    public var fields: [Field] {
        var f: [Field] = [Field("flags", .uint(UInt64(flags))), Field("glucose_concentration", concentration.fieldValue),
                          Field("unit", .text("mg/dL"))]
        if let v = concentration.value { f.append(Field("glucose_mg_per_dl", .double(v))) }
        f.append(Field("time_offset_minutes", .uint(UInt64(timeOffset))))
        if let s = status { f.append(Field("sensor_status", .list(s.names.map { .text($0) }))) }
        if let t = trend { f.append(Field("trend_mg_per_dl_per_minute", t.fieldValue)) }
        if let q = quality { f.append(Field("quality_percent", q.fieldValue)) }
        if let m = crcMatches { f.append(Field("e2e_crc_ok", .bool(m))) }
        return f
    }

    /// The record in one line.
    public var summary: String {
        var parts = ["\(concentration.description) mg/dL at +\(timeOffset) min"]
        if let t = trend { parts.append("trend \(t.description) mg/dL/min") }
        if let q = quality { parts.append("quality \(q.description) %") }
        if let s = status, !s.names.isEmpty { parts.append(s.names.joined(separator: ", ")) }
        if crcMatches == false { parts.append("E2E-CRC mismatch") }
        return parts.joined(separator: ", ")
    }
}

/// A CGM Measurement value: one or more records back to back, each led by its Size. A view
/// over the value's bytes (valid while they are alive); every record was checked when it
/// was made, so iterating cannot fail.
public struct CGMMeasurementRecords: Sequence, WireEncodable {
    /// The value's bytes.
    public let bytes: UnsafeRawBufferPointer
    /// How many records it holds.
    public let count: Int

    /// Checks every record of `bytes` (at least one).
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var at = 0, n = 0
        while at < bytes.count {
            let size = Int(bytes[at]), left = bytes.count - at
            // After a record, fewer bytes than the shortest record are not another one.
            if n > 0, left < 6 { throw WireError(.trailingBytes, at: at, "bytes after the last CGM Measurement record") }
            guard size >= 6 else { throw WireError(.invalidLength, at: at, "CGM Measurement record size under 6") }
            guard size <= left else { throw WireError(.truncated, at: at, "CGM Measurement record shorter than its size") }
            do { _ = try CGMMeasurement(parsing: UnsafeRawBufferPointer(rebasing: bytes[at ..< at + size])) } catch {
                throw WireError(error.code, at: at + error.offset, error.reason)
            }
            at += size
            n += 1
        }
        guard n > 0 else { throw WireError(.truncated, at: 0, "CGM Measurement without a record") }
        self.bytes = bytes
        count = n
    }

    /// The records in order.
    public struct Iterator: IteratorProtocol {
        var rest: UnsafeRawBufferPointer.SubSequence
        public mutating func next() -> CGMMeasurement? {
            guard let first = rest.first, Int(first) <= rest.count, first >= 6 else { return nil }
            let record = UnsafeRawBufferPointer(rebasing: rest.prefix(Int(first)))
            rest = rest.dropFirst(Int(first))
            return try? CGMMeasurement(parsing: record)
        }
    }

    public func makeIterator() -> Iterator { Iterator(rest: bytes[...]) }

    public var encodedLength: Int { bytes.count }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.bytes(bytes) }

    var fields: [Field] { [Field("records", .list(map { .object($0.fields) }))] }

    /// The records in one line.
    public var summary: String { map(\.summary).joined(separator: "; ") }
}

/// CGM Session Start Time (0x2AAA, CGMS §3.5): Session Start Time (Date Time, the sensor's
/// local time), Time Zone (s8, 15-minute steps; -128 unknown), DST Offset (u8: 0, 2, 4, 8
/// for +0, +0.5, +1, +2 h; 255 unknown), and an E2E-CRC when supported.
public struct CGMSessionStartTime: WireEncodable, Hashable, Sendable {
    /// Local time at the sensor.
    public var start: DateTime
    /// Time Zone in 15-minute steps (nil: unknown).
    public var timeZone: Int8?
    /// DST Offset in 15-minute steps (nil: unknown).
    public var dstOffset: UInt8?
    /// The E2E-CRC as received (nil: none).
    public var crc: UInt16?

    /// A start time.
    public init(start: DateTime, timeZone: Int8? = 0, dstOffset: UInt8? = 0) {
        self.start = start
        self.timeZone = timeZone
        self.dstOffset = dstOffset
        crc = nil
    }

    /// Parses the value (9 bytes, 11 with the CRC).
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        start = try DateTime.read(&r)
        let tz = Int8(bitPattern: try r.u8("time zone"))
        timeZone = tz == -128 ? nil : tz
        let dst = try r.u8("DST offset")
        dstOffset = dst == 255 ? nil : dst
        crc = r.remaining == 2 ? try r.u16("E2E-CRC") : nil
        try r.expectEnd("bytes after the CGM Session Start Time")
    }

    /// The session start in UTC: local time less the zone and DST offsets (as given when
    /// they are unknown).
    public var utc: DateTime {
        let minutes = (Int(timeZone ?? 0) + Int(dstOffset ?? 0)) * 15
        return start.adding(minutes: -minutes)
    }

    /// When a record `timeOffset` minutes into the session was taken (UTC).
    public func time(of timeOffset: UInt16) -> DateTime { utc.adding(minutes: Int(timeOffset)) }

    public var encodedLength: Int { 9 + (crc == nil ? 0 : 2) }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try start.write(&w)
        try w.u8(UInt8(bitPattern: timeZone ?? -128))
        try w.u8(dstOffset ?? 255)
        if let c = crc { try w.u16(c) }
    }

    var fields: [Field] {
        var f = [Field("session_start", .text(start.description))]
        f.append(Field("time_zone_minutes", timeZone.map { .int(Int64($0) * 15) } ?? .text("unknown")))
        f.append(Field("dst_offset_minutes", dstOffset.map { .uint(UInt64($0) * 15) } ?? .text("unknown")))
        return f
    }

    /// The value in one line.
    public var summary: String {
        func hm(_ quarters: Int) -> String {
            "\(quarters < 0 ? "-" : "+")\(abs(quarters) * 15 / 60):\(String(abs(quarters) * 15 % 60 + 100).dropFirst())"
        }
        let zone = timeZone.map { "UTC" + hm(Int($0)) } ?? "time zone unknown"
        let dst = dstOffset.map { $0 == 0 ? "" : ", DST " + hm(Int($0)) } ?? ", DST unknown"
        return "session started \(start) (\(zone)\(dst))"
    }
}
