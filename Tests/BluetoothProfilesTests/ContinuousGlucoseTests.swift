import Testing
import BluetoothWire
@testable import BluetoothProfiles

/// CGM Measurement records, their E2E-CRC and the session start that dates them.
@Suite struct ContinuousGlucoseTests {
    /// A record with every field and its CRC (nRF Toolbox's test record: CRC-16/MCRF4XX 0xACEC).
    static let full = h("0F E3 78 00 1E 00 01 02 03 50 00 60 00 EC AC")

    @Test("A record with every field: status octets in spec order, trend, quality, a CRC that matches")
    func fullRecord() throws {
        let m = try withBytes(Self.full) { try CGMMeasurement(parsing: $0) }
        #expect(m.concentration.rawValue == 0x0078 && m.timeOffset == 30)
        #expect(m.status == CGMSensorStatus(rawValue: 0x03_02_01))
        #expect(m.status?.names == ["session stopped", "calibration not allowed", "below the patient low level", "above the patient high level"])
        #expect(m.trend?.rawValue == 0x0050 && m.quality?.rawValue == 0x0060)
        #expect(m.crc == 0xACEC && m.crcMatches == true)
        #expect(try encode(m) == Self.full, "re-encoded as it came")
        let view = try #require(try decoded(0x2AA7, Self.full))
        #expect(view.summary.hasPrefix("120 mg/dL at +30 min, trend 80 mg/dL/min, quality 96 %, session stopped"))
        #expect(view.reencoded == Self.full)
    }

    @Test("A CRC that does not match is said, not thrown; kept as it came")
    func crcMismatch() throws {
        var bytes = Self.full
        bytes[13] ^= 0xFF
        let m = try withBytes(bytes) { try CGMMeasurement(parsing: $0) }
        #expect(m.crcMatches == false)
        #expect(try encode(m) == bytes)
        #expect(m.summary.hasSuffix("E2E-CRC mismatch"))
    }

    @Test("Several records in one value, each led by its Size; malformed ones named with their offset")
    func severalRecords() throws {
        let short = h("06 00 64 00 05 00")  // 100 mg/dL at +5, nothing optional
        let made = try encode(CGMMeasurement(concentration: SFloat(rawValue: 0x006E), timeOffset: 10, quality: SFloat(rawValue: 95), withCRC: true))
        let value = short + Self.full + made
        let offsets = try withBytes(value) { raw in try CGMMeasurementRecords(parsing: raw).map(\.timeOffset) }
        #expect(offsets == [5, 30, 10])
        let again = try withBytes(made) { try CGMMeasurement(parsing: $0) }
        #expect(again.crcMatches == true && again.quality?.rawValue == 95, "a record made here carries its true CRC")
        // A Size past the value, a Size under the minimum, a byte more than the fields and no
        // CRC's room, an empty value.
        #expect(wireError(short + h("0F E3")) { try CGMMeasurementRecords(parsing: $0) }?.offset == 6)
        #expect(wireError(h("05 00 64 00 05")) { try CGMMeasurementRecords(parsing: $0) }?.code == .invalidLength)
        #expect(wireError(short + h("07 00 64 00 05 00 FF")) { try CGMMeasurementRecords(parsing: $0) }?.code == .trailingBytes)
        #expect(wireError(h("08 E0 64 00 05 00 01")) { try CGMMeasurementRecords(parsing: $0) } != nil, "three status octets announced, one there")
        #expect(wireError([]) { try CGMMeasurementRecords(parsing: $0) } != nil)
    }

    @Test("Session start: local time less zone and DST is UTC; a record's time is start plus its offset")
    func sessionStart() throws {
        // 2026-12-07 10:08:15 local, UTC+1 (4 × 15 min), DST +0.5 h (2).
        let bytes = h("EA 07 0C 07 0A 08 0F 04 02")
        let s = try withBytes(bytes) { try CGMSessionStartTime(parsing: $0) }
        #expect(s.utc == DateTime(year: 2026, month: 12, day: 7, hours: 8, minutes: 38, seconds: 15))
        #expect(s.time(of: 30) == DateTime(year: 2026, month: 12, day: 7, hours: 9, minutes: 8, seconds: 15))
        #expect(try encode(s) == bytes)
        let unknown = try withBytes(h("EA 07 0C 07 0A 08 0F 80 FF")) { try CGMSessionStartTime(parsing: $0) }
        #expect(unknown.timeZone == nil && unknown.dstOffset == nil && unknown.utc == unknown.start)
        #expect(wireError(h("EA 07 0C 07 0A 08 0F 00")) { try CGMSessionStartTime(parsing: $0) } != nil)
    }
}
