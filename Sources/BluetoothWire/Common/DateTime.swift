/// The Date Time characteristic value (UUID 0x2A08, GATT Specification Supplement §3.70),
/// also embedded in measurements such as Temperature Measurement's Time Stamp.
///
/// Seven bytes: year (u16 LE, 1582...9999, 0 = unknown), month (1...12, 0 = unknown),
/// day (1...31, 0 = unknown), hours (0...23), minutes (0...59), seconds (0...59).
public struct DateTime: Hashable, Sendable, CustomStringConvertible, WireEncodable, FieldDescribable {
    /// 1582...9999; 0 unknown.
    public var year: UInt16
    /// 1...12; 0 unknown.
    public var month: UInt8
    /// 1...31; 0 unknown.
    public var day: UInt8
    /// 0...23.
    public var hours: UInt8
    /// 0...59.
    public var minutes: UInt8
    /// 0...59.
    public var seconds: UInt8

    /// Bytes on the wire.
    public static let wireLength = 7

    /// A date and time as given.
    @inlinable
    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8, minutes: UInt8, seconds: UInt8) {
        self.year = year
        self.month = month
        self.day = day
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// The year is not 0.
    @inlinable public var isYearKnown: Bool { year != 0 }
    /// The month is not 0.
    @inlinable public var isMonthKnown: Bool { month != 0 }
    /// The day is not 0.
    @inlinable public var isDayKnown: Bool { day != 0 }

    /// Seconds since 1970-01-01 00:00:00 of this calendar time (proleptic Gregorian, no
    /// time zone); nil unless year, month and day are known.
    public var secondsSince1970: Int64? {
        guard isYearKnown, isMonthKnown, isDayKnown else { return nil }
        // Days from civil (H. Hinnant's algorithm): March-based years make leap days last.
        let y = Int64(year) - (month <= 2 ? 1 : 0)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return days * 86_400 + Int64(hours) * 3600 + Int64(minutes) * 60 + Int64(seconds)
    }

    /// The calendar time `seconds` after 1970-01-01 00:00:00 (years 1582...9999).
    public init?(secondsSince1970 seconds: Int64) {
        // Years 1582...9999 lie well inside ±2^40 s: nothing below overflows.
        guard (-(1 << 40) ... (1 << 40)).contains(seconds) else { return nil }
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        guard (1582 ... 9999).contains(y) else { return nil }
        self.init(year: UInt16(y), month: UInt8(m), day: UInt8(d), hours: UInt8(rest / 3600),
                  minutes: UInt8(rest % 3600 / 60), seconds: UInt8(rest % 60))
    }

    /// This time `minutes` later (earlier when negative), across days, months and years;
    /// itself when the date is not all known (a time offset cannot be placed then).
    public func adding(minutes: Int) -> DateTime {
        guard minutes != 0, minutes.magnitude < 1 << 30, let t = secondsSince1970,
              let moved = DateTime(secondsSince1970: t + Int64(minutes) * 60) else { return self }
        return moved
    }

    /// Reads and validates seven bytes; an out-of-range field throws `.invalidValue`
    /// at that field's offset.
    @inlinable
    public static func read(_ r: inout ByteReader) throws(WireError) -> DateTime {
        let yearOffset = r.offset
        let year = try r.u16("Date Time year")
        let monthOffset = r.offset
        let month = try r.u8("Date Time month")
        let dayOffset = r.offset
        let day = try r.u8("Date Time day")
        let hoursOffset = r.offset
        let hours = try r.u8("Date Time hours")
        let minutesOffset = r.offset
        let minutes = try r.u8("Date Time minutes")
        let secondsOffset = r.offset
        let seconds = try r.u8("Date Time seconds")
        if year != 0 && (year < 1582 || year > 9999) {
            throw WireError(.invalidValue, at: yearOffset, "Date Time year must be 1582...9999 or 0")
        }
        if month > 12 { throw WireError(.invalidValue, at: monthOffset, "Date Time month must be 1...12 or 0") }
        if day > 31 { throw WireError(.invalidValue, at: dayOffset, "Date Time day must be 1...31 or 0") }
        if hours > 23 { throw WireError(.invalidValue, at: hoursOffset, "Date Time hours must be 0...23") }
        if minutes > 59 { throw WireError(.invalidValue, at: minutesOffset, "Date Time minutes must be 0...59") }
        if seconds > 59 { throw WireError(.invalidValue, at: secondsOffset, "Date Time seconds must be 0...59") }
        return DateTime(year: year, month: month, day: day, hours: hours, minutes: minutes, seconds: seconds)
    }

    /// Parses a whole characteristic value: exactly seven bytes.
    @inlinable
    public init(wire bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        self = try DateTime.read(&r)
        try r.expectEnd()
    }

    /// Writes seven bytes; throws `.valueOutOfRange` for any field outside its range.
    @inlinable
    public func write(_ w: inout ByteWriter) throws(WireError) {
        guard year == 0 || (1582 ... 9999).contains(year), month <= 12, day <= 31,
              hours <= 23, minutes <= 59, seconds <= 59 else {
            throw WireError(.valueOutOfRange, at: w.count, "Date Time field out of range")
        }
        try w.u16(year)
        try w.u8(month)
        try w.u8(day)
        try w.u8(hours)
        try w.u8(minutes)
        try w.u8(seconds)
    }

    public var encodedLength: Int { DateTime.wireLength }
    public func encode(into writer: inout ByteWriter) throws(WireError) { try write(&writer) }

    /// "2026-11-29 17:33:05"; unknown year/month/day print as "????", "??", "??".
    public var description: String {
        // "YYYY-MM-DD hh:mm:ss" (unknown year, month or day as "?"s), written in place: a
        // notification's time stamp is decoded on every measurement.
        String(unsafeUninitializedCapacity: 32) { buf in
            var i = 0
            func put(_ c: UInt8) { buf[i] = c; i += 1 }
            func number(_ v: Int, width: Int) {
                var digits = 1
                var x = v
                while x >= 10 { x /= 10; digits += 1 }
                for _ in digits ..< max(digits, width) { put(UInt8(ascii: "0")) }
                var k = i + digits
                x = v
                while k > i { k -= 1; buf[k] = UInt8(ascii: "0") + UInt8(x % 10); x /= 10 }
                i += digits
            }
            func field(_ v: UInt8, unknownIfZero: Bool) {
                if unknownIfZero && v == 0 { put(UInt8(ascii: "?")); put(UInt8(ascii: "?")) } else { number(Int(v), width: 2) }
            }
            if year == 0 { for _ in 0 ..< 4 { put(UInt8(ascii: "?")) } } else { number(Int(year), width: 4) }
            put(UInt8(ascii: "-"))
            field(month, unknownIfZero: true)
            put(UInt8(ascii: "-"))
            field(day, unknownIfZero: true)
            put(UInt8(ascii: " "))
            field(hours, unknownIfZero: false)
            put(UInt8(ascii: ":"))
            field(minutes, unknownIfZero: false)
            put(UInt8(ascii: ":"))
            field(seconds, unknownIfZero: false)
            return i
        }
    }

    public var fieldTitle: String { "Date Time" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [
            Field("year", year == 0 ? .named(0, "unknown") : .uint(UInt64(year))),
            Field("month", month == 0 ? .named(0, "unknown") : .uint(UInt64(month))),
            Field("day", day == 0 ? .named(0, "unknown") : .uint(UInt64(day))),
            Field("hours", .uint(UInt64(hours))),
            Field("minutes", .uint(UInt64(minutes))),
            Field("seconds", .uint(UInt64(seconds))),
            Field("text", .text(description)),
        ]
    }
}
