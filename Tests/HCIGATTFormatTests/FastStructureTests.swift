import BluetoothHost
import BluetoothProfiles
import BluetoothWire
@testable import HCIGATTFormat
import Testing

/// The scan JSON line writes the common AD structures straight; it must give the writer's
/// bytes exactly, and leave every other structure (and shape) to the writer.
@Suite struct FastStructureTests {
    /// What the writer makes of `bytes` as the `ad` list, and what the direct path makes (nil
    /// when it declines).
    /// One formatter for the whole suite run of a test: its name cache is used across lines.
    func both(_ bytes: [UInt8], _ formatter: inout ScanFormatter) -> (writer: String, direct: String?) {
        bytes.withUnsafeBytes { b in
            var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 256))
            w.out.raw("{\"x\":0")
            w.beginRecordContinuing()
            ScanFormatter.structures("ad", b, into: &w)
            w.endRecord()
            let full = w.out.string
            let writer = String(full.dropFirst("{\"x\":0".count).dropLast(2))
            var out = OutputBuffer(capacity: 256)
            guard formatter.writeStructures(",\"ad\":[", b, into: &out) else {
                #expect(out.count == 0, "a declined list is taken back")
                return (writer, nil)
            }
            return (writer, out.string)
        }
    }

    static func ad(_ type: UInt8, _ data: [UInt8]) -> [UInt8] { [UInt8(data.count + 1), type] + data }

    @Test(arguments: [
        ad(0x01, [0x06]), ad(0x01, []), ad(0x01, [0x1F, 0x00]), ad(0x01, [0xFF]),
        ad(0x02, []), ad(0x03, [0x0D, 0x18, 0x0F, 0x18]), ad(0x02, [0xAB, 0xFE]),
        ad(0x09, Array("Thermo-1".utf8)), ad(0x08, []), ad(0x09, Array("say \"hi\"\n\u{01}\\ °C".utf8)),
        ad(0x0A, [0xF4]), ad(0x0A, [0x7F]),
        ad(0xFF, [0x4C, 0x00, 1, 2, 3, 4]), ad(0xFF, [0xFF, 0xFF]), ad(0xFF, [0x34, 0x12, 0xAA]),
        ad(0xFF, [0x59, 0x00]),
        ad(0x01, [0x06]) + ad(0x09, Array("Sensor-0".utf8)) + ad(0x03, [0x09, 0x18, 0x0F, 0x18]) + ad(0xFF, [0x4C, 0x00, 1, 2, 3, 4]),
        ad(0x01, [0x06]) + [0, 0] + ad(0x0A, [0x00]),  // an empty structure ends the data
        ad(0x01, [0x06]) + [0x09, 0x09, 0x41],  // truncated: the writer stops at it, and so does the direct path
        [],
    ])
    func directPathGivesTheWritersBytes(_ bytes: [UInt8]) {
        var formatter = ScanFormatter(json: true, origin: 0)
        let (writer, direct) = both(bytes, &formatter)
        #expect(direct == writer, "\(bytes)")
        let (_, again) = both(bytes, &formatter)  // from the name cache this time
        #expect(again == writer)
    }

    @Test(arguments: [
        ad(0x03, [0x0D, 0x18, 0x0F]),  // odd length: a malformed list, the writer says so
        ad(0x09, [0x41, 0xFF, 0x42]),  // invalid UTF-8, repaired by the writer
        ad(0x0A, []), ad(0x0A, [1, 2]),
        ad(0xFF, [0x4C]),
        ad(0xFF, [0x4C, 0x00, 0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0, 1, 0, 2, 0xC5]),  // iBeacon
        ad(0x16, [0xAA, 0xFE, 0x10]), ad(0x19, [0x41, 0x03]), ad(0x07, Array(repeating: 1, count: 16)),
        ad(0x01, [0x06]) + ad(0x24, [0x17]),  // one structure of another type: all through the writer
    ])
    func otherStructuresAreLeftToTheWriter(_ bytes: [UInt8]) {
        var formatter = ScanFormatter(json: true, origin: 0)
        let (_, direct) = both(bytes, &formatter)
        #expect(direct == nil)
    }

    /// The structure cache (direct-mapped by a hash of the bytes) never serves one
    /// structure's JSON for another: hundreds of service lists and manufacturer data of
    /// every length, many sharing a slot, each rendered again after the others.
    @Test func cachedStructuresAreAlwaysTheirOwn() {
        var formatter = ScanFormatter(json: true, origin: 0)
        var x: UInt64 = 0x5EED
        func next() -> UInt64 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return x >> 33 }
        var structures: [[UInt8]] = []
        for i in 0 ..< 600 {
            let n = Int(next() % 14) * 2
            let data = (0 ..< n).map { _ in UInt8(truncatingIfNeeded: next()) }
            structures.append(i % 2 == 0 ? Self.ad(0x03, data) : Self.ad(0xFF, [0x4C, 0x00] + data + [UInt8(i & 0xFF)]))
        }
        for round in 0 ..< 2 {
            for s in structures {
                let (writer, direct) = both(s, &formatter)
                #expect(direct == writer, "round \(round): \(s)")
            }
        }
    }

    /// `services` and `service_names` of 16-bit UUIDs (cached by their bytes) are what the
    /// general writer gives, for lists of every length, known and unknown UUIDs, seen
    /// again or not, and lists the cache cannot hold (long names).
    @Test func sixteenBitServiceListsAsTheGeneralWriter() {
        var formatter = ScanFormatter(json: true, origin: 0)
        var x: UInt64 = 0xC0FFEE
        func next() -> UInt64 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return x >> 33 }
        let known: [UInt16] = [0x180D, 0x180F, 0x1809, 0x181A, 0xFEAA, 0xFE9F, 0x1800, 0x1801, 0xFD6F]
        var lists: [[UInt16]] = []
        for _ in 0 ..< 300 {
            let n = Int(next() % 9)
            lists.append((0 ..< n).map { _ in next() % 3 == 0 ? UInt16(truncatingIfNeeded: next()) : known[Int(next() % UInt64(known.count))] })
        }
        for round in 0 ..< 2 {
            for list in lists {
                let bytes = Self.ad(0x03, list.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
                bytes.withUnsafeBytes { b in
                    let summary = ADSummary(b, UnsafeRawBufferPointer(start: nil, count: 0))
                    var general = OutputBuffer(capacity: 64)
                    formatter.writeServices(summary, into: &general)
                    guard let (count, values) = summary.serviceUUIDs16 else {
                        Issue.record("16-bit list not inline: \(list)")
                        return
                    }
                    var fast = OutputBuffer(capacity: 64)
                    formatter.writeServices16(count, values, into: &fast)
                    #expect(fast.string == general.string, "round \(round): \(list)")
                }
            }
        }
    }

    /// The summary's shortcut (no 16-bit service data, no Ruuvi manufacturer data: no
    /// walk for a sensor) finds what the full search finds: a sensor in a second
    /// manufacturer structure or in the scan response, and a broken frame's error.
    @Test func sensorShortcutAgreesWithTheFullSearch() {
        let apple = Self.ad(0xFF, [0x4C, 0x00, 1, 2])
        let ruuvi = Self.ad(0xFF, [0x99, 0x04] + Self.ruuvi)
        let cases: [([UInt8], [UInt8])] = [
            ([], []), (apple, []), (ruuvi, []), (apple + ruuvi, []), (apple, ruuvi), (apple, apple),
            (Self.ad(0xFF, [0x4C]), []),  // too short to parse: no company
            (Self.ad(0xFF, [0x99, 0x04, 0x05, 0x01]), []),  // Ruuvi, truncated: an error
            (Self.ad(0x16, [0xD2, 0xFC, 0x40, 0x02, 0xCA, 0x09]), []), (apple, Self.ad(0x16, [0xD2, 0xFC, 0x40])),
            (Self.ad(0x16, [0x0D]), []),  // service data too short for its UUID
            (Self.ad(0x01, [0x06]) + [0x09, 0xFF, 0x99], ruuvi),  // a broken advertising data, a good scan response
        ]
        for (adv, response) in cases {
            adv.withUnsafeBytes { a in
                response.withUnsafeBytes { r in
                    let full = AdvertisedSensor.find(in: AdvertisingData(a)) ?? AdvertisedSensor.find(in: AdvertisingData(r))
                    let shortcut = ScanFormatter.sensor(ADSummary(a, r))
                    #expect(String(describing: shortcut) == String(describing: full), "\(adv) \(response)")
                }
            }
        }
    }

    /// A scannable device's JSON line with these data, written directly and by the writer
    /// alone (the reference).
    static func jsonLines(_ adv: [UInt8], _ response: [UInt8]) -> (direct: String, writer: String) {
        let d = DiscoveredDevice(address: LEAddress(BluetoothAddress(0xC0, 1, 2, 3, 4, 5), type: .random),
                                 rssi: -50, txPower: nil, advertisingData: adv, scanResponseData: response,
                                 eventType: AdvertisingEventInfo(connectable: true, scannable: true),
                                 firstSeen: 1, lastSeen: 2_000_000, reportCount: 2)
        var fast = ScanFormatter(json: true, origin: 0)
        var reference = ScanFormatter(json: true, origin: 0)
        reference.directStructures = false
        var a = FieldWriter(format: .json, out: OutputBuffer(capacity: 512))
        var b = FieldWriter(format: .json, out: OutputBuffer(capacity: 512))
        fast.write(.discovered(d), into: &a)
        reference.write(.discovered(d), into: &b)
        return (a.out.string, b.out.string)
    }

    /// Whole JSON lines, direct against the writer alone, for advertising data and scan
    /// responses that are each of direct types or not (a direct `ad` beside a scan response
    /// the writer writes once wrote `ad` twice).
    @Test func wholeLinesMatchTheWriterWhateverMixOfStructures() {
        let direct: [[UInt8]] = [Self.ad(0x01, [0x06]) + Self.ad(0x09, Array("Thermo".utf8)),
                                 Self.ad(0xFF, [0x4C, 0x00, 1, 2]), [],
                                 Self.ad(0xFF, [0x99, 0x04] + Self.ruuvi)]  // direct, with a sensor reading
        let other: [[UInt8]] = [Self.ad(0x07, Array(repeating: 0x11, count: 16)),
                                Self.ad(0x16, [0xD2, 0xFC, 0x40, 0x02, 0xCA, 0x09]),  // BTHome
                                Self.ad(0x16, [0xAA, 0xFE, 0x10, 0x00]) + Self.ad(0x19, [0x41, 0x03]),
                                Self.ad(0x09, [0x41, 0xFF])]
        var lines = 0
        for adv in direct + other {
            for response in direct + other {
                let (direct, writer) = Self.jsonLines(adv, response)
                #expect(direct == writer, "ad \(adv), scan response \(response)")
                lines += 1
            }
        }
        #expect(lines == 64)
    }

    /// A line's name, at the top and as its structure in `ad`: the same bytes as the writer
    /// alone for names to escape, a shortened and a complete name, the name in the scan
    /// response, a name that is not UTF-8 (repaired at the top, the whole `ad` through the
    /// writer) and an empty one.
    @Test func namesAtTheTopAndInTheirStructureAreTheWritersNames() {
        let names: [[UInt8]] = [Array("Thermo".utf8), Array("say \"hi\"\\ \u{7}".utf8), Array("Küche 🌡".utf8),
                                [0x41, 0xC2, 0x85, 0x42], [0x41, 0xFF], [], Array(repeating: 0x5A, count: 29)]
        var lines = 0
        for name in names {
            for (adv, response) in [(Self.ad(0x01, [0x06]) + Self.ad(0x09, name), []),
                                    (Self.ad(0x08, Array(name.prefix(3))) + Self.ad(0x09, name), []),
                                    (Self.ad(0x01, [0x06]), Self.ad(0x09, name)),
                                    (Self.ad(0x09, name), Self.ad(0x08, name))] where adv.count <= 31 && response.count <= 31 {
                let (direct, writer) = Self.jsonLines(adv, response)
                #expect(direct == writer, "name \(name), ad \(adv), scan response \(response)")
                lines += 1
            }
        }
        #expect(lines == 26)  // the 29-byte name fits beside no other structure
    }

    /// Ruuvi's data format 5 example: 24.3 °C, 53.49 %, 1000.44 hPa ...
    static let ruuvi: [UInt8] = [0x05, 0x12, 0xFC, 0x53, 0x94, 0xC3, 0x7C, 0x00, 0x04, 0xFF, 0xFC, 0x04, 0x0C, 0xAC, 0x36,
                                 0x42, 0x00, 0xCD, 0xCB, 0xB8, 0x33, 0x4C, 0x88, 0x4F]

    /// A broadcast sensor reading is on the line: `sensor` in JSON (after the structures),
    /// `format key=value ...` at the end of the text line; a broken frame says why.
    @Test func sensorReadingsAreOnTheLine() {
        func line(_ adv: [UInt8], json: Bool) -> String {
            let d = DiscoveredDevice(address: LEAddress(BluetoothAddress(0xC0, 1, 2, 3, 4, 5), type: .random),
                                     rssi: -50, txPower: nil, advertisingData: adv, scanResponseData: [],
                                     eventType: AdvertisingEventInfo(connectable: false, scannable: false),
                                     firstSeen: 1, lastSeen: 2_000_000, reportCount: 1)
            var f = ScanFormatter(json: json, origin: 0)
            return f.format(.discovered(d))
        }
        let ruuvi = Self.ad(0xFF, [0x99, 0x04] + Self.ruuvi)
        #expect(line(ruuvi, json: true).hasSuffix(
            ",\"sensor\":{\"format\":\"ruuvi\",\"temperature\":24.3,\"humidity\":53.49,\"pressure\":1000.44,"
            + "\"acceleration_x\":0.004,\"acceleration_y\":-0.004,\"acceleration_z\":1.036,\"voltage\":2.977,\"tx_power\":4,"
            + "\"movement_counter\":66,\"measurement_sequence\":205,\"address\":\"CB:B8:33:4C:88:4F\"}}"))
        #expect(line(ruuvi, json: false).hasSuffix("|  ruuvi temperature=24.3 humidity=53.49 pressure=1000.44 acceleration_x=0.004 "
            + "acceleration_y=-0.004 acceleration_z=1.036 voltage=2.977 tx_power=4 movement_counter=66 measurement_sequence=205 "
            + "address=CB:B8:33:4C:88:4F"))
        let button = Self.ad(0x16, [0xD2, 0xFC, 0x44, 0x3C, 0x01, 0x03, 0x3A, 0x01])
        #expect(line(button, json: false).hasSuffix("|  bthome version=2 encrypted=no trigger_based=yes dimmer={event=rotate_left steps=3} button=press"))
        let broken = Self.ad(0x16, [0xD2, 0xFC, 0x40, 0x02, 0xCA])
        #expect(line(broken, json: true).contains(",\"sensor\":{\"format\":\"bthome\",\"version\":2,\"encrypted\":false,\"error\":\"truncated at offset"))
        let notV2 = Self.ad(0x16, [0xD2, 0xFC, 0x20, 0x02, 0xCA, 0x09])
        #expect(line(notV2, json: true).hasSuffix(",\"sensor_error\":\"invalid value at offset 4: not BTHome version 2\"}"))
        #expect(line(notV2, json: false).hasSuffix("|  sensor: invalid value at offset 4: not BTHome version 2"))
    }

    @Test func randomStructuresOfTheDirectTypesMatch() {
        var rng = SystemRandomNumberGenerator()
        var formatter = ScanFormatter(json: true, origin: 0)
        let types: [UInt8] = [0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0xFF]
        for _ in 0 ..< 2000 {
            var bytes: [UInt8] = []
            for _ in 0 ..< Int.random(in: 0 ... 5, using: &rng) {
                let t = types.randomElement(using: &rng) ?? 0x01
                var data: [UInt8]
                switch t {
                case 0x0A: data = [UInt8.random(in: 0 ... 255, using: &rng)]
                case 0x02, 0x03: data = (0 ..< 2 * Int.random(in: 0 ... 4, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                case 0x08, 0x09: data = Array(String((0 ..< Int.random(in: 0 ... 12, using: &rng)).map { _ in
                    Character(Unicode.Scalar(UInt8.random(in: 0 ... 0x7E, using: &rng)))
                }).utf8)
                case 0xFF:
                    data = [UInt8.random(in: 0 ... 255, using: &rng), UInt8.random(in: 0 ... 0x10, using: &rng)]
                        + (0 ..< Int.random(in: 0 ... 8, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                default: data = (0 ..< Int.random(in: 0 ... 2, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                }
                bytes += Self.ad(t, data)
            }
            let (writer, direct) = both(bytes, &formatter)
            #expect(direct == writer, "\(bytes)")
            if direct != writer { return }
        }
    }
}
