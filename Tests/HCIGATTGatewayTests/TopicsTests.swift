import BluetoothGATT
import BluetoothWire
import Testing
@testable import HCIGATTGateway

@Suite struct TopicsAndDiscoveryTests {
    let device = BluetoothAddress(rawValue: 0xA4C1_3812_3456)

    @Test func topicsPerStyle() {
        let n = GatewayNaming(gatewayID: "kitchen")
        #expect(n.readingTopic(device, "bthome") == "hcigatt/kitchen/A4C138123456/bthome")
        #expect(n.anyGatewayTopic(device, "bthome") == "hcigatt/+/A4C138123456/bthome")
        #expect(n.statusTopic == "hcigatt/kitchen/status")
        let t = GatewayNaming(gatewayID: "kitchen", style: .theengs)
        #expect(t.readingTopic(device, "bthome") == "home/kitchen/BTtoMQTT/A4C138123456")
        #expect(GatewayNaming(gatewayID: "g", prefix: "site/a").readingTopic(device, "ruuvi") == "site/a/g/A4C138123456/ruuvi")
        #expect(GatewayNaming.deviceLevel(BluetoothAddress(rawValue: 0x0000_0000_00AB)) == "0000000000AB")
    }

    @Test func payloadHasTheReadingsKeysFirst() {
        let r = GatewayReading(device: device, measurement: "bthome", seq: 7, milliseconds: 1_764_664_200_123, rssi: -61,
                               fieldsJSON: "\"temperature\":21.5")
        #expect(r.payload(GatewayNaming(gatewayID: "gw\"1")) ==
            "{\"device\":\"A4:C1:38:12:34:56\",\"gateway\":\"gw\\\"1\",\"seq\":7,\"time\":\"2025-12-02T08:30:00.123Z\","
            + "\"rssi\":-61,\"measurement\":\"bthome\",\"temperature\":21.5}")
    }

    @Test func isoTime() {
        #expect(GatewayClock.iso8601(0) == "1970-01-01T00:00:00.000Z")
        #expect(GatewayClock.iso8601(951_782_400_999) == "2000-02-29T00:00:00.999Z")
    }

    @Test func entitiesForMeasurementsOnly() {
        let t = HomeAssistantEntity.classify(field: "temperature_2", isBoolean: false, unit: nil)
        #expect(t?.deviceClass == "temperature" && t?.unit == "°C" && t?.component == "sensor")
        #expect(HomeAssistantEntity.classify(field: "temperature", isBoolean: false, unit: "°F")?.unit == "°F")
        #expect(HomeAssistantEntity.classify(field: "energy", isBoolean: false, unit: nil)?.stateClass == "total_increasing")
        #expect(HomeAssistantEntity.classify(field: "motion", isBoolean: true, unit: nil)?.component == "binary_sensor")
        #expect(HomeAssistantEntity.classify(field: "battery_low", isBoolean: true, unit: nil)?.deviceClass == "battery")
        for meta in ["encrypted", "trigger_based"] { #expect(HomeAssistantEntity.classify(field: meta, isBoolean: true, unit: nil) == nil) }
        for meta in ["packet_id", "counter", "measurement_sequence", "flags", "version"] {
            #expect(HomeAssistantEntity.classify(field: meta, isBoolean: false, unit: nil) == nil, "\(meta)")
        }
    }

    @Test func discoveryConfigIsTheSameFromEveryGateway() {
        let info = HomeAssistantDevice(address: device, name: "Kitchen \"T\"", manufacturer: "BTHome", model: "BTHome v2 sensor")
        let e = HomeAssistantEntity.classify(field: "humidity", isBoolean: false, unit: nil)!
        let a = GatewayNaming(gatewayID: "a"), b = GatewayNaming(gatewayID: "b")
        let ca = HomeAssistantDiscovery.config(a, device: info, measurement: "bthome", stateTopic: a.anyGatewayTopic(device, "bthome"), entity: e)
        let cb = HomeAssistantDiscovery.config(b, device: info, measurement: "bthome", stateTopic: b.anyGatewayTopic(device, "bthome"), entity: e)
        #expect(ca.topic == "homeassistant/sensor/hcigatt_A4C138123456/bthome_humidity/config" && ca.topic == cb.topic)
        #expect(ca.payload.contains("\"unique_id\":\"hcigatt_A4C138123456_bthome_humidity\""))
        #expect(ca.payload.contains("\"state_topic\":\"hcigatt/+/A4C138123456/bthome\""))
        #expect(ca.payload.contains("\"name\":\"Kitchen \\\"T\\\"\""))
        // Only via_device says which gateway sent it.
        func withoutGateway(_ s: String, _ g: String) -> String { s.split(separator: "hcigatt_gateway_\(g)", omittingEmptySubsequences: false).joined(separator: "x") }
        #expect(withoutGateway(ca.payload, "a") == withoutGateway(cb.payload, "b"))
    }

    @Test func presenceIsPerGatewayWithATrackerThatFollowsTheGatewaysStatus() {
        let device = BluetoothAddress(0xA4, 0xC1, 0x38, 0x12, 0x34, 0x56)
        let naming = GatewayNaming(gatewayID: "kitchen")
        #expect(naming.presenceTopic(device) == "hcigatt/kitchen/A4C138123456/presence")
        #expect(GatewayNaming(gatewayID: "kitchen", style: .theengs).presenceTopic(device) == "home/kitchen/BTtoMQTT/A4C138123456/presence")
        let (topic, payload) = HomeAssistantDiscovery.presenceConfig(naming, device: device, name: nil)
        #expect(topic == "homeassistant/device_tracker/hcigatt_A4C138123456/presence_kitchen/config")
        #expect(payload.contains("\"state_topic\":\"hcigatt/kitchen/A4C138123456/presence\""))
        #expect(payload.contains("\"payload_home\":\"present\",\"payload_not_home\":\"away\",\"source_type\":\"bluetooth_le\""))
        #expect(payload.contains("\"availability_topic\":\"hcigatt/kitchen/status\""))
        // No name, manufacturer or model of its own: a sensor's config says those.
        #expect(!payload.contains("\"manufacturer\"") && !payload.contains("\"model\"") && !payload.contains("\"name\":\"A4"))
        #expect(HomeAssistantDiscovery.presenceConfig(naming, device: device, name: "Tag").payload.contains("\"name\":\"Tag\""))
    }

    @Test func controlsAreFoundWhereTheyMeanWhatTheySay() {
        func c(_ handle: UInt16, _ uuid: UInt16, _ properties: GATTCharacteristicProperties) -> GATTCharacteristic {
            GATTCharacteristic(declarationHandle: handle - 1, valueHandle: handle, endHandle: handle, uuid: BluetoothUUID(uuid),
                               properties: properties)
        }
        let db = GATTDatabase(services: [
            // Link Loss's Alert Level is a setting (what to do when the link drops): no button.
            GATTService(startHandle: 1, endHandle: 3, uuid: BluetoothUUID(0x1803), characteristics: [c(3, 0x2A06, [.read, .write])]),
            GATTService(startHandle: 4, endHandle: 6, uuid: BluetoothUUID(0x1802), characteristics: [c(6, 0x2A06, [.writeWithoutResponse])]),
            GATTService(startHandle: 7, endHandle: 12, uuid: BluetoothUUID(0x1809), characteristics: [
                c(9, 0x2A21, [.read, .indicate]),  // read-only here: no number
                c(12, 0x2A21, [.read, .write]),
            ]),
        ])
        let controls = GatewayControl.find(in: db)
        #expect(controls == [.alert(handle: 6), .measurementInterval(handle: 12)])
        let configs = HomeAssistantDiscovery.controlConfigs(GatewayNaming(gatewayID: "kitchen"), device: device, name: nil, controls: controls)
        #expect(configs.map(\.topic) == ["homeassistant/button/hcigatt_A4C138123456/alert_kitchen/config",
                                          "homeassistant/number/hcigatt_A4C138123456/measurement_interval_kitchen/config"])
        #expect(configs[0].payload.contains("\"command_topic\":\"hcigatt/kitchen/A4C138123456/command\""))
        #expect(configs[0].payload.contains("\\\"op\\\": \\\"write-without-response\\\", \\\"handle\\\": 6, \\\"hex\\\": \\\"02\\\""))
        #expect(configs[1].payload.contains("\\\"handle\\\": 12"))
        #expect(GatewayNaming(gatewayID: "kitchen", style: .theengs).commandTopic(level: "A4C138123456")
                    == "home/kitchen/MQTTtoBT/A4C138123456/command")
    }
}
