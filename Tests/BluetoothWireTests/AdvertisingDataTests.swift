import Testing
@testable import BluetoothWire

/// Structures as (type, data) until the end or the first error.
private func structures(_ bytes: [UInt8]) -> (items: [(UInt8, [UInt8])], error: WireError?) {
    var items: [(UInt8, [UInt8])] = []
    var failure: WireError?
    bytes.withUnsafeBytes { buf in
        var it = AdvertisingData(buf).makeIterator()
        while true {
            do throws(WireError) {
                guard let s = try it.next() else { return }
                items.append((s.type.rawValue, Array(s.data)))
            } catch {
                failure = error
                // After an error the iterator has ended.
                do throws(WireError) { let again = try it.next(); precondition(again == nil) } catch { preconditionFailure() }
                return
            }
        }
    }
    return (items, failure)
}

/// Decodes the first structure of `bytes` with `body`.
private func first<R>(_ bytes: [UInt8], _ body: (ADStructure) throws -> R) throws -> R {
    try withBytes(bytes) { buf in
        var it = AdvertisingData(buf).makeIterator()
        guard let s = try it.next() else { throw WireError(.truncated, at: 0, "no structure") }
        return try body(s)
    }
}

@Suite struct AdvertisingDataTests {
    /// The benchmark input: flags, complete name, 16-bit UUIDs, manufacturer data.
    static let thermo = h("02 01 06 0C 09 54 68 65 72 6D 6F 2D 31 32 33 34 05 03 09 18 0F 18 07 FF 4C 00 01 02 03 04")

    static let iBeaconFrame = h("""
        02 01 06 1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 00 01 00 02 C5
        """)
    static let eddystoneUID = h("""
        02 01 06 03 03 AA FE 17 16 AA FE 00 E7 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 00 00
        """)
    static let eddystoneURL = h("03 03 AA FE 0D 16 AA FE 10 EB 03 67 6F 6F 67 6C 65 07")
    static let eddystoneTLM = h("11 16 AA FE 20 00 0B B8 17 80 00 00 01 00 00 00 0A 00")
    static let eddystoneEID = h("0D 16 AA FE 30 F0 01 02 03 04 05 06 07 08")

    @Test func benchmarkPayloadSummary() throws {
        #expect(Self.thermo.count == 30)
        try withBytes(Self.thermo) { buf in
            let s = try AdvertisingData(buf).summary()
            #expect(s.structureCount == 4)
            #expect(s.flags == [.leGeneralDiscoverable, .brEdrNotSupported])
            #expect(s.localName?.isComplete == true)
            #expect(s.localName?.equals("Thermo-1234".utf8) == true)
            #expect(s.localName?.string == "Thermo-1234")
            #expect(s.serviceUUIDs16.map { Array($0) } == [BluetoothUUID(0x1809), BluetoothUUID(0x180F)])
            #expect(s.serviceUUIDs16?.isComplete == true)
            #expect(s.serviceUUIDs32 == nil && s.serviceUUIDs128 == nil)
            #expect(s.advertisesService(BluetoothUUID(0x180F)))
            #expect(!s.advertisesService(BluetoothUUID(0x180D)))
            #expect(s.manufacturerData?.companyID == 0x004C)
            #expect(s.manufacturerData.map { Array($0.payload) } == [1, 2, 3, 4])
            #expect(s.manufacturerData?.payloadOffset == 26)
            #expect(s.manufacturerData?.iBeacon == nil)
            #expect(s.txPowerLevel == nil)
            #expect(try AdvertisingData(buf).validate() == 4)
        }
    }

    @Test func iterationAndOffsets() throws {
        let (items, error) = structures(Self.thermo)
        #expect(error == nil)
        #expect(items.map(\.0) == [0x01, 0x09, 0x03, 0xFF])
        try withBytes(Self.thermo) { buf in
            var it = AdvertisingData(buf, baseOffset: 100).makeIterator()
            _ = try it.next()
            let name = try #require(try it.next())
            #expect(name.dataOffset == 105)
            #expect(try AdvertisingData(buf).first(.completeServiceUUIDs16)?.dataOffset == 18)
            #expect(try AdvertisingData(buf).first(.txPowerLevel) == nil)
        }
    }

    @Test func truncationAtEveryLengthYieldsPrefixThenThrows() {
        // Boundaries between structures: 0, 3, 16, 22, 30.
        let boundaries = [0: 0, 3: 1, 16: 2, 22: 3, 30: 4]
        let starts = [0, 3, 16, 22]
        for n in 0 ... Self.thermo.count {
            let (items, error) = structures(Array(Self.thermo.prefix(n)))
            if let count = boundaries[n] {
                #expect(error == nil, "prefix \(n)")
                #expect(items.count == count)
            } else {
                let start = starts.last { $0 < n } ?? 0
                #expect(error == WireError(.invalidLength, at: start, ""), "prefix \(n)")
                #expect(items.count == starts.firstIndex(of: start))
            }
            // The summary must throw (not trap) on the same prefixes.
            let summaryError = wireError(Array(Self.thermo.prefix(n))) { buf in try AdvertisingData(buf).summary() }
            #expect((summaryError == nil) == (boundaries[n] != nil))
        }
    }

    @Test func zeroLengthEndsTheData() {
        let (items, error) = structures(h("02 01 06 00 FF FF FF 09"))
        #expect(error == nil)
        #expect(items.count == 1)
        let padded = h("02 01 06") + [UInt8](repeating: 0, count: 28)
        #expect(structures(padded).items.count == 1)
        #expect(structures([]).items.isEmpty)
        // A length byte of 1: a type with no data is a valid structure.
        let (empty, e2) = structures(h("01 09"))
        #expect(e2 == nil && empty.count == 1 && empty[0].1.isEmpty)
        // Length 0xFF with too few bytes.
        #expect(structures(h("02 01 06 FF FF 00")).error == WireError(.invalidLength, at: 3, ""))
    }

    @Test func uuidListsOfEveryWidth() throws {
        let u128 = try #require(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let bytes = h("""
            05 02 0D 18 0A 18 05 05 78 56 34 12 11 07 9E CA DC 24 0E E5 A9 E0 93 F3 A3 B5 01 00 40 6E
            """)
        try withBytes(bytes) { buf in
            let s = try AdvertisingData(buf).summary()
            #expect(s.serviceUUIDs16.map { Array($0) } == [BluetoothUUID(0x180D), BluetoothUUID(0x180A)])
            #expect(s.serviceUUIDs16?.isComplete == false)
            #expect(s.serviceUUIDs32.map { Array($0) } == [BluetoothUUID(uuid32: 0x1234_5678)])
            #expect(s.serviceUUIDs32?.isComplete == true)
            #expect(s.serviceUUIDs128.map { Array($0) } == [u128])
            #expect(s.serviceUUIDs128?[0] == u128 && s.serviceUUIDs128?[1] == nil)
            #expect(s.advertisesService(u128))
        }
        let solicitation = try first(h("05 14 0D 18 0F 18")) { s in Array(try s.serviceUUIDs()) }
        #expect(solicitation == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
    }

    @Test func badLengths() {
        // UUID lists not a multiple of their width: error at the data offset.
        for hex in ["04 03 09 18 0F", "04 05 01 02 03", "10 07 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E"] {
            #expect(wireError(h(hex)) { buf in try AdvertisingData(buf).summary() } == WireError(.invalidLength, at: 2, ""), "\(hex)")
            #expect(wireError(h(hex)) { buf in try AdvertisingData(buf).validate() }?.code == .invalidLength)
        }
        let cases: [(String, WireError.Code)] = [
            ("01 0A", .invalidLength), ("03 0A 01 02", .invalidLength),    // Tx Power
            ("04 12 06 00 80", .invalidLength),                            // interval range
            ("02 16 AA", .invalidLength), ("04 20 01 02 03", .invalidLength), // service data
            ("10 21 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E", .invalidLength),
            ("06 17 01 02 03 04 05", .invalidLength), ("01 18", .invalidLength), // target addresses
            ("02 19 00", .invalidLength),                                  // appearance
            ("02 1A 00", .invalidLength), ("06 2F 01 02 03 04 05", .invalidLength),
            ("07 1B 01 02 03 04 05 06", .invalidLength),                   // LE address
            ("01 1C", .invalidLength), ("03 1C 00 00", .invalidLength),    // LE role
            ("01 24", .truncated), ("02 24 80", .invalidValue), ("02 24 C3", .truncated), ("03 24 C3 41", .invalidValue),
            ("02 FF 4C", .invalidLength), ("01 FF", .invalidLength),       // manufacturer data
        ]
        for (hex, code) in cases {
            #expect(wireError(h(hex)) { buf in try AdvertisingData(buf).validate() }?.code == code, "\(hex)")
        }
        // Unknown types and names are never errors.
        #expect(wireError(h("03 E0 01 02 03 09 FF FF")) { buf in try AdvertisingData(buf).validate() } == nil)
    }

    @Test func typeMismatchIsAnError() {
        #expect(wireError(h("02 01 06")) { buf in
            var it = AdvertisingData(buf).makeIterator()
            return try it.next()?.txPowerLevel()
        } == WireError(.unexpectedOpcode, at: 1, ""))
    }

    @Test func everyTypedAccessor() throws {
        #expect(try first(h("02 0A F4")) { try $0.txPowerLevel() } == -12)
        let range = try first(h("05 12 06 00 FF FF")) { try $0.peripheralConnectionIntervalRange() }
        #expect(range.minimum == 6 && range.maximum == nil)
        let sd = try first(h("07 20 78 56 34 12 AB CD")) { s in
            let d = try s.serviceData(); return (d.uuid, d.uuidWidth, Array(d.payload))
        }
        #expect(sd.0 == BluetoothUUID(uuid32: 0x1234_5678) && sd.1 == 4 && sd.2 == [0xAB, 0xCD])
        let addrs = try first(h("0D 18 01 E2 FD 17 72 E4 06 05 04 03 02 C1")) { s in
            let l = try s.targetAddresses(); return (l.isRandom, Array(l))
        }
        #expect(addrs.0 && addrs.1.map(\.description) == ["E4:72:17:FD:E2:01", "C1:02:03:04:05:06"])
        let ap = try first(h("03 19 41 03")) { try $0.appearance() }
        #expect(ap.rawValue == 0x0341 && ap.category == 13 && ap.subcategory == 1)
        #expect(ap.description == "Heart Rate Sensor (subcategory 1)")
        #expect(try first(h("03 1A 20 03")) { try $0.advertisingInterval() } == 800)
        #expect(try first(h("04 2F 00 00 01")) { try $0.advertisingInterval() } == 0x10000)
        #expect(try first(h("05 2F 00 00 00 01")) { try $0.advertisingInterval() } == 0x0100_0000)
        let le = try first(h("08 1B 01 E2 FD 17 72 E4 01")) { try $0.leDeviceAddress() }
        #expect(le.address.description == "E4:72:17:FD:E2:01" && le.type == .random)
        #expect(try first(h("02 1C 02")) { try $0.leRole() } == .peripheralAndCentralPeripheralPreferred)
        let uri = try first(h("0F 24 17 2F 2F 65 78 61 6D 70 6C 65 2E 63 6F 6D")) { s in
            let u = try s.uri(); return (u.schemeCodePoint, u.string)
        }
        #expect(uri.0 == 0x17 && uri.1 == "https://example.com")
        let uri2 = try first(h("04 24 C3 A9 41")) { s in try s.uri().schemeCodePoint }
        #expect(uri2 == 0xE9)
        let flags = try first(h("01 01")) { try $0.flags() }
        #expect(flags == [])
        #expect(ADFlags(rawValue: 0x85).description == "LE Limited Discoverable Mode, BR/EDR Not Supported, bit 7")
        let name = try first(h("05 08 54 68 65 72")) { s in let n = try s.localName(); return (n.isComplete, n.string) }
        #expect(!name.0 && name.1 == "Ther")
        // A shortened name does not replace a complete one, the complete one replaces a shortened one.
        try withBytes(h("03 08 41 42 04 09 41 42 43 03 08 58 59")) { buf in
            let s = try AdvertisingData(buf).summary()
            #expect(s.localName?.string == "ABC")
        }
    }

    @Test func iBeacon() throws {
        try withBytes(Self.iBeaconFrame) { buf in
            let s = try AdvertisingData(buf).summary()
            let beacon = try #require(s.manufacturerData?.iBeacon)
            #expect(beacon.proximityUUID.uuidString == "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
            #expect(beacon.major == 1 && beacon.minor == 2 && beacon.measuredPower == -59)
            #expect(beacon.manufacturerPayload == Array(Self.iBeaconFrame[7...]))
        }
        // Built back, the same bytes.
        let beacon = IBeacon(proximityUUID: BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!, major: 1, minor: 2, measuredPower: -59)
        let built = AdvertisingDataBuilder([.flags([.leGeneralDiscoverable, .brEdrNotSupported]), .iBeacon(beacon)])
        #expect(try encode(built) == Self.iBeaconFrame)
        // Apple data of another kind is not an iBeacon.
        try withBytes(h("06 FF 4C 00 10 05 01")) { buf in
            let s = try AdvertisingData(buf).summary()
            #expect(s.manufacturerData?.iBeacon == nil)
        }
    }

    @Test func eddystoneFrames() throws {
        try withBytes(Self.eddystoneUID) { buf in
            let s = try AdvertisingData(buf).summary()
            #expect(s.serviceUUIDs16.map { Array($0) } == [BluetoothUUID(0xFEAA)])
            let sd = try #require(s.serviceData)
            guard case .uid(let uid) = try sd.eddystone() else { Issue.record("not UID"); return }
            #expect(uid.txPower == -25)
            #expect(Array(uid.namespaceID) == Array(0 ... 9))
            #expect(Array(uid.instanceID) == Array(10 ... 15))
        }
        try withBytes(Self.eddystoneURL) { buf in
            let sd = try #require(try AdvertisingData(buf).summary().serviceData)
            guard case .url(let url) = try sd.eddystone() else { Issue.record("not URL"); return }
            #expect(url.txPower == -21 && url.string == "https://google.com")
        }
        try withBytes(Self.eddystoneTLM) { buf in
            let sd = try #require(try AdvertisingData(buf).summary().serviceData)
            guard case .tlm(let t) = try sd.eddystone() else { Issue.record("not TLM"); return }
            #expect(t == EddystoneTLM(batteryVoltage: 3000, rawTemperature: 0x1780, advertisingPDUCount: 256, timeSincePowerOn: 2560))
            #expect(t.temperature == 23.5)
        }
        try withBytes(Self.eddystoneEID) { buf in
            let sd = try #require(try AdvertisingData(buf).summary().serviceData)
            guard case .eid(let e) = try sd.eddystone() else { Issue.record("not EID"); return }
            #expect(e == EddystoneEID(txPower: -16, eid: 0x0102_0304_0506_0708))
        }
        // Not Eddystone: another UUID.
        try withBytes(h("05 16 0F 18 64 00")) { buf in
            let frame = try AdvertisingData(buf).summary().serviceData?.eddystone()
            #expect(frame == nil)
        }
        // Malformed frames.
        let bad: [(String, WireError)] = [
            ("0D 16 AA FE 10 EB 04 67 6F 6F 67 6C 65 07", WireError(.invalidValue, at: 6, "")),  // scheme 4
            ("0D 16 AA FE 10 EB 03 67 6F 6F 67 6C 65 0E", WireError(.invalidValue, at: 13, "")), // reserved code
            ("05 16 AA FE 20 00", WireError(.truncated, at: 6, "")),
            ("05 16 AA FE 20 02", WireError(.invalidValue, at: 5, "")),
            ("0E 16 AA FE 30 F0 01 02 03 04 05 06 07 08 09", WireError(.trailingBytes, at: 14, "")),
            ("16 16 AA FE 00 E7 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 00", WireError(.invalidLength, at: 22, "")),
            ("03 16 AA FE", WireError(.truncated, at: 4, "")),
        ]
        for (hex, err) in bad {
            #expect(wireError(h(hex)) { buf in try AdvertisingData(buf).summary().serviceData?.eddystone() } == err, "\(hex)")
        }
        // The Eddystone frames truncated at every length throw instead of trapping.
        for frame in [Self.eddystoneTLM, Self.eddystoneEID, Self.eddystoneURL] {
            for n in 0 ..< frame.count {
                _ = wireError(Array(frame.prefix(n))) { buf in try AdvertisingData(buf).summary().serviceData?.eddystone() }
            }
        }
    }

    @Test func builderRoundTrip() throws {
        var b = AdvertisingDataBuilder()
        b.append(.flags([.leGeneralDiscoverable, .brEdrNotSupported]))
        b.append(.localName("Thermo-1234"))
        b.append(contentsOf: ADStructureValue.serviceUUIDs([BluetoothUUID(0x1809), BluetoothUUID(0x180F)]))
        b.append(.manufacturerData(companyID: 0x004C, [1, 2, 3, 4]))
        let bytes = try encode(b)
        #expect(bytes == Self.thermo)
        // Parse, copy each structure, re-encode: identical.
        let copy = try withBytes(bytes) { buf in
            var out: [ADStructureValue] = []
            var it = AdvertisingData(buf).makeIterator()
            while let s = try it.next() { out.append(s.owned) }
            return out
        }
        #expect(copy == b.structures)
        #expect(try encode(AdvertisingDataBuilder(copy)) == bytes)
    }

    @Test func builderEveryStructure() throws {
        let u128 = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        var b = AdvertisingDataBuilder(maximumLength: AdvertisingData.extendedMaximumLength)
        b.append(contentsOf: ADStructureValue.serviceUUIDs([BluetoothUUID(0x180D), u128, BluetoothUUID(uuid32: 0x1234_5678)], complete: false))
        b.append(contentsOf: ADStructureValue.serviceSolicitation([BluetoothUUID(0x1812)]))
        b.append(.localName("Th", complete: false))
        b.append(.txPowerLevel(-4))
        b.append(.appearance(.genericThermometer))
        b.append(.peripheralConnectionIntervalRange(minimum: 6, maximum: nil))
        b.append(.serviceData(BluetoothUUID(0x1809), [0xAA]))
        b.append(.serviceData(u128, [0xBB]))
        b.append(.advertisingInterval(800))
        b.append(.advertisingInterval(0x12_3456))
        b.append(.advertisingInterval(0x1234_5678))
        b.append(.targetAddresses([BluetoothAddress("E4:72:17:FD:E2:01")!], random: false))
        b.append(.leDeviceAddress(LEAddress(BluetoothAddress("C1:02:03:04:05:06")!, type: .random)))
        b.append(.leRole(.centralOnly))
        b.append(try #require(.uri(schemeCodePoint: 0x17, "//example.com")))
        let bytes = try encode(b)
        #expect(bytes.count == b.encodedLength)
        try withBytes(bytes) { buf in
            let ad = AdvertisingData(buf)
            #expect(try ad.validate() == b.structures.count)
            let s = try ad.summary()
            #expect(s.serviceUUIDs16.map { Array($0) } == [BluetoothUUID(0x180D)])
            #expect(s.serviceUUIDs32.map { Array($0) } == [BluetoothUUID(uuid32: 0x1234_5678)])
            #expect(s.serviceUUIDs128.map { Array($0) } == [u128])
            #expect(s.localName?.string == "Th" && s.localName?.isComplete == false)
            #expect(s.txPowerLevel == -4 && s.appearance == .genericThermometer)
            #expect(s.serviceData?.uuid == BluetoothUUID(0x1809))
            #expect(try ad.first(.advertisingIntervalLong)?.data.count == 3)
            #expect(try ad.first(.uri)?.uri().string == "https://example.com")
            #expect(try ad.first(.leBluetoothDeviceAddress)?.leDeviceAddress().type == .random)
            var it = ad.makeIterator()
            var intervals: [UInt32] = []
            while let st = try it.next() {
                if st.type == .advertisingInterval || st.type == .advertisingIntervalLong {
                    intervals.append(try st.advertisingInterval())
                }
            }
            #expect(intervals == [800, 0x12_3456, 0x1234_5678])
        }
    }

    @Test func builderLimits() throws {
        let long = AdvertisingDataBuilder([.flags(.leGeneralDiscoverable), .localName(String(repeating: "x", count: 27))])
        #expect(long.encodedLength == 32)
        #expect(throws: WireError(.valueOutOfRange, at: 0, "")) { try long.encoded() }
        var extended = long
        extended.maximumLength = AdvertisingData.extendedMaximumLength
        #expect(try extended.encoded().count == 32)
        extended.maximumLength = 2000
        #expect(throws: WireError.self) { try extended.encoded() }
        let exactly31 = AdvertisingDataBuilder([.flags(.leGeneralDiscoverable), .localName(String(repeating: "x", count: 26))])
        #expect(try exactly31.encoded().count == 31)
        // One structure carries at most 254 data bytes.
        let huge = AdvertisingDataBuilder(maximumLength: 1650, [.manufacturerData(companyID: 1, [UInt8](repeating: 0, count: 253))])
        #expect(throws: WireError.self) { try huge.encoded() }
        let max = AdvertisingDataBuilder(maximumLength: 1650, [.manufacturerData(companyID: 1, [UInt8](repeating: 0, count: 252))])
        #expect(try max.encoded().first == 0xFF)
    }

    @Test func fieldDescription() throws {
        let fields = try withBytes(Self.thermo + h("1E FF")) { buf in AdvertisingData(buf).fields }
        guard case .list(let list) = fields[0].value else { Issue.record("no list"); return }
        #expect(list.count == 4)
        #expect(list[1] == .object([
            Field("length", .uint(12)),
            Field("type", .named(9, "Complete Local Name")),
            Field("value", .text("Thermo-1234")),
        ]))
        #expect(list[2] == .object([
            Field("length", .uint(5)),
            Field("type", .named(3, "Complete List of 16-bit Service UUIDs")),
            Field("value", .list([.text("1809"), .text("180F")])),
        ]))
        #expect(list[3] == .object([
            Field("length", .uint(7)),
            Field("type", .named(0xFF, "Manufacturer Specific Data")),
            Field("value", .object([Field("company_id", .named(0x4C, "Apple, Inc.")), Field("data", .bytes([1, 2, 3, 4]))])),
        ]))
        #expect(fields.count == 2 && fields[1].name == "error")
        // iBeacon, Eddystone, unknown types and malformed values are all described.
        let beacon = try withBytes(Self.iBeaconFrame) { buf in AdvertisingData(buf).fields }
        #expect("\(beacon)".contains("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"))
        let url = try withBytes(Self.eddystoneURL + Self.eddystoneTLM + h("03 E0 01 02 02 0A 01 02")) { buf in AdvertisingData(buf).fields }
        let text = "\(url)"
        #expect(text.contains("https://google.com") && text.contains("23.5"))
        #expect(text.contains("unknown") && text.contains("invalid length"))
    }

    @Test func legacyPayloadPutsTheNameFirstAndCutsWholeCharacters() throws {
        // Short: everything in the advertisement, the UUID list complete.
        let (adv, scan) = AdvertisingDataBuilder.legacyPayload(name: "Thermo", services: [BluetoothUUID(0x1809)])
        #expect(adv == h("02 01 06 07 09 54 68 65 72 6D 6F 03 03 09 18"))
        #expect(scan.isEmpty)
        // Long, multi-byte: a shortened name in the advertisement, as much of the whole name
        // as fits in the scan response; neither cuts a character (é is 2 bytes, ✓ 3).
        let name = String(repeating: "é", count: 13) + "✓✓"  // 26 + 6 = 32 bytes
        let (adv2, scan2) = AdvertisingDataBuilder.legacyPayload(name: name, services: [])
        #expect(adv2.count <= 31 && scan2.count <= 31)
        // The name structure: after the flags in the advertisement, first in the scan response.
        for (data, at) in [(adv2, 3), (scan2, 0)] {
            try #require(data.count > at + 2)
            #expect(data[at + 1] == 0x08, "a shortened name both times (the whole one is 32 bytes)")
            let text = String(decoding: data[(at + 2) ..< (at + 1 + Int(data[at]))], as: UTF8.self)
            #expect(!text.contains("\u{FFFD}"), "no character cut in two: \(text)")
            #expect(name.hasPrefix(text) && !text.isEmpty)
        }
        // A long name and a 128-bit service: the UUID stays in the advertisement.
        let nus = try #require(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let (adv3, scan3) = AdvertisingDataBuilder.legacyPayload(name: String(repeating: "n", count: 30), services: [nus])
        #expect(adv3.count <= 31 && scan3.count <= 31)
        // 6E400001-B5A3-F393-E0A9-E50E24DCCA9E, least significant octet first.
        #expect(Array(adv3.suffix(18)) == h("11 07 9E CA DC 24 0E E5 A9 E0 93 F3 A3 B5 01 00 40 6E"), "the UUID in the advertisement")
        #expect(scan3 == [30, 0x08] + Array(repeating: 0x6E, count: 29), "as much of the name as fits")
    }
}
