import Testing
import BluetoothWire
@testable import BluetoothProfiles

@Suite struct HealthThermometerTests {
    @Test func seedVectorCelsiusNoOptionalFields() throws {
        // The Apple HealthThermometerClient layout: flags, FLOAT; 0xFF00016C = 364 × 10^-1.
        let m = try withBytes(h("00 6C 01 00 FF")) { try TemperatureMeasurement(parsing: $0) }
        #expect(m.temperature.value == 36.4)
        #expect(m.unit == .celsius)
        #expect(m.timestamp == nil && m.temperatureType == nil)
        #expect(m.summary == "36.4 °C")
    }

    @Test func fullFlagsVector() throws {
        let bytes = h("06 6C 01 00 FF") + sampleTimeBytes + [0x06]
        let d = try #require(try decoded(0x2A1C, bytes))
        #expect(d.summary == "36.4 °C, mouth, 2026-11-29 17:33:05")
        #expect(d.title == "Temperature Measurement")
        #expect(field(d.fields, "temperature") == .double(36.4))
        #expect(field(d.fields, "unit") == .text("°C"))
        #expect(field(d.fields, "temperature_type") == .named(6, "mouth"))
        #expect(d.reencoded == bytes)
        let i = try #require(try decoded(0x2A1E, bytes))
        #expect(i.title == "Intermediate Temperature")
    }

    @Test func fahrenheit() throws {
        // 98.6 °F: mantissa 986, exponent -1 → 0xFF0003DA.
        let m = try withBytes(h("01 DA 03 00 FF")) { try TemperatureMeasurement(parsing: $0) }
        #expect(m.unit == .fahrenheit)
        #expect(m.summary == "98.6 °F")
    }

    @Test func everyFlagCombination() throws {
        let temperature = try MedFloat32(mantissa: 372, exponent: -1)
        for flags in 0 ... 255 {
            let f = UInt8(flags)
            var m = TemperatureMeasurement(temperature: temperature, unit: f & 1 != 0 ? .fahrenheit : .celsius,
                                           timestamp: f & 2 != 0 ? sampleTime : nil,
                                           temperatureType: f & 4 != 0 ? .tympanum : nil)
            m.flags = .init(rawValue: f)  // keep reserved bits
            let bytes = try encode(m)
            #expect(bytes.count == 5 + (f & 2 != 0 ? 7 : 0) + (f & 4 != 0 ? 1 : 0))
            #expect(bytes[0] == f)
            #expect(Array(bytes[1 ..< 5]) == h("74 01 00 FF"))
            if f & 2 != 0 { #expect(Array(bytes[5 ..< 12]) == sampleTimeBytes) }
            if f & 4 != 0 { #expect(bytes.last == 9) }
            let back = try withBytes(bytes) { try TemperatureMeasurement(parsing: $0) }
            #expect(back == m)
            #expect(try encode(back) == bytes)
            // Every shorter prefix is truncated; one more byte is trailing.
            for n in 0 ..< bytes.count {
                #expect(wireError(Array(bytes[..<n])) { try TemperatureMeasurement(parsing: $0) }?.code == .truncated)
            }
            #expect(wireError(bytes + [0]) { try TemperatureMeasurement(parsing: $0) } == WireError(.trailingBytes, at: bytes.count, ""))
        }
    }

    @Test func reservedFloatValues() throws {
        for (raw, text) in [("FF FF 7F 00", "NaN"), ("00 00 80 00", "NRes"), ("FE FF 7F 00", "+INF"),
                            ("02 00 80 00", "-INF"), ("01 00 80 00", "reserved")] {
            let d = try #require(try decoded(0x2A1C, h("00 " + raw)))
            #expect(d.summary == "\(text) °C")
            #expect(field(d.fields, "temperature") == .text(text))
        }
    }

    @Test func truncationReportsOffsetAndField() {
        let e = wireError(h("02 6C 01 00 FF EA 07 0B")) { try TemperatureMeasurement(parsing: $0) }
        #expect(e?.code == .truncated)
        #expect(e?.offset == 8)
        let bad = wireError(h("02 6C 01 00 FF EA 07 0D 1D 11 21 05")) { try TemperatureMeasurement(parsing: $0) }
        #expect(bad == WireError(.invalidValue, at: 7, "month"))
    }

    @Test func temperatureTypeNames() throws {
        let names = ["reserved", "armpit", "body", "ear", "finger", "GI tract", "mouth", "rectum", "toe", "tympanum", "reserved"]
        for (i, n) in names.enumerated() {
            let d = try #require(try decoded(0x2A1D, [UInt8(i)]))
            #expect(d.summary == n)
        }
        #expect(wireError([]) { try TemperatureType(parsing: $0) }?.code == .truncated)
        #expect(wireError([1, 2]) { try TemperatureType(parsing: $0) }?.code == .trailingBytes)
    }

    @Test func measurementIntervalAndValidRange() throws {
        #expect(try decoded(0x2A21, h("02 00"))?.summary == "2 s")
        #expect(try decoded(0x2A21, h("00 00"))?.summary == "no periodic measurement")
        #expect(try encode(MeasurementInterval(seconds: 300)) == h("2C 01"))
        let r = try withBytes(h("01 00 10 0E")) { try ValidRange(parsing: $0) }
        #expect(r.lower == 1 && r.upper == 3600 && r.contains(2) && !r.contains(3601))
        #expect(try encode(r) == h("01 00 10 0E"))
        #expect(try decoded(0x2906, h("05 00 01 00"))?.summary == "5...1 (empty: lower > upper)")
        for n in 0 ..< 4 { #expect(wireError(Array(h("01 00 10 0E")[..<n])) { try ValidRange(parsing: $0) }?.code == .truncated) }
        #expect(wireError(h("01 00 10 0E 00")) { try ValidRange(parsing: $0) }?.code == .trailingBytes)
        #expect(wireError(h("01 00 00")) { try MeasurementInterval(parsing: $0) }?.code == .trailingBytes)
    }
}

@Suite struct BloodPressureTests {
    @Test func seedVectorWithPulse() throws {
        // The A&D UA-651BLE layout read by the seed: systolic at [1], diastolic at [3], pulse at [7].
        let bytes = h("04 7A 00 50 00 5E 00 48 00")
        let m = try withBytes(bytes) { try BloodPressureMeasurement(parsing: $0) }
        #expect(m.systolic.value == 122 && m.diastolic.value == 80 && m.meanArterialPressure.value == 94)
        #expect(m.pulseRate?.value == 72)
        #expect(m.unit == .mmHg)
        #expect(m.summary == "122/80 mmHg, MAP 94, pulse 72 bpm")
        #expect(try encode(m) == bytes)
    }

    @Test func errorValueReadsAsNaNNotANumber() throws {
        // The seed's "sys == 255 → error": the low byte of SFLOAT NaN 0x07FF.
        let d = try #require(try decoded(0x2A35, h("04 FF 07 FF 07 FF 07 FF 07")))
        #expect(d.summary == "NaN/NaN mmHg, MAP NaN, pulse NaN bpm")
        #expect(field(d.fields, "systolic") == .text("NaN"))
        let special = try #require(try decoded(0x2A35, h("01 00 08 FE 07 02 08")))
        #expect(special.summary == "NRes/+INF kPa, MAP -INF")
    }

    @Test func fullFlagsVector() throws {
        // kPa, timestamp, pulse, user 1, status: body movement + irregular pulse + rate above range.
        let bytes = h("1F A4 F0 6A F0 7D F0") + sampleTimeBytes + h("48 00 01 0D 00")
        let d = try #require(try decoded(0x2A35, bytes))
        #expect(d.summary == "16.4/10.6 kPa, MAP 12.5, pulse 72 bpm, user 1, body movement detected, irregular pulse detected, pulse rate exceeds upper limit, 2026-11-29 17:33:05")
        #expect(d.reencoded == bytes)
    }

    @Test func everyFlagCombination() throws {
        let sys = try SFloat(mantissa: 120, exponent: 0), dia = try SFloat(mantissa: 80, exponent: 0)
        let map = try SFloat(mantissa: 93, exponent: 0), pulse = try SFloat(mantissa: 60, exponent: 0)
        for flags in 0 ... 255 {
            let f = UInt8(flags)
            var m = BloodPressureMeasurement(systolic: sys, diastolic: dia, meanArterialPressure: map,
                                             unit: f & 1 != 0 ? .kPa : .mmHg,
                                             timestamp: f & 2 != 0 ? sampleTime : nil,
                                             pulseRate: f & 4 != 0 ? pulse : nil,
                                             userID: f & 8 != 0 ? 0xFF : nil,
                                             measurementStatus: f & 16 != 0 ? [.cuffTooLoose, .pulseRateRange(2)] : nil)
            m.flags = .init(rawValue: f)
            let bytes = try encode(m)
            let expected = 7 + (f & 2 != 0 ? 7 : 0) + (f & 4 != 0 ? 2 : 0) + (f & 8 != 0 ? 1 : 0) + (f & 16 != 0 ? 2 : 0)
            #expect(bytes.count == expected)
            #expect(bytes[0] == f)
            #expect(Array(bytes[1 ..< 7]) == h("78 00 50 00 5D 00"))
            if f & 16 != 0 { #expect(Array(bytes.suffix(2)) == h("12 00")) }
            let back = try withBytes(bytes) { try BloodPressureMeasurement(parsing: $0) }
            #expect(back == m)
            #expect(try encode(back) == bytes)
            for n in 0 ..< bytes.count {
                #expect(wireError(Array(bytes[..<n])) { try BloodPressureMeasurement(parsing: $0) }?.code == .truncated)
            }
            #expect(wireError(bytes + [0]) { try BloodPressureMeasurement(parsing: $0) }?.code == .trailingBytes)
        }
    }

    @Test func intermediateCuffPressure() throws {
        let m = IntermediateCuffPressure(currentCuffPressure: try SFloat(mantissa: 142, exponent: 0))
        let bytes = try encode(m)
        #expect(bytes == h("00 8E 00 FF 07 FF 07"))
        let d = try #require(try decoded(0x2A36, bytes))
        #expect(d.summary == "cuff 142 mmHg")
        #expect(field(d.fields, "unused_fields_not_nan") == nil)
        let odd = try #require(try decoded(0x2A36, h("00 8E 00 01 00 FF 07")))
        #expect(field(odd.fields, "unused_fields_not_nan") != nil)
    }

    @Test func feature() throws {
        let d = try #require(try decoded(0x2A49, h("21 00")))
        #expect(d.summary == "body movement detection, multiple bond")
        #expect(try decoded(0x2A49, h("00 04"))?.summary == "reserved bit 10")
        #expect(wireError(h("21")) { try BloodPressureFeature(parsing: $0) }?.code == .truncated)
    }
}

@Suite struct HeartRateTests {
    @Test func simpleVector() throws {
        let d = try #require(try decoded(0x2A37, h("06 48")))
        #expect(d.summary == "72 bpm, contact detected")
        #expect(field(d.fields, "heart_rate") == .uint(72))
    }

    @Test func fourRRIntervals() throws {
        // 16-bit value, contact detected, energy 300 kJ, RR 0.8, 0.8125, 0.75, 1.0 s.
        let bytes = h("1F 48 00 2C 01 33 03 40 03 00 03 00 04")
        let m = try withBytes(bytes) { buf in
            let m = try HeartRateMeasurement(parsing: buf)
            #expect(m.rrIntervals.map(\.rawValue) == [819, 832, 768, 1024])
            #expect(m.rrIntervals.count == 4)
            return (m.heartRate, m.energyExpended, m.sensorContact, m.summary)
        }
        #expect(m.0 == 72 && m.1 == 300 && m.2 == .detected)
        #expect(m.3 == "72 bpm, contact detected, 300 kJ, RR 0.800 0.813 0.750 1.000 s")
        let owned = HeartRateMeasurement.Owned(heartRate: 72, sensorContact: .detected, energyExpended: 300,
                                               rrIntervals: [819, 832, 768, 1024], forceUInt16: true)
        #expect(try encode(owned) == bytes)
        #expect(try decoded(0x2A37, bytes)?.reencoded == bytes)
    }

    @Test func everyFlagCombination() throws {
        for flags in 0 ... 255 {
            let f = UInt8(flags)
            let owned = HeartRateMeasurement.Owned(heartRate: f & 1 != 0 ? 300 : 65,
                                                   sensorContact: SensorContactStatus(rawValue: f >> 1),
                                                   energyExpended: f & 8 != 0 ? 0xFFFF : nil,
                                                   rrIntervals: f & 16 != 0 ? [1000, 1010] : [])
            var bytes = try encode(owned)
            #expect(bytes[0] == f & 0x1F)
            bytes[0] = f  // reserved bits 5...7 survive a round trip
            let expected = 1 + (f & 1 != 0 ? 2 : 1) + (f & 8 != 0 ? 2 : 0) + (f & 16 != 0 ? 4 : 0)
            #expect(bytes.count == expected)
            try withBytes(bytes) { buf in
                let m = try HeartRateMeasurement(parsing: buf)
                #expect(m.flags.rawValue == f)
                #expect(m.heartRate == owned.heartRate)
                #expect(m.sensorContact == owned.sensorContact)
                #expect(m.energyExpended == owned.energyExpended)
                #expect(m.rrIntervals.map(\.rawValue) == owned.rrIntervals)
                #expect(try encode(m) == bytes)
            }
            for n in 0 ..< bytes.count {
                let e = wireError(Array(bytes[..<n])) { try HeartRateMeasurement(parsing: $0) }
                // With RR intervals, cutting one whole interval leaves a valid shorter list.
                if f & 16 != 0 && n == bytes.count - 2 { #expect(e == nil) } else { #expect(e?.code == .truncated) }
            }
            let extra = wireError(bytes + [0]) { try HeartRateMeasurement(parsing: $0) }
            #expect(extra?.code == (f & 16 != 0 ? .truncated : .trailingBytes))
        }
    }

    @Test func rrFlagNeedsAnInterval() {
        #expect(wireError(h("10 48")) { try HeartRateMeasurement(parsing: $0) } == WireError(.truncated, at: 2, ""))
        #expect(wireError(h("10 48 00 04 01")) { try HeartRateMeasurement(parsing: $0) } == WireError(.truncated, at: 4, ""))
    }

    @Test func u8FormatRejectsLargeRate() throws {
        var bytes = h("00 48")
        try withBytes(bytes) { buf in
            var m = try HeartRateMeasurement(parsing: buf)
            m.heartRate = 300
            #expect(throws: WireError.self) { try encode(m) }
        }
        bytes = try encode(HeartRateMeasurement.Owned(heartRate: 300))
        #expect(bytes == h("01 2C 01"))
    }

    @Test func bodySensorLocation() throws {
        let names = ["other", "chest", "wrist", "finger", "hand", "ear lobe", "foot", "reserved"]
        for (i, n) in names.enumerated() { #expect(try decoded(0x2A38, [UInt8(i)])?.summary == n) }
    }
}
