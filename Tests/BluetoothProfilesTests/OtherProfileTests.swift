import Testing
import BluetoothWire
@testable import BluetoothProfiles

/// One full vector (every optional field present) per fixed-shape decoder.
let fullVectors: [(uuid: UInt16, bytes: [UInt8], summary: String)] = [
    (0x2AA7, ContinuousGlucoseTests.full,
     "120 mg/dL at +30 min, trend 80 mg/dL/min, quality 96 %, session stopped, calibration not allowed, below the patient low level, above the patient high level"),
    (0x2AAA, h("EA 07 0C 07 0A 08 0F 04 02"), "session started 2026-12-07 10:08:15 (UTC+1:00, DST +0:30)"),
    (0x2A1C, h("06 6C 01 00 FF") + sampleTimeBytes + [6], "36.4 °C, mouth, 2026-11-29 17:33:05"),
    (0x2A1E, h("07 DA 03 00 FF") + sampleTimeBytes + [1], "98.6 °F, armpit, 2026-11-29 17:33:05"),
    (0x2A1D, [3], "ear"),
    (0x2A21, h("3C 00"), "60 s"),
    (0x2906, h("01 00 10 0E"), "1...3600"),
    (0x2A35, h("1E 78 00 50 00 5D 00") + sampleTimeBytes + h("3C 00 02 20 00"),
     "120/80 mmHg, MAP 93, pulse 60 bpm, user 2, improper measurement position, 2026-11-29 17:33:05"),
    (0x2A36, h("1E 8E 00 FF 07 FF 07") + sampleTimeBytes + h("3C 00 FF 00 00"),
     "cuff 142 mmHg, pulse 60 bpm, unknown user, 2026-11-29 17:33:05"),
    (0x2A49, h("3F 00"), "body movement detection, cuff fit detection, irregular pulse detection, pulse rate range detection, measurement position detection, multiple bond"),
    (0x2A38, [1], "chest"),
    (0x2A19, [87], "87 %"),
    (0x2A23, h("01 02 03 04 05 A1 B2 C3"), "manufacturer 0x0504030201, OUI 0xC3B2A1"),
    (0x2A50, h("01 0D 00 00 00 10 01"), "vendor 0x000D (Texas Instruments Inc.) [Bluetooth SIG], product 0x0000, version 1.1.0"),
    (0x2A01, h("41 03"), "Heart Rate Belt (0x0341)"),
    (0x2A08, sampleTimeBytes, "2026-11-29 17:33:05"),
    (0x2A2B, sampleTimeBytes + h("07 80 03"), "2026-11-29 17:33:05 +128/256 s, Sunday (manual time update, external reference time update)"),
    (0x2A18, h("1F 0C 00") + sampleTimeBytes + h("05 00 35 C0 11 01 00"),
     "#12, 5.3 mmol/L (0.0053 mol/L), capillary whole blood, finger, 2026-11-29 17:33:05 +5 min, device battery low, context follows"),
    (0x2A34, h("FF 0C 00 00 01 32 D0 02 51 10 0E 32 01 64 D0 3C F0"),
     "#12, breakfast 0.050 kg carbohydrate, postprandial (after meal), tester: self, health: no health issues, exercise 3600 s at 50 %, rapid acting insulin 0.100 L, HbA1c 6.0 %"),
    (0x2A9D, h("0E A4 38") + sampleTimeBytes + h("01 DF 00 0B 07"), "72.5 kg, BMI 22.3, 1.803 m, user 1, 2026-11-29 17:33:05"),
    (0x2A5E, h("1F 62 00 48 00") + sampleTimeBytes + h("20 00 10 00 00 32 F0"),
     "SpO2 98 %, pulse 72 bpm, 2026-11-29 17:33:05 (clock not set), PAI 5.0 %, measurement ongoing, poor signal detected"),
    (0x2A5F, h("1F 62 00 48 00 61 00 49 00 63 00 47 00 80 00 00 00 01 0A F0"),
     "SpO2 98 %, pulse 72 bpm, fast: SpO2 97 %, pulse 73 bpm, slow: SpO2 99 %, pulse 71 bpm, PAI 1.0 %, validated data, reserved bit 16"),
    (0x2A5B, h("03 10 27 00 00 00 04 64 00 00 08"), "wheel 10000 rev @ 1024/1024 s, crank 100 rev @ 2048/1024 s"),
    (0x2A53, h("07 80 02 B4 6E 00 10 27 00 00"), "2.5 m/s, 180/min, running, stride 1.10 m, total 1000.0 m"),
    (0x2A6E, h("F6 08"), "22.94 °C"),
    (0x2A6F, h("4C 1D"), "75.00 %"),
    (0x2A6D, h("02 76 0F 00"), "101325.0 Pa"),
    (0xFFE1, [2], "left"),
]

@Suite struct ProfileTableTests {
    @Test func vectorsDecodeSummariseAndReencode() throws {
        for v in fullVectors {
            let d = try #require(try decoded(v.uuid, v.bytes), "no decoder for \(v.uuid)")
            #expect(d.summary == v.summary, "uuid \(Hex.pad(v.uuid, 4))")
            #expect(d.reencoded == v.bytes, "uuid \(Hex.pad(v.uuid, 4))")
            #expect(!d.fields.isEmpty)
            #expect(CharacteristicDecoder.hasDecoder(uuid: BluetoothUUID(v.uuid)))
        }
    }

    @Test func truncationAtEveryLength() {
        for v in fullVectors {
            for n in 0 ..< v.bytes.count {
                let e = wireError(Array(v.bytes[..<n])) { try CharacteristicDecoder.decode(uuid: BluetoothUUID(v.uuid), value: $0) }
                #expect(e?.code == .truncated, "uuid \(Hex.pad(v.uuid, 4)) length \(n): \(String(describing: e))")
                #expect(e.map { $0.offset <= n } ?? false)
            }
        }
    }

    @Test func trailingBytesAreAnError() {
        for v in fullVectors {
            let e = wireError(v.bytes + [0]) { try CharacteristicDecoder.decode(uuid: BluetoothUUID(v.uuid), value: $0) }
            #expect(e == WireError(.trailingBytes, at: v.bytes.count, ""), "uuid \(Hex.pad(v.uuid, 4))")
        }
    }

    @Test func everyListedUUIDHasAVector() throws {
        let covered = Set(fullVectors.map(\.uuid) + [0x2A37, 0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2A2A, 0x2A52])
        #expect(covered == Set(CharacteristicDecoder.supportedUUIDs))
        #expect(try decoded(0x2A3F, [1]) == nil)
        #expect(!CharacteristicDecoder.hasDecoder(uuid: BluetoothUUID(0x2A3F)))
    }
}

@Suite struct DeviceInformationTests {
    @Test func strings() throws {
        let d = try #require(try decoded(0x2A29, Array("Texas Instruments".utf8) + [0]))
        #expect(d.summary == "Texas Instruments")
        #expect(d.title == "Manufacturer Name String")
        #expect(field(d.fields, "manufacturer_name") == .text("Texas Instruments"))
        #expect(try decoded(0x2A00, Array("Thermo-1234".utf8))?.title == "Device Name")
        #expect(try decoded(0x2A00, [])?.summary == "")
        let bad = try #require(try decoded(0x2A24, [0x41, 0xFF]))
        #expect(field(bad.fields, "invalid_utf8") == .bytes([0x41, 0xFF]))
        #expect(try encode(UTF8Value.Owned("Thermo")) == Array("Thermo".utf8))
    }

    @Test func batteryLevel() throws {
        #expect(try decoded(0x2A19, [100])?.summary == "100 %")
        #expect(wireError([101]) { try BatteryLevel(parsing: $0) } == WireError(.invalidValue, at: 0, ""))
        #expect(throws: WireError.self) { try encode(BatteryLevel(rawValue: 101)) }
    }

    @Test func systemIDAndPnP() throws {
        let s = SystemID(manufacturerIdentifier: 0x01_0203_0405, organizationallyUniqueIdentifier: 0x00_1A_7D)
        #expect(try encode(s) == h("05 04 03 02 01 7D 1A 00"))
        #expect(throws: WireError.self) {
            try encode(SystemID(manufacturerIdentifier: 1 << 40, organizationallyUniqueIdentifier: 0))
        }
        let p = try #require(try decoded(0x2A50, h("02 6B 1D 46 02 00 02")))
        #expect(p.summary == "vendor 0x1D6B [USB Implementer's Forum], product 0x0246, version 2.0.0")
    }

    @Test func regulatoryCertificationIsRaw() throws {
        let d = try #require(try decoded(0x2A2A, h("FE 00 65 78")))
        #expect(field(d.fields, "data") == .bytes(h("FE 00 65 78")))
        #expect(d.reencoded == h("FE 00 65 78"))
    }

    @Test func currentTimeReservedDayIsReported() throws {
        #expect(try decoded(0x2A2B, sampleTimeBytes + h("09 00 00"))?.summary == "2026-11-29 17:33:05 +0/256 s, reserved")
        #expect(wireError(h("EA 07 0B 1D 18 00 00 01 00 00")) { try CurrentTime(parsing: $0) }?.code == .invalidValue)
    }
}

@Suite struct GlucoseTests {
    @Test func kgPerLiterInMgPerDl() throws {
        // 95 mg/dL = 0.00095 kg/L: mantissa 95, exponent -5 → 0xB05F.
        let m = GlucoseMeasurement(sequenceNumber: 1, baseTime: sampleTime,
                                   concentration: try SFloat(mantissa: 95, exponent: -5),
                                   typeAndLocation: GlucoseTypeSampleLocation(type: .capillaryPlasma, location: .alternateSiteTest))
        let bytes = try encode(m)
        #expect(bytes == h("02 01 00") + sampleTimeBytes + h("5F B0 22"))
        #expect(try decoded(0x2A18, bytes)?.summary == "#1, 95 mg/dL (0.00095 kg/L), capillary plasma, alternate site test, 2026-11-29 17:33:05")
    }

    @Test func everyFlagCombination() throws {
        for flags in 0 ... 255 {
            let f = UInt8(flags)
            var m = GlucoseMeasurement(sequenceNumber: 7, baseTime: sampleTime, timeOffset: f & 1 != 0 ? -30 : nil,
                                       concentration: f & 2 != 0 ? .nan : nil,
                                       typeAndLocation: f & 2 != 0 ? GlucoseTypeSampleLocation(rawValue: 0xF9) : nil,
                                       sensorStatus: f & 8 != 0 ? [.timeFault] : nil)
            m.flags = .init(rawValue: f)
            let bytes = try encode(m)
            #expect(bytes[0] == f)
            let back = try withBytes(bytes) { try GlucoseMeasurement(parsing: $0) }
            #expect(back == m)
            for n in 0 ..< bytes.count {
                #expect(wireError(Array(bytes[..<n])) { try GlucoseMeasurement(parsing: $0) }?.code == .truncated)
            }
        }
    }

    @Test func contextRoundTrip() throws {
        let c = GlucoseMeasurementContext(sequenceNumber: 3, meal: .fasting, hbA1c: try SFloat(mantissa: 55, exponent: -1))
        let bytes = try encode(c)
        #expect(bytes == h("42 03 00 03 37 F0"))
        #expect(try decoded(0x2A34, bytes)?.summary == "#3, fasting, HbA1c 5.5 %")
    }
}

@Suite struct RecordAccessControlPointTests {
    @Test func requests() throws {
        typealias R = RecordAccessControlPoint.Owned
        #expect(try encode(R.reportAllRecords) == h("01 01"))
        #expect(try encode(R.reportNumberOfAllRecords) == h("04 01"))
        #expect(try encode(R.deleteAllRecords) == h("02 01"))
        #expect(try encode(R.abort) == h("03 00"))
        #expect(try encode(R.reportLastRecord) == h("01 06"))
        #expect(try encode(R.records(sequenceNumberAtLeast: 0x0102)) == h("01 03 01 02 01"))
        #expect(try encode(R.records(.deleteStoredRecords, sequenceNumbersIn: 5 ... 9)) == h("02 04 01 05 00 09 00"))
        #expect(try decoded(0x2A52, h("01 01"))?.summary == "report stored records, all records")
        #expect(try decoded(0x2A52, h("01 04 01 05 00 09 00"))?.summary == "report stored records, within range of (inclusive), sequence number 5...9")
        #expect(try decoded(0x2A52, h("04 02 02") + sampleTimeBytes)?.summary
            == "report number of stored records, less than or equal to, user facing time ≤ 2026-11-29 17:33:05")
    }

    @Test func responses() throws {
        try withBytes(h("05 00 0A 00")) { buf in
            let r = try RecordAccessControlPoint(parsing: buf)
            #expect(r.numberOfRecords == 10)
        }
        #expect(try encode(RecordAccessControlPoint.Owned.numberOfRecordsResponse(10)) == h("05 00 0A 00"))
        #expect(try decoded(0x2A52, h("05 00 0A 00"))?.summary == "number of stored records: 10")
        #expect(try decoded(0x2A52, h("06 00 01 06"))?.summary == "response to report stored records: no records found")
        #expect(try encode(RecordAccessControlPoint.Owned.response(to: .reportStoredRecords, .success)) == h("06 00 01 01"))
    }

    @Test func malformed() {
        func err(_ s: String) -> WireError.Code? { wireError(h(s)) { try RecordAccessControlPoint(parsing: $0) }?.code }
        #expect(err("") == .truncated)
        #expect(err("01") == .truncated)
        #expect(err("05 00 0A") == .truncated)
        #expect(err("05 00 0A 00 00") == .trailingBytes)
        #expect(err("06 00 01") == .truncated)
        #expect(err("01 01 00") == .trailingBytes)
        #expect(err("03 00 00") == .trailingBytes)
        #expect(err("01 03 01 05") == .truncated)
        #expect(err("01 04 01 05 00 09") == .truncated)
        #expect(err("01 03") == .truncated)
        #expect(err("01 03 01 05 00 00") == .trailingBytes)
        // Unknown op codes, operators and filter types keep their operand.
        #expect(err("09 07 01 02 03") == nil)
        #expect(err("01 07 01 02 03") == nil)
        #expect(err("01 03 09 01 02 03") == nil)
    }
}

@Suite struct SensorTests {
    @Test func weightImperialAndUnsuccessful() throws {
        #expect(try decoded(0x2A9D, h("01 D2 3D"))?.summary == "158.26 lb")
        #expect(try decoded(0x2A9D, h("00 FF FF"))?.summary == "measurement unsuccessful")
        #expect(try decoded(0x2A9D, h("09 D2 3D DF 00 C6 02"))?.summary == "158.26 lb, BMI 22.3, 71.0 in")
    }

    @Test func environmentalUnknowns() throws {
        #expect(try decoded(0x2A6E, h("00 80"))?.summary == "unknown")
        #expect(try decoded(0x2A6E, h("0C FE"))?.summary == "-5.00 °C")
        #expect(try decoded(0x2A6F, h("FF FF"))?.summary == "unknown")
        #expect(try decoded(0x2A6D, h("FF FF FF FF"))?.summary == "429496729.5 Pa")
    }

    @Test func sensorTagKeys() throws {
        let names = ["released", "right", "left", "both"]
        for (i, n) in names.enumerated() { #expect(try decoded(0xFFE1, [UInt8(i)])?.summary == n) }
        let d = try #require(try decoded(0xFFE1, [0x05]))
        #expect(d.summary == "right, other bits 0x04")
        #expect(field(d.fields, "other_bits") == .uint(4))
    }

    @Test func cscPartial() throws {
        #expect(try decoded(0x2A5B, h("02 64 00 00 08"))?.summary == "crank 100 rev @ 2048/1024 s")
        #expect(try decoded(0x2A5B, h("00"))?.summary == "no data")
        #expect(try encode(CSCMeasurement(wheel: .init(cumulativeRevolutions: 1, lastEventTime: 2))) == h("01 01 00 00 00 02 00"))
    }
}
