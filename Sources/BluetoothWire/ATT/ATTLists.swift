// List-shaped ATT responses (Core Vol 3 Part F §3.4): allocation-free views with
// iterators for parsing, and MTU-bounded builders that own their bytes for sending.
//
// The views hold slices of the parsed buffer and are valid only while it is alive.
// `ATTPDU(parsing:)` validates the list shape (element length, divisibility, non-empty),
// so iteration never fails; an iterator over a hand-made invalid view just stops early.

// MARK: - Find Information Response

/// ATT_FIND_INFORMATION_RSP: Format, then (handle, UUID) pairs. Core Vol 3 Part F §3.4.3.2.
public struct ATTFindInformationResponse: Sequence, WireEncodable {
    /// 16-bit or 128-bit UUIDs.
    public var format: ATTFindInformationFormat
    /// The Information Data bytes (pairs of handle + 2- or 16-byte UUID).
    public var informationData: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable public init(format: ATTFindInformationFormat, informationData: UnsafeRawBufferPointer) {
        self.format = format
        self.informationData = informationData
    }

    @inlinable
    init(validating r: inout ByteReader) throws(WireError) {
        let format = ATTFindInformationFormat(rawValue: try r.u8("format"))
        let width = format.uuidWidth
        guard width != 0 else { throw WireError(.invalidValue, at: 1, "Find Information format must be 1 or 2") }
        let data = r.rest()
        guard !data.isEmpty else { throw WireError(.invalidLength, at: 2, "empty Information Data") }
        guard data.count % (2 &+ width) == 0 else {
            throw WireError(.invalidLength, at: 2, "Information Data is not a whole number of pairs")
        }
        self.format = format
        self.informationData = data
    }

    /// One (handle, type) pair.
    public struct Element: Hashable, Sendable {
        /// The attribute handle.
        public var handle: UInt16
        /// The attribute type.
        public var type: BluetoothUUID
        /// A value with these fields.
        @inlinable public init(handle: UInt16, type: BluetoothUUID) {
            self.handle = handle
            self.type = type
        }
    }

    /// Iterates the pairs.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var reader: ByteReader
        @usableFromInline let width: Int
        @inlinable init(_ data: UnsafeRawBufferPointer, width: Int) {
            reader = ByteReader(data)
            self.width = width
        }
        @inlinable public mutating func next() -> Element? {
            guard width != 0, reader.remaining >= 2 &+ width else { return nil }
            do throws(WireError) {
                let handle = try reader.u16("handle")
                let uuid = try BluetoothUUID.read(&reader, width: width)
                return Element(handle: handle, type: uuid)
            } catch {
                return nil
            }
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(informationData, width: format.uuidWidth) }
    @inlinable public var underestimatedCount: Int {
        let w = format.uuidWidth
        return w == 0 ? 0 : informationData.count / (2 &+ w)
    }

    @inlinable public var encodedLength: Int { 2 &+ informationData.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.findInformationResponse.rawValue)
        try w.u8(format.rawValue)
        try w.bytes(informationData)
    }
}

/// Builds an ATT_FIND_INFORMATION_RSP that fits `mtu`. The first UUID picks the format
/// (16-bit or 128-bit); `append` refuses a UUID of the other width, or one that does not fit.
public struct ATTFindInformationResponseBuilder: WireEncodable, Hashable, Sendable {
    /// ATT_MTU: the largest PDU the sender takes.
    public let mtu: Int
    /// The format, fixed by the first pair appended.
    public private(set) var format: ATTFindInformationFormat?
    /// How many elements there are.
    public private(set) var count: Int = 0
    /// The encoded pairs.
    public private(set) var informationData: [UInt8] = []

    /// A value with these fields.
    public init(mtu: Int = ATT.defaultMTU) { self.mtu = mtu }

    /// There are no elements.
    public var isEmpty: Bool { count == 0 }

    /// Appends a pair; false (and nothing changes) if it does not fit or the format differs.
    public mutating func append(handle: UInt16, type: BluetoothUUID) -> Bool {
        let width = type.attWidth
        let f: ATTFindInformationFormat = width == 2 ? .uuid16 : .uuid128
        if let format, format != f { return false }
        guard 2 + informationData.count + 2 + width <= mtu else { return false }
        format = f
        informationData.append(UInt8(truncatingIfNeeded: handle))
        informationData.append(UInt8(truncatingIfNeeded: handle >> 8))
        if width == 2 {
            let v = type.uuid16 ?? 0
            informationData.append(UInt8(truncatingIfNeeded: v))
            informationData.append(UInt8(truncatingIfNeeded: v >> 8))
        } else {
            for i in 0 ..< 8 { informationData.append(UInt8(truncatingIfNeeded: type.low >> (8 * UInt64(i)))) }
            for i in 0 ..< 8 { informationData.append(UInt8(truncatingIfNeeded: type.high >> (8 * UInt64(i)))) }
        }
        count += 1
        return true
    }

    public var encodedLength: Int { 2 + informationData.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard let format, count > 0 else { throw WireError(.valueOutOfRange, at: w.count, "empty Find Information Response") }
        try w.u8(ATTOpcode.findInformationResponse.rawValue)
        try w.u8(format.rawValue)
        try w.bytes(informationData)
    }
}

// MARK: - Find By Type Value Response

/// ATT_FIND_BY_TYPE_VALUE_RSP: (Found Attribute Handle, Group End Handle) pairs.
/// Core Vol 3 Part F §3.4.3.4.
public struct ATTFindByTypeValueResponse: Sequence, WireEncodable {
    /// The Handles Information List (a view).
    public var handlesInformationList: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable public init(handlesInformationList: UnsafeRawBufferPointer) {
        self.handlesInformationList = handlesInformationList
    }

    @inlinable
    init(validating r: inout ByteReader) throws(WireError) {
        let data = r.rest()
        guard !data.isEmpty else { throw WireError(.invalidLength, at: 1, "empty Handles Information List") }
        guard data.count & 3 == 0 else {
            throw WireError(.invalidLength, at: 1, "Handles Information List is not a whole number of 4-byte entries")
        }
        handlesInformationList = data
    }

    /// One found range.
    public struct Element: Hashable, Sendable {
        /// Found Attribute Handle.
        public var foundHandle: UInt16
        /// Group End Handle.
        public var groupEndHandle: UInt16
        /// A value with these fields.
        @inlinable public init(foundHandle: UInt16, groupEndHandle: UInt16) {
            self.foundHandle = foundHandle
            self.groupEndHandle = groupEndHandle
        }
    }

    /// Iterates the ranges.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let data: UnsafeRawBufferPointer
        @usableFromInline var offset = 0
        @inlinable init(_ data: UnsafeRawBufferPointer) { self.data = data }
        @inlinable public mutating func next() -> Element? {
            guard data.count &- offset >= 4 else { return nil }
            let a = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let b = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset &+ 2, as: UInt16.self))
            offset &+= 4
            return Element(foundHandle: a, groupEndHandle: b)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(handlesInformationList) }
    @inlinable public var underestimatedCount: Int { handlesInformationList.count >> 2 }

    @inlinable public var encodedLength: Int { 1 &+ handlesInformationList.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.findByTypeValueResponse.rawValue)
        try w.bytes(handlesInformationList)
    }
}

/// Builds an ATT_FIND_BY_TYPE_VALUE_RSP that fits `mtu`.
public struct ATTFindByTypeValueResponseBuilder: WireEncodable, Hashable, Sendable {
    /// ATT_MTU: the largest PDU the sender takes.
    public let mtu: Int
    /// How many elements there are.
    public private(set) var count: Int = 0
    /// The encoded ranges.
    public private(set) var handlesInformationList: [UInt8] = []

    /// A value with these fields.
    public init(mtu: Int = ATT.defaultMTU) { self.mtu = mtu }
    /// There are no elements.
    public var isEmpty: Bool { count == 0 }

    /// Appends a range; false when it does not fit the MTU.
    public mutating func append(foundHandle: UInt16, groupEndHandle: UInt16) -> Bool {
        guard 1 + handlesInformationList.count + 4 <= mtu else { return false }
        handlesInformationList.attAppendLE(foundHandle)
        handlesInformationList.attAppendLE(groupEndHandle)
        count += 1
        return true
    }

    public var encodedLength: Int { 1 + handlesInformationList.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard count > 0 else { throw WireError(.valueOutOfRange, at: w.count, "empty Find By Type Value Response") }
        try w.u8(ATTOpcode.findByTypeValueResponse.rawValue)
        try w.bytes(handlesInformationList)
    }
}

// MARK: - Read By Type Response

/// ATT_READ_BY_TYPE_RSP: Length (bytes per element, ≥ 2), then (handle, value) elements
/// of that length. Core Vol 3 Part F §3.4.4.2.
public struct ATTReadByTypeResponse: Sequence, WireEncodable {
    /// Size of each handle-value pair (handle 2 + value).
    public var length: UInt8
    /// The Attribute Data List (a view).
    public var attributeDataList: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable public init(length: UInt8, attributeDataList: UnsafeRawBufferPointer) {
        self.length = length
        self.attributeDataList = attributeDataList
    }

    @inlinable
    init(validating r: inout ByteReader) throws(WireError) {
        let length = try r.u8("length")
        guard length >= 2 else { throw WireError(.invalidLength, at: 1, "Read By Type element length below 2") }
        let data = r.rest()
        guard !data.isEmpty else { throw WireError(.invalidLength, at: 2, "empty Attribute Data List") }
        guard data.count % Int(length) == 0 else {
            throw WireError(.invalidLength, at: 2, "Attribute Data List is not a whole number of elements")
        }
        self.length = length
        self.attributeDataList = data
    }

    /// Number of bytes of each value.
    @inlinable public var valueLength: Int { Int(length) &- 2 }

    /// One (handle, value) pair.
    public struct Element {
        /// The attribute handle.
        public var handle: UInt16
        /// A view into the parsed buffer.
        public var value: UnsafeRawBufferPointer
        /// A value with these fields.
        @inlinable public init(handle: UInt16, value: UnsafeRawBufferPointer) {
            self.handle = handle
            self.value = value
        }
    }

    /// Iterates the pairs.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let data: UnsafeRawBufferPointer
        @usableFromInline let length: Int
        @usableFromInline var offset = 0
        @inlinable init(_ data: UnsafeRawBufferPointer, length: Int) {
            self.data = data
            self.length = length
        }
        @inlinable public mutating func next() -> Element? {
            guard length >= 2, data.count &- offset >= length else { return nil }
            let handle = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let value = UnsafeRawBufferPointer(rebasing: data[(offset &+ 2) ..< (offset &+ length)])
            offset &+= length
            return Element(handle: handle, value: value)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(attributeDataList, length: Int(length)) }
    @inlinable public var underestimatedCount: Int { length < 2 ? 0 : attributeDataList.count / Int(length) }

    @inlinable public var encodedLength: Int { 2 &+ attributeDataList.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readByTypeResponse.rawValue)
        try w.u8(length)
        try w.bytes(attributeDataList)
    }
}

/// Builds an ATT_READ_BY_TYPE_RSP that fits `mtu`. The first value fixes the element
/// length (truncated to min(ATT_MTU - 4, 253) bytes, Core Vol 3 Part F §3.4.4.2);
/// `append` refuses values of another length or that no longer fit.
public struct ATTReadByTypeResponseBuilder: WireEncodable, Hashable, Sendable {
    /// ATT_MTU: the largest PDU the sender takes.
    public let mtu: Int
    /// Bytes per element (handle + value), set by the first append.
    public private(set) var length: UInt8?
    /// How many elements there are.
    public private(set) var count: Int = 0
    /// The encoded pairs.
    public private(set) var attributeDataList: [UInt8] = []

    /// A value with these fields.
    public init(mtu: Int = ATT.defaultMTU) { self.mtu = mtu }
    /// There are no elements.
    public var isEmpty: Bool { count == 0 }
    /// The longest value an element may carry.
    public var maximumValueLength: Int { max(0, min(mtu - 4, 253)) }

    /// Appends a pair (a value too long for one entry is cut); false when it does not fit the MTU or
    /// its length differs from the first.
    public mutating func append(handle: UInt16, value: some Collection<UInt8>) -> Bool {
        let valueCount = min(value.count, maximumValueLength)
        let elementLength = valueCount + 2
        if let length, Int(length) != elementLength { return false }
        guard 2 + attributeDataList.count + elementLength <= mtu else { return false }
        length = UInt8(elementLength)
        attributeDataList.attAppendLE(handle)
        attributeDataList.append(contentsOf: value.prefix(valueCount))
        count += 1
        return true
    }

    public var encodedLength: Int { 2 + attributeDataList.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard let length, count > 0 else { throw WireError(.valueOutOfRange, at: w.count, "empty Read By Type Response") }
        try w.u8(ATTOpcode.readByTypeResponse.rawValue)
        try w.u8(length)
        try w.bytes(attributeDataList)
    }
}

// MARK: - Read By Group Type Response

/// ATT_READ_BY_GROUP_TYPE_RSP: Length (bytes per element, ≥ 4), then
/// (handle, end group handle, value) elements. Core Vol 3 Part F §3.4.4.10.
public struct ATTReadByGroupTypeResponse: Sequence, WireEncodable {
    /// Length of each entry (handle, end handle, value).
    public var length: UInt8
    /// The Attribute Data List (a view).
    public var attributeDataList: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable public init(length: UInt8, attributeDataList: UnsafeRawBufferPointer) {
        self.length = length
        self.attributeDataList = attributeDataList
    }

    @inlinable
    init(validating r: inout ByteReader) throws(WireError) {
        let length = try r.u8("length")
        guard length >= 4 else { throw WireError(.invalidLength, at: 1, "Read By Group Type element length below 4") }
        let data = r.rest()
        guard !data.isEmpty else { throw WireError(.invalidLength, at: 2, "empty Attribute Data List") }
        guard data.count % Int(length) == 0 else {
            throw WireError(.invalidLength, at: 2, "Attribute Data List is not a whole number of elements")
        }
        self.length = length
        self.attributeDataList = data
    }

    /// The length of each value.
    @inlinable public var valueLength: Int { Int(length) &- 4 }

    /// One (handle, end group handle, value) entry.
    public struct Element {
        /// The attribute handle.
        public var handle: UInt16
        /// The group's last handle.
        public var endGroupHandle: UInt16
        /// A view into the parsed buffer (for services: the service UUID).
        public var value: UnsafeRawBufferPointer
        /// A value with these fields.
        @inlinable public init(handle: UInt16, endGroupHandle: UInt16, value: UnsafeRawBufferPointer) {
            self.handle = handle
            self.endGroupHandle = endGroupHandle
            self.value = value
        }
    }

    /// Iterates the entries.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let data: UnsafeRawBufferPointer
        @usableFromInline let length: Int
        @usableFromInline var offset = 0
        @inlinable init(_ data: UnsafeRawBufferPointer, length: Int) {
            self.data = data
            self.length = length
        }
        @inlinable public mutating func next() -> Element? {
            guard length >= 4, data.count &- offset >= length else { return nil }
            let handle = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let end = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset &+ 2, as: UInt16.self))
            let value = UnsafeRawBufferPointer(rebasing: data[(offset &+ 4) ..< (offset &+ length)])
            offset &+= length
            return Element(handle: handle, endGroupHandle: end, value: value)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(attributeDataList, length: Int(length)) }
    @inlinable public var underestimatedCount: Int { length < 4 ? 0 : attributeDataList.count / Int(length) }

    @inlinable public var encodedLength: Int { 2 &+ attributeDataList.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readByGroupTypeResponse.rawValue)
        try w.u8(length)
        try w.bytes(attributeDataList)
    }
}

/// Builds an ATT_READ_BY_GROUP_TYPE_RSP that fits `mtu`. The first value fixes the
/// element length (values truncated to min(ATT_MTU - 6, 251) bytes).
public struct ATTReadByGroupTypeResponseBuilder: WireEncodable, Hashable, Sendable {
    /// ATT_MTU: the largest PDU the sender takes.
    public let mtu: Int
    /// The entry length, fixed by the first entry appended.
    public private(set) var length: UInt8?
    /// How many elements there are.
    public private(set) var count: Int = 0
    /// The encoded entries.
    public private(set) var attributeDataList: [UInt8] = []

    /// A value with these fields.
    public init(mtu: Int = ATT.defaultMTU) { self.mtu = mtu }
    /// There are no elements.
    public var isEmpty: Bool { count == 0 }
    /// The longest value one entry can carry at this MTU.
    public var maximumValueLength: Int { max(0, min(mtu - 6, 251)) }

    /// Appends an entry; false when it does not fit the MTU or its length differs from the first.
    public mutating func append(handle: UInt16, endGroupHandle: UInt16, value: some Collection<UInt8>) -> Bool {
        let valueCount = min(value.count, maximumValueLength)
        let elementLength = valueCount + 4
        if let length, Int(length) != elementLength { return false }
        guard 2 + attributeDataList.count + elementLength <= mtu else { return false }
        length = UInt8(elementLength)
        attributeDataList.attAppendLE(handle)
        attributeDataList.attAppendLE(endGroupHandle)
        attributeDataList.append(contentsOf: value.prefix(valueCount))
        count += 1
        return true
    }

    public var encodedLength: Int { 2 + attributeDataList.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard let length, count > 0 else { throw WireError(.valueOutOfRange, at: w.count, "empty Read By Group Type Response") }
        try w.u8(ATTOpcode.readByGroupTypeResponse.rawValue)
        try w.u8(length)
        try w.bytes(attributeDataList)
    }
}

// MARK: - Read Multiple Variable Response

/// ATT_READ_MULTIPLE_VARIABLE_RSP: (Value Length u16, Value) tuples.
/// Core Vol 3 Part F §3.4.4.12. The last value may be shorter than its Value Length
/// when the response was cut at ATT_MTU; ``Element/isTruncated`` says so.
public struct ATTReadMultipleVariableResponse: Sequence, WireEncodable {
    /// The Length Value Tuple List (a view).
    public var lengthValueTupleList: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable public init(lengthValueTupleList: UnsafeRawBufferPointer) {
        self.lengthValueTupleList = lengthValueTupleList
    }

    @inlinable
    init(validating r: inout ByteReader) throws(WireError) {
        let start = r.offset
        let data = r.rest()
        guard !data.isEmpty else { throw WireError(.invalidLength, at: start, "empty Length Value Tuple List") }
        var offset = 0
        while offset < data.count {
            guard data.count &- offset >= 2 else {
                throw WireError(.truncated, at: start &+ offset, "Value Length cut short")
            }
            let n = Int(UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
            // The last value may be truncated; stop at the end either way.
            offset &+= 2 &+ Swift.min(n, data.count &- offset &- 2)
        }
        lengthValueTupleList = data
    }

    /// One (length, value) tuple.
    public struct Element {
        /// The full length of the attribute value.
        public var valueLength: UInt16
        /// The value bytes present (a view); shorter than `valueLength` if truncated.
        public var value: UnsafeRawBufferPointer
        /// The value was cut short (the response ran out of room).
        @inlinable public var isTruncated: Bool { value.count < Int(valueLength) }
        /// A value with these fields.
        @inlinable public init(valueLength: UInt16, value: UnsafeRawBufferPointer) {
            self.valueLength = valueLength
            self.value = value
        }
    }

    /// Iterates the tuples.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let data: UnsafeRawBufferPointer
        @usableFromInline var offset = 0
        @inlinable init(_ data: UnsafeRawBufferPointer) { self.data = data }
        @inlinable public mutating func next() -> Element? {
            guard data.count &- offset >= 2 else { return nil }
            let n = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let start = offset &+ 2
            let end = start &+ Swift.min(Int(n), data.count &- start)
            offset = end
            return Element(valueLength: n, value: UnsafeRawBufferPointer(rebasing: data[start ..< end]))
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(lengthValueTupleList) }

    @inlinable public var encodedLength: Int { 1 &+ lengthValueTupleList.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readMultipleVariableResponse.rawValue)
        try w.bytes(lengthValueTupleList)
    }
}

/// Builds an ATT_READ_MULTIPLE_VARIABLE_RSP that fits `mtu`.
public struct ATTReadMultipleVariableResponseBuilder: WireEncodable, Hashable, Sendable {
    /// ATT_MTU: the largest PDU the sender takes.
    public let mtu: Int
    /// How many elements there are.
    public private(set) var count: Int = 0
    /// The encoded tuples.
    public private(set) var lengthValueTupleList: [UInt8] = []
    /// True once a value was cut to fit (nothing more can be appended).
    public private(set) var isTruncated = false

    /// A value with these fields.
    public init(mtu: Int = ATT.defaultMTU) { self.mtu = mtu }
    /// There are no elements.
    public var isEmpty: Bool { count == 0 }

    /// Appends a value. With `allowTruncation`, a value that does not fit entirely is cut
    /// to the space left (as the spec allows for the last tuple); otherwise it is refused.
    public mutating func append(value: some Collection<UInt8>, allowTruncation: Bool = false) -> Bool {
        guard !isTruncated, value.count <= Int(UInt16.max) else { return false }
        let room = mtu - 1 - lengthValueTupleList.count - 2
        guard room >= 0 else { return false }
        if value.count > room {
            guard allowTruncation else { return false }
            isTruncated = true
        }
        lengthValueTupleList.attAppendLE(UInt16(value.count))
        lengthValueTupleList.append(contentsOf: value.prefix(room))
        count += 1
        return true
    }

    public var encodedLength: Int { 1 + lengthValueTupleList.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard count > 0 else { throw WireError(.valueOutOfRange, at: w.count, "empty Read Multiple Variable Response") }
        try w.u8(ATTOpcode.readMultipleVariableResponse.rawValue)
        try w.bytes(lengthValueTupleList)
    }
}

// MARK: - Multiple Handle Value Notification

/// ATT_MULTIPLE_HANDLE_VALUE_NTF: (handle, length u16, value) tuples.
/// Core Vol 3 Part F §3.4.7.4. Every tuple must be complete.
public struct ATTMultipleHandleValueNotification: Sequence, WireEncodable {
    /// The Handle Length Value Tuple List (a view).
    public var handleLengthValueTupleList: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable public init(handleLengthValueTupleList: UnsafeRawBufferPointer) {
        self.handleLengthValueTupleList = handleLengthValueTupleList
    }

    @inlinable
    init(validating r: inout ByteReader) throws(WireError) {
        let start = r.offset
        let data = r.rest()
        guard !data.isEmpty else { throw WireError(.invalidLength, at: start, "empty Handle Length Value Tuple List") }
        var offset = 0
        while offset < data.count {
            guard data.count &- offset >= 4 else {
                throw WireError(.truncated, at: start &+ offset, "tuple header cut short")
            }
            let n = Int(UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset &+ 2, as: UInt16.self)))
            guard n <= data.count &- offset &- 4 else {
                throw WireError(.invalidLength, at: start &+ offset &+ 2, "tuple length exceeds the bytes present")
            }
            offset &+= 4 &+ n
        }
        handleLengthValueTupleList = data
    }

    /// One (handle, length, value) tuple.
    public struct Element {
        /// The attribute handle.
        public var handle: UInt16
        /// A view into the parsed buffer.
        public var value: UnsafeRawBufferPointer
        /// A value with these fields.
        @inlinable public init(handle: UInt16, value: UnsafeRawBufferPointer) {
            self.handle = handle
            self.value = value
        }
    }

    /// Iterates the tuples.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let data: UnsafeRawBufferPointer
        @usableFromInline var offset = 0
        @inlinable init(_ data: UnsafeRawBufferPointer) { self.data = data }
        @inlinable public mutating func next() -> Element? {
            guard data.count &- offset >= 4 else { return nil }
            let handle = UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let n = Int(UInt16(littleEndian: data.loadUnaligned(fromByteOffset: offset &+ 2, as: UInt16.self)))
            let start = offset &+ 4
            guard n <= data.count &- start else { return nil }
            offset = start &+ n
            return Element(handle: handle, value: UnsafeRawBufferPointer(rebasing: data[start ..< offset]))
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(handleLengthValueTupleList) }

    @inlinable public var encodedLength: Int { 1 &+ handleLengthValueTupleList.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.multipleHandleValueNotification.rawValue)
        try w.bytes(handleLengthValueTupleList)
    }
}

/// Builds an ATT_MULTIPLE_HANDLE_VALUE_NTF that fits `mtu`.
public struct ATTMultipleHandleValueNotificationBuilder: WireEncodable, Hashable, Sendable {
    /// ATT_MTU: the largest PDU the sender takes.
    public let mtu: Int
    /// How many elements there are.
    public private(set) var count: Int = 0
    /// The encoded tuples.
    public private(set) var handleLengthValueTupleList: [UInt8] = []

    /// A value with these fields.
    public init(mtu: Int = ATT.defaultMTU) { self.mtu = mtu }
    /// There are no elements.
    public var isEmpty: Bool { count == 0 }

    /// Appends a tuple; false when it does not fit the MTU.
    public mutating func append(handle: UInt16, value: some Collection<UInt8>) -> Bool {
        guard value.count <= Int(UInt16.max),
              1 + handleLengthValueTupleList.count + 4 + value.count <= mtu else { return false }
        handleLengthValueTupleList.attAppendLE(handle)
        handleLengthValueTupleList.attAppendLE(UInt16(value.count))
        handleLengthValueTupleList.append(contentsOf: value)
        count += 1
        return true
    }

    public var encodedLength: Int { 1 + handleLengthValueTupleList.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard count > 0 else { throw WireError(.valueOutOfRange, at: w.count, "empty Multiple Handle Value Notification") }
        try w.u8(ATTOpcode.multipleHandleValueNotification.rawValue)
        try w.bytes(handleLengthValueTupleList)
    }
}

extension Array where Element == UInt8 {
    @inlinable mutating func attAppendLE(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v))
        append(UInt8(truncatingIfNeeded: v >> 8))
    }
}
