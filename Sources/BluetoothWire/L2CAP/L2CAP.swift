/// An L2CAP channel identifier (CID). Core Vol 3 Part A §2.1.
///
/// Open set: any 16-bit value is representable. LE fixed channels are 0x0004 (ATT),
/// 0x0005 (LE signaling) and 0x0006 (SMP); LE dynamic channels use 0x0040...0x007F.
public struct L2CAPChannelID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// A value with these fields.
    @inlinable public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// 0x0000: the null identifier, never used as a destination.
    public static let null = L2CAPChannelID(rawValue: 0x0000)
    /// 0x0001: BR/EDR L2CAP signaling channel.
    public static let signaling = L2CAPChannelID(rawValue: 0x0001)
    /// 0x0002: BR/EDR connectionless channel.
    public static let connectionless = L2CAPChannelID(rawValue: 0x0002)
    /// 0x0004: Attribute Protocol.
    public static let att = L2CAPChannelID(rawValue: 0x0004)
    /// 0x0005: LE L2CAP signaling channel.
    public static let leSignaling = L2CAPChannelID(rawValue: 0x0005)
    /// 0x0006: Security Manager Protocol (LE).
    public static let smp = L2CAPChannelID(rawValue: 0x0006)
    /// 0x0007: Security Manager Protocol over BR/EDR.
    public static let brEdrSMP = L2CAPChannelID(rawValue: 0x0007)
    /// The LE dynamically allocated range, Core Vol 3 Part A §2.1 Table 2.3.
    public static let leDynamicRange: ClosedRange<UInt16> = 0x0040 ... 0x007F

    /// True for CIDs in the LE dynamic range 0x0040...0x007F.
    @inlinable public var isLEDynamic: Bool { L2CAPChannelID.leDynamicRange.contains(rawValue) }

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x0000: "Null"
        case 0x0001: "L2CAP Signaling"
        case 0x0002: "Connectionless"
        case 0x0004: "ATT"
        case 0x0005: "LE Signaling"
        case 0x0006: "SMP"
        case 0x0007: "BR/EDR SMP"
        case 0x0040 ... 0x007F: "LE Dynamic"
        default: nil
        }
    }

    public var description: String {
        let hex = "0x" + Hex.pad(rawValue, 4)
        if let name { return "\(hex) (\(name))" }
        return hex
    }

    /// Numeric order.
    public static func < (a: L2CAPChannelID, b: L2CAPChannelID) -> Bool { a.rawValue < b.rawValue }

    var field: FieldValue {
        if let name { return .named(UInt64(rawValue), name) }
        return .uint(UInt64(rawValue))
    }
}

/// A basic L2CAP frame (B-frame): Length u16, Channel ID u16, Information payload.
/// Core Vol 3 Part A §3.1.
///
/// A view: `payload` points into the parsed buffer and is valid only while the
/// caller's buffer is alive.
public struct L2CAPBasicFrame {
    /// Size of the Length + Channel ID header.
    public static let headerLength = 4

    /// The channel the frame is for.
    public var channelID: L2CAPChannelID
    /// The payload (a view of the packet).
    public var payload: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable
    public init(channelID: L2CAPChannelID, payload: UnsafeRawBufferPointer) {
        self.channelID = channelID
        self.payload = payload
    }

    /// Parses a complete frame. The Length field must equal the number of payload
    /// bytes present exactly (`.invalidLength` otherwise; a short header is `.truncated`).
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count >= 4, let base = bytes.baseAddress else {
            if bytes.count < 2 { throw WireError(.truncated, at: 0, "L2CAP length") }
            throw WireError(.truncated, at: 2, "L2CAP channel ID")
        }
        let length = Int(UInt16(littleEndian: base.loadUnaligned(as: UInt16.self)))
        let cid = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        guard length == bytes.count &- 4 else {
            throw WireError(.invalidLength, at: 0, "L2CAP length does not match the payload present")
        }
        self.channelID = L2CAPChannelID(rawValue: cid)
        self.payload = UnsafeRawBufferPointer(start: base + 4, count: length)
    }

    /// Reads the PDU length from a (possibly partial) frame header, for reassembly:
    /// the total frame size is this plus `headerLength`. Nil when fewer than 2 bytes.
    @inlinable
    public static func payloadLength(ofHeader bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 2 else { return nil }
        return Int(UInt16(littleEndian: bytes.loadUnaligned(as: UInt16.self)))
    }
}

extension L2CAPBasicFrame: FieldDescribable {
    public var fieldTitle: String { "L2CAP Basic Frame" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [
            Field("length", .uint(UInt64(payload.count))),
            Field("channel_id", channelID.field),
            Field("payload", .bytes(payload)),
        ]
    }
}

/// Encodes a basic L2CAP frame around any encodable payload (an ATT PDU, an SMP PDU,
/// a signaling command or raw bytes via ``L2CAPRawPayload``). Core Vol 3 Part A §3.1.
public struct L2CAPFrame<Payload: WireEncodable>: WireEncodable {
    /// The channel the frame is for.
    public var channelID: L2CAPChannelID
    /// The payload (a view of the packet).
    public var payload: Payload

    /// A value with these fields.
    @inlinable
    public init(channelID: L2CAPChannelID, payload: Payload) {
        self.channelID = channelID
        self.payload = payload
    }

    @inlinable public var encodedLength: Int { L2CAPBasicFrame.headerLength &+ payload.encodedLength }

    @inlinable
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        let length = payload.encodedLength
        guard length <= Int(UInt16.max) else {
            throw WireError(.valueOutOfRange, at: writer.count, "L2CAP payload longer than 65535 bytes")
        }
        try writer.u16(UInt16(length))
        try writer.u16(channelID.rawValue)
        let start = writer.count
        try payload.encode(into: &writer)
        guard writer.count &- start == length else {
            throw WireError(.invalidLength, at: start, "payload wrote a different length than announced")
        }
    }
}

/// Raw payload bytes for ``L2CAPFrame``.
public struct L2CAPRawPayload: WireEncodable, Hashable, Sendable {
    /// The payload, owned.
    public var bytes: [UInt8]
    /// A value with these fields.
    @inlinable public init(_ bytes: [UInt8]) { self.bytes = bytes }
    @inlinable public var encodedLength: Int { bytes.count }
    @inlinable
    public func encode(into writer: inout ByteWriter) throws(WireError) { try writer.bytes(bytes) }
}

extension L2CAPFrame where Payload == L2CAPRawPayload {
    /// A frame as given.
    @inlinable
    public init(channelID: L2CAPChannelID, bytes: [UInt8]) {
        self.init(channelID: channelID, payload: L2CAPRawPayload(bytes))
    }
}
