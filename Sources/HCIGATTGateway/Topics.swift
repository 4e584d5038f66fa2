// Topic names, reading payloads and Home Assistant discovery configs: pure functions of
// the gateway's settings and a reading, so they are tested without a broker.
import BluetoothWire

/// Where readings go.
public enum TopicStyle: String, Sendable {
    /// `<prefix>/<gateway>/<DEVICE>/<measurement>` (prefix `hcigatt`).
    case hcigatt
    /// `home/<gateway>/BTtoMQTT/<DEVICE>`, as Theengs Gateway and OpenMQTTGateway publish,
    /// with their field names added, so their dashboards work unchanged.
    case theengs
}

/// The gateway's naming settings.
public struct GatewayNaming: Sendable {
    /// This gateway's id (default: the host name): a topic level and the HA device.
    public var gatewayID: String
    /// The first topic level (`hcigatt`; `home` with the Theengs style).
    public var prefix: String
    /// The topic layout.
    public var style: TopicStyle
    /// Home Assistant's discovery prefix.
    public var discoveryPrefix = "homeassistant"

    /// Naming for `gatewayID`; `prefix` defaults to the style's (hcigatt, or home for theengs).
    public init(gatewayID: String, prefix: String? = nil, style: TopicStyle = .hcigatt) {
        self.gatewayID = gatewayID
        self.style = style
        self.prefix = prefix ?? (style == .theengs ? "home" : "hcigatt")
    }

    /// "A4C138123456": a device's address as one topic level (and in unique ids).
    public static func deviceLevel(_ a: BluetoothAddress) -> String {
        let hex = String(a.rawValue, radix: 16, uppercase: true)
        return String(repeating: "0", count: 12 - hex.count) + hex
    }

    /// The topic of `device`'s `measurement` readings from this gateway.
    public func readingTopic(_ device: BluetoothAddress, _ measurement: String) -> String {
        switch style {
        case .hcigatt: "\(prefix)/\(gatewayID)/\(Self.deviceLevel(device))/\(measurement)"
        case .theengs: "\(prefix)/\(gatewayID)/BTtoMQTT/\(Self.deviceLevel(device))"
        }
    }

    /// The same topic for any gateway (a `+` level): what Home Assistant subscribes to, so
    /// one entity follows a device whichever gateway hears it.
    public func anyGatewayTopic(_ device: BluetoothAddress, _ measurement: String) -> String {
        switch style {
        case .hcigatt: "\(prefix)/+/\(Self.deviceLevel(device))/\(measurement)"
        case .theengs: "\(prefix)/+/BTtoMQTT/\(Self.deviceLevel(device))"
        }
    }

    /// What the gateway subscribes to for commands (``commandDevice(_:)`` reads the device):
    /// `<prefix>/<gateway>/+/command` (Theengs style: `<prefix>/<gateway>/MQTTtoBT/+/command`).
    public var commandFilter: String {
        switch style {
        case .hcigatt: "\(prefix)/\(gatewayID)/+/command"
        case .theengs: "\(prefix)/\(gatewayID)/MQTTtoBT/+/command"
        }
    }

    /// The command topic of the device at `level` (what ``commandFilter`` takes).
    public func commandTopic(level: String) -> String {
        String(commandFilter.dropLast("+/command".count)) + level + "/command"
    }

    /// The device level of a command topic (12 hex digits, as in the reading topics), or nil
    /// when `topic` is not a command topic of this gateway.
    public func commandDevice(_ topic: String) -> String? {
        let head = String(commandFilter.dropLast("+/command".count))
        guard topic.hasPrefix(head), topic.hasSuffix("/command") else { return nil }
        let level = topic.dropFirst(head.count).dropLast("/command".count)
        guard !level.isEmpty, !level.utf8.contains(UInt8(ascii: "/")) else { return nil }
        return String(level)
    }

    /// The device an address level names ("A4C138123456", any case), or nil.
    public static func device(level: String) -> BluetoothAddress? {
        guard level.utf8.count == 12, GatewayCommand.hex(level) != nil,
              let v = UInt64(level, radix: 16) else { return nil }
        return BluetoothAddress(rawValue: v)
    }

    /// Where the reply to a command for the device at `level` goes.
    public func replyTopic(level: String) -> String {
        switch style {
        case .hcigatt: "\(prefix)/\(gatewayID)/\(level)/reply"
        case .theengs: "\(prefix)/\(gatewayID)/BTtoMQTT/\(level)/reply"
        }
    }

    /// Where `device`'s presence goes (retained `present` or `away`): this gateway's, since
    /// being in range is a gateway's view (two gateways may hear one device differently).
    public func presenceTopic(_ device: BluetoothAddress) -> String {
        switch style {
        case .hcigatt: "\(prefix)/\(gatewayID)/\(Self.deviceLevel(device))/presence"
        case .theengs: "\(prefix)/\(gatewayID)/BTtoMQTT/\(Self.deviceLevel(device))/presence"
        }
    }

    /// Retained `online`, and the last will `offline`.
    public var statusTopic: String { "\(prefix)/\(gatewayID)/status" }
    /// Where the number of readings dropped from a full spool is published.
    public var droppedTopic: String { "\(prefix)/\(gatewayID)/dropped" }
    /// Home Assistant says `online` here when it starts: discovery is sent again.
    public var homeAssistantStatusTopic: String { "\(discoveryPrefix)/status" }
    /// The gateway's own Home Assistant device identifier.
    public var gatewayDeviceID: String { "hcigatt_gateway_\(Self.identifierSafe(gatewayID))" }

    /// Letters, digits, `_` and `-` only (Home Assistant's node and object ids).
    public static func identifierSafe(_ s: String) -> String {
        String(s.unicodeScalars.map { c -> Character in
            switch c {
            case "a" ... "z", "A" ... "Z", "0" ... "9", "_", "-": Character(c)
            default: "_"
            }
        })
    }
}

/// One reading as published: its measurement name and its fields in JSON.
public struct GatewayReading: Sendable {
    /// The device (its identity address when a private address was resolved).
    public var device: BluetoothAddress
    /// The resolvable private address the reading came from, when `device` is its identity.
    public var heardAs: BluetoothAddress?
    /// `bthome`, `ruuvi`, `pvvx`, `atc1441`, or a characteristic such as `temperature_measurement`.
    public var measurement: String
    /// The device's reading number (``SequenceStore``).
    public var seq: UInt64
    /// When it was received: milliseconds since 1970 UTC.
    public var milliseconds: Int64
    /// The signal strength it arrived with (broadcast readings).
    public var rssi: Int8?
    /// The decoded fields (`"temperature":21.5,...`): JSON members without braces.
    public var fieldsJSON: String

    /// A reading with these fields.
    public init(device: BluetoothAddress, measurement: String, seq: UInt64, milliseconds: Int64, rssi: Int8?, fieldsJSON: String) {
        self.device = device
        self.measurement = measurement
        self.seq = seq
        self.milliseconds = milliseconds
        self.rssi = rssi
        self.fieldsJSON = fieldsJSON
    }

    /// The JSON message: device (and `heard_as`, the private address it was heard from,
    /// when `device` is the identity behind it), gateway, seq, time, rssi, measurement,
    /// then the fields.
    public func payload(_ naming: GatewayNaming, theengsFields: String = "") -> String {
        var s = "{\"device\":\"\(device)\""
        if let heardAs { s += ",\"heard_as\":\"\(heardAs)\"" }
        s += ",\"gateway\":" + jsonString(naming.gatewayID)
        s += ",\"seq\":\(seq),\"time\":\"\(GatewayClock.iso8601(milliseconds))\""
        if let rssi { s += ",\"rssi\":\(rssi)" }
        s += ",\"measurement\":" + jsonString(measurement)
        if naming.style == .theengs { s += ",\"id\":\"\(device)\"" + theengsFields }
        if !fieldsJSON.isEmpty { s += "," + fieldsJSON }
        return s + "}"
    }
}

/// `s` as a JSON string literal (the JSON writers' escaping, ``OutputBuffer/jsonString(_:)``).
public func jsonString(_ s: String) -> String {
    var out = OutputBuffer(capacity: s.utf8.count + 8)
    out.jsonString(s)
    return out.string
}
