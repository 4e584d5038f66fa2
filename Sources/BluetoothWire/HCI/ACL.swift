/// Largest valid connection handle (Core Vol 4 Part E §5.4.2: Range 0x0000 to 0x0EFF).
public let hciMaximumConnectionHandle: UInt16 = 0x0EFF

/// Packet_Boundary_Flag of an HCI ACL Data packet (Core Vol 4 Part E §5.4.2), 2 bits.
public struct ACLPacketBoundaryFlag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0b00: first non-automatically-flushable packet of a higher-layer message (host → controller, LE).
    public static let firstNonFlushable = ACLPacketBoundaryFlag(rawValue: 0b00)
    /// 0b01: continuing fragment.
    public static let continuing = ACLPacketBoundaryFlag(rawValue: 0b01)
    /// 0b10: first automatically flushable packet (controller → host on LE).
    public static let firstFlushable = ACLPacketBoundaryFlag(rawValue: 0b10)
    /// 0b11: a complete L2CAP PDU, automatically flushable (deprecated / reserved on LE).
    public static let complete = ACLPacketBoundaryFlag(rawValue: 0b11)

    /// A first fragment (not a continuation).
    @inlinable public var isFirst: Bool { rawValue != 0b01 }

    public var description: String {
        switch rawValue {
        case 0b00: "first non-flushable"
        case 0b01: "continuing"
        case 0b10: "first flushable"
        case 0b11: "complete"
        default: "0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Broadcast_Flag of an HCI ACL Data packet (Core Vol 4 Part E §5.4.2), 2 bits.
public struct ACLBroadcastFlag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0b00: point-to-point (the only value used on LE).
    public static let pointToPoint = ACLBroadcastFlag(rawValue: 0b00)
    /// 0b01: BR/EDR broadcast.
    public static let broadcast = ACLBroadcastFlag(rawValue: 0b01)

    public var description: String {
        switch rawValue {
        case 0b00: "point-to-point"
        case 0b01: "BR/EDR broadcast"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// The 4-byte HCI ACL Data packet header (Core Vol 4 Part E §5.4.2):
/// Handle (12 bits) | PB_Flag (2 bits) | BC_Flag (2 bits), Data_Total_Length (u16).
public struct ACLHeader: Hashable, Sendable, WireEncodable {
    /// The header's length in bytes.
    public static let length = 4

    /// Connection handle, 12 bits. Parsing accepts any 12-bit value; encoding
    /// rejects handles above 0x0EFF.
    public var handle: UInt16
    /// Packet_Boundary_Flag: first or continuing fragment.
    public var packetBoundary: ACLPacketBoundaryFlag
    /// Broadcast_Flag (point-to-point on LE).
    public var broadcast: ACLBroadcastFlag
    /// Number of data bytes after the header.
    public var dataLength: UInt16

    /// A header as given.
    @inlinable
    public init(handle: UInt16, packetBoundary: ACLPacketBoundaryFlag = .firstNonFlushable,
                broadcast: ACLBroadcastFlag = .pointToPoint, dataLength: UInt16) {
        self.handle = handle
        self.packetBoundary = packetBoundary
        self.broadcast = broadcast
        self.dataLength = dataLength
    }

    /// Reads a header.
    @inlinable
    public init(from reader: inout ByteReader) throws(WireError) {
        let hf = try reader.u16("ACL handle and flags")
        handle = hf & 0x0FFF
        packetBoundary = ACLPacketBoundaryFlag(rawValue: UInt8(truncatingIfNeeded: hf >> 12) & 0x3)
        broadcast = ACLBroadcastFlag(rawValue: UInt8(truncatingIfNeeded: hf >> 14) & 0x3)
        dataLength = try reader.u16("ACL data total length")
    }

    @inlinable public var encodedLength: Int { 4 }

    @inlinable
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        guard handle <= hciMaximumConnectionHandle else {
            throw WireError(.valueOutOfRange, at: writer.count, "connection handle above 0x0EFF")
        }
        guard packetBoundary.rawValue <= 3, broadcast.rawValue <= 3 else {
            throw WireError(.valueOutOfRange, at: writer.count, "ACL flag does not fit 2 bits")
        }
        try writer.u16(handle | UInt16(packetBoundary.rawValue) << 12 | UInt16(broadcast.rawValue) << 14)
        try writer.u16(dataLength)
    }
}

/// An HCI ACL Data packet (without the H4 indicator): header and a view of the data.
/// Core Vol 4 Part E §5.4.2.
///
/// `payload` points into the parsed buffer and is valid while that buffer is alive.
public struct ACLPacket: FieldDescribable {
    /// The header.
    public var header: ACLHeader
    /// The payload (a view of the packet).
    public var payload: UnsafeRawBufferPointer

    /// Data_Total_Length must equal the bytes present (`.invalidLength` otherwise).
    @inlinable
    public init(parsing packet: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(packet)
        header = try ACLHeader(from: &r)
        guard r.remaining == Int(header.dataLength) else {
            throw r.error(.invalidLength, "ACL data total length does not match the bytes present")
        }
        payload = r.rest()
    }

    /// Writes header + `payload` (data length taken from the payload; at most 65535 bytes).
    @inlinable
    public static func encode(handle: UInt16, packetBoundary: ACLPacketBoundaryFlag = .firstNonFlushable,
                              broadcast: ACLBroadcastFlag = .pointToPoint,
                              payload: UnsafeRawBufferPointer, into writer: inout ByteWriter) throws(WireError) {
        guard let length = UInt16(exactly: payload.count) else {
            throw WireError(.valueOutOfRange, at: writer.count, "ACL payload longer than 65535 bytes")
        }
        try ACLHeader(handle: handle, packetBoundary: packetBoundary, broadcast: broadcast, dataLength: length)
            .encode(into: &writer)
        try writer.bytes(payload)
    }

    public var fieldTitle: String { "HCI_ACL_Data" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [
            Field("handle", .uint(UInt64(header.handle))),
            Field("packet_boundary_flag", .named(UInt64(header.packetBoundary.rawValue), header.packetBoundary.description)),
            Field("broadcast_flag", .named(UInt64(header.broadcast.rawValue), header.broadcast.description)),
            Field("data_total_length", .uint(UInt64(header.dataLength))),
            Field("data", .bytes(payload)),
        ]
    }
}

/// An owned ACL data packet for sending (not the hot path: the payload is an array).
public struct ACLDataPacket: Hashable, Sendable, WireEncodable {
    /// Connection_Handle of the link.
    public var handle: UInt16
    /// Packet_Boundary_Flag: first or continuing fragment.
    public var packetBoundary: ACLPacketBoundaryFlag
    /// Broadcast_Flag (point-to-point on LE).
    public var broadcast: ACLBroadcastFlag
    /// The payload (a view of the packet).
    public var payload: [UInt8]

    /// A packet as given.
    public init(handle: UInt16, packetBoundary: ACLPacketBoundaryFlag = .firstNonFlushable,
                broadcast: ACLBroadcastFlag = .pointToPoint, payload: [UInt8]) {
        self.handle = handle
        self.packetBoundary = packetBoundary
        self.broadcast = broadcast
        self.payload = payload
    }

    public var encodedLength: Int { 4 + payload.count }

    public func encode(into writer: inout ByteWriter) throws(WireError) {
        guard let length = UInt16(exactly: payload.count) else {
            throw WireError(.valueOutOfRange, at: writer.count, "ACL payload longer than 65535 bytes")
        }
        try ACLHeader(handle: handle, packetBoundary: packetBoundary, broadcast: broadcast, dataLength: length)
            .encode(into: &writer)
        try writer.bytes(payload)
    }
}

/// An HCI Synchronous Data packet (SCO/eSCO), without the H4 indicator
/// (Core Vol 4 Part E §5.4.3): Connection_Handle (12 bits) | Packet_Status_Flag (2 bits)
/// | RFU (2 bits), Data_Total_Length (u8), data. Parsed only, for display.
///
/// `payload` points into the parsed buffer and is valid while that buffer is alive.
public struct SCOPacket: FieldDescribable {
    /// Connection_Handle of the link.
    public var handle: UInt16
    /// Packet_Status_Flag: 0 correct, 1 possibly invalid, 2 no data, 3 partially lost.
    public var packetStatus: UInt8
    /// Data_Total_Length.
    public var dataLength: UInt8
    /// The payload (a view of the packet).
    public var payload: UnsafeRawBufferPointer

    /// Parses a packet (without the H4 indicator); the data length must match.
    @inlinable
    public init(parsing packet: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(packet)
        let hf = try r.u16("SCO handle and flags")
        handle = hf & 0x0FFF
        packetStatus = UInt8(truncatingIfNeeded: hf >> 12) & 0x3
        dataLength = try r.u8("SCO data total length")
        guard r.remaining == Int(dataLength) else {
            throw r.error(.invalidLength, "SCO data total length does not match the bytes present")
        }
        payload = r.rest()
    }

    public var fieldTitle: String { "HCI_Synchronous_Data" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [
            Field("connection_handle", .uint(UInt64(handle))),
            Field("packet_status_flag", .uint(UInt64(packetStatus))),
            Field("data_total_length", .uint(UInt64(dataLength))),
            Field("data", .bytes(payload)),
        ]
    }
}

/// An HCI ISO Data packet, without the H4 indicator (Core Vol 4 Part E §5.4.5):
/// Connection_Handle (12 bits) | PB_Flag (2 bits) | TS_Flag (1 bit) | RFU,
/// ISO_Data_Load_Length (14 bits), ISO_Data_Load. Parsed only, for display; the
/// data load (with its optional time stamp and SDU header) is not decoded further.
///
/// `payload` points into the parsed buffer and is valid while that buffer is alive.
public struct ISOPacket: FieldDescribable {
    /// Connection_Handle of the link.
    public var handle: UInt16
    /// PB_Flag: 0 first fragment, 1 continuation, 2 complete SDU, 3 last fragment.
    public var packetBoundary: UInt8
    /// TS_Flag: the data load starts with a 4-byte time stamp.
    public var hasTimeStamp: Bool
    /// ISO_Data_Load_Length.
    public var dataLoadLength: UInt16
    /// The payload (a view of the packet).
    public var payload: UnsafeRawBufferPointer

    /// Parses a packet (without the H4 indicator); the data length must match.
    @inlinable
    public init(parsing packet: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(packet)
        let hf = try r.u16("ISO handle and flags")
        handle = hf & 0x0FFF
        packetBoundary = UInt8(truncatingIfNeeded: hf >> 12) & 0x3
        hasTimeStamp = hf & 0x4000 != 0
        dataLoadLength = try r.u16("ISO data load length") & 0x3FFF
        guard r.remaining == Int(dataLoadLength) else {
            throw r.error(.invalidLength, "ISO data load length does not match the bytes present")
        }
        payload = r.rest()
    }

    public var fieldTitle: String { "HCI_ISO_Data" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [
            Field("connection_handle", .uint(UInt64(handle))),
            Field("pb_flag", .uint(UInt64(packetBoundary))),
            Field("ts_flag", .bool(hasTimeStamp)),
            Field("iso_data_load_length", .uint(UInt64(dataLoadLength))),
            Field("iso_data_load", .bytes(payload)),
        ]
    }
}
