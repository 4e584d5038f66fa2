/// An AD type: the second byte of each AD structure (Core Vol 3 Part C §11;
/// Core Specification Supplement Part A §1; values from the Assigned Numbers document §2.3).
/// Open set: unknown values are kept, never rejected.
public struct ADType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A value with these fields.
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// Flags AD type (0x01).
    public static let flags = ADType(0x01)
    /// Incomplete Service UUIDs (16-bit) AD type (0x02).
    public static let incompleteServiceUUIDs16 = ADType(0x02)
    /// Complete Service UUIDs (16-bit) AD type (0x03).
    public static let completeServiceUUIDs16 = ADType(0x03)
    /// Incomplete Service UUIDs (32-bit) AD type (0x04).
    public static let incompleteServiceUUIDs32 = ADType(0x04)
    /// Complete Service UUIDs (32-bit) AD type (0x05).
    public static let completeServiceUUIDs32 = ADType(0x05)
    /// Incomplete Service UUIDs (128-bit) AD type (0x06).
    public static let incompleteServiceUUIDs128 = ADType(0x06)
    /// Complete Service UUIDs (128-bit) AD type (0x07).
    public static let completeServiceUUIDs128 = ADType(0x07)
    /// Shortened Local Name AD type (0x08).
    public static let shortenedLocalName = ADType(0x08)
    /// Complete Local Name AD type (0x09).
    public static let completeLocalName = ADType(0x09)
    /// TX Power Level AD type (0x0A).
    public static let txPowerLevel = ADType(0x0A)
    /// Class Of Device AD type (0x0D).
    public static let classOfDevice = ADType(0x0D)
    /// Simple Pairing Hash C-192 AD type (0x0E).
    public static let simplePairingHashC192 = ADType(0x0E)
    /// Simple Pairing Randomizer R-192 AD type (0x0F).
    public static let simplePairingRandomizerR192 = ADType(0x0F)
    /// Device ID (EIR) or Security Manager TK Value (OOB): same code.
    public static let securityManagerTKValue = ADType(0x10)
    /// Security Manager OOB Flags AD type (0x11).
    public static let securityManagerOOBFlags = ADType(0x11)
    /// Peripheral Connection Interval Range AD type (0x12).
    public static let peripheralConnectionIntervalRange = ADType(0x12)
    /// Service Solicitation UUIDs (16-bit) AD type (0x14).
    public static let serviceSolicitationUUIDs16 = ADType(0x14)
    /// Service Solicitation UUIDs (128-bit) AD type (0x15).
    public static let serviceSolicitationUUIDs128 = ADType(0x15)
    /// Service Data (16-bit) AD type (0x16).
    public static let serviceData16 = ADType(0x16)
    /// Public Target Address AD type (0x17).
    public static let publicTargetAddress = ADType(0x17)
    /// Random Target Address AD type (0x18).
    public static let randomTargetAddress = ADType(0x18)
    /// Appearance AD type (0x19).
    public static let appearance = ADType(0x19)
    /// Advertising Interval AD type (0x1A).
    public static let advertisingInterval = ADType(0x1A)
    /// LE Bluetooth Device Address AD type (0x1B).
    public static let leBluetoothDeviceAddress = ADType(0x1B)
    /// LE Role AD type (0x1C).
    public static let leRole = ADType(0x1C)
    /// Simple Pairing Hash C-256 AD type (0x1D).
    public static let simplePairingHashC256 = ADType(0x1D)
    /// Simple Pairing Randomizer R-256 AD type (0x1E).
    public static let simplePairingRandomizerR256 = ADType(0x1E)
    /// Service Solicitation UUIDs (32-bit) AD type (0x1F).
    public static let serviceSolicitationUUIDs32 = ADType(0x1F)
    /// Service Data (32-bit) AD type (0x20).
    public static let serviceData32 = ADType(0x20)
    /// Service Data (128-bit) AD type (0x21).
    public static let serviceData128 = ADType(0x21)
    /// LE Secure Connections Confirmation Value AD type (0x22).
    public static let leSecureConnectionsConfirmationValue = ADType(0x22)
    /// LE Secure Connections Random Value AD type (0x23).
    public static let leSecureConnectionsRandomValue = ADType(0x23)
    /// URI AD type (0x24).
    public static let uri = ADType(0x24)
    /// Indoor Positioning AD type (0x25).
    public static let indoorPositioning = ADType(0x25)
    /// Transport Discovery Data AD type (0x26).
    public static let transportDiscoveryData = ADType(0x26)
    /// LE Supported Features AD type (0x27).
    public static let leSupportedFeatures = ADType(0x27)
    /// Channel Map Update Indication AD type (0x28).
    public static let channelMapUpdateIndication = ADType(0x28)
    /// PB-ADV AD type (0x29).
    public static let pbADV = ADType(0x29)
    /// Mesh Message AD type (0x2A).
    public static let meshMessage = ADType(0x2A)
    /// Mesh Beacon AD type (0x2B).
    public static let meshBeacon = ADType(0x2B)
    /// BIG Info AD type (0x2C).
    public static let bigInfo = ADType(0x2C)
    /// Broadcast Code AD type (0x2D).
    public static let broadcastCode = ADType(0x2D)
    /// Resolvable Set Identifier AD type (0x2E).
    public static let resolvableSetIdentifier = ADType(0x2E)
    /// Advertising Interval Long AD type (0x2F).
    public static let advertisingIntervalLong = ADType(0x2F)
    /// Broadcast Name AD type (0x30).
    public static let broadcastName = ADType(0x30)
    /// Encrypted Advertising Data AD type (0x31).
    public static let encryptedAdvertisingData = ADType(0x31)
    /// Periodic Advertising Response Timing Information AD type (0x32).
    public static let periodicAdvertisingResponseTimingInformation = ADType(0x32)
    /// Electronic Shelf Label AD type (0x34).
    public static let electronicShelfLabel = ADType(0x34)
    /// 3D Information Data AD type (0x3D).
    public static let threeDInformationData = ADType(0x3D)
    /// Manufacturer Specific Data AD type (0xFF).
    public static let manufacturerSpecificData = ADType(0xFF)

    /// The name from the Assigned Numbers document, or nil for an unassigned value.
    public var name: String? { nameLiteral.map { $0.description } }

    /// The name from the Assigned Numbers document as static text (no allocation), or nil.
    public var nameLiteral: StaticString? {
        switch rawValue {
        case 0x01: "Flags"
        case 0x02: "Incomplete List of 16-bit Service UUIDs"
        case 0x03: "Complete List of 16-bit Service UUIDs"
        case 0x04: "Incomplete List of 32-bit Service UUIDs"
        case 0x05: "Complete List of 32-bit Service UUIDs"
        case 0x06: "Incomplete List of 128-bit Service UUIDs"
        case 0x07: "Complete List of 128-bit Service UUIDs"
        case 0x08: "Shortened Local Name"
        case 0x09: "Complete Local Name"
        case 0x0A: "Tx Power Level"
        case 0x0D: "Class of Device"
        case 0x0E: "Simple Pairing Hash C-192"
        case 0x0F: "Simple Pairing Randomizer R-192"
        case 0x10: "Security Manager TK Value / Device ID"
        case 0x11: "Security Manager Out of Band Flags"
        case 0x12: "Peripheral Connection Interval Range"
        case 0x14: "List of 16-bit Service Solicitation UUIDs"
        case 0x15: "List of 128-bit Service Solicitation UUIDs"
        case 0x16: "Service Data - 16-bit UUID"
        case 0x17: "Public Target Address"
        case 0x18: "Random Target Address"
        case 0x19: "Appearance"
        case 0x1A: "Advertising Interval"
        case 0x1B: "LE Bluetooth Device Address"
        case 0x1C: "LE Role"
        case 0x1D: "Simple Pairing Hash C-256"
        case 0x1E: "Simple Pairing Randomizer R-256"
        case 0x1F: "List of 32-bit Service Solicitation UUIDs"
        case 0x20: "Service Data - 32-bit UUID"
        case 0x21: "Service Data - 128-bit UUID"
        case 0x22: "LE Secure Connections Confirmation Value"
        case 0x23: "LE Secure Connections Random Value"
        case 0x24: "URI"
        case 0x25: "Indoor Positioning"
        case 0x26: "Transport Discovery Data"
        case 0x27: "LE Supported Features"
        case 0x28: "Channel Map Update Indication"
        case 0x29: "PB-ADV"
        case 0x2A: "Mesh Message"
        case 0x2B: "Mesh Beacon"
        case 0x2C: "BIGInfo"
        case 0x2D: "Broadcast_Code"
        case 0x2E: "Resolvable Set Identifier"
        case 0x2F: "Advertising Interval - long"
        case 0x30: "Broadcast_Name"
        case 0x31: "Encrypted Advertising Data"
        case 0x32: "Periodic Advertising Response Timing Information"
        case 0x34: "Electronic Shelf Label"
        case 0x3D: "3D Information Data"
        case 0xFF: "Manufacturer Specific Data"
        default: nil
        }
    }

    /// Width in bytes of each UUID for the service UUID list and solicitation types, else nil.
    @inlinable public var uuidListWidth: Int? {
        switch rawValue {
        case 0x02, 0x03, 0x14: 2
        case 0x04, 0x05, 0x1F: 4
        case 0x06, 0x07, 0x15: 16
        default: nil
        }
    }

    /// Width in bytes of the UUID that starts a Service Data structure, else nil.
    @inlinable public var serviceDataUUIDWidth: Int? {
        switch rawValue {
        case 0x16: 2
        case 0x20: 4
        case 0x21: 16
        default: nil
        }
    }

    public var description: String { name ?? "AD type 0x\(Hex.pad(rawValue, 2))" }
}

/// The Flags AD type value (Core Specification Supplement Part A §1.3).
public struct ADFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LE Limited Discoverable (0x01).
    public static let leLimitedDiscoverable = ADFlags(rawValue: 0x01)
    /// LE General Discoverable (0x02).
    public static let leGeneralDiscoverable = ADFlags(rawValue: 0x02)
    /// BR/EDR Not Supported (0x04).
    public static let brEdrNotSupported = ADFlags(rawValue: 0x04)
    /// Simultaneous LE and BR/EDR to same device capable (Controller).
    public static let simultaneousLEAndBrEdrController = ADFlags(rawValue: 0x08)
    /// Previously "Simultaneous LE and BR/EDR (Host)"; now reserved.
    public static let simultaneousLEAndBrEdrHost = ADFlags(rawValue: 0x10)

    static let bitNames: [(UInt8, String)] = [
        (0x01, "LE Limited Discoverable Mode"),
        (0x02, "LE General Discoverable Mode"),
        (0x04, "BR/EDR Not Supported"),
        (0x08, "Simultaneous LE and BR/EDR (Controller)"),
        (0x10, "Simultaneous LE and BR/EDR (Host)"),
    ]

    /// The names of the set bits; unassigned bits as "bit N".
    public var names: [String] {
        var out: [String] = []
        for bit in 0 ..< 8 {
            let mask = UInt8(1) << UInt8(bit)
            guard rawValue & mask != 0 else { continue }
            out.append(ADFlags.bitNames.first { $0.0 == mask }?.1 ?? "bit \(bit)")
        }
        return out
    }

    public var description: String { names.isEmpty ? "none" : names.joined(separator: ", ") }
}

/// LE Role AD value (Core Specification Supplement Part A §1.17).
public struct LERole: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Peripheral Only (0x00).
    public static let peripheralOnly = LERole(rawValue: 0x00)
    /// Central Only (0x01).
    public static let centralOnly = LERole(rawValue: 0x01)
    /// Peripheral And Central Peripheral Preferred (0x02).
    public static let peripheralAndCentralPeripheralPreferred = LERole(rawValue: 0x02)
    /// Peripheral And Central Central Preferred (0x03).
    public static let peripheralAndCentralCentralPreferred = LERole(rawValue: 0x03)

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x00: "Only Peripheral Role supported"
        case 0x01: "Only Central Role supported"
        case 0x02: "Peripheral and Central Role supported, Peripheral Role preferred"
        case 0x03: "Peripheral and Central Role supported, Central Role preferred"
        default: nil
        }
    }

    public var description: String { name ?? "reserved 0x\(Hex.pad(rawValue, 2))" }
}

/// The Appearance value (Core Specification Supplement Part A §1.12; Assigned Numbers §2.6):
/// category in bits 15...6, subcategory in bits 5...0.
public struct Appearance: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// An appearance from its category (10 bits) and subcategory (6 bits).
    @inlinable public init(category: UInt16, subcategory: UInt8) {
        self.rawValue = (category & 0x3FF) << 6 | UInt16(subcategory & 0x3F)
    }

    /// The category (top 10 bits).
    @inlinable public var category: UInt16 { rawValue >> 6 }
    /// The subcategory (low 6 bits).
    @inlinable public var subcategory: UInt8 { UInt8(truncatingIfNeeded: rawValue & 0x3F) }

    /// Unknown (0x0000).
    public static let unknown = Appearance(rawValue: 0x0000)
    /// Generic Thermometer (0x0300).
    public static let genericThermometer = Appearance(rawValue: 0x0300)
    /// Ear Thermometer (0x0301).
    public static let earThermometer = Appearance(rawValue: 0x0301)
    /// Generic Heart Rate Sensor (0x0340).
    public static let genericHeartRateSensor = Appearance(rawValue: 0x0340)

    /// The category name from the Assigned Numbers (generated table), or nil when unassigned.
    public var categoryName: String? { AssignedNumbers.appearanceCategoryName(category) }

    /// The subcategory name from the Assigned Numbers, or nil for subcategory 0 or one unassigned.
    public var subcategoryName: String? { AssignedNumbers.appearanceSubcategoryName(rawValue) }

    public var description: String {
        let cat = categoryName ?? "category \(category)"
        return subcategory == 0 ? cat : "\(cat) (subcategory \(subcategory))"
    }
}

/// Company identifiers (Assigned Numbers §7): constants for the few companies whose data this
/// library decodes or commonly meets; `name(_:)` knows the whole list (AssignedNumbers).
public enum CompanyIdentifier {
    /// Apple, Inc. (0x004C).
    public static let apple: UInt16 = 0x004C
    /// Microsoft (0x0006).
    public static let microsoft: UInt16 = 0x0006
    /// Nordic Semiconductor ASA (0x0059).
    public static let nordicSemiconductor: UInt16 = 0x0059
    /// Samsung Electronics Co. Ltd. (0x0075).
    public static let samsung: UInt16 = 0x0075
    /// Google (0x00E0).
    public static let google: UInt16 = 0x00E0

    /// The company's name from the Assigned Numbers (the whole list, generated table).
    public static func name(_ id: UInt16) -> String? {
        AssignedNumbers.companyName(id)
    }
}
