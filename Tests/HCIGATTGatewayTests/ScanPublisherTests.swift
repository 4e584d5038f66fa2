import BluetoothHost
import BluetoothProfiles
import BluetoothWire
import HCIGATTGateway
import Testing

private let ms: UInt64 = 1_000_000
private let s: UInt64 = 1_000_000_000

private func hex(_ text: String) -> [UInt8] { (try? Hex.parse(text).get()) ?? [] }

private func device(_ last: UInt8, _ ad: [UInt8], scanResponse: [UInt8] = [], rssi: Int8? = -60, at: UInt64 = 0,
                    type: LEAddressType = .random, connectable: Bool = false) -> DiscoveredDevice {
    DiscoveredDevice(address: LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, last), type: type), rssi: rssi, txPower: nil,
                     advertisingData: ad, scanResponseData: scanResponse,
                     eventType: AdvertisingEventInfo(connectable: connectable), firstSeen: at, lastSeen: at, reportCount: 1)
}

private func address(_ last: UInt8) -> BluetoothAddress { BluetoothAddress(0xC0, 0xDE, 0, 0, 0, last) }

/// Flags, then BTHome v2 with packet id `id` and 25.06 °C.
private func bthome(_ id: UInt8) -> [UInt8] { [0x02, 0x01, 0x06, 0x09, 0x16, 0xD2, 0xFC, 0x40, 0x00, id, 0x02, 0xCA, 0x09] }
/// A complete local name.
private func named(_ name: String) -> [UInt8] { [UInt8(name.utf8.count + 1), 0x09] + Array(name.utf8) }
/// An iBeacon: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major 1, minor 2, -59 dBm at 1 m.
private let iBeacon = hex("1AFF4C000215E2C56DB5DFFB48D2B060D0F5A71096E000010002C5")
/// Eddystone-UID and -TLM service data (0xFEAA).
private let eddystoneUID = hex("0303AAFE 1516AAFE00E800010203040506070809AABBCCDDEEFF0000")
private func eddystoneTLM(count: UInt32) -> [UInt8] {
    hex("0303AAFE 1116AAFE2000 0BB8 1880") + withUnsafeBytes(of: count.bigEndian, Array.init) + hex("00000064")
}

private func readings(_ out: [ScanPublisher.Output]) -> [PendingReading] {
    out.compactMap { if case .reading(let r) = $0 { r } else { nil } }
}

private func presence(_ out: [ScanPublisher.Output]) -> [PresenceUpdate] {
    out.compactMap { if case .presence(let p) = $0 { p } else { nil } }
}

@Suite struct ScanFilterTests {
    @Test func entriesAreReadAsAddressServiceCompanyOrName() {
        #expect(ScanFilterEntry("C0:DE:00:00:00:01") == .address(address(1), nil))
        #expect(ScanFilterEntry("C0:DE:00:00:00:01/random") == .address(address(1), .random))
        #expect(ScanFilterEntry("c0:de:00:00:00:01/public") == .address(address(1), .public))
        #expect(ScanFilterEntry("FCD2") == .service(BluetoothUUID(0xFCD2)))
        #expect(ScanFilterEntry("service:0x181A") == .service(BluetoothUUID(0x181A)))
        #expect(ScanFilterEntry("company:0x0499") == .company(0x0499))
        #expect(ScanFilterEntry("company:0499") == .company(0x0499))
        #expect(ScanFilterEntry("company:4C") == .company(0x004C))
        #expect(ScanFilterEntry("ATC_") == .namePrefix("ATC_"))
        // A name that looks like a UUID is said as one.
        #expect(ScanFilterEntry("name:CAFE") == .namePrefix("CAFE"))
        // Mistakes are refused, not taken as names.
        for bad in ["", "name:", "service:XYZ", "company:0x10000", "company:", "company:12345", "company:-1", "C0:DE:00:00:00:0G", "C0:DE:00:00:00:01/other"] {
            #expect(ScanFilterEntry(bad) == nil, "\(bad)")
        }
    }

    @Test func denyWinsAndAnEmptyAllowTakesAll() {
        let sensor = device(1, bthome(1) + named("ATC_1234"))
        let phone = device(2, named("Pixel") + hex("05FF4C001005"))
        #expect(ScanFilter().admits(sensor) && ScanFilter().admits(phone))
        let byService = ScanFilter(allow: [.service(BluetoothUUID(0xFCD2))])
        #expect(byService.admits(sensor) && !byService.admits(phone))
        let byName = ScanFilter(allow: [.namePrefix("ATC")])
        #expect(byName.admits(sensor) && !byName.admits(phone))
        #expect(!ScanFilter(allow: [.namePrefix("ATC_12345")]).admits(sensor))  // longer than the name
        let denyApple = ScanFilter(deny: [.company(0x004C)])
        #expect(denyApple.admits(sensor) && !denyApple.admits(phone))
        let both = ScanFilter(allow: [.namePrefix("ATC"), .namePrefix("Pixel")], deny: [.address(address(1), nil)])
        #expect(!both.admits(sensor) && both.admits(phone))
        // A typed address matches its type only.
        #expect(!ScanFilter(allow: [.address(address(1), .public)]).admits(sensor))
        #expect(ScanFilter(allow: [.address(address(1), .random)]).admits(sensor))
    }

    @Test func aResolvedIdentityMatchesItsAddressEntry() {
        var d = device(9, bthome(1))
        let identity = BluetoothAddress(0x00, 0x1B, 0xDC, 0, 0, 1)
        d.identity = LEAddress(identity, type: .public)
        #expect(ScanFilter(allow: [.address(identity, nil)]).admits(d))
        #expect(!ScanFilter(deny: [.address(identity, .public)]).admits(d))
    }
}

@Suite struct ScanPublisherTests {
    @Test func everyAdvertiserIsAReadingUnlessOnlySensors() {
        var p = ScanPublisher(ScanPublishing(), now: 0)
        var out: [ScanPublisher.Output] = []
        let phone = device(2, named("Pixel") + hex("0303 0D18") + hex("05FF4C001005"), connectable: true)
        p.report(phone, now: 0, wallMilliseconds: 1000, into: &out)
        let r = readings(out)
        #expect(r.count == 1 && r.first?.measurement == "advertisement" && r.first?.discoverable == false)
        let fields = Dictionary((r.first?.fields ?? []).map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(fields["name"] == .text("Pixel") && fields["connectable"] == .bool(true) && fields["address_type"] == .text("random-static"))
        #expect(fields["services"] == .list([.text("180D")]))
        // The same data again (another RSSI) is nothing new.
        out.removeAll()
        p.report(device(2, named("Pixel") + hex("0303 0D18") + hex("05FF4C001005"), rssi: -70, connectable: true), now: ms,
                 wallMilliseconds: 1001, into: &out)
        #expect(out.isEmpty)
        var only = ScanPublisher(ScanPublishing(onlySensors: true), now: 0)
        out.removeAll()
        only.report(phone, now: 0, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty)
        only.report(device(1, bthome(1)), now: 0, wallMilliseconds: 0, into: &out)
        #expect(readings(out).map(\.measurement) == ["bthome"])
    }

    @Test func beaconsAreSensorsAndTheirFramesAreSeparateMeasurements() {
        var p = ScanPublisher(ScanPublishing(onlySensors: true), now: 0)
        var out: [ScanPublisher.Output] = []
        p.report(device(3, hex("020106") + iBeacon), now: 0, wallMilliseconds: 0, into: &out)
        let b = readings(out)
        #expect(b.map(\.measurement) == ["ibeacon"])
        let fields = Dictionary((b.first?.fields ?? []).map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(fields["proximity_uuid"] == .text("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") && fields["major"] == .uint(1)
                    && fields["minor"] == .uint(2) && fields["measured_power"] == .int(-59))
        // UID and TLM alternating: each is published when it changes, not at every switch.
        out.removeAll()
        for i in 0 ..< 6 {
            let ad = i % 2 == 0 ? eddystoneUID : eddystoneTLM(count: i < 4 ? 100 : 200)
            p.report(device(4, ad), now: UInt64(i) * ms, wallMilliseconds: 0, into: &out)
        }
        #expect(readings(out).map(\.measurement) == ["eddystone_uid", "eddystone_tlm", "eddystone_tlm"])
        let tlm = readings(out)[1].fields
        #expect(tlm.contains { $0.name == "battery_voltage_mv" && $0.value == .uint(3000) })
        #expect(tlm.contains { $0.name == "temperature_c" && $0.value == .double(24.5) })
    }

    @Test func rssiIsTheMedianOfTheLastFiveReports() {
        var p = ScanPublisher(ScanPublishing(), now: 0)
        var out: [ScanPublisher.Output] = []
        // Four steady reports and one reflection: the reflection does not move it.
        for (i, rssi) in [Int8(-60), -61, -59, -20, -60].enumerated() {
            p.report(device(1, bthome(1), rssi: rssi), now: UInt64(i) * ms, wallMilliseconds: 0, into: &out)
        }
        out.removeAll()
        p.report(device(1, bthome(2), rssi: -62), now: 10 * ms, wallMilliseconds: 0, into: &out)
        // The last five: -61 -59 -20 -60 -62.
        #expect(readings(out).first?.rssi == -60)
    }

    @Test func presenceArrivesStaysAndGoesAwayAfterTheTimeout() {
        var p = ScanPublisher(ScanPublishing(awayAfter: 120 * s), now: 0)
        var out: [ScanPublisher.Output] = []
        p.report(device(1, bthome(1) + named("ATC_1"), rssi: -50), now: 0, wallMilliseconds: 5000, into: &out)
        #expect(presence(out) == [PresenceUpdate(device: address(1), present: true, rssi: -50, name: "ATC_1", milliseconds: 5000)])
        #expect(p.nextDeadline == 120 * s)
        // Heard again at 100 s: not away at 120 s, the deadline moves to 220 s.
        out.removeAll()
        p.report(device(1, bthome(1) + named("ATC_1"), rssi: -50), now: 100 * s, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty)
        p.expire(now: 120 * s, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty && p.nextDeadline == 220 * s)
        p.expire(now: 220 * s, wallMilliseconds: 9000, into: &out)
        #expect(presence(out).map(\.present) == [false] && presence(out).first?.name == "ATC_1")
        #expect(p.nextDeadline == nil && p.presentDevices.isEmpty)
        // Back: present again.
        out.removeAll()
        p.report(device(1, bthome(1)), now: 300 * s, wallMilliseconds: 0, into: &out)
        #expect(presence(out).map(\.present) == [true])
    }

    @Test func devicesPresentBeforeARestartGoAwayUnlessHeard() {
        var p = ScanPublisher(ScanPublishing(awayAfter: 60 * s), presentAtStart: [address(1), address(2)], now: 10 * s)
        var out: [ScanPublisher.Output] = []
        // Device 2 is heard: it was present already, so nothing is said.
        p.report(device(2, bthome(1)), now: 20 * s, wallMilliseconds: 0, into: &out)
        #expect(presence(out).isEmpty)
        p.expire(now: 70 * s, wallMilliseconds: 0, into: &out)
        #expect(presence(out).map(\.device) == [address(1)] && presence(out).first?.present == false)
        out.removeAll()
        p.expire(now: 80 * s, wallMilliseconds: 0, into: &out)
        #expect(presence(out).map(\.device) == [address(2)])
    }

    @Test func presenceIsForAddressesThatLastAndTheNameMayComeLater() {
        var p = ScanPublisher(ScanPublishing(awayAfter: 60 * s), now: 0)
        var out: [ScanPublisher.Output] = []
        // A resolvable private address (0x4x): a new device every rotation, not tracked.
        let rpa = DiscoveredDevice(address: LEAddress(BluetoothAddress(0x4A, 1, 2, 3, 4, 5), type: .random), rssi: -50,
                                   txPower: nil, advertisingData: named("Phone"), scanResponseData: [],
                                   eventType: AdvertisingEventInfo(), firstSeen: 0, lastSeen: 0, reportCount: 1)
        p.report(rpa, now: 0, wallMilliseconds: 0, into: &out)
        #expect(presence(out).isEmpty)
        // Its identity, once bonded, is.
        var resolved = rpa
        resolved.identity = LEAddress(BluetoothAddress(0x00, 0x1B, 0xDC, 0, 0, 1), type: .public)
        p.report(resolved, now: 0, wallMilliseconds: 0, into: &out)
        #expect(presence(out).map(\.device) == [BluetoothAddress(0x00, 0x1B, 0xDC, 0, 0, 1)])
        // A static address heard first without its name, then with it (a scan response).
        out.removeAll()
        p.report(device(1, bthome(1)), now: 0, wallMilliseconds: 0, into: &out)
        #expect(presence(out).first?.name == nil)
        p.report(device(1, bthome(1), scanResponse: named("Tag-1")), now: s, wallMilliseconds: 0, into: &out)
        out.removeAll()
        p.expire(now: 62 * s, wallMilliseconds: 0, into: &out)
        #expect(presence(out).first { $0.device == address(1) }?.name == "Tag-1")
    }

    @Test func theFilterDecidesPresenceToo() {
        var p = ScanPublisher(ScanPublishing(filter: ScanFilter(deny: [.namePrefix("Pixel")]), awayAfter: 60 * s), now: 0)
        var out: [ScanPublisher.Output] = []
        p.report(device(2, named("Pixel")), now: 0, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty && p.nextDeadline == nil)
    }

    @Test func minIntervalHoldsTheLatestValueUntilTheIntervalEnds() {
        var p = ScanPublisher(ScanPublishing(onlySensors: true, minInterval: 10 * s), now: 0)
        var out: [ScanPublisher.Output] = []
        p.report(device(1, bthome(1)), now: 0, wallMilliseconds: 0, into: &out)
        #expect(readings(out).count == 1)
        // Two more inside the interval: held, the second replacing the first.
        out.removeAll()
        p.report(device(1, bthome(2)), now: 2 * s, wallMilliseconds: 0, into: &out)
        p.report(device(1, bthome(3)), now: 4 * s, wallMilliseconds: 0, into: &out)
        // Another device is limited on its own.
        p.report(device(2, bthome(1)), now: 5 * s, wallMilliseconds: 0, into: &out)
        #expect(readings(out).map(\.device) == [address(2)])
        #expect(p.nextDeadline == 10 * s)
        out.removeAll()
        p.expire(now: 9 * s, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty)
        p.expire(now: 10 * s, wallMilliseconds: 0, into: &out)
        let due = readings(out)
        #expect(due.count == 1 && due.first?.fields.contains { $0.name == "packet_id" && $0.value == .int(3) } == true)
        // The next interval counts from when the held one went.
        out.removeAll()
        p.report(device(1, bthome(4)), now: 15 * s, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty && p.nextDeadline == 20 * s)
        p.report(device(1, bthome(5)), now: 19 * s, wallMilliseconds: 0, into: &out)
        // The timer runs late (at 21 s): the latest held value goes, once, and the next
        // interval counts from then.
        p.expire(now: 21 * s, wallMilliseconds: 0, into: &out)
        #expect(readings(out).count == 1 && readings(out).first?.fields.contains { $0.name == "packet_id" && $0.value == .int(5) } == true)
        out.removeAll()
        p.report(device(1, bthome(6)), now: 30 * s, wallMilliseconds: 0, into: &out)
        #expect(out.isEmpty && p.nextDeadline == 31 * s)
        // A direct reading after the interval replaces what is held: nothing stale follows it.
        p.report(device(1, bthome(7)), now: 31 * s + 1, wallMilliseconds: 0, into: &out)
        p.expire(now: 40 * s, wallMilliseconds: 0, into: &out)
        #expect(readings(out).count == 1 && readings(out).first?.fields.contains { $0.name == "packet_id" && $0.value == .int(7) } == true)
        // The scan ending sends what is held.
        out.removeAll()
        p.report(device(1, bthome(8)), now: 32 * s, wallMilliseconds: 0, into: &out)
        p.flush(into: &out)
        #expect(readings(out).first?.fields.contains { $0.name == "packet_id" && $0.value == .int(8) } == true)
    }
}
