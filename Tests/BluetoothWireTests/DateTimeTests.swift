import Testing
@testable import BluetoothWire

@Suite struct DateTimeTests {
    @Test func parsesAndDescribes() throws {
        let bytes = h("EA 07 0B 1D 11 21 05")
        let d = try withBytes(bytes) { buf in try DateTime(wire: buf) }
        #expect(d == DateTime(year: 2026, month: 11, day: 29, hours: 17, minutes: 33, seconds: 5))
        #expect(d.description == "2026-11-29 17:33:05")
        #expect(try encode(d) == bytes)
        #expect(d.fields.first == Field("year", .uint(2026)))
    }

    @Test func unknownParts() throws {
        let d = try withBytes(h("00 00 00 00 00 00 00")) { buf in try DateTime(wire: buf) }
        #expect(!d.isYearKnown && !d.isMonthKnown && !d.isDayKnown)
        #expect(d.description == "????-??-?? 00:00:00")
        let e = DateTime(year: 1582, month: 0, day: 3, hours: 23, minutes: 59, seconds: 59)
        #expect(e.description == "1582-??-03 23:59:59")
        #expect(try withBytes(try encode(e)) { buf in try DateTime(wire: buf) } == e)
    }

    @Test func outOfRangeFieldsReportTheirOffset() {
        let cases: [(String, Int)] = [
            ("2D 06 01 01 00 00 00", 0), // year 1581
            ("10 27 01 01 00 00 00", 0), // year 10000
            ("EA 07 0D 01 00 00 00", 2), // month 13
            ("EA 07 01 20 00 00 00", 3), // day 32
            ("EA 07 01 01 18 00 00", 4), // hours 24
            ("EA 07 01 01 00 3C 00", 5), // minutes 60
            ("EA 07 01 01 00 00 3C", 6), // seconds 60
        ]
        for (hex, offset) in cases {
            #expect(wireError(h(hex)) { buf in try DateTime(wire: buf) } == WireError(.invalidValue, at: offset, ""))
        }
        let bad = DateTime(year: 2026, month: 1, day: 1, hours: 24, minutes: 0, seconds: 0)
        #expect(throws: WireError.self) { try bad.encoded() }
        #expect(throws: WireError.self) { try DateTime(year: 1000, month: 1, day: 1, hours: 0, minutes: 0, seconds: 0).encoded() }
    }

    @Test func truncatedAtEveryLengthAndTrailing() {
        let bytes = h("EA 07 0B 1D 11 21 05")
        for n in 0 ..< bytes.count {
            #expect(wireError(Array(bytes.prefix(n))) { buf in try DateTime(wire: buf) }?.code == .truncated)
        }
        #expect(wireError(bytes + [0]) { buf in try DateTime(wire: buf) } == WireError(.trailingBytes, at: 7, ""))
    }
}

@Suite struct DateTimeArithmeticTests {
    @Test("Seconds since 1970 and back: known instants, leap days, century rules")
    func epoch() {
        let cases: [(DateTime, Int64)] = [
            (DateTime(year: 1970, month: 1, day: 1, hours: 0, minutes: 0, seconds: 0), 0),
            (DateTime(year: 2000, month: 2, day: 29, hours: 12, minutes: 0, seconds: 0), 951_825_600),
            (DateTime(year: 2026, month: 12, day: 7, hours: 8, minutes: 21, seconds: 19), 1_796_631_679),
            (DateTime(year: 1969, month: 12, day: 31, hours: 23, minutes: 59, seconds: 59), -1),
            (DateTime(year: 2100, month: 3, day: 1, hours: 0, minutes: 0, seconds: 0), 4_107_542_400),
        ]
        for (t, s) in cases {
            #expect(t.secondsSince1970 == s, "\(t)")
            #expect(DateTime(secondsSince1970: s) == t)
        }
        #expect(DateTime(year: 0, month: 1, day: 1, hours: 0, minutes: 0, seconds: 0).secondsSince1970 == nil)
    }

    @Test("A time offset crosses days, months, a leap February and a year; unknown dates stay")
    func adding() {
        let t = DateTime(year: 2024, month: 2, day: 28, hours: 23, minutes: 30, seconds: 5)
        #expect(t.adding(minutes: 45) == DateTime(year: 2024, month: 2, day: 29, hours: 0, minutes: 15, seconds: 5))
        #expect(t.adding(minutes: 24 * 60 + 45) == DateTime(year: 2024, month: 3, day: 1, hours: 0, minutes: 15, seconds: 5))
        let newYear = DateTime(year: 2026, month: 12, day: 31, hours: 23, minutes: 59, seconds: 0)
        #expect(newYear.adding(minutes: 1) == DateTime(year: 2027, month: 1, day: 1, hours: 0, minutes: 0, seconds: 0))
        #expect(newYear.adding(minutes: -Int(Int16.max)) == DateTime(year: 2026, month: 12, day: 9, hours: 5, minutes: 52, seconds: 0))
        let unknown = DateTime(year: 0, month: 5, day: 1, hours: 10, minutes: 0, seconds: 0)
        #expect(unknown.adding(minutes: 90) == unknown)
    }
}
