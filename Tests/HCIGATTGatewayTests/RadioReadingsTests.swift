import BluetoothGATT
import BluetoothHost
import BluetoothProfiles
import BluetoothWire
import HCIGATTFormat
import HCIGATTGateway
import Testing

private let ms: UInt64 = 1_000_000

/// A device heard at `lastSeen` with one BTHome v2 service data structure.
private func bthome(_ payload: [UInt8], from address: LEAddress, identity: LEAddress? = nil, lastSeen: UInt64 = 1000 * ms) -> DiscoveredDevice {
    var d = DiscoveredDevice(address: address, rssi: -61, txPower: nil,
                             advertisingData: [0x02, 0x01, 0x06, UInt8(payload.count + 3), 0x16, 0xD2, 0xFC] + payload,
                             scanResponseData: [], eventType: AdvertisingEventInfo(), firstSeen: lastSeen, lastSeen: lastSeen,
                             reportCount: 1)
    d.identity = identity
    return d
}

private func hex(_ s: String) -> [UInt8] { (try? Hex.parse(s).get()) ?? [] }

private let sensor = LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 7), type: .random)

@Suite struct BroadcastReadingsTests {
    @Test func aFrameIsOneReadingTimedWhenTheReportCame() throws {
        var readings = BroadcastReadings(keys: nil)
        // Packet id 1, 25.06 °C, 50.55 %.
        let d = bthome(hex("40 0001 02CA09 03BF13"), from: sensor)
        // Looked at 250 ms after the report came: the reading is 250 ms older than the wall clock.
        guard case .reading(let r) = readings.reading(d, now: 1250 * ms, wallMilliseconds: 1_700_000_000_250) else {
            Issue.record("no reading"); return
        }
        #expect(r.device == sensor.address && r.heardAs == nil && r.measurement == "bthome")
        #expect(r.milliseconds == 1_700_000_000_000 && r.rssi == -61)
        #expect(r.info.manufacturer == "BTHome")
        let fields = Dictionary(r.fields.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(fields["temperature"] == .double(25.06) && fields["humidity"] == .double(50.55) && fields["packet_id"] == .int(1))
    }

    @Test func theSameFrameAgainIsNoNewReadingAndANewPacketIdIs() {
        var readings = BroadcastReadings(keys: nil)
        let first = bthome(hex("40 0001 02CA09"), from: sensor)
        guard case .reading = readings.reading(first, now: 1000 * ms, wallMilliseconds: 0) else { Issue.record("no reading"); return }
        // The scan reports the device again (its scan response, a repeat): nothing new.
        guard case .unchanged = readings.reading(first, now: 1100 * ms, wallMilliseconds: 0) else { Issue.record("repeated"); return }
        guard case .reading = readings.reading(bthome(hex("40 0002 02CA09"), from: sensor), now: 1200 * ms, wallMilliseconds: 0) else {
            Issue.record("a new packet id is a new reading"); return
        }
        // Another device with the first frame is its own reading.
        let other = LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 8), type: .random)
        guard case .reading(let r) = readings.reading(bthome(hex("40 0001 02CA09"), from: other), now: 1300 * ms, wallMilliseconds: 0) else {
            Issue.record("another device"); return
        }
        #expect(r.device == other.address)
    }

    @Test func aResolvedPrivateAddressPublishesUnderTheIdentity() {
        var readings = BroadcastReadings(keys: nil)
        let rpa = LEAddress(BluetoothAddress(0x4A, 1, 2, 3, 4, 5), type: .random)
        let identity = LEAddress(BluetoothAddress(0x00, 0x1B, 0xDC, 0, 0, 1), type: .public)
        guard case .reading(let r) = readings.reading(bthome(hex("40 0001 02CA09"), from: rpa, identity: identity),
                                                      now: 1000 * ms, wallMilliseconds: 0) else { Issue.record("no reading"); return }
        #expect(r.device == identity.address && r.heardAs == rpa.address && r.info.address == identity.address)
        // The same frame from the next private address is the same device's, not new.
        let next = LEAddress(BluetoothAddress(0x4B, 1, 2, 3, 4, 6), type: .random)
        guard case .unchanged = readings.reading(bthome(hex("40 0001 02CA09"), from: next, identity: identity),
                                                 now: 1100 * ms, wallMilliseconds: 0) else { Issue.record("rotated address"); return }
    }

    @Test func anEncryptedFrameWithoutItsKeyIsSaidOnceAndNotPublished() {
        var readings = BroadcastReadings(keys: nil)
        let address = LEAddress(BluetoothAddress(0x54, 0x48, 0xE6, 0x8F, 0x80, 0xA5), type: .public)
        // bthome.io's encryption example.
        guard case .notPublished(let why) = readings.reading(bthome(hex("41 a47266c95f73 00112233 78237214"), from: address),
                                                            now: 1000 * ms, wallMilliseconds: 0) else { Issue.record("published"); return }
        #expect(why.hasPrefix("54:48:E6:8F:80:A5: ") && why.contains("--bindkey") && why.hasSuffix("(not published)"))
        // The next frame (another counter) is refused quietly.
        guard case .unchanged = readings.reading(bthome(hex("41 e445f3c9962b 33221100 6c7c4519"), from: address),
                                                 now: 1100 * ms, wallMilliseconds: 0) else { Issue.record("said twice"); return }
        // With the key it decrypts.
        var keys = SensorKeys()
        keys.set(hex("231d39c1d7cc1ab1aee224cd096db932"), for: address.address)
        var keyed = BroadcastReadings(keys: keys)
        guard case .reading(let r) = keyed.reading(bthome(hex("41 a47266c95f73 00112233 78237214"), from: address),
                                                    now: 1000 * ms, wallMilliseconds: 0) else { Issue.record("not decrypted"); return }
        #expect(r.fields.contains { $0.name == "temperature" && $0.value == .double(25.06) })
    }

    @Test func aDeviceWithoutASensorFrameGivesNothingWithOnlySensors() {
        var readings = BroadcastReadings(keys: nil, onlySensors: true)
        let d = DiscoveredDevice(address: sensor, rssi: -40, txPower: nil, advertisingData: [0x02, 0x01, 0x06, 0x05, 0x09, 0x54, 0x61, 0x67, 0x31],
                                 scanResponseData: [], eventType: AdvertisingEventInfo(), firstSeen: 0, lastSeen: 0, reportCount: 1)
        guard case .unchanged = readings.reading(d, now: 0, wallMilliseconds: 0) else { Issue.record("a reading from a name"); return }
        // A report older than the clock says (never negative age).
        guard case .reading(let r) = readings.reading(bthome(hex("40 0001 02CA09"), from: sensor, lastSeen: 2000 * ms),
                                                      now: 1000 * ms, wallMilliseconds: 5000) else { Issue.record("no reading"); return }
        #expect(r.milliseconds == 5000)
    }

    @Test func anAdvertisementNamesItsCompanyAsEveryOutputDoes() {
        // Assigned, the SIG's test identifier, unassigned: the labels of `decode ad` and scan.
        for (company, label) in [(UInt16(0x004C), "Apple, Inc."), (0xFFFF, "test / no company"), (0xFFFE, "unknown")] {
            var readings = BroadcastReadings(keys: nil)
            let d = DiscoveredDevice(address: sensor, rssi: -40, txPower: nil,
                                     advertisingData: [0x05, 0xFF, UInt8(company & 0xFF), UInt8(company >> 8), 0x01, 0x02],
                                     scanResponseData: [], eventType: AdvertisingEventInfo(), firstSeen: 0, lastSeen: 0, reportCount: 1)
            guard case .reading(let r) = readings.reading(d, now: 0, wallMilliseconds: 0) else { Issue.record("no reading"); continue }
            guard case .object(let m)? = r.fields.first(where: { $0.name == "manufacturer" })?.value else {
                Issue.record("no manufacturer: \(r.fields)"); continue
            }
            #expect(m.first { $0.name == "company_id" }?.value == .named(UInt64(company), label), "\(company)")
        }
    }
}

@Suite struct ConnectedReadingsTests {
    private func characteristic(_ uuid: UInt16) -> GATTCharacteristic {
        GATTCharacteristic(declarationHandle: 0x10, valueHandle: 0x11, endHandle: 0x12, uuid: BluetoothUUID(uuid), properties: [.notify])
    }

    @Test func aDecodedMeasurementHasItsFieldsUnitAndName() {
        // Temperature Measurement: Celsius, 36.4 °C as FLOAT (364 × 10⁻¹).
        let v = GATTValue(handle: 0x11, value: [0x00, 0x6C, 0x01, 0x00, 0xFF], isIndication: true)
        let r = ConnectedReadings.reading(characteristic(0x2A1C), v, device: sensor.address, name: "Thermo", milliseconds: 42)
        #expect(r.measurement == "temperature_measurement" && r.milliseconds == 42 && r.rssi == nil && r.heardAs == nil)
        #expect(r.info.name == "Thermo" && r.info.model == "Temperature Measurement")
        #expect(r.fields.first?.name == "uuid" && r.fields.last?.name == "hex" && r.fields.last?.value == .bytes(v.value))
        #expect(r.unit != nil)
        #expect(r.fields.contains { $0.name == "temperature" && $0.value == .double(36.4) })
    }

    @Test func anUnknownCharacteristicIsItsValueAndAMalformedOneItsError() {
        let unknown = GATTCharacteristic(declarationHandle: 1, valueHandle: 2, endHandle: 3,
                                         uuid: BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!, properties: [.notify])
        let r = ConnectedReadings.reading(unknown, GATTValue(handle: 2, value: [0x68, 0x69], isIndication: false),
                                          device: sensor.address, name: nil, milliseconds: 0)
        #expect(r.fields.contains { $0.name == "value" } && r.unit == nil)
        #expect(r.measurement == "12345678_1234_5678_1234_56789abcdef0")
        // A Heart Rate Measurement with no heart rate in it.
        let bad = ConnectedReadings.reading(characteristic(0x2A37), GATTValue(handle: 0x11, value: [0x00], isIndication: false),
                                            device: sensor.address, name: nil, milliseconds: 0)
        #expect(bad.fields.contains { $0.name == "error" } && bad.fields.last?.value == .bytes([0x00]))
    }

    @Test func measurementNamesAreTopicLevels() {
        #expect(ConnectedReadings.measurementName("Temperature Measurement") == "temperature_measurement")
        #expect(ConnectedReadings.measurementName("PLX Spot-Check Measurement") == "plx_spot_check_measurement")
        #expect(ConnectedReadings.measurementName("  --  ") == "value")
        #expect(ConnectedReadings.measurementName("Battery Level (%)") == "battery_level")
    }
}
