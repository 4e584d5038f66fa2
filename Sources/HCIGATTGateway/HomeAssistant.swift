// Home Assistant MQTT discovery: one retained config per device and measured value, the
// same whichever gateway sends it, so several gateways hearing one device make one entity.
import BluetoothGATT
import BluetoothWire

/// One Home Assistant entity: a value of a device's readings.
public struct HomeAssistantEntity: Sendable, Hashable {
    /// The JSON key of the value in the reading.
    public var field: String
    /// `sensor` or `binary_sensor`.
    public var component: String
    /// Home Assistant's device class (`temperature`, `motion` ...), if the value has one.
    public var deviceClass: String?
    /// The unit of measurement (sensors only).
    public var unit: String?
    /// `measurement`, `total_increasing` (meters), or nil (binary sensors).
    public var stateClass: String?

    /// The entity for a reading's field, nil for the fields that are not measurements
    /// (format, counters, addresses, flags). `unit` is the unit the reading states, if any;
    /// `isBoolean` for an on/off value.
    public static func classify(field: String, isBoolean: Bool, unit: String?) -> HomeAssistantEntity? {
        // temperature_2 is a second temperature: the same kind.
        var base = Substring(field)
        if let underscore = base.lastIndex(of: "_"), base[base.index(after: underscore)...].allSatisfy(\.isNumber),
           base.index(after: underscore) < base.endIndex {
            base = base[..<underscore]
        }
        if isBoolean {
            let classes: Set<String> = ["motion", "door", "window", "opening", "smoke", "cold", "connectivity", "heat",
                                        "light", "lock", "moving", "occupancy", "plug", "presence", "problem", "running",
                                        "safety", "sound", "tamper", "vibration", "garage_door", "carbon_monoxide",
                                        "battery_charging"]
            let mapped: [Substring: String] = ["moisture_detected": "moisture", "battery_low": "battery", "gas_detected": "gas",
                                               "power_on": "power"]
            let dc = mapped[base] ?? (classes.contains(String(base)) ? String(base) : nil)
            // Other yes/no fields (encrypted, trigger_based) describe the frame, not a sensor.
            guard dc != nil || base == "generic_boolean" else { return nil }
            return HomeAssistantEntity(field: field, component: "binary_sensor", deviceClass: dc, unit: nil, stateClass: nil)
        }
        let table: [Substring: (String?, String?, String)] = [
            "temperature": ("temperature", "°C", "measurement"), "dew_point": ("temperature", "°C", "measurement"),
            "humidity": ("humidity", "%", "measurement"), "pressure": ("pressure", "hPa", "measurement"),
            "battery": ("battery", "%", "measurement"), "battery_level": ("battery", "%", "measurement"),
            "voltage": ("voltage", "V", "measurement"), "illuminance": ("illuminance", "lx", "measurement"),
            "co2": ("carbon_dioxide", "ppm", "measurement"), "pm25": ("pm25", "µg/m³", "measurement"),
            "pm10": ("pm10", "µg/m³", "measurement"), "tvoc": ("volatile_organic_compounds", "µg/m³", "measurement"),
            "power": ("power", "W", "measurement"), "energy": ("energy", "kWh", "total_increasing"),
            "current": ("current", "A", "measurement"), "moisture": ("moisture", "%", "measurement"),
            "mass": ("weight", "kg", "measurement"), "mass_lb": ("weight", "lb", "measurement"),
            "weight": ("weight", "kg", "measurement"), "distance": ("distance", "m", "measurement"),
            "speed": ("speed", "m/s", "measurement"), "volume": ("volume", "L", "measurement"),
            "volume_storage": ("volume_storage", "L", "measurement"), "gas": ("gas", "m³", "total_increasing"),
            "water": ("water", "L", "total_increasing"), "duration": ("duration", "s", "measurement"),
            "conductivity": ("conductivity", "µS/cm", "measurement"), "precipitation": ("precipitation", "mm", "measurement"),
            "tx_power": ("signal_strength", "dBm", "measurement"),
            "temperature_c": ("temperature", "°C", "measurement"), "battery_voltage_mv": ("voltage", "mV", "measurement"),
            "heart_rate": (nil, "bpm", "measurement"), "systolic": ("pressure", "mmHg", "measurement"),
            "diastolic": ("pressure", "mmHg", "measurement"), "mean_arterial_pressure": ("pressure", "mmHg", "measurement"),
            "acceleration_x": (nil, "g", "measurement"), "acceleration_y": (nil, "g", "measurement"),
            "acceleration_z": (nil, "g", "measurement"), "uv_index": (nil, nil, "measurement"),
            "rotation": (nil, "°", "measurement"), "direction": (nil, "°", "measurement"),
            "rotational_speed": (nil, "rpm", "measurement"), "count": (nil, nil, "measurement"),
            "spo2": (nil, "%", "measurement"), "pulse_rate": (nil, "bpm", "measurement"),
            "glucose_concentration": (nil, nil, "measurement"),
        ]
        guard let (dc, defaultUnit, stateClass) = table[base] else { return nil }
        var u = unit ?? defaultUnit
        if u == "beats/min" { u = "bpm" }
        return HomeAssistantEntity(field: field, component: "sensor", deviceClass: dc, unit: u, stateClass: stateClass)
    }
}

/// What Home Assistant shows for a device.
public struct HomeAssistantDevice: Sendable {
    /// The device's address (identity address when known).
    public var address: BluetoothAddress
    /// Its advertised or GATT Device Name, if any (else the address is shown).
    public var name: String?
    /// The manufacturer Home Assistant shows.
    public var manufacturer: String
    /// The model Home Assistant shows.
    public var model: String

    /// A device with these fields.
    public init(address: BluetoothAddress, name: String?, manufacturer: String, model: String) {
        self.address = address
        self.name = name
        self.manufacturer = manufacturer
        self.model = model
    }
}

/// The discovery messages.
public enum HomeAssistantDiscovery {
    /// The config topic and (retained) payload of `entity` of `device`'s `measurement`.
    public static func config(_ naming: GatewayNaming, device: HomeAssistantDevice, measurement: String, stateTopic: String,
                              entity: HomeAssistantEntity) -> (topic: String, payload: String) {
        let node = "hcigatt_\(GatewayNaming.deviceLevel(device.address))"
        let object = GatewayNaming.identifierSafe(entity.field)
        let uniqueID = "\(node)_\(GatewayNaming.identifierSafe(measurement))_\(object)"
        let title = entity.field.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: " ")
        var p = "{\"name\":" + jsonString(title)
        p += ",\"unique_id\":" + jsonString(uniqueID)
        p += ",\"object_id\":" + jsonString(uniqueID)
        p += ",\"state_topic\":" + jsonString(stateTopic)
        let key = jsonKeyPath(entity.field)
        if entity.component == "binary_sensor" {
            p += ",\"value_template\":" + jsonString("{{ 'ON' if value_json\(key) else 'OFF' }}")
        } else {
            p += ",\"value_template\":" + jsonString("{{ value_json\(key) }}")
        }
        if let dc = entity.deviceClass { p += ",\"device_class\":" + jsonString(dc) }
        if let u = entity.unit { p += ",\"unit_of_measurement\":" + jsonString(u) }
        if let sc = entity.stateClass { p += ",\"state_class\":" + jsonString(sc) }
        p += deviceBlock(naming, device.address, name: device.name ?? device.address.description,
                         manufacturer: device.manufacturer, model: device.model)
        p += ",\"origin\":{\"name\":\"hcigatt\"}}"
        return ("\(naming.discoveryPrefix)/\(entity.component)/\(node)/\(GatewayNaming.identifierSafe(measurement))_\(object)/config", p)
    }

    /// The config of `device`'s presence as this gateway sees it: a `device_tracker`
    /// (home: heard within the away timeout), unavailable while the gateway is offline.
    /// Its device block names no manufacturer or model, so it does not overwrite what a
    /// sensor's config says about the same device.
    public static func presenceConfig(_ naming: GatewayNaming, device: BluetoothAddress, name: String?) -> (topic: String, payload: String) {
        let node = "hcigatt_\(GatewayNaming.deviceLevel(device))"
        let gateway = GatewayNaming.identifierSafe(naming.gatewayID)
        let uniqueID = "\(node)_presence_\(gateway)"
        var p = "{\"name\":" + jsonString("Presence (\(naming.gatewayID))")
        p += ",\"unique_id\":" + jsonString(uniqueID)
        p += ",\"object_id\":" + jsonString(uniqueID)
        p += ",\"state_topic\":" + jsonString(naming.presenceTopic(device))
        p += ",\"payload_home\":\"present\",\"payload_not_home\":\"away\",\"source_type\":\"bluetooth_le\""
        p += ",\"availability_topic\":" + jsonString(naming.statusTopic)
        p += ",\"payload_available\":\"online\",\"payload_not_available\":\"offline\""
        p += deviceBlock(naming, device, name: name, manufacturer: nil, model: nil)
        p += ",\"origin\":{\"name\":\"hcigatt\"}}"
        return ("\(naming.discoveryPrefix)/device_tracker/\(node)/presence_\(gateway)/config", p)
    }

    /// Home Assistant controls for `controls` of a followed device (with `--commands
    /// write`): each sends a command on this gateway's command topic with a fresh id per
    /// use (an id is executed once), to the characteristic's value handle.
    public static func controlConfigs(_ naming: GatewayNaming, device: BluetoothAddress, name: String?,
                                      controls: [GatewayControl]) -> [(topic: String, payload: String)] {
        let level = GatewayNaming.deviceLevel(device)
        let node = "hcigatt_\(level)"
        let gateway = GatewayNaming.identifierSafe(naming.gatewayID)
        // A fresh id each time: the gateway executes an id once.
        let id = "ha-{{ now().timestamp() }}"
        return controls.map { control in
            let (component, object, title) = switch control {
            case .measurementInterval: ("number", "measurement_interval", "Measurement Interval")
            case .alert: ("button", "alert", "Alert")
            }
            let uniqueID = "\(node)_\(object)_\(gateway)"
            var p = "{\"name\":" + jsonString(title)
            p += ",\"unique_id\":" + jsonString(uniqueID) + ",\"object_id\":" + jsonString(uniqueID)
            p += ",\"command_topic\":" + jsonString(naming.commandTopic(level: level))
            p += ",\"availability_topic\":" + jsonString(naming.statusTopic)
            p += ",\"payload_available\":\"online\",\"payload_not_available\":\"offline\""
            switch control {
            case .measurementInterval(let handle):
                // uint16 seconds, little-endian.
                let hex = "{{ '%02x%02x' % (value | int % 256, value | int // 256) }}"
                p += ",\"command_template\":"
                    + jsonString("{\"id\": \"\(id)\", \"op\": \"write\", \"handle\": \(handle), \"hex\": \"\(hex)\"}")
                p += ",\"min\":1,\"max\":65535,\"step\":1,\"mode\":\"box\",\"unit_of_measurement\":\"s\""
                p += ",\"device_class\":\"duration\",\"entity_category\":\"config\",\"optimistic\":true"
            case .alert(let handle):
                // High Alert (2), written without response as Immediate Alert asks.
                p += ",\"command_template\":"
                    + jsonString("{\"id\": \"\(id)\", \"op\": \"write-without-response\", \"handle\": \(handle), \"hex\": \"02\"}")
                p += ",\"device_class\":\"identify\""
            }
            p += deviceBlock(naming, device, name: name, manufacturer: nil, model: nil) + ",\"origin\":{\"name\":\"hcigatt\"}}"
            return ("\(naming.discoveryPrefix)/\(component)/\(node)/\(object)_\(gateway)/config", p)
        }
    }

    /// `,"device":{…}`: the device by its address, behind this gateway.
    static func deviceBlock(_ naming: GatewayNaming, _ address: BluetoothAddress, name: String?, manufacturer: String?,
                            model: String?) -> String {
        var p = ",\"device\":{\"identifiers\":[" + jsonString("hcigatt_\(GatewayNaming.deviceLevel(address))") + "]"
        p += ",\"connections\":[[\"bluetooth\"," + jsonString(address.description) + "]]"
        if let name { p += ",\"name\":" + jsonString(name) }
        if let manufacturer { p += ",\"manufacturer\":" + jsonString(manufacturer) }
        if let model { p += ",\"model\":" + jsonString(model) }
        return p + ",\"via_device\":" + jsonString(naming.gatewayDeviceID) + "}"
    }

    /// The gateway's own device: a connectivity sensor on the status topic (retained
    /// `online`, last will `offline`).
    public static func gatewayConfig(_ naming: GatewayNaming) -> (topic: String, payload: String) {
        let node = naming.gatewayDeviceID
        var p = "{\"name\":\"Status\",\"unique_id\":" + jsonString("\(node)_status")
        p += ",\"object_id\":" + jsonString("\(node)_status")
        p += ",\"state_topic\":" + jsonString(naming.statusTopic)
        p += ",\"payload_on\":\"online\",\"payload_off\":\"offline\",\"device_class\":\"connectivity\""
        p += ",\"entity_category\":\"diagnostic\""
        p += ",\"device\":{\"identifiers\":[" + jsonString(node) + "],\"name\":" + jsonString("hcigatt \(naming.gatewayID)")
        p += ",\"manufacturer\":\"hcigatt\",\"model\":\"BLE to MQTT gateway\"}"
        p += ",\"origin\":{\"name\":\"hcigatt\"}}"
        return ("\(naming.discoveryPrefix)/binary_sensor/\(node)/status/config", p)
    }

    /// `.temperature`, or `['a-b']` for a key that is not a plain identifier.
    static func jsonKeyPath(_ key: String) -> String {
        let plain = key.unicodeScalars.allSatisfy { ("a" ... "z").contains($0) || ("0" ... "9").contains($0) || $0 == "_" }
        return plain ? ".\(key)" : "['\(key)']"
    }
}

/// A setting or action of a followed device that Home Assistant can drive through the
/// gateway's commands, found in its database.
public enum GatewayControl: Sendable, Hashable {
    /// Measurement Interval (2A21, seconds) with a write property: a `number`.
    case measurementInterval(handle: UInt16)
    /// Immediate Alert's Alert Level (2A06 in service 1802; Link Loss's is a setting, not
    /// an alert): a `button` that makes the device alert.
    case alert(handle: UInt16)

    /// The value handle the control writes.
    public var handle: UInt16 {
        switch self {
        case .measurementInterval(let h), .alert(let h): h
        }
    }

    /// The controls `database` offers, in handle order.
    public static func find(in database: GATTDatabase) -> [GatewayControl] {
        var out: [GatewayControl] = []
        for service in database.services {
            for c in service.characteristics {
                if c.uuid == BluetoothUUID(0x2A21), c.properties.contains(.write) {
                    out.append(.measurementInterval(handle: c.valueHandle))
                } else if service.uuid == BluetoothUUID(0x1802), c.uuid == BluetoothUUID(0x2A06),
                          c.properties.contains(.writeWithoutResponse) || c.properties.contains(.write) {
                    out.append(.alert(handle: c.valueHandle))
                }
            }
        }
        return out
    }
}
