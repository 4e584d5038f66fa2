/// A 48-bit device address (BD_ADDR). Stored as an integer whose low byte is the
/// first byte on the wire (HCI sends addresses least significant byte first).
/// Printed most significant byte first: `E4:72:17:FD:E2:01`.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64

    @inlinable
    public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// Bytes in display order (most significant first).
    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8, _ b5: UInt8) {
        var v: UInt64 = 0
        for b in [b0, b1, b2, b3, b4, b5] { v = v << 8 | UInt64(b) }
        self.init(rawValue: v)
    }

    /// 00:00:00:00:00:00 (a controller without a public address reports it).
    public static let zero = BluetoothAddress(rawValue: 0)

    /// Parses "AA:BB:CC:DD:EE:FF" (also with '-' separators or none).
    public init?(_ text: some StringProtocol) {
        guard case .success(let bytes) = Hex.parse(text), bytes.count == 6 else { return nil }
        var v: UInt64 = 0
        for b in bytes { v = v << 8 | UInt64(b) }
        self.init(rawValue: v)
    }

    /// Reads a BD_ADDR (six bytes, least significant first).
    @inlinable
    public static func read(_ r: inout ByteReader) throws(WireError) -> BluetoothAddress {
        BluetoothAddress(rawValue: try r.u48("BD_ADDR"))
    }

    /// Appends the encoded value.
    @inlinable
    public func write(_ w: inout ByteWriter) throws(WireError) {
        try w.u48(rawValue)
    }

    /// The two most significant bits, which classify a random address (Core Vol 6 Part B §1.3.2).
    @inlinable public var randomSubtypeBits: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 46) }

    public var description: String {
        var s = ""
        for i in stride(from: 40, through: 0, by: -8) {
            if i != 40 { s += ":" }
            s += Hex.pad(UInt8(truncatingIfNeeded: rawValue >> UInt64(i)), 2)
        }
        return s
    }

    /// Numeric order.
    public static func < (a: BluetoothAddress, b: BluetoothAddress) -> Bool { a.rawValue < b.rawValue }
}

/// Address type as carried in HCI LE commands and events
/// (Peer_Address_Type / Own_Address_Type / Address_Type).
public struct LEAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Public device address (0x00).
    public static let `public` = LEAddressType(rawValue: 0x00)
    /// Random device address (0x01).
    public static let random = LEAddressType(rawValue: 0x01)
    /// Public identity address (resolved from an RPA by the controller).
    public static let publicIdentity = LEAddressType(rawValue: 0x02)
    /// Random (static) identity address (resolved from an RPA by the controller).
    public static let randomIdentity = LEAddressType(rawValue: 0x03)
    /// Extended Advertising Report: anonymous advertisement, no address.
    public static let anonymous = LEAddressType(rawValue: 0xFF)

    /// A random address (or a random identity).
    public var isRandom: Bool { self == .random || self == .randomIdentity }

    /// ``description`` for the assigned types as static text (no allocation), else nil.
    public var nameLiteral: StaticString? {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public-identity"
        case .randomIdentity: "random-identity"
        case .anonymous: "anonymous"
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public-identity"
        case .randomIdentity: "random-identity"
        case .anonymous: "anonymous"
        default: "type-0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// An address together with its type, and the random-address sub-kind
/// from its top two bits (Core Vol 6 Part B §1.3).
public struct LEAddress: Hashable, Sendable, CustomStringConvertible {
    /// The six bytes.
    public var address: BluetoothAddress
    /// Public or random (or an identity type).
    public var type: LEAddressType

    /// An address of `type`.
    @inlinable
    public init(_ address: BluetoothAddress, type: LEAddressType) {
        self.address = address
        self.type = type
    }

    /// Address and type in one word (the type above the 48 address bits): one hasher
    /// round instead of two for every table keyed by address (a scan's device table, a
    /// replay's devices shown).
    @inlinable public var key: UInt64 { address.rawValue | UInt64(type.rawValue) << 48 }

    /// Hashes ``key``: equal addresses have equal keys.
    @inlinable public func hash(into hasher: inout Hasher) { hasher.combine(key) }

    /// What kind of address it is (the random sub-kind from the top bits).
    public enum Kind: String, Sendable {
        case `public`
        case randomStatic = "random-static"
        case resolvablePrivate = "resolvable-private"
        case nonResolvablePrivate = "non-resolvable-private"
        /// Random address with top bits 0b10: reserved for future use.
        case reservedRandom = "reserved-random"
        case anonymous
    }

    /// The kind, from the type and, for random addresses, the two top bits.
    public var kind: Kind {
        if type == .anonymous { return .anonymous }
        guard type.isRandom else { return .public }
        switch address.randomSubtypeBits {
        case 0b11: return .randomStatic
        case 0b01: return .resolvablePrivate
        case 0b00: return .nonResolvablePrivate
        default: return .reservedRandom
        }
    }

    public var description: String { "\(address) (\(kind.rawValue))" }

    /// "AA:BB:CC:DD:EE:FF" (public), "AA:BB:CC:DD:EE:FF/random", ".../public", or what
    /// ``description`` gives ("AA:BB:CC:DD:EE:FF (random-static)"); nil for anything else.
    public init?(_ text: some StringProtocol) {
        let s = String(text)
        var addressPart = Substring(s)
        var typePart: Substring = "public"
        if let slash = s.firstIndex(of: "/") {
            addressPart = s[..<slash]
            typePart = s[s.index(after: slash)...]
        } else if let space = s.firstIndex(of: " "), s.hasSuffix(")"), s[s.index(after: space)...].hasPrefix("("),
                  s.distance(from: space, to: s.endIndex) >= 3 {
            addressPart = s[..<space]
            typePart = s[s.index(space, offsetBy: 2) ..< s.index(before: s.endIndex)]
            guard let kind = Kind(rawValue: String(typePart)), kind != .anonymous else { return nil }
            typePart = kind == .public ? "public" : "random"
        }
        guard addressPart.count == 17, let a = BluetoothAddress(addressPart) else { return nil }
        switch typePart.lowercased() {
        case "public": self.init(a, type: .public)
        case "random": self.init(a, type: .random)
        default: return nil
        }
    }
}
