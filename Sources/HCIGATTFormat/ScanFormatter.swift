import BluetoothHost
import BluetoothWire

/// Formats scan results as tidy text lines or JSON Lines. Shared by `scan` (live),
/// `replay` (from a btsnoop file) and the benchmarks, so all print the same thing for
/// the same packets.
public struct ScanFormatter: Sendable {
    /// JSON Lines (else text).
    public var json: Bool
    /// Time origin (ns) for the `time` field: the scan start or the first packet.
    public var origin: UInt64
    /// NEW lines so far: devices discovered. A device the scanner forgot (60 s unheard, or
    /// evicted from its 4096-device table) counts again when it comes back; a set of every
    /// address ever shown would grow without bound in a crowd of rotating addresses.
    public private(set) var devicesShown = 0
    /// Lines formatted so far.
    public private(set) var linesFormatted = 0

    /// A formatter; `origin` is the time the `time` field counts from.
    public init(json: Bool, origin: UInt64) {
        self.json = json
        self.origin = origin
    }

    /// The line to print for `event`.
    public mutating func format(_ event: ScanEvent) -> String {
        let (device, isNew) = switch event {
        case .discovered(let d): (d, true)
        case .updated(let d): (d, false)
        }
        if isNew { devicesShown += 1 }
        linesFormatted += 1
        return json ? jsonLine(device, isNew: isNew) : textLine(device, isNew: isNew)
    }

    /// "180D Heart Rate" (or the UUID alone when it has no name).
    public static func serviceName(_ u: BluetoothUUID) -> String {
        AssignedNumbers.serviceName(u) ?? AssignedNumbers.uuidName(u) ?? u.description
    }

    /// The text line for `d` (NEW or an update).
    public func textLine(_ d: DiscoveredDevice, isNew: Bool) -> String {
        var line = (isNew ? "NEW " : "UPD ")
        line += "\(d.address.address) " + d.address.kind.shortName.padding(7)
        line += (d.rssi.map { "\($0) dBm" } ?? "   ? dBm").leftPadded(8) + "  "
        line += (d.name.map { "\"\($0)\"" } ?? "(no name)").padding(22)
        var extras: [String] = []
        if let id = d.identity { extras.append("identity \(id.address) (\(id.type))") }
        if !d.serviceUUIDs.isEmpty { extras.append(d.serviceUUIDs.map(Self.serviceName).joined(separator: ", ")) }
        if let m = d.manufacturerData {
            extras.append("\(m.companyName ?? "company 0x\(Hex.pad(m.companyID, 4))"): \(Hex.string(m.data))")
        }
        if let a = d.appearance, a.rawValue != 0 { extras.append(AssignedNumbers.appearanceName(a.rawValue) ?? "appearance 0x\(Hex.pad(a.rawValue, 4))") }
        if let tx = d.txPower { extras.append("tx \(tx) dBm") }
        if !d.eventType.connectable { extras.append("non-connectable") }
        if d.hasMalformedData { extras.append("MALFORMED DATA") }
        line += extras.joined(separator: "  |  ")
        return line
    }

    /// The JSON line for `d` (`"event":"new"` or `"update"`).
    public func jsonLine(_ d: DiscoveredDevice, isNew: Bool) -> String {
        var f: [Field] = [
            Field("event", .text(isNew ? "new" : "update")),
            Field("time", .double(Double(d.lastSeen &- origin) / 1e9)),
            Field("address", .text(d.address.address.description)),
            Field("address_type", .text(d.address.type.description)),
            Field("address_kind", .text(d.address.kind.rawValue)),
        ]
        if let id = d.identity {
            // A bonded peer's private address, resolved with its IRK.
            f.append(Field("identity", .text(id.address.description)))
            f.append(Field("identity_type", .text(id.type.description)))
        }
        f += [
            Field("rssi", d.rssi.map { .int(Int64($0)) } ?? .text("unavailable")),
        ]
        if let tx = d.txPower { f.append(Field("tx_power", .int(Int64(tx)))) }
        if let name = d.name { f.append(Field("name", .text(name))) }
        f.append(Field("services", .list(d.serviceUUIDs.map { .text($0.description) })))
        f.append(Field("service_names", .list(d.serviceUUIDs.map { .text(Self.serviceName($0)) })))
        if !d.serviceDataUUIDs.isEmpty {
            f.append(Field("service_data_uuids", .list(d.serviceDataUUIDs.map { .text($0.description) })))
        }
        if let m = d.manufacturerData {
            var mf = [Field("company_id", .uint(UInt64(m.companyID)))]
            if let n = m.companyName { mf.append(Field("company", .text(n))) }
            mf.append(Field("data", .bytes(m.data)))
            f.append(Field("manufacturer", .object(mf)))
        }
        if let a = d.appearance {
            f.append(Field("appearance", .object([Field("value", .uint(UInt64(a.rawValue))),
                                                   Field("name", .text(AssignedNumbers.appearanceName(a.rawValue) ?? "unknown"))])))
        }
        if let flags = d.flags { f.append(Field("flags", .uint(UInt64(flags.rawValue)))) }
        f.append(Field("connectable", .bool(d.eventType.connectable)))
        f.append(Field("scannable", .bool(d.eventType.scannable)))
        f.append(Field("pdu", .text(d.eventType.pduName)))
        f.append(Field("report", .text(d.eventType.extendedReport ? "extended" : "legacy")))
        if d.eventType.extendedReport {
            f.append(Field("primary_phy", .text(d.eventType.primaryPHY.name ?? "unknown")))
            f.append(Field("secondary_phy", .text(d.eventType.secondaryPHY.name ?? "none")))
            if let sid = d.eventType.sid { f.append(Field("sid", .uint(UInt64(sid)))) }
        }
        f.append(Field("reports", .uint(UInt64(d.reportCount))))
        f.append(Field("advertising_data", .bytes(d.advertisingData)))
        f.append(Field("scan_response", .bytes(d.scanResponseData)))
        f.append(Field("ad", .list(decodedAD(d.advertisingData))))
        if !d.scanResponseData.isEmpty { f.append(Field("scan_response_ad", .list(decodedAD(d.scanResponseData)))) }
        if d.hasMalformedData { f.append(Field("malformed", .bool(true))) }
        return FieldRenderer.jsonObject(f)
    }

    func decodedAD(_ bytes: [UInt8]) -> [FieldValue] {
        bytes.withUnsafeBytes { buf in
            let fields = AdvertisingData(buf).fields
            guard case .list(let items)? = fields.first(where: { $0.name == "ad_structures" })?.value else { return [] }
            return items
        }
    }
}

extension LEAddress.Kind {
    /// Short label for the text column.
    var shortName: String {
        switch self {
        case .public: "public"
        case .randomStatic: "static"
        case .resolvablePrivate: "rpa"
        case .nonResolvablePrivate: "nrpa"
        case .reservedRandom: "random?"
        case .anonymous: "anon"
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }

    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
