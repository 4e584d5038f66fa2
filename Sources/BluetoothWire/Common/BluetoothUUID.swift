/// A Bluetooth UUID. 16- and 32-bit forms are aliases within the Bluetooth Base UUID
/// `00000000-0000-1000-8000-00805F9B34FB` (Core Vol 3 Part B §2.5.1), so a UUID
/// compares equal whatever width it arrived in.
///
/// Stored as the 128-bit value in big-endian (string) order: `high` holds the first
/// eight bytes of the string form, `low` the last eight.
public struct BluetoothUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The most significant 64 bits.
    public var high: UInt64
    /// The least significant 64 bits.
    public var low: UInt64

    /// The low 64 bits of the Base UUID; a 16/32-bit alias has exactly these.
    public static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB
    /// The high 64 bits of the Base UUID with the 32-bit value zero.
    public static let baseHigh: UInt64 = 0x0000_0000_0000_1000

    /// A UUID from its two halves.
    @inlinable
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A 16-bit UUID on the Bluetooth Base UUID.
    @inlinable
    public init(_ uuid16: UInt16) { self.init(uuid32: UInt32(uuid16)) }

    /// A 32-bit UUID on the Bluetooth Base UUID.
    @inlinable
    public init(uuid32: UInt32) {
        self.init(high: UInt64(uuid32) << 32 | BluetoothUUID.baseHigh, low: BluetoothUUID.baseLow)
    }

    /// True when this UUID is a 16- or 32-bit alias of the Base UUID.
    @inlinable public var isBaseAlias: Bool {
        low == BluetoothUUID.baseLow && high & 0xFFFF_FFFF == BluetoothUUID.baseHigh
    }

    /// The 16-bit value when this UUID has one.
    @inlinable public var uuid16: UInt16? {
        guard isBaseAlias, high >> 48 == 0 else { return nil }
        return UInt16(truncatingIfNeeded: high >> 32)
    }

    /// The 32-bit value when this UUID has one.
    @inlinable public var uuid32: UInt32? {
        guard isBaseAlias else { return nil }
        return UInt32(truncatingIfNeeded: high >> 32)
    }

    /// The shortest width this UUID can be sent in: 2, 4 or 16 bytes.
    @inlinable public var minimumWireWidth: Int {
        if uuid16 != nil { return 2 }
        if uuid32 != nil { return 4 }
        return 16
    }

    /// Reads a little-endian UUID of `width` bytes (2, 4 or 16) as found in ATT and AD data.
    @inlinable
    public static func read(_ r: inout ByteReader, width: Int) throws(WireError) -> BluetoothUUID {
        switch width {
        case 2: return BluetoothUUID(try r.u16("UUID16"))
        case 4: return BluetoothUUID(uuid32: try r.u32("UUID32"))
        case 16:
            let lo = try r.u64("UUID128")
            let hi = try r.u64("UUID128")
            return BluetoothUUID(high: hi, low: lo)
        default:
            throw r.error(.invalidLength, "UUID must be 2, 4 or 16 bytes")
        }
    }

    /// Parses a whole buffer of 2, 4 or 16 bytes as a little-endian UUID.
    public init(wire bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        self = try BluetoothUUID.read(&r, width: bytes.count)
    }

    /// Writes the UUID in `width` bytes (2, 4 or 16), little-endian.
    /// Throws when the UUID has no alias of that width.
    @inlinable
    public func write(_ w: inout ByteWriter, width: Int) throws(WireError) {
        switch width {
        case 2:
            guard let v = uuid16 else { throw WireError(.valueOutOfRange, at: w.count, "UUID has no 16-bit form") }
            try w.u16(v)
        case 4:
            guard let v = uuid32 else { throw WireError(.valueOutOfRange, at: w.count, "UUID has no 32-bit form") }
            try w.u32(v)
        case 16:
            try w.u64(low)
            try w.u64(high)
        default:
            throw WireError(.valueOutOfRange, at: w.count, "UUID width must be 2, 4 or 16")
        }
    }

    /// Writes the UUID in its shortest width.
    @inlinable
    public func write(_ w: inout ByteWriter) throws(WireError) {
        try write(&w, width: minimumWireWidth)
    }

    /// Parses "180D", "0x180D", "0000180D" (32-bit) or the 36-character 128-bit form
    /// (dashes optional), case-insensitive.
    public init?(_ text: some StringProtocol) {
        var s = Substring(text)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        let hexOnly = s.filter { $0 != "-" }
        if s.contains("-") {
            // Dashes only in the canonical 8-4-4-4-12 places.
            let groups = s.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        }
        guard hexOnly.allSatisfy(\.isHexDigit) else { return nil }
        switch hexOnly.count {
        case 4:
            guard let v = UInt16(hexOnly, radix: 16) else { return nil }
            self.init(v)
        case 8:
            guard let v = UInt32(hexOnly, radix: 16) else { return nil }
            self.init(uuid32: v)
        case 32:
            guard let hi = UInt64(hexOnly.prefix(16), radix: 16),
                  let lo = UInt64(hexOnly.suffix(16), radix: 16) else { return nil }
            self.init(high: hi, low: lo)
        default:
            return nil
        }
    }

    /// The full 36-character form, uppercase.
    public var uuidString: String {
        let h = Hex.pad(high, 16), l = Hex.pad(low, 16)
        let a = h.prefix(8), b = h.dropFirst(8).prefix(4), c = h.suffix(4)
        let d = l.prefix(4), e = l.suffix(12)
        return "\(a)-\(b)-\(c)-\(d)-\(e)"
    }

    /// Short form for aliases ("180D", "0000FEAA" for 32-bit), else the full form.
    public var description: String {
        if let v = uuid16 { return Hex.pad(v, 4) }
        if let v = uuid32 { return Hex.pad(v, 8) }
        return uuidString
    }

    /// Numeric order.
    public static func < (a: BluetoothUUID, b: BluetoothUUID) -> Bool {
        (a.high, a.low) < (b.high, b.low)
    }
}
