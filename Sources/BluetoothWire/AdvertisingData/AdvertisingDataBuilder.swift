// Encoding advertising / scan response data (Core Vol 3 Part C §11). Not the hot path:
// structures own their bytes as arrays.

/// One AD structure owning its data, ready to encode as `length | type | data`.
public struct ADStructureValue: WireEncodable, Hashable, Sendable {
    /// The AD type.
    public var type: ADType
    /// The AD data (after length and type).
    public var data: [UInt8]

    /// The most data one structure can carry: its length byte counts the type byte too.
    public static let maximumDataLength = 254

    /// A value with these fields.
    public init(type: ADType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    public var encodedLength: Int { 2 + data.count }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard data.count <= ADStructureValue.maximumDataLength else {
            throw WireError(.valueOutOfRange, at: w.count, "AD structure data longer than 254 bytes")
        }
        try w.u8(UInt8(data.count + 1))
        try w.u8(type.rawValue)
        try w.bytes(data)
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0 ..< 4).map { UInt8(truncatingIfNeeded: v >> UInt32($0 * 8)) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0 ..< 8).map { UInt8(truncatingIfNeeded: v >> UInt64($0 * 8)) } }

    /// The UUID's little-endian bytes in its shortest width.
    static func uuidBytes(_ u: BluetoothUUID) -> [UInt8] {
        if let v = u.uuid16 { return le16(v) }
        if let v = u.uuid32 { return le32(v) }
        return le64(u.low) + le64(u.high)
    }

    /// Flags.
    public static func flags(_ flags: ADFlags) -> ADStructureValue {
        ADStructureValue(type: .flags, data: [flags.rawValue])
    }

    /// Complete (0x09) or Shortened (0x08) Local Name, UTF-8.
    public static func localName(_ name: String, complete: Bool = true) -> ADStructureValue {
        ADStructureValue(type: complete ? .completeLocalName : .shortenedLocalName, data: Array(name.utf8))
    }

    /// Service UUID lists: one structure per width needed (16, 32, 128 bits), each UUID in
    /// its shortest width, in the order given.
    public static func serviceUUIDs(_ uuids: [BluetoothUUID], complete: Bool = true) -> [ADStructureValue] {
        let types: [ADType] = complete
            ? [.completeServiceUUIDs16, .completeServiceUUIDs32, .completeServiceUUIDs128]
            : [.incompleteServiceUUIDs16, .incompleteServiceUUIDs32, .incompleteServiceUUIDs128]
        return uuidLists(uuids, types: types)
    }

    /// Service Solicitation lists (0x14, 0x1F, 0x15), one per width needed.
    public static func serviceSolicitation(_ uuids: [BluetoothUUID]) -> [ADStructureValue] {
        uuidLists(uuids, types: [.serviceSolicitationUUIDs16, .serviceSolicitationUUIDs32, .serviceSolicitationUUIDs128])
    }

    static func uuidLists(_ uuids: [BluetoothUUID], types: [ADType]) -> [ADStructureValue] {
        var out: [ADStructureValue] = []
        for (i, width) in [2, 4, 16].enumerated() {
            let group = uuids.filter { $0.minimumWireWidth == width }
            if group.isEmpty { continue }
            out.append(ADStructureValue(type: types[i], data: group.flatMap(uuidBytes)))
        }
        return out
    }

    /// Service Data with the UUID in its shortest width (0x16, 0x20 or 0x21).
    public static func serviceData(_ uuid: BluetoothUUID, _ payload: [UInt8]) -> ADStructureValue {
        let type: ADType = switch uuid.minimumWireWidth {
        case 2: .serviceData16
        case 4: .serviceData32
        default: .serviceData128
        }
        return ADStructureValue(type: type, data: uuidBytes(uuid) + payload)
    }

    /// Manufacturer Specific Data: the company identifier, then the payload.
    public static func manufacturerData(companyID: UInt16, _ payload: [UInt8]) -> ADStructureValue {
        ADStructureValue(type: .manufacturerSpecificData, data: le16(companyID) + payload)
    }

    /// An iBeacon (Apple manufacturer data).
    public static func iBeacon(_ beacon: IBeacon) -> ADStructureValue {
        manufacturerData(companyID: IBeacon.companyID, beacon.manufacturerPayload)
    }

    /// TX Power Level in dBm.
    public static func txPowerLevel(_ dBm: Int8) -> ADStructureValue {
        ADStructureValue(type: .txPowerLevel, data: [UInt8(bitPattern: dBm)])
    }

    /// Appearance.
    public static func appearance(_ appearance: Appearance) -> ADStructureValue {
        ADStructureValue(type: .appearance, data: le16(appearance.rawValue))
    }

    /// Interval bounds in 1.25 ms units; nil for "no specific" (0xFFFF).
    public static func peripheralConnectionIntervalRange(minimum: UInt16?, maximum: UInt16?) -> ADStructureValue {
        ADStructureValue(type: .peripheralConnectionIntervalRange,
                         data: le16(minimum ?? 0xFFFF) + le16(maximum ?? 0xFFFF))
    }

    /// Advertising Interval in 0.625 ms units: 0x1A with 2 bytes when it fits, else
    /// Advertising Interval - long (0x2F) with 3 or 4 bytes.
    public static func advertisingInterval(_ units: UInt32) -> ADStructureValue {
        if units <= 0xFFFF { return ADStructureValue(type: .advertisingInterval, data: le16(UInt16(units))) }
        let bytes = le32(units)
        return ADStructureValue(type: .advertisingIntervalLong, data: units <= 0xFF_FFFF ? Array(bytes.prefix(3)) : bytes)
    }

    /// Public or Random Target Address: the centrals this advertising is meant for.
    public static func targetAddresses(_ addresses: [BluetoothAddress], random: Bool) -> ADStructureValue {
        ADStructureValue(type: random ? .randomTargetAddress : .publicTargetAddress,
                         data: addresses.flatMap { Array(le64($0.rawValue).prefix(6)) })
    }

    /// LE Bluetooth Device Address.
    public static func leDeviceAddress(_ address: LEAddress) -> ADStructureValue {
        ADStructureValue(type: .leBluetoothDeviceAddress,
                         data: Array(le64(address.address.rawValue).prefix(6)) + [address.type.isRandom ? 1 : 0])
    }

    /// LE Role.
    public static func leRole(_ role: LERole) -> ADStructureValue {
        ADStructureValue(type: .leRole, data: [role.rawValue])
    }

    /// URI with a scheme code point (e.g. 0x17 "https:") and the rest of the URI.
    /// Returns nil when `schemeCodePoint` is not a Unicode scalar.
    public static func uri(schemeCodePoint: UInt32, _ rest: String) -> ADStructureValue? {
        guard let scalar = Unicode.Scalar(schemeCodePoint) else { return nil }
        return ADStructureValue(type: .uri, data: Array(String(Character(scalar)).utf8) + Array(rest.utf8))
    }
}

/// Builds advertising or scan response data from owned AD structures, throwing
/// `.valueOutOfRange` when the total exceeds `maximumLength` (31 for legacy advertising,
/// up to 1650 for extended advertising).
public struct AdvertisingDataBuilder: WireEncodable, Hashable, Sendable {
    /// The structures, in order.
    public var structures: [ADStructureValue]
    /// The most bytes the encoding may take.
    public var maximumLength: Int

    /// A value with these fields.
    public init(maximumLength: Int = AdvertisingData.legacyMaximumLength, _ structures: [ADStructureValue] = []) {
        self.maximumLength = maximumLength
        self.structures = structures
    }

    /// Appends a structure (the limit is checked when encoding).
    public mutating func append(_ s: ADStructureValue) { structures.append(s) }
    /// Appends structures.
    public mutating func append(contentsOf s: [ADStructureValue]) { structures.append(contentsOf: s) }

    public var encodedLength: Int { structures.reduce(0) { $0 + $1.encodedLength } }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard maximumLength <= AdvertisingData.extendedMaximumLength else {
            throw WireError(.valueOutOfRange, at: w.count, "advertising data limit above 1650 bytes")
        }
        guard encodedLength <= maximumLength else {
            throw WireError(.valueOutOfRange, at: w.count, "advertising data longer than the limit")
        }
        for s in structures { try s.encode(into: &w) }
    }
}

extension AdvertisingDataBuilder {
    /// Flags, the name, then as many service UUIDs as fit in 31 bytes; what does not fit
    /// (UUIDs, the whole name when it had to be shortened) goes to the scan response. The
    /// name comes first: centrals find devices by name, and a scan response is not always
    /// seen (passive scanning, some controllers); a shortened name leaves room for the
    /// first service UUID. Names and UUIDs are cut at whole characters and whole UUIDs.
    public static func legacyPayload(name: String, services: [BluetoothUUID], appearance: UInt16 = 0)
        -> (advertisingData: [UInt8], scanResponseData: [UInt8])
    {
        var adv = AdvertisingDataBuilder()
        adv.append(.flags([.leGeneralDiscoverable, .brEdrNotSupported]))
        var scan = AdvertisingDataBuilder()
        func length(_ s: [ADStructureValue]) -> Int { s.reduce(0) { $0 + $1.encodedLength } }
        let nameBytes = Array(name.utf8)
        if adv.encodedLength + 2 + nameBytes.count <= 31 {
            adv.append(.localName(name, complete: true))
        } else {
            // Leave room for the first service UUID, whatever its size: scanners filter on it
            // (a 128-bit one would not fit beside the whole name in the scan response either).
            let firstUUID = services.first.map { length(ADStructureValue.serviceUUIDs([$0], complete: false)) } ?? 0
            var cut = max(1, 31 - adv.encodedLength - 2 - firstUUID)
            while cut > 0, nameBytes[cut] & 0xC0 == 0x80 { cut -= 1 }  // whole UTF-8 characters
            adv.append(ADStructureValue(type: .shortenedLocalName, data: Array(nameBytes[0 ..< cut])))
            var whole = min(29, nameBytes.count)  // the scan response: as much as fits, whole characters
            while whole > 0, whole < nameBytes.count, nameBytes[whole] & 0xC0 == 0x80 { whole -= 1 }
            scan.append(.localName(String(decoding: nameBytes[0 ..< whole], as: UTF8.self), complete: whole == nameBytes.count))
        }
        // UUIDs in the order given (the first profile's first), as many as fit.
        var inAdv: [BluetoothUUID] = []
        var inScan: [BluetoothUUID] = []
        let base = adv.encodedLength
        for u in services {
            if base + length(ADStructureValue.serviceUUIDs(inAdv + [u], complete: false)) <= 31 {
                inAdv.append(u)
            } else if scan.encodedLength + length(ADStructureValue.serviceUUIDs(inScan + [u], complete: false)) <= 31 {
                inScan.append(u)
            }
        }
        let all = inAdv.count + inScan.count == services.count
        adv.append(contentsOf: ADStructureValue.serviceUUIDs(inAdv, complete: all && inScan.isEmpty))
        scan.append(contentsOf: ADStructureValue.serviceUUIDs(inScan, complete: false))
        if appearance != 0, scan.encodedLength + 4 <= 31 {
            scan.append(ADStructureValue(type: .appearance, data: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)]))
        }
        return ((try? adv.encoded()) ?? [], (try? scan.encoded()) ?? [])
    }
}

extension ADStructure {
    /// An owned copy of this structure (for re-encoding).
    public var owned: ADStructureValue { ADStructureValue(type: type, data: Array(data)) }
}
