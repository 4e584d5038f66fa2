/// Advertising or scan response data: a sequence of AD structures, each
/// `length (1 byte) | AD type (1 byte) | data (length - 1 bytes)`
/// (Core Vol 3 Part C §11; data types in Core Specification Supplement Part A §1).
///
/// A view over the caller's bytes: nothing is copied, and every structure, name, UUID list
/// or payload obtained from it points into that buffer, so they are valid only while the
/// caller's buffer is alive. Iterating and decoding never allocate.
///
/// A zero length byte ends the data (the rest is padding, Core Vol 3 Part C §11); a length
/// that runs past the end yields the structures before it, then throws `.invalidLength`.
public struct AdvertisingData {
    /// The advertising data (a view of the caller's buffer).
    public let bytes: UnsafeRawBufferPointer
    /// Added to offsets in errors, e.g. where this data sits inside an HCI event.
    public let baseOffset: Int

    /// The legacy advertising / scan response data limit (Core Vol 4 Part E §7.8.7).
    public static let legacyMaximumLength = 31
    /// The extended advertising data limit (Core Vol 4 Part E §7.8.54: 1650 octets).
    public static let extendedMaximumLength = 1650

    /// A view of `bytes`; `baseOffset` is where they start in the packet (for error offsets).
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer, baseOffset: Int = 0) {
        self.bytes = bytes
        self.baseOffset = baseOffset
    }

    /// An allocation-free iterator over the AD structures.
    @inlinable
    public func makeIterator() -> ADStructureIterator {
        ADStructureIterator(bytes, baseOffset: baseOffset)
    }

    /// Walks every structure and decodes its typed value; returns the structure count.
    @inlinable
    public func validate() throws(WireError) -> Int {
        var it = makeIterator()
        var n = 0
        while let s = try it.next() {
            _ = try s.value()
            n &+= 1
        }
        return n
    }

    /// The first structure of `type`, or nil. Throws if the data is malformed before it.
    @inlinable
    public func first(_ type: ADType) throws(WireError) -> ADStructure? {
        var it = makeIterator()
        while let s = try it.next() {
            if s.type == type { return s }
        }
        return nil
    }
}

/// One AD structure: its type and its data bytes (a view into the caller's buffer).
public struct ADStructure {
    /// The AD type.
    public var type: ADType
    /// The data after the type byte (length − 1 bytes).
    public var data: UnsafeRawBufferPointer
    /// Offset of `data`'s first byte in the whole packet, used in errors.
    public var dataOffset: Int

    /// A structure as given.
    @inlinable
    public init(type: ADType, data: UnsafeRawBufferPointer, dataOffset: Int = 0) {
        self.type = type
        self.data = data
        self.dataOffset = dataOffset
    }

    @inlinable var reader: ByteReader { ByteReader(data, baseOffset: dataOffset) }

    @inlinable
    func lengthError(_ reason: StaticString) -> WireError {
        WireError(.invalidLength, at: dataOffset, reason)
    }

    @inlinable
    func typeError() -> WireError {
        WireError(.unexpectedOpcode, at: dataOffset &- 1, "AD structure is not of the requested type")
    }
}

/// Iterates AD structures without allocating: `while let s = try it.next() { ... }`.
public struct ADStructureIterator {
    @usableFromInline let buffer: UnsafeRawBufferPointer
    @usableFromInline let baseOffset: Int
    @usableFromInline var position: Int
    @usableFromInline var finished: Bool

    @inlinable
    init(_ buffer: UnsafeRawBufferPointer, baseOffset: Int) {
        self.buffer = buffer
        self.baseOffset = baseOffset
        self.position = 0
        self.finished = false
    }

    /// The next structure; nil at the end or at a zero length byte. A length running past
    /// the end throws `.invalidLength` at that length byte, after which the iterator ends.
    @inlinable
    public mutating func next() throws(WireError) -> ADStructure? {
        let count = buffer.count
        guard !finished, position < count else {
            finished = true
            return nil
        }
        let length = Int(buffer.load(fromByteOffset: position, as: UInt8.self))
        if length == 0 {
            finished = true
            return nil
        }
        // position < count and length <= 255, so these cannot overflow.
        let end = position &+ 1 &+ length
        guard end <= count else {
            finished = true
            throw WireError(.invalidLength, at: baseOffset &+ position, "AD structure length runs past the end of the data")
        }
        let type = ADType(rawValue: buffer.load(fromByteOffset: position &+ 1, as: UInt8.self))
        let dataStart = position &+ 2
        let data = UnsafeRawBufferPointer(rebasing: buffer[dataStart ..< end])
        position = end
        return ADStructure(type: type, data: data, dataOffset: baseOffset &+ dataStart)
    }
}

// MARK: - Single-pass summary

extension AdvertisingData {
    /// The commonly used fields of advertising data, decoded in one pass without allocating.
    /// Views point into the caller's buffer. When a type appears more than once the first
    /// occurrence is kept (a Complete Local Name is preferred over a Shortened one).
    public struct Summary {
        /// Flags.
        public var flags: ADFlags?
        /// The complete or shortened local name.
        public var localName: ADLocalName?
        /// 16-bit service UUIDs.
        public var serviceUUIDs16: ADUUIDList?
        /// 32-bit service UUIDs.
        public var serviceUUIDs32: ADUUIDList?
        /// 128-bit service UUIDs.
        public var serviceUUIDs128: ADUUIDList?
        /// TX Power Level, dBm.
        public var txPowerLevel: Int8?
        /// Appearance.
        public var appearance: Appearance?
        /// Manufacturer Specific Data (the first).
        public var manufacturerData: ADManufacturerData?
        /// Service Data (the first).
        public var serviceData: ADServiceData?
        /// Number of AD structures read (including ones not summarised).
        public var structureCount: Int

        /// Nothing found yet.
        @inlinable
        public init() {
            flags = nil
            localName = nil
            serviceUUIDs16 = nil
            serviceUUIDs32 = nil
            serviceUUIDs128 = nil
            txPowerLevel = nil
            appearance = nil
            manufacturerData = nil
            serviceData = nil
            structureCount = 0
        }

        /// True when one of the service UUID lists holds `uuid` (in any width).
        @inlinable
        public func advertisesService(_ uuid: BluetoothUUID) -> Bool {
            (serviceUUIDs16?.contains(uuid) ?? false) || (serviceUUIDs32?.contains(uuid) ?? false)
                || (serviceUUIDs128?.contains(uuid) ?? false)
        }
    }

    /// Reads flags, local name, service UUID lists, TX power, appearance, the first
    /// manufacturer data and the first service data in a single iteration. Throws on a
    /// malformed structure layout or a malformed value of one of those types.
    @inlinable
    public func summary() throws(WireError) -> Summary {
        var s = Summary()
        var it = makeIterator()
        while let ad = try it.next() {
            s.structureCount &+= 1
            switch ad.type.rawValue {
            case 0x01:
                if s.flags == nil { s.flags = ADFlags(rawValue: ad.data.first ?? 0) }
            case 0x02, 0x03:
                let list = try ADUUIDList(validating: ad, width: 2, isComplete: ad.type.rawValue == 0x03)
                if s.serviceUUIDs16 == nil { s.serviceUUIDs16 = list }
            case 0x04, 0x05:
                let list = try ADUUIDList(validating: ad, width: 4, isComplete: ad.type.rawValue == 0x05)
                if s.serviceUUIDs32 == nil { s.serviceUUIDs32 = list }
            case 0x06, 0x07:
                let list = try ADUUIDList(validating: ad, width: 16, isComplete: ad.type.rawValue == 0x07)
                if s.serviceUUIDs128 == nil { s.serviceUUIDs128 = list }
            case 0x08:
                if s.localName == nil { s.localName = ADLocalName(bytes: ad.data, isComplete: false) }
            case 0x09:
                if !(s.localName?.isComplete ?? false) { s.localName = ADLocalName(bytes: ad.data, isComplete: true) }
            case 0x0A:
                let v = try ad.txPowerLevel()
                if s.txPowerLevel == nil { s.txPowerLevel = v }
            case 0x19:
                let v = try ad.appearance()
                if s.appearance == nil { s.appearance = v }
            case 0xFF:
                let v = try ad.manufacturerData()
                if s.manufacturerData == nil { s.manufacturerData = v }
            case 0x16, 0x20, 0x21:
                let v = try ad.serviceData()
                if s.serviceData == nil { s.serviceData = v }
            default:
                break
            }
        }
        return s
    }
}
