import BluetoothCrypto
import BluetoothWire

/// A GATT database laid out as ATT attributes: handles from 0x0001 up, with no gaps, so
/// a handle finds its attribute by index. Built from ``GATTLocalService``s in order (Core
/// Vol 3 Part G §3): service declaration, includes, then per characteristic its
/// declaration, value, CCCD (when it notifies or indicates) and descriptors.
public struct GATTAttributeTable: Sendable {
    enum Role: Sendable {
        case service(end: UInt16)
        case include
        case characteristicDeclaration
        /// A characteristic value; `cccd` is its CCCD handle (0: none).
        case value(properties: GATTCharacteristicProperties, maximumLength: Int, cccd: UInt16)
        /// A CCCD of the characteristic whose value is at `valueHandle`.
        case cccd(valueHandle: UInt16, properties: GATTCharacteristicProperties)
        case descriptor(maximumLength: Int)
        /// Values the server computes: Client Supported Features (per client), Database Hash.
        case clientSupportedFeatures
        case databaseHash
    }

    struct Attribute: Sendable {
        var handle: UInt16
        var type: BluetoothUUID
        var permissions: GATTPermissions
        var role: Role
        var value: [UInt8]
        var read: GATTReadHandler?
        var onWrite: GATTWriteHandler?
    }

    private(set) var attributes: [Attribute]
    /// The Database Hash (Core Vol 3 Part G §7.3) as AES-CMAC returns it (most significant
    /// octet first, e.g. F1CA2D48… for the specification's example database). On the
    /// air it is sent least significant octet first, as PTS and Zephyr do.
    public let hash: [UInt8]
    /// The layout as a client would discover it (handles of every declaration, value and descriptor).
    public let layout: GATTDatabase
    /// Value handle of Service Changed, or nil when the database has no Generic Attribute service.
    public let serviceChangedHandle: UInt16?

    /// The last handle in use.
    public var lastHandle: UInt16 { UInt16(attributes.count) }

    /// The attribute table for `services` (handles from 0x0001, Database Hash computed);
    /// fails on a database that cannot be served (a duplicate CCCD, an include of a missing service...).
    public init(services: [GATTLocalService]) throws(GATTDatabaseError) {
        // Pass 1: where each service starts and ends (includes point forward and back).
        var ranges: [(start: UInt16, end: UInt16)] = []
        var next = 1
        for s in services {
            var n = 1 + s.includedServices.count
            for c in s.characteristics {
                n += 2 + c.descriptors.count
                if !c.properties.isDisjoint(with: [.notify, .indicate]) { n += 1 }
            }
            guard next + n - 1 <= 0xFFFF else { throw GATTDatabaseError(message: "the database needs more than 65535 handles") }
            ranges.append((UInt16(next), UInt16(next + n - 1)))
            next += n
        }
        var attrs: [Attribute] = []
        attrs.reserveCapacity(next - 1)
        var layoutServices: [GATTService] = []
        var serviceChanged: UInt16?
        func handle() -> UInt16 { UInt16(attrs.count + 1) }

        for (index, s) in services.enumerated() {
            let range = ranges[index]
            attrs.append(Attribute(handle: handle(), type: s.isPrimary ? GATTAttributeType.primaryService : GATTAttributeType.secondaryService,
                                   permissions: .readable, role: .service(end: range.end), value: Self.uuidBytes(s.uuid)))
            var service = GATTService(startHandle: range.start, endHandle: range.end, uuid: s.uuid, isPrimary: s.isPrimary)
            for included in s.includedServices {
                guard let target = services.firstIndex(where: { $0.uuid == included }) else {
                    throw GATTDatabaseError(message: "service \(s.uuid) includes \(included), which is not in the database")
                }
                guard target != index else { throw GATTDatabaseError(message: "service \(s.uuid) includes itself") }
                let r = ranges[target]
                var v = [UInt8(r.start & 0xFF), UInt8(r.start >> 8), UInt8(r.end & 0xFF), UInt8(r.end >> 8)]
                if let u16 = included.uuid16 { v += [UInt8(u16 & 0xFF), UInt8(u16 >> 8)] }  // §3.2: 128-bit UUIDs are left out
                service.includedServices.append(GATTIncludedService(declarationHandle: handle(), startHandle: r.start,
                                                                    endHandle: r.end, uuid: included))
                attrs.append(Attribute(handle: handle(), type: GATTAttributeType.include, permissions: .readable,
                                       role: .include, value: v))
            }
            for c in s.characteristics {
                if c.descriptors.contains(where: { $0.uuid == GATTServerUUID.clientCharacteristicConfiguration }) {
                    throw GATTDatabaseError(message: "characteristic \(c.uuid): the server adds the CCCD itself")
                }
                let declaration = handle()
                let valueHandle = declaration + 1
                let hasCCCD = !c.properties.isDisjoint(with: [.notify, .indicate])
                let cccdHandle: UInt16 = hasCCCD ? valueHandle + 1 : 0
                let end = valueHandle + UInt16(c.descriptors.count) + (hasCCCD ? 1 : 0)
                attrs.append(Attribute(handle: declaration, type: GATTAttributeType.characteristic, permissions: .readable,
                                       role: .characteristicDeclaration,
                                       value: [c.properties.rawValue, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + Self.uuidBytes(c.uuid)))
                var role = Role.value(properties: c.properties, maximumLength: c.maximumLength, cccd: cccdHandle)
                if c.uuid == GATTServerUUID.clientSupportedFeatures { role = .clientSupportedFeatures }
                if c.uuid == GATTServerUUID.databaseHash { role = .databaseHash }
                if c.uuid == GATTServerUUID.serviceChanged, s.uuid == GATTServerUUID.genericAttribute { serviceChanged = valueHandle }
                let (value, read) = try Self.source(c.value, "characteristic \(c.uuid)")
                attrs.append(Attribute(handle: valueHandle, type: c.uuid, permissions: c.permissions, role: role,
                                       value: value, read: read, onWrite: c.onWrite))
                var descriptors: [GATTDescriptor] = []
                if hasCCCD {
                    attrs.append(Attribute(handle: cccdHandle, type: GATTServerUUID.clientCharacteristicConfiguration,
                                           permissions: c.cccdPermissions, role: .cccd(valueHandle: valueHandle, properties: c.properties),
                                           value: [0, 0]))
                    descriptors.append(GATTDescriptor(handle: cccdHandle, uuid: GATTServerUUID.clientCharacteristicConfiguration))
                }
                for d in c.descriptors {
                    let (dv, dr) = try Self.source(d.value, "descriptor \(d.uuid)")
                    descriptors.append(GATTDescriptor(handle: handle(), uuid: d.uuid))
                    attrs.append(Attribute(handle: handle(), type: d.uuid, permissions: d.permissions,
                                           role: .descriptor(maximumLength: ATT.maximumAttributeValueLength),
                                           value: dv, read: dr, onWrite: d.onWrite))
                }
                service.characteristics.append(GATTCharacteristic(declarationHandle: declaration, valueHandle: valueHandle,
                                                                  endHandle: end, uuid: c.uuid, properties: c.properties,
                                                                  descriptors: descriptors))
            }
            layoutServices.append(service)
        }
        attributes = attrs
        layout = GATTDatabase(services: layoutServices)
        serviceChangedHandle = serviceChanged
        do throws(BluetoothCrypto.Failure) {
            hash = try Self.computeHash(attrs)
        } catch {
            throw GATTDatabaseError(message: "cannot compute the Database Hash: \(error)")
        }
    }

    /// A stored value (checked against the 512-byte limit) or a read handler.
    static func source(_ v: GATTLocalValue, _ what: String) throws(GATTDatabaseError) -> ([UInt8], GATTReadHandler?) {
        switch v {
        case .stored(let bytes):
            guard bytes.count <= ATT.maximumAttributeValueLength else {
                throw GATTDatabaseError(message: "\(what): value of \(bytes.count) bytes is over 512")
            }
            return (bytes, nil)
        case .computed(let handler):
            return ([], handler)
        }
    }

    /// The attribute at `handle`, or nil (0 and handles past the end).
    func index(of handle: UInt16) -> Int? {
        let i = Int(handle) &- 1
        return i >= 0 && i < attributes.count ? i : nil
    }

    subscript(index: Int) -> Attribute {
        get { attributes[index] }
        set { attributes[index] = newValue }
    }

    /// The stored value at `handle` (nil for computed values and unknown handles).
    public func storedValue(_ handle: UInt16) -> [UInt8]? {
        guard let i = index(of: handle), attributes[i].read == nil else { return nil }
        return attributes[i].value
    }

    /// Replaces the stored value at `handle` (a characteristic value or descriptor).
    mutating func setStoredValue(_ value: [UInt8], at i: Int) {
        attributes[i].value = value
    }

    static func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
        if let u = uuid.uuid16 { return [UInt8(u & 0xFF), UInt8(u >> 8)] }
        var out = [UInt8](repeating: 0, count: 16)
        out.withUnsafeMutableBytes { buf in
            var w = ByteWriter(buf)
            try? uuid.write(&w, width: 16)  // 16 bytes always fit 16
        }
        return out
    }

    /// Core Vol 3 Part G §7.3.1: AES-CMAC with a zero key over, in handle order, handle ‖
    /// type ‖ value of every service, include, characteristic declaration and Extended
    /// Properties descriptor, and handle ‖ type of every User Description, CCCD, SCCD,
    /// Presentation Format and Aggregate Format descriptor; all little-endian as on the air.
    static func computeHash(_ attrs: [Attribute]) throws(BluetoothCrypto.Failure) -> [UInt8] {
        var m: [UInt8] = []
        for a in attrs {
            guard let t = a.type.uuid16 else { continue }
            let withValue: Bool
            switch t {
            case 0x2800, 0x2801, 0x2802, 0x2803, 0x2900: withValue = true
            case 0x2901, 0x2902, 0x2903, 0x2904, 0x2905: withValue = false
            default: continue
            }
            m += [UInt8(a.handle & 0xFF), UInt8(a.handle >> 8), UInt8(t & 0xFF), UInt8(t >> 8)]
            if withValue { m += a.value }
        }
        return try BluetoothCrypto.aesCMAC(key: [UInt8](repeating: 0, count: 16), message: m)
    }
}
