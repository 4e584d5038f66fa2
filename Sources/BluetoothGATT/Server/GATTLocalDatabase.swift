import BluetoothHost
import BluetoothWire

/// Who may read or write an attribute, and with what link security. Core Vol 3 Part F
/// §3.2.5 and Part C §10.3. Shaped like CoreBluetooth's `CBAttributePermissions`.
public struct GATTPermissions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Clients may read.
    public static let readable = GATTPermissions(rawValue: 0x01)
    /// Clients may write.
    public static let writeable = GATTPermissions(rawValue: 0x02)
    /// Reading needs an encrypted link (else Insufficient Encryption).
    public static let readEncryptionRequired = GATTPermissions(rawValue: 0x04)
    /// Writing needs an encrypted link.
    public static let writeEncryptionRequired = GATTPermissions(rawValue: 0x08)
    /// Reading needs an authenticated (MITM-protected) key (else Insufficient Authentication).
    public static let readAuthenticationRequired = GATTPermissions(rawValue: 0x10)
    /// Writing needs an authenticated key.
    public static let writeAuthenticationRequired = GATTPermissions(rawValue: 0x20)

    /// Read and write, no security needed.
    public static let readWrite: GATTPermissions = [.readable, .writeable]

    /// Every permission with its name.
    public static let names: [(GATTPermissions, String)] = [
        (.readable, "read"), (.writeable, "write"),
        (.readEncryptionRequired, "read-encrypted"), (.writeEncryptionRequired, "write-encrypted"),
        (.readAuthenticationRequired, "read-authenticated"), (.writeAuthenticationRequired, "write-authenticated"),
    ]

    /// Parses a permission name as printed by ``description`` ("read-encrypted").
    public init?(name: some StringProtocol) {
        guard let p = Self.names.first(where: { $0.1 == name }) else { return nil }
        self = p.0
    }

    public var description: String { Self.names.filter { contains($0.0) }.map(\.1).joined(separator: ",") }
}

/// What a read or write handler learns about the request.
public struct GATTRequestContext: Sendable {
    /// The client (one per ATT bearer).
    public var client: ATTServerClientID
    /// The attribute handle.
    public var handle: UInt16
    /// Read Blob / Prepare Write offset (0 otherwise).
    public var offset: Int
    /// The link's security when the request arrived.
    public var security: LinkSecurity
    /// The client's Client Characteristic Configuration values by descriptor handle, as they
    /// were when the request arrived (a control point checks that the client subscribed where
    /// its procedure will send).
    public var configurations: [UInt16: UInt16] = [:]
    /// The write asks for a response (Write Request, or a prepared write executed); false for
    /// a Write Command or a Signed Write, which the client sends and forgets (a control point
    /// that must answer refuses those).
    public var withResponse = true
    /// The value came in prepared writes and is being executed (Execute Write Request): the
    /// write is stored only if every prepared value is taken, so a handler that must act on
    /// the write (a control point) cannot know yet that it will happen.
    public var prepared = false

    /// What the client set in the Client Characteristic Configuration descriptor at `handle`.
    public func configuration(ofDescriptor handle: UInt16) -> GATTClientConfiguration {
        GATTClientConfiguration(rawValue: configurations[handle] ?? 0)
    }
}

/// Computes a value when a client reads it: the whole value (the server applies the
/// offset and the MTU), or an ATT error (e.g. ``ATTErrorCode/insufficientAuthorization``).
/// Runs inside the server's state machine: keep it short and do not call back into the server.
public typealias GATTReadHandler = @Sendable (GATTRequestContext) -> Result<[UInt8], ATTErrorCode>

/// Decides on a write before it is stored: nil accepts, an error code rejects (the client
/// gets it in an Error Response; for Write Command it is dropped silently). `value` is the
/// whole new value (prepared writes are joined first).
public typealias GATTWriteHandler = @Sendable (GATTRequestContext, _ value: [UInt8]) -> ATTErrorCode?

/// Where an attribute's value comes from.
public enum GATTLocalValue: Sendable {
    /// Stored in the database; writes replace it; ``GATTServer/updateValue(_:for:)`` sets it.
    case stored([UInt8])
    /// Computed on every read.
    case computed(GATTReadHandler)
}

/// A descriptor of a local characteristic. Core Vol 3 Part G §3.3.3. The Client
/// Characteristic Configuration descriptor is added by the database for characteristics
/// that notify or indicate; do not add one yourself.
public struct GATTLocalDescriptor: Sendable {
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// Who may read and write it.
    public var permissions: GATTPermissions
    /// Its value: stored, or computed on each read.
    public var value: GATTLocalValue
    /// Called before a write is stored (nil: writes within 512 bytes are accepted).
    public var onWrite: GATTWriteHandler?

    /// A descriptor, readable by default.
    public init(uuid: BluetoothUUID, permissions: GATTPermissions = .readable, value: GATTLocalValue,
                onWrite: GATTWriteHandler? = nil) {
        self.uuid = uuid
        self.permissions = permissions
        self.value = value
        self.onWrite = onWrite
    }

    /// Characteristic User Description (0x2901): a UTF-8 name, read-only.
    public static func userDescription(_ text: String) -> GATTLocalDescriptor {
        GATTLocalDescriptor(uuid: BluetoothUUID(0x2901), value: .stored(Array(text.utf8)))
    }

    /// Characteristic Extended Properties (0x2900): bit 0 Reliable Write, bit 1 Writable Auxiliaries.
    public static func extendedProperties(reliableWrite: Bool = false, writableAuxiliaries: Bool = false) -> GATTLocalDescriptor {
        let bits: UInt8 = (reliableWrite ? 1 : 0) | (writableAuxiliaries ? 2 : 0)
        return GATTLocalDescriptor(uuid: BluetoothUUID(0x2900), value: .stored([bits, 0]))
    }

    /// Characteristic Presentation Format (0x2904). Core Vol 3 Part G §3.3.3.5.
    public static func presentationFormat(format: UInt8, exponent: Int8 = 0, unit: UInt16,
                                          namespace: UInt8 = 1, description: UInt16 = 0) -> GATTLocalDescriptor {
        GATTLocalDescriptor(uuid: BluetoothUUID(0x2904), value: .stored([
            format, UInt8(bitPattern: exponent), UInt8(unit & 0xFF), UInt8(unit >> 8),
            namespace, UInt8(description & 0xFF), UInt8(description >> 8),
        ]))
    }
}

/// A characteristic of a local service. Core Vol 3 Part G §3.3. Like `CBMutableCharacteristic`:
/// properties say what clients may try (they are advertised in the declaration),
/// permissions say what the server allows.
public struct GATTLocalCharacteristic: Sendable {
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// What the declaration advertises.
    public var properties: GATTCharacteristicProperties
    /// What the server allows (with security).
    public var permissions: GATTPermissions
    /// Its value: stored, or computed on each read.
    public var value: GATTLocalValue
    /// Descriptors besides the CCCD (which the database adds).
    public var descriptors: [GATTLocalDescriptor]
    /// Called before a write is stored (nil: every write within ``maximumLength`` is accepted).
    public var onWrite: GATTWriteHandler?
    /// Longest value a client may write (at most 512, Core Vol 3 Part F §3.2.9).
    public var maximumLength: Int
    /// Permissions of the CCCD the server adds (notify/indicate): read and write by default;
    /// with encryption required, subscribing needs an encrypted link (what health devices do).
    public var cccdPermissions: GATTPermissions = .readWrite

    /// A characteristic; without `permissions`, what `properties` imply (``permissions(for:)``).
    public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions? = nil,
                value: GATTLocalValue = .stored([]), descriptors: [GATTLocalDescriptor] = [],
                maximumLength: Int = ATT.maximumAttributeValueLength, onWrite: GATTWriteHandler? = nil) {
        self.uuid = uuid
        self.properties = properties
        self.permissions = permissions ?? GATTLocalCharacteristic.permissions(for: properties)
        self.value = value
        self.descriptors = descriptors
        self.maximumLength = min(max(0, maximumLength), ATT.maximumAttributeValueLength)
        self.onWrite = onWrite
    }

    /// Readable when the properties say read; writeable when they say write or write
    /// without response; nothing else.
    public static func permissions(for properties: GATTCharacteristicProperties) -> GATTPermissions {
        var p: GATTPermissions = []
        if properties.contains(.read) { p.insert(.readable) }
        if !properties.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites]) { p.insert(.writeable) }
        return p
    }
}

/// A local service. Core Vol 3 Part G §3.1. Like `CBMutableService`.
public struct GATTLocalService: Sendable {
    /// The service type.
    public var uuid: BluetoothUUID
    /// Primary, or secondary (only reachable by includes).
    public var isPrimary: Bool
    /// Services this one includes, by UUID (the first service in the database with that UUID).
    public var includedServices: [BluetoothUUID]
    /// Its characteristics, in handle order.
    public var characteristics: [GATTLocalCharacteristic]

    /// A service of `characteristics`.
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, includedServices: [BluetoothUUID] = [],
                characteristics: [GATTLocalCharacteristic] = []) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includedServices = includedServices
        self.characteristics = characteristics
    }
}

/// Why a database could not be built.
public struct GATTDatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the database.
    public var message: String
    public var description: String { message }
}

/// Assigned UUIDs the server gives meaning to.
public enum GATTServerUUID {
    /// Generic Access (the device name and appearance).
    public static let genericAccess = BluetoothUUID(0x1800)
    /// Generic Attribute (Service Changed, Client Supported Features, Database Hash).
    public static let genericAttribute = BluetoothUUID(0x1801)
    /// Device Name.
    public static let deviceName = BluetoothUUID(0x2A00)
    /// Appearance.
    public static let appearance = BluetoothUUID(0x2A01)
    /// Service Changed.
    public static let serviceChanged = BluetoothUUID(0x2A05)
    /// Client Supported Features.
    public static let clientSupportedFeatures = BluetoothUUID(0x2B29)
    /// Database Hash.
    public static let databaseHash = BluetoothUUID(0x2B2A)
    /// Characteristic Extended Properties.
    public static let extendedProperties = BluetoothUUID(0x2900)
    /// Characteristic User Description.
    public static let userDescription = BluetoothUUID(0x2901)
    /// Client Characteristic Configuration (CCCD).
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    /// Server Characteristic Configuration.
    public static let serverCharacteristicConfiguration = BluetoothUUID(0x2903)
    /// Characteristic Presentation Format.
    public static let presentationFormat = BluetoothUUID(0x2904)
    /// Characteristic Aggregate Format.
    public static let aggregateFormat = BluetoothUUID(0x2905)
}

extension GATTLocalService {
    /// Generic Access (0x1800): Device Name and Appearance, read-only. Core Vol 3 Part C §12.
    public static func genericAccess(deviceName: String, appearance: UInt16 = 0) -> GATTLocalService {
        GATTLocalService(uuid: GATTServerUUID.genericAccess, characteristics: [
            GATTLocalCharacteristic(uuid: GATTServerUUID.deviceName, properties: .read,
                                    value: .stored(Array(deviceName.utf8.prefix(248)))),
            GATTLocalCharacteristic(uuid: GATTServerUUID.appearance, properties: .read,
                                    value: .stored([UInt8(appearance & 0xFF), UInt8(appearance >> 8)])),
        ])
    }

    /// Generic Attribute (0x1801): Service Changed (indicate), Client Supported Features
    /// (per client) and Database Hash. Core Vol 3 Part G §7. The server computes and serves
    /// the dynamic values; the placeholders here are never read.
    public static func genericAttribute() -> GATTLocalService {
        GATTLocalService(uuid: GATTServerUUID.genericAttribute, characteristics: [
            GATTLocalCharacteristic(uuid: GATTServerUUID.serviceChanged, properties: .indicate, permissions: [],
                                    value: .stored([])),
            GATTLocalCharacteristic(uuid: GATTServerUUID.clientSupportedFeatures, properties: [.read, .write]),
            GATTLocalCharacteristic(uuid: GATTServerUUID.databaseHash, properties: .read),
        ])
    }
}

/// The link security a database asks for (``GATTLocalService/requiring(_:)``).
public enum GATTSecurityRequirement: Sendable, Hashable {
    /// An encrypted link (any pairing, or a bond).
    case encryption
    /// An encrypted link with an authenticated (MITM-protected) key.
    case authentication
}

extension GATTLocalService {
    /// The service with every characteristic value, descriptor and CCCD needing `requirement`:
    /// reads, writes and subscriptions get Insufficient Encryption or Insufficient
    /// Authentication until the link has it (the client then pairs).
    public func requiring(_ requirement: GATTSecurityRequirement) -> GATTLocalService {
        func secured(_ p: GATTPermissions) -> GATTPermissions {
            var q = p
            if p.contains(.readable) { q.insert(requirement == .encryption ? .readEncryptionRequired : [.readEncryptionRequired, .readAuthenticationRequired]) }
            if p.contains(.writeable) { q.insert(requirement == .encryption ? .writeEncryptionRequired : [.writeEncryptionRequired, .writeAuthenticationRequired]) }
            return q
        }
        var s = self
        s.characteristics = characteristics.map { c in
            var c = c
            c.permissions = secured(c.permissions)
            c.cccdPermissions = secured(c.cccdPermissions)
            c.descriptors = c.descriptors.map { d in
                var d = d
                d.permissions = secured(d.permissions)
                return d
            }
            return c
        }
        return s
    }
}
