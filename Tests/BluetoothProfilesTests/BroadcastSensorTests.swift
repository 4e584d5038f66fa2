import Testing
import BluetoothWire
@testable import BluetoothProfiles

/// The sensor formats broadcast in advertisements, against the vectors their owners publish
/// (bthome.io and bthome-ble's tests, Ruuvi's data format 5 page, pvvx's and ATC1441's
/// firmware as ble_monitor's tests decode them).
@Suite struct BroadcastSensorTests {
    /// The fields a frame in `ad` (whole AD structures, hex) describes.
    func sensorFields(_ ad: String, address: String = "54:48:E6:8F:80:A5", keys: SensorKeys? = nil) throws -> [Field] {
        let bytes = h(ad)
        return try bytes.withUnsafeBytes { buf in
            guard let found = AdvertisedSensor.find(in: AdvertisingData(buf)) else { throw Failure("no sensor frame") }
            let sensor = try found.get()
            let a = try #require(BluetoothAddress(address))
            return FieldTree.build { sensor.describe(into: &$0, address: a, keys: keys) }
        }
    }

    struct Failure: Error { var text: String; init(_ t: String) { text = t } }

    /// Service data 0xFCD2 of `payload` (hex, after the UUID) as an AD structure.
    func bthome(_ payload: String) -> String {
        let p = h(payload)
        return Hex.string([UInt8(p.count + 3), 0x16, 0xD2, 0xFC] + p, separator: "")
    }

    func values(_ fields: [Field]) -> [String: FieldValue] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func bthomePlainSpecExample() throws {
        // bthome.io's whole advertisement: flags, name "DIY-sensor", service data.
        let f = try sensorFields("020106 0B094449592D73656E736F72 0A16D2FC4002C40903BF13")
        #expect(f.map(\.name) == ["format", "version", "encrypted", "temperature", "humidity"])
        let v = values(f)
        #expect(v["format"] == .text("bthome") && v["version"] == .uint(2) && v["encrypted"] == .bool(false))
        #expect(v["temperature"] == .double(25.0) && v["humidity"] == .double(50.55))
    }

    @Test func bthomeObjectTable() throws {
        // One vector per kind of object, from bthome.io's table and bthome-ble's tests.
        let cases: [(String, String, FieldValue)] = [
            ("0009", "packet_id", .int(9)), ("0161", "battery", .int(97)), ("02CA09", "temperature", .double(25.06)),
            ("04138A01", "pressure", .double(1008.83)), ("05138A14", "illuminance", .double(13460.67)),
            ("073E1D", "mass_lb", .double(74.86)), ("08CA06", "dew_point", .double(17.38)),
            ("0A138A14", "energy", .double(1346.067)), ("0B021B00", "power", .double(69.14)),
            ("0C020C", "voltage", .double(3.074)), ("12E204", "co2", .int(1250)), ("2E23", "humidity", .int(35)),
            ("3E2A2C0960", "count", .int(1611213866)), ("3F020C", "rotation", .double(307.4)),
            ("400C00", "distance", .double(0.012)), ("414E00", "distance", .double(7.8)),
            ("424E3400", "duration", .double(13.39)), ("451101", "temperature", .double(27.3)),
            ("4632", "uv_index", .double(5.0)), ("48DC87", "volume", .double(34.78)),
            ("4C41018A01", "gas", .double(25821.505)), ("505D396164", "timestamp", .uint(1684093277)),
            ("57EA", "temperature", .int(-22)), ("58EA", "temperature", .double(-7.7)),
            ("5AEAEA", "count", .int(-5398)), ("5BEA0234EA", "count", .int(-365690134)),
            ("5C02FBFFFF", "power", .double(-12.78)), ("5D02EA", "current", .double(-5.63)),
            ("5E9F8C", "direction", .double(359.99)), ("5F11D5", "precipitation", .double(5454.5)),
            ("61AC0D", "rotational_speed", .int(3500)), ("624099DFFF", "speed", .double(-2.123456)),
            ("630057D0FF", "acceleration", .double(-3.123456)), ("2101", "motion", .bool(true)),
            ("1000", "power_on", .bool(false)), ("3A04", "button", .text("long_press")), ("3A80", "button", .text("hold_press")),
            ("3AFE", "button", .named(0xFE, "unknown")),
            ("3C0103", "dimmer", .object([Field("event", .text("rotate_left")), Field("steps", .int(3))])),
            ("530C48656C6C6F20576F726C6421", "text", .text("Hello World!")),
            ("540C48656C6C6F20576F726C6421", "raw", .bytes(h("48656C6C6F20576F726C6421"))),
            ("F00100", "device_type_id", .int(1)), ("F100010204", "firmware_version", .text("4.2.1.0")),
            ("F2000106", "firmware_version", .text("6.1.0")),
        ]
        for (object, name, value) in cases {
            let f = try sensorFields(bthome("40" + object))
            #expect(f.last?.name == name && f.last?.value == value, "\(object): \(f.last.map { "\($0.name) = \($0.value)" } ?? "none")")
        }
    }

    @Test func bthomeRepeatedNamesAreNumbered() throws {
        var v = values(try sensorFields(bthome("40 02CA09 02CF09 02CF08 03B718 03B717 015D")))
        #expect(v["temperature_1"] == .double(25.06) && v["temperature_2"] == .double(25.11) && v["temperature_3"] == .double(22.55))
        #expect(v["humidity_1"] == .double(63.27) && v["humidity_2"] == .double(60.71) && v["battery"] == .int(93))
        // Grouped by name, not by id: two voltages of different resolution.
        v = values(try sensorFields(bthome("40 0001 0B000000 4A0D09 0133 0CE90C")))
        #expect(v["voltage_1"] == .double(231.7) && v["voltage_2"] == .double(3.305) && v["power"] == .double(0))
        v = values(try sensorFields(bthome("40 3A00 3A01 3A03")))
        #expect(v["button_1"] == .text("none") && v["button_2"] == .text("press") && v["button_3"] == .text("triple_press"))
    }

    @Test func bthomeStopsAtWhatItCannotRead() throws {
        // An unknown id: its length is unknown, so the objects before it are all there is.
        var f = try sensorFields(bthome("40 015D FE5D09 03B718"))
        #expect(values(f)["battery"] == .int(93))
        #expect(f.last?.name == "error" && f.contains { $0.name == "humidity" } == false)
        // A truncated object.
        f = try sensorFields(bthome("40 02CA09 03BF"))
        #expect(values(f)["temperature"] == .double(25.06) && f.last?.name == "error")
        // Another version is not BTHome v2.
        #expect(throws: WireError.self) { try sensorFields(bthome("E1 02CA09")) }
        #expect(throws: WireError.self) { try sensorFields(bthome("")) }
    }

    @Test func bthomeEncrypted() throws {
        var keys = SensorKeys()
        let address = try #require(BluetoothAddress("54:48:E6:8F:80:A5"))
        keys.set(h("231d39c1d7cc1ab1aee224cd096db932"), for: address)
        // bthome.io's encryption example and bthome-ble's vectors (same key and address).
        for (payload, counter, temperature) in [("41 e445f3c9962b 33221100 6c7c4519", 1122867, 25.06),
                                                ("41 a47266c95f73 00112233 78237214", 857870592, 25.06),
                                                ("41 ba0db07aeef6 ffffffff 21fd4600", 4294967295, 25.07),
                                                ("41 de40b50e6766 00000000 d7cb95de", 0, 25.07)] {
            let v = values(try sensorFields(bthome(payload), keys: keys))
            #expect(v["encrypted"] == .bool(true) && v["counter"] == .uint(UInt64(counter)))
            #expect(v["temperature"] == .double(temperature) && v["humidity"] == .double(50.55), "\(payload)")
        }
        // The address sent inside the frame (device information bit 1) is the nonce's.
        var v = values(try sensorFields(bthome("43 a5808fe64854 f196c06ffb49 00112233 f08ecbde"), address: "11:22:33:44:55:66", keys: keys))
        #expect(v["address"] == .text("54:48:E6:8F:80:A5") && v["temperature"] == .double(25.06))
        // Shelly BLU Button: encrypted and trigger-based.
        var shelly = SensorKeys()
        shelly.set(h("90bffd73cb6b26ef58a7a8eba9232036"), for: try #require(BluetoothAddress("B4:35:22:F5:3D:A4")))
        v = values(try sensorFields(bthome("45 0aeb84467f85 ba010000 3188788c"), address: "B4:35:22:F5:3D:A4", keys: shelly))
        #expect(v["trigger_based"] == .bool(true) && v["packet_id"] == .int(7) && v["battery"] == .int(100) && v["button"] == .text("press"))
        // No key, a wrong key, another address, a damaged frame: an error, no values.
        v = values(try sensorFields(bthome("41 a47266c95f73 00112233 78237214")))
        #expect(v["error"] != nil && v["temperature"] == nil && v["counter"] == .uint(857870592))
        var wrong = SensorKeys()
        wrong.set(h("814aac74c4f17b6c1581e1ab87816b99"), for: address)
        #expect(values(try sensorFields(bthome("41 a47266c95f73 00112233 78237214"), keys: wrong))["error"] != nil)
        #expect(values(try sensorFields(bthome("41 a47266c95f73 00112233 78237215"), keys: keys))["temperature"] == nil)
        // Too short to hold a counter and a MIC.
        #expect(throws: WireError.self) { try sensorFields(bthome("41 00112233 78237214")) }
    }

    @Test func ruuviOfficialVectors() throws {
        func ruuvi(_ payload: String) -> String { "1BFF9904" + payload }
        var v = values(try sensorFields(ruuvi("0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F")))
        #expect(v["format"] == .text("ruuvi") && v["temperature"] == .double(24.3) && v["humidity"] == .double(53.49))
        #expect(v["pressure"] == .double(1000.44) && v["acceleration_x"] == .double(0.004) && v["acceleration_y"] == .double(-0.004))
        #expect(v["acceleration_z"] == .double(1.036) && v["tx_power"] == .int(4) && v["voltage"] == .double(2.977))
        #expect(v["movement_counter"] == .uint(66) && v["measurement_sequence"] == .uint(205) && v["address"] == .text("CB:B8:33:4C:88:4F"))
        v = values(try sensorFields(ruuvi("057FFFFFFEFFFE7FFF7FFF7FFFFFDEFEFFFECBB8334C884F")))
        #expect(v["temperature"] == .double(163.835) && v["pressure"] == .double(1155.34) && v["humidity"] == .double(163.835))
        #expect(v["acceleration_x"] == .double(32.767) && v["tx_power"] == .int(20) && v["voltage"] == .double(3.646))
        #expect(v["movement_counter"] == .uint(254) && v["measurement_sequence"] == .uint(65534))
        v = values(try sensorFields(ruuvi("058001000000008001800180010000000000CBB8334C884F")))
        #expect(v["temperature"] == .double(-163.835) && v["pressure"] == .double(500) && v["humidity"] == .double(0))
        #expect(v["acceleration_z"] == .double(-32.767) && v["tx_power"] == .int(-40) && v["voltage"] == .double(1.6))
        // Every field "not available": null, and no address.
        let invalid = try sensorFields(ruuvi("058000FFFFFFFF800080008000FFFFFFFFFFFFFFFFFFFFFF"))
        for f in invalid where f.name != "format" {
            guard case .double(let d) = f.value else { Issue.record("\(f.name) = \(f.value)"); continue }
            #expect(d.isNaN, "\(f.name)")
        }
        #expect(!invalid.contains { $0.name == "address" })
        // Other Ruuvi formats are not this one; a short frame is an error.
        #expect(throws: Failure.self) { try sensorFields(ruuvi("0312FC5394C37C0004FFFC040CAC364200CDCBB8334C884F")) }
        #expect(throws: WireError.self) { try sensorFields("05FF9904" + "0512") }
    }

    @Test func thermometerFormats() throws {
        func atc(_ payload: String) -> String {
            let p = h(payload)
            return Hex.string([UInt8(p.count + 3), 0x16, 0x1A, 0x18] + p, separator: "")
        }
        var v = values(try sensorFields(atc("f4830238c1a4 a906 6911 b60b 58 f7 0d")))
        #expect(v["format"] == .text("pvvx") && v["address"] == .text("A4:C1:38:02:83:F4"))
        #expect(v["temperature"] == .double(17.05) && v["humidity"] == .double(44.57) && v["voltage"] == .double(2.998))
        #expect(v["battery"] == .uint(88) && v["counter"] == .uint(247) && v["flags"] == .uint(0x0D))
        v = values(try sensorFields(atc("f4830238c1a4 a906 6911 b60b 58 f7")))
        #expect(v["format"] == .text("pvvx") && v["flags"] == nil && v["counter"] == .uint(247), "built without the flags byte")
        v = values(try sensorFields(atc("a4c1380283f4 00a2 2f 5f 0bf8 19")))
        #expect(v["format"] == .text("atc1441") && v["address"] == .text("A4:C1:38:02:83:F4"))
        #expect(v["temperature"] == .double(16.2) && v["humidity"] == .double(47) && v["battery"] == .uint(95))
        #expect(v["voltage"] == .double(3.064) && v["counter"] == .uint(25))
        // The encrypted variants (8 and 11 bytes) are refused with a reason.
        #expect(throws: WireError.self) { try sensorFields(atc("11d603fbfa7b6dfb1e26fd")) }
    }

    @Test func bindKeyArguments() {
        guard case .success(let (a, k)) = SensorKeys.parse("54:48:E6:8F:80:A5=231d39c1d7cc1ab1aee224cd096db932") else {
            Issue.record("parse failed")
            return
        }
        #expect(a.description == "54:48:E6:8F:80:A5" && k == h("231d39c1d7cc1ab1aee224cd096db932"))
        for bad in ["54:48:E6:8F:80:A5", "nope=231d39c1d7cc1ab1aee224cd096db932", "54:48:E6:8F:80:A5=231d",
                    "54:48:E6:8F:80:A5=231d39c1d7cc1ab1aee224cd096db93g"] {
            guard case .failure(let e) = SensorKeys.parse(bad) else { Issue.record("\(bad) accepted"); continue }
            #expect(e.description.contains(bad))
        }
    }
}
