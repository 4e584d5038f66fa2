import BluetoothWire

/// GATT attribute types. Core Vol 3 Part G §3 and Assigned Numbers.
public enum GATTAttributeType {
    /// «Primary Service» (Part G §3.1).
    public static let primaryService = BluetoothUUID(0x2800)
    /// «Secondary Service».
    public static let secondaryService = BluetoothUUID(0x2801)
    /// «Include» (Part G §3.2).
    public static let include = BluetoothUUID(0x2802)
    /// «Characteristic» declaration (Part G §3.3.1).
    public static let characteristic = BluetoothUUID(0x2803)
    /// Client Characteristic Configuration descriptor (Part G §3.3.3.3).
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    /// Service Changed characteristic (Part G §7.1).
    public static let serviceChanged = BluetoothUUID(0x2A05)
    /// Database Hash (Core Vol 3 Part G §7.3).
    public static let databaseHash = BluetoothUUID(0x2B2A)
}

/// Characteristic Properties. Core Vol 3 Part G §3.3.1.1 Table 3.5.
public struct GATTCharacteristicProperties: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The value may be broadcast (Server Characteristic Configuration).
    public static let broadcast = GATTCharacteristicProperties(rawValue: 0x01)
    /// The value may be read.
    public static let read = GATTCharacteristicProperties(rawValue: 0x02)
    /// The value may be written without response (Write Command).
    public static let writeWithoutResponse = GATTCharacteristicProperties(rawValue: 0x04)
    /// The value may be written with response.
    public static let write = GATTCharacteristicProperties(rawValue: 0x08)
    /// The value may be notified (no confirmation).
    public static let notify = GATTCharacteristicProperties(rawValue: 0x10)
    /// The value may be indicated (confirmed).
    public static let indicate = GATTCharacteristicProperties(rawValue: 0x20)
    /// The value may be written with a Signed Write Command.
    public static let authenticatedSignedWrites = GATTCharacteristicProperties(rawValue: 0x40)
    /// More properties are in the Characteristic Extended Properties descriptor.
    public static let extendedProperties = GATTCharacteristicProperties(rawValue: 0x80)

    static let all: [(GATTCharacteristicProperties, String)] = [
        (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"),
        (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
        (.authenticatedSignedWrites, "authenticated-signed-writes"), (.extendedProperties, "extended-properties"),
    ]

    /// Names of the set bits, lowest first ("read", "notify", ...).
    public var names: [String] { Self.all.filter { contains($0.0) }.map(\.1) }
    public var description: String { names.joined(separator: ",") }
}

/// A characteristic descriptor. Core Vol 3 Part G §3.3.3.
public struct GATTDescriptor: Sendable, Hashable {
    /// The descriptor's handle.
    public var handle: UInt16
    /// The descriptor type (0x2902 for the CCCD...).
    public var uuid: BluetoothUUID
    /// A descriptor as discovered.
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
    /// The assigned name ("Client Characteristic Configuration"), or nil.
    public var name: String? { AssignedNumbers.descriptorName(uuid) }
}

/// A characteristic: its declaration, value and descriptors. Core Vol 3 Part G §3.3.
public struct GATTCharacteristic: Sendable, Hashable {
    /// Handle of the «Characteristic» declaration.
    public var declarationHandle: UInt16
    /// The handle of the value (what reads, writes and notifications name).
    public var valueHandle: UInt16
    /// Last handle of the characteristic definition (§4.6.1: the next declaration − 1 or
    /// the service end).
    public var endHandle: UInt16
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// What clients may do with the value.
    public var properties: GATTCharacteristicProperties
    /// Its descriptors, once discovered.
    public var descriptors: [GATTDescriptor]

    /// A characteristic as discovered.
    public init(declarationHandle: UInt16, valueHandle: UInt16, endHandle: UInt16, uuid: BluetoothUUID,
                properties: GATTCharacteristicProperties, descriptors: [GATTDescriptor] = []) {
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
        self.uuid = uuid
        self.properties = properties
        self.descriptors = descriptors
    }

    /// The assigned name ("Heart Rate Measurement"), or nil.
    public var name: String? { AssignedNumbers.characteristicName(uuid) }
    /// Handle of the Client Characteristic Configuration descriptor, when discovered.
    public var cccdHandle: UInt16? {
        descriptors.first { $0.uuid == GATTAttributeType.clientCharacteristicConfiguration }?.handle
    }
}

/// A service included by another (an «Include» declaration). Core Vol 3 Part G §3.2.
public struct GATTIncludedService: Sendable, Hashable {
    /// Handle of the «Include» declaration.
    public var declarationHandle: UInt16
    /// The included service's first handle.
    public var startHandle: UInt16
    /// The included service's last handle.
    public var endHandle: UInt16
    /// The included service's type.
    public var uuid: BluetoothUUID
    /// An include as discovered.
    public init(declarationHandle: UInt16, startHandle: UInt16, endHandle: UInt16, uuid: BluetoothUUID) {
        self.declarationHandle = declarationHandle
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.uuid = uuid
    }
}

/// A service with everything discovered in it. Core Vol 3 Part G §3.1.
public struct GATTService: Sendable, Hashable {
    /// Handle of the service declaration.
    public var startHandle: UInt16
    /// The service's last handle.
    public var endHandle: UInt16
    /// The service type.
    public var uuid: BluetoothUUID
    /// Primary (found by primary service discovery) or secondary (only included).
    public var isPrimary: Bool
    /// Services it includes, once discovered.
    public var includedServices: [GATTIncludedService]
    /// Its characteristics, once discovered.
    public var characteristics: [GATTCharacteristic]

    /// A service as discovered.
    public init(startHandle: UInt16, endHandle: UInt16, uuid: BluetoothUUID, isPrimary: Bool = true,
                includedServices: [GATTIncludedService] = [], characteristics: [GATTCharacteristic] = []) {
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includedServices = includedServices
        self.characteristics = characteristics
    }

    /// The assigned name ("Battery"), or nil.
    public var name: String? { AssignedNumbers.serviceName(uuid) }
    /// Whether `handle` lies in the service's range.
    public func contains(handle: UInt16) -> Bool { startHandle <= handle && handle <= endHandle }
}

/// A server's attribute database as discovered: primary services (and secondary services
/// reached through includes) in handle order.
public struct GATTDatabase: Sendable, Hashable {
    /// The services, in handle order.
    public var services: [GATTService]
    /// A database of `services` (sorted by handle).
    public init(services: [GATTService] = []) { self.services = services.sorted { $0.startHandle < $1.startHandle } }

    /// Every characteristic, in handle order.
    public var characteristics: [GATTCharacteristic] { services.flatMap(\.characteristics) }
    /// The first characteristic with this UUID.
    public func characteristic(uuid: BluetoothUUID) -> GATTCharacteristic? {
        characteristics.first { $0.uuid == uuid }
    }
    /// The characteristic whose definition contains `handle` (declaration, value or descriptor).
    public func characteristic(containing handle: UInt16) -> GATTCharacteristic? {
        characteristics.first { $0.declarationHandle <= handle && handle <= $0.endHandle }
    }
    /// The first service with this UUID.
    public func service(uuid: BluetoothUUID) -> GATTService? { services.first { $0.uuid == uuid } }
    /// The service containing `handle`.
    public func service(containing handle: UInt16) -> GATTService? { services.first { $0.contains(handle: handle) } }
    /// Number of attributes known (declarations, values, descriptors).
    public var attributeCount: Int {
        services.reduce(0) { n, s in
            n + 1 + s.includedServices.count + s.characteristics.reduce(0) { $0 + 2 + $1.descriptors.count }
        }
    }
}

/// A value pushed by the server: a notification or an indication.
public struct GATTValue: Sendable, Hashable {
    /// The value handle it came from.
    public var handle: UInt16
    /// The value.
    public var value: [UInt8]
    /// True for an indication (confirmed when this value was taken from the stream).
    public var isIndication: Bool
    /// Notifications dropped for this subscriber just before this value because its buffer
    /// was full (the oldest are dropped first). 0 almost always.
    public var droppedBefore: Int

    /// A value as received.
    public init(handle: UInt16, value: [UInt8], isIndication: Bool, droppedBefore: Int = 0) {
        self.handle = handle
        self.value = value
        self.isIndication = isIndication
        self.droppedBefore = droppedBefore
    }
}

/// The server changed its database (Service Changed indication, Core Vol 3 Part G §7.1):
/// the affected handle range and the database after re-discovering it.
public struct GATTDatabaseChange: Sendable, Equatable {
    /// The handles that changed (Service Changed's range).
    public var range: ClosedRange<UInt16>
    /// The cached database with the range re-discovered; nil when nothing was cached
    /// (call ``GATTClient/discoverAll()``) or the re-discovery failed (`error`).
    public var database: GATTDatabase?
    /// Why the new database could not be discovered, if it could not.
    public var error: GATTError?
    /// A change as given.
    public init(range: ClosedRange<UInt16>, database: GATTDatabase?, error: GATTError? = nil) {
        self.range = range
        self.database = database
        self.error = error
    }
}
