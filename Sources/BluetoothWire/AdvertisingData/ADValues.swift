// Typed views of AD structure values (Core Specification Supplement Part A §1).
// All are structs of scalars and slices of the caller's buffer: valid only while that
// buffer is alive, and decoding them never allocates.

/// A service UUID list (Supplement Part A §1.1) or service solicitation list (§1.10):
/// UUIDs of one width (2, 4 or 16 bytes), little-endian, back to back.
public struct ADUUIDList: Sequence {
    /// The UUID bytes (a view).
    public let bytes: UnsafeRawBufferPointer
    /// 2, 4 or 16.
    public let width: Int
    /// True for the "Complete List" types (and for solicitation lists, which have no variant).
    public let isComplete: Bool

    @inlinable
    init(validating s: ADStructure, width: Int, isComplete: Bool) throws(WireError) {
        guard s.data.count % width == 0 else {
            throw s.lengthError("UUID list length is not a multiple of the UUID width")
        }
        self.bytes = s.data
        self.width = width
        self.isComplete = isComplete
    }

    /// A list over `bytes` (e.g. built by hand); throws unless `width` is 2, 4 or 16 and
    /// divides the byte count.
    @inlinable
    public init(bytes: UnsafeRawBufferPointer, width: Int, isComplete: Bool = true) throws(WireError) {
        guard width == 2 || width == 4 || width == 16 else {
            throw WireError(.invalidLength, at: 0, "UUID width must be 2, 4 or 16")
        }
        try self.init(validating: ADStructure(type: ADType(0), data: bytes), width: width, isComplete: isComplete)
    }

    /// How many elements there are.
    @inlinable public var count: Int { bytes.count / width }
    @inlinable public var underestimatedCount: Int { count }
    /// There are no elements.
    @inlinable public var isEmpty: Bool { bytes.isEmpty }

    @inlinable
    func uuid(atByte i: Int) -> BluetoothUUID {
        switch width {
        case 2:
            return BluetoothUUID(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt16.self)))
        case 4:
            return BluetoothUUID(uuid32: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
        default:
            let lo = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let hi = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self))
            return BluetoothUUID(high: hi, low: lo)
        }
    }

    /// The UUID at `index`, or nil when out of range.
    @inlinable
    public subscript(index: Int) -> BluetoothUUID? {
        guard index >= 0, index < count else { return nil }
        return uuid(atByte: index &* width)
    }

    /// Whether `uuid` is in the list.
    @inlinable
    public func contains(_ uuid: BluetoothUUID) -> Bool {
        var it = makeIterator()
        while let u = it.next() { if u == uuid { return true } }
        return false
    }

    /// Iterates the UUIDs.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let list: ADUUIDList
        @usableFromInline var position: Int
        @inlinable init(_ list: ADUUIDList) { self.list = list; self.position = 0 }
        @inlinable
        public mutating func next() -> BluetoothUUID? {
            guard list.bytes.count &- position >= list.width else { return nil }
            let u = list.uuid(atByte: position)
            position &+= list.width
            return u
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(self) }
}

/// Shortened (§1.2, type 0x08) or Complete (type 0x09) Local Name: raw UTF-8 bytes.
public struct ADLocalName {
    /// The name's UTF-8 bytes (a view).
    public let bytes: UnsafeRawBufferPointer
    /// The complete name (else shortened).
    public let isComplete: Bool

    /// A value with these fields.
    @inlinable
    public init(bytes: UnsafeRawBufferPointer, isComplete: Bool) {
        self.bytes = bytes
        self.isComplete = isComplete
    }

    /// The name as a String, invalid UTF-8 replaced (allocates: for display only).
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// Compares the raw bytes with `utf8` without allocating.
    @inlinable
    public func equals(_ utf8: some Sequence<UInt8>) -> Bool {
        var i = 0
        for b in utf8 {
            guard i < bytes.count, bytes[i] == b else { return false }
            i &+= 1
        }
        return i == bytes.count
    }
}

/// Peripheral Connection Interval Range (§1.9): two u16 in units of 1.25 ms;
/// 0xFFFF means no specific minimum / maximum.
public struct ADConnectionIntervalRange: Hashable, Sendable {
    /// Connection interval minimum, units of 1.25 ms (0xFFFF: no specific value).
    public var rawMinimum: UInt16
    /// Connection interval maximum, units of 1.25 ms (0xFFFF: no specific value).
    public var rawMaximum: UInt16
    /// "No specific value" (0xFFFF).
    public static let noSpecificValue: UInt16 = 0xFFFF

    /// A value with these fields.
    @inlinable public init(rawMinimum: UInt16, rawMaximum: UInt16) {
        self.rawMinimum = rawMinimum
        self.rawMaximum = rawMaximum
    }

    /// The minimum in 1.25 ms units, or nil for "no specific minimum".
    @inlinable public var minimum: UInt16? { rawMinimum == 0xFFFF ? nil : rawMinimum }
    /// The maximum in 1.25 ms units, or nil for "no specific maximum".
    @inlinable public var maximum: UInt16? { rawMaximum == 0xFFFF ? nil : rawMaximum }
}

/// Service Data (§1.11): a UUID of 2, 4 or 16 bytes followed by service-specific data.
public struct ADServiceData {
    /// The service UUID the data belongs to.
    public let uuid: BluetoothUUID
    /// The width the UUID was sent in.
    public let uuidWidth: Int
    /// The payload (a view of the packet).
    public let payload: UnsafeRawBufferPointer
    /// Offset of `payload` in the whole packet, for errors from nested decoders.
    public let payloadOffset: Int

    /// A value with these fields.
    @inlinable
    public init(uuid: BluetoothUUID, uuidWidth: Int, payload: UnsafeRawBufferPointer, payloadOffset: Int = 0) {
        self.uuid = uuid
        self.uuidWidth = uuidWidth
        self.payload = payload
        self.payloadOffset = payloadOffset
    }
}

/// Public (§1.13) or Random (§1.14) Target Address list: 6-byte addresses back to back.
public struct ADAddressList: Sequence {
    /// The addresses' bytes (a view).
    public let bytes: UnsafeRawBufferPointer
    /// Random addresses (else public).
    public let isRandom: Bool

    /// How many elements there are.
    @inlinable public var count: Int { bytes.count / 6 }
    @inlinable public var underestimatedCount: Int { count }

    @inlinable
    init(_ bytes: UnsafeRawBufferPointer, isRandom: Bool) {
        self.bytes = bytes
        self.isRandom = isRandom
    }

    /// Iterates the addresses.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let bytes: UnsafeRawBufferPointer
        @usableFromInline var position: Int
        @inlinable init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes; self.position = 0 }
        @inlinable
        public mutating func next() -> BluetoothAddress? {
            guard bytes.count &- position >= 6 else { return nil }
            let lo = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
            let hi = UInt64(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: position &+ 4, as: UInt16.self)))
            position &+= 6
            return BluetoothAddress(rawValue: lo | hi << 32)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(bytes) }
}

/// URI (§1.18): the scheme as one UTF-8-encoded code point from the URI scheme name
/// string mapping (Assigned Numbers §2.7; 0x01 = no scheme), then the rest of the URI.
public struct ADURI {
    /// The scheme's code point (e.g. 0x17 "https:").
    public let schemeCodePoint: UInt32
    /// The rest of the URI (UTF-8, a view).
    public let rest: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable
    public init(schemeCodePoint: UInt32, rest: UnsafeRawBufferPointer) {
        self.schemeCodePoint = schemeCodePoint
        self.rest = rest
    }

    /// The scheme text for the code points this library knows, "" for 0x01 (no scheme).
    public var schemeName: String? {
        switch schemeCodePoint {
        case 0x01: ""
        case 0x02: "aaa:"
        case 0x03: "aaas:"
        case 0x04: "about:"
        case 0x05: "acap:"
        case 0x06: "acct:"
        case 0x07: "cap:"
        case 0x08: "cid:"
        case 0x09: "coap:"
        case 0x0A: "coaps:"
        case 0x0B: "crid:"
        case 0x0C: "data:"
        case 0x0D: "dav:"
        case 0x0E: "dict:"
        case 0x0F: "dns:"
        case 0x10: "file:"
        case 0x11: "ftp:"
        case 0x12: "geo:"
        case 0x13: "go:"
        case 0x14: "gopher:"
        case 0x15: "h323:"
        case 0x16: "http:"
        case 0x17: "https:"
        default: nil
        }
    }

    /// The whole URI for display (allocates); an unknown scheme shows as "<scheme 0xNNNN>".
    public var string: String {
        (schemeName ?? "<scheme 0x\(Hex.pad(schemeCodePoint, 4))>") + String(decoding: rest, as: UTF8.self)
    }
}

/// Manufacturer Specific Data (§1.4): a company identifier (Assigned Numbers §7) then data.
public struct ADManufacturerData {
    /// The company identifier.
    public let companyID: UInt16
    /// The payload (a view of the packet).
    public let payload: UnsafeRawBufferPointer
    /// Offset of `payload` in the whole packet.
    public let payloadOffset: Int

    /// A value with these fields.
    @inlinable
    public init(companyID: UInt16, payload: UnsafeRawBufferPointer, payloadOffset: Int = 0) {
        self.companyID = companyID
        self.payload = payload
        self.payloadOffset = payloadOffset
    }

    /// The company's name (nil: not assigned).
    public var companyName: String? { CompanyIdentifier.name(companyID) }
}

/// An AD structure's value decoded by type.
public enum ADValue {
    case flags(ADFlags)
    case serviceUUIDs(ADUUIDList)
    case serviceSolicitation(ADUUIDList)
    case localName(ADLocalName)
    case txPowerLevel(Int8)
    case peripheralConnectionIntervalRange(ADConnectionIntervalRange)
    case serviceData(ADServiceData)
    case appearance(Appearance)
    case targetAddresses(ADAddressList)
    /// Advertising Interval (0x1A) or Advertising Interval - long (0x2F), in 0.625 ms units.
    case advertisingInterval(UInt32)
    case leDeviceAddress(LEAddress)
    case leRole(LERole)
    case uri(ADURI)
    case manufacturerData(ADManufacturerData)
    /// Any other type: its raw data.
    case other(ADType, UnsafeRawBufferPointer)
}

extension ADStructure {
    /// Decodes the value by type. Unknown types come back as `.other`, never an error;
    /// a known type with a malformed value throws.
    @inlinable
    public func value() throws(WireError) -> ADValue {
        switch type.rawValue {
        case 0x01: return .flags(try flags())
        case 0x02 ... 0x07: return .serviceUUIDs(try serviceUUIDs())
        case 0x14, 0x15, 0x1F: return .serviceSolicitation(try serviceUUIDs())
        case 0x08, 0x09: return .localName(try localName())
        case 0x0A: return .txPowerLevel(try txPowerLevel())
        case 0x12: return .peripheralConnectionIntervalRange(try peripheralConnectionIntervalRange())
        case 0x16, 0x20, 0x21: return .serviceData(try serviceData())
        case 0x17, 0x18: return .targetAddresses(try targetAddresses())
        case 0x19: return .appearance(try appearance())
        case 0x1A, 0x2F: return .advertisingInterval(try advertisingInterval())
        case 0x1B: return .leDeviceAddress(try leDeviceAddress())
        case 0x1C: return .leRole(try leRole())
        case 0x24: return .uri(try uri())
        case 0xFF: return .manufacturerData(try manufacturerData())
        default: return .other(type, data)
        }
    }

    /// Flags (0x01). The field may be zero or more octets (Supplement Part A §1.3.1):
    /// the first octet holds the defined bits, an empty field means no flags set.
    @inlinable
    public func flags() throws(WireError) -> ADFlags {
        guard type.rawValue == 0x01 else { throw typeError() }
        return ADFlags(rawValue: data.first ?? 0)
    }

    /// A 16/32/128-bit service UUID list (0x02...0x07) or solicitation list (0x14, 0x1F, 0x15).
    @inlinable
    public func serviceUUIDs() throws(WireError) -> ADUUIDList {
        guard let width = type.uuidListWidth else { throw typeError() }
        let complete = type.rawValue == 0x03 || type.rawValue == 0x05 || type.rawValue == 0x07
            || type.rawValue == 0x14 || type.rawValue == 0x15 || type.rawValue == 0x1F
        return try ADUUIDList(validating: self, width: width, isComplete: complete)
    }

    /// Shortened (0x08) or Complete (0x09) Local Name.
    @inlinable
    public func localName() throws(WireError) -> ADLocalName {
        guard type.rawValue == 0x08 || type.rawValue == 0x09 else { throw typeError() }
        return ADLocalName(bytes: data, isComplete: type.rawValue == 0x09)
    }

    /// Tx Power Level (0x0A): one signed byte, dBm.
    @inlinable
    public func txPowerLevel() throws(WireError) -> Int8 {
        guard type.rawValue == 0x0A else { throw typeError() }
        guard data.count == 1 else { throw lengthError("Tx Power Level must be 1 byte") }
        return Int8(bitPattern: data.load(fromByteOffset: 0, as: UInt8.self))
    }

    /// Peripheral Connection Interval Range (0x12): 4 bytes.
    @inlinable
    public func peripheralConnectionIntervalRange() throws(WireError) -> ADConnectionIntervalRange {
        guard type.rawValue == 0x12 else { throw typeError() }
        guard data.count == 4 else { throw lengthError("Peripheral Connection Interval Range must be 4 bytes") }
        var r = reader
        return ADConnectionIntervalRange(rawMinimum: try r.u16(), rawMaximum: try r.u16())
    }

    /// Service Data - 16/32/128-bit UUID (0x16, 0x20, 0x21).
    @inlinable
    public func serviceData() throws(WireError) -> ADServiceData {
        guard let width = type.serviceDataUUIDWidth else { throw typeError() }
        guard data.count >= width else { throw lengthError("Service Data shorter than its UUID") }
        var r = reader
        let uuid = try BluetoothUUID.read(&r, width: width)
        let payloadOffset = r.offset
        return ADServiceData(uuid: uuid, uuidWidth: width, payload: r.rest(), payloadOffset: payloadOffset)
    }

    /// Public (0x17) or Random (0x18) Target Address: a non-empty multiple of 6 bytes.
    @inlinable
    public func targetAddresses() throws(WireError) -> ADAddressList {
        guard type.rawValue == 0x17 || type.rawValue == 0x18 else { throw typeError() }
        guard !data.isEmpty, data.count % 6 == 0 else {
            throw lengthError("Target Address length must be a multiple of 6")
        }
        return ADAddressList(data, isRandom: type.rawValue == 0x18)
    }

    /// Appearance (0x19): 2 bytes.
    @inlinable
    public func appearance() throws(WireError) -> Appearance {
        guard type.rawValue == 0x19 else { throw typeError() }
        guard data.count == 2 else { throw lengthError("Appearance must be 2 bytes") }
        var r = reader
        return Appearance(rawValue: try r.u16())
    }

    /// Advertising Interval (0x1A) or Advertising Interval - long (0x2F), 0.625 ms units;
    /// 2, 3 or 4 bytes depending on the length (Supplement Part A §1.15, §1.19).
    @inlinable
    public func advertisingInterval() throws(WireError) -> UInt32 {
        guard type.rawValue == 0x1A || type.rawValue == 0x2F else { throw typeError() }
        var r = reader
        switch data.count {
        case 2: return UInt32(try r.u16())
        case 3: return try r.u24()
        case 4: return try r.u32()
        default: throw lengthError("Advertising Interval must be 2, 3 or 4 bytes")
        }
    }

    /// LE Bluetooth Device Address (0x1B): 6-byte address then a type byte whose bit 0
    /// means random (Supplement Part A §1.16).
    @inlinable
    public func leDeviceAddress() throws(WireError) -> LEAddress {
        guard type.rawValue == 0x1B else { throw typeError() }
        guard data.count == 7 else { throw lengthError("LE Bluetooth Device Address must be 7 bytes") }
        var r = reader
        let address = try BluetoothAddress.read(&r)
        let flags = try r.u8()
        return LEAddress(address, type: flags & 1 == 0 ? .public : .random)
    }

    /// LE Role (0x1C): 1 byte.
    @inlinable
    public func leRole() throws(WireError) -> LERole {
        guard type.rawValue == 0x1C else { throw typeError() }
        guard data.count == 1 else { throw lengthError("LE Role must be 1 byte") }
        return LERole(rawValue: data.load(fromByteOffset: 0, as: UInt8.self))
    }

    /// URI (0x24): a UTF-8 scheme code point, then the rest of the URI.
    @inlinable
    public func uri() throws(WireError) -> ADURI {
        guard type.rawValue == 0x24 else { throw typeError() }
        var r = reader
        let b0 = try r.u8("URI scheme")
        var scalar: UInt32
        var extra: Int
        switch b0 {
        case 0x00 ... 0x7F: scalar = UInt32(b0); extra = 0
        case 0xC2 ... 0xDF: scalar = UInt32(b0 & 0x1F); extra = 1
        case 0xE0 ... 0xEF: scalar = UInt32(b0 & 0x0F); extra = 2
        case 0xF0 ... 0xF4: scalar = UInt32(b0 & 0x07); extra = 3
        default: throw WireError(.invalidValue, at: dataOffset, "URI scheme is not valid UTF-8")
        }
        while extra > 0 {
            let b = try r.u8("URI scheme")
            guard b & 0xC0 == 0x80 else { throw WireError(.invalidValue, at: dataOffset, "URI scheme is not valid UTF-8") }
            scalar = scalar << 6 | UInt32(b & 0x3F)
            extra -= 1
        }
        return ADURI(schemeCodePoint: scalar, rest: r.rest())
    }

    /// Manufacturer Specific Data (0xFF): company identifier (u16) then data.
    @inlinable
    public func manufacturerData() throws(WireError) -> ADManufacturerData {
        guard type.rawValue == 0xFF else { throw typeError() }
        guard data.count >= 2 else { throw lengthError("Manufacturer Specific Data needs a 2-byte company identifier") }
        var r = reader
        let company = try r.u16()
        let payloadOffset = r.offset
        return ADManufacturerData(companyID: company, payload: r.rest(), payloadOffset: payloadOffset)
    }
}
