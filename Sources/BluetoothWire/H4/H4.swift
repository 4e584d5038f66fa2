/// The HCI UART (H4) packet indicator that precedes every packet on a byte-stream
/// transport. Core Vol 4 Part A §2.
///
/// Open set: values other than 0x01...0x05 can be represented, but the deframer
/// cannot find their length and treats them as a fatal stream error.
public struct H4PacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// HCI Command packet (host → controller).
    public static let command = H4PacketType(rawValue: 0x01)
    /// HCI ACL Data packet.
    public static let acl = H4PacketType(rawValue: 0x02)
    /// HCI Synchronous (SCO/eSCO) Data packet.
    public static let sco = H4PacketType(rawValue: 0x03)
    /// HCI Event packet (controller → host).
    public static let event = H4PacketType(rawValue: 0x04)
    /// HCI ISO Data packet.
    public static let iso = H4PacketType(rawValue: 0x05)

    /// Length of the packet header that follows the indicator (Core Vol 4 Part E §5.4);
    /// nil for an unknown indicator.
    @inlinable public var headerLength: Int? {
        switch rawValue {
        case 0x01: 3 // opcode u16, parameter length u8
        case 0x02: 4 // handle/flags u16, data length u16
        case 0x03: 3 // handle/flags u16, data length u8
        case 0x04: 2 // event code u8, parameter length u8
        case 0x05: 4 // handle/flags u16, 14-bit data load length
        default: nil
        }
    }

    /// The length of what follows the header, read from `header`
    /// (which must hold at least `headerLength` bytes). 0 for an unknown type.
    @inlinable
    func bodyLength(header: UnsafeRawPointer) -> Int {
        switch rawValue {
        case 0x01, 0x03: Int(header.load(fromByteOffset: 2, as: UInt8.self))
        case 0x04: Int(header.load(fromByteOffset: 1, as: UInt8.self))
        case 0x02: Int(UInt16(littleEndian: header.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
        case 0x05: Int(UInt16(littleEndian: header.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) & 0x3FFF)
        default: 0
        }
    }

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x01: "HCI Command"
        case 0x02: "HCI ACL Data"
        case 0x03: "HCI Synchronous Data"
        case 0x04: "HCI Event"
        case 0x05: "HCI ISO Data"
        default: nil
        }
    }

    public var description: String { name ?? "H4 type 0x\(Hex.pad(rawValue, 2))" }
}

/// One HCI packet taken from an H4 stream: its type and the packet bytes
/// WITHOUT the indicator (header + parameters/data).
///
/// A view: `packet` points into memory owned by someone else. For frames from
/// ``H4Frame/parse(_:)`` that is the caller's buffer; for frames from
/// ``H4Deframer/next()`` it is the deframer's buffer, valid only until the next
/// mutating call on that deframer (`append`, `next`, `reset`) or its end.
public struct H4Frame {
    /// The packet type (the H4 indicator).
    public var type: H4PacketType
    /// Header + parameters, without the indicator byte.
    public var packet: UnsafeRawBufferPointer

    /// A frame as given.
    @inlinable
    public init(type: H4PacketType, packet: UnsafeRawBufferPointer) {
        self.type = type
        self.packet = packet
    }

    /// The bytes after the header (command/event parameters, ACL/SCO/ISO data).
    @inlinable public var body: UnsafeRawBufferPointer {
        let hl = min(type.headerLength ?? 0, packet.count)
        return UnsafeRawBufferPointer(rebasing: packet[hl ..< packet.count])
    }

    /// Parses exactly one packet with its indicator, as read from an HCI user-channel
    /// socket (each read returns one whole packet). The header's length field must
    /// match the bytes present exactly.
    ///
    /// Errors: `.truncated` (no indicator or short header), `.unknownPacketType`
    /// (offset 0), `.invalidLength` (length field disagrees with the bytes present).
    /// The returned frame points into `packetWithIndicator`.
    @inlinable
    public static func parse(_ packetWithIndicator: UnsafeRawBufferPointer) throws(WireError) -> H4Frame {
        var r = ByteReader(packetWithIndicator)
        let type = H4PacketType(rawValue: try r.u8("H4 packet indicator"))
        guard let headerLength = type.headerLength else {
            throw WireError(.unknownPacketType, at: 0, "unknown H4 packet indicator")
        }
        let header = try r.bytes(headerLength, "HCI packet header")
        guard let base = header.baseAddress else { throw r.error(.truncated, "HCI packet header") }
        let length = type.bodyLength(header: base)
        guard r.remaining == length else {
            throw r.error(.invalidLength, "HCI packet length field does not match the bytes present")
        }
        return H4Frame(type: type, packet: UnsafeRawBufferPointer(rebasing: packetWithIndicator[1 ..< packetWithIndicator.count]))
    }
}

extension H4Frame: FieldDescribable {
    public var fieldTitle: String { "H4 \(type)" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [
            Field("packet_type", .named(UInt64(type.rawValue), type.description)),
            Field("packet", .bytes(packet)),
        ]
    }
}

/// Incremental deframer for an H4 (HCI UART) byte stream. Core Vol 4 Part A §2.
///
/// Feed it whatever the transport read with ``append(_:)`` (cut anywhere: one byte at a
/// time or several packets at once), then call ``next()`` until it returns nil
/// (= needs more bytes). Drain it after every `append`: the buffer holds what was
/// appended and not yet returned.
///
/// ```swift
/// var deframer = H4Deframer()
/// deframer.append(chunk)
/// while let frame = try deframer.next() { handle(frame.type, frame.packet) }
/// ```
///
/// Errors are fatal: an unknown packet indicator (`.unknownPacketType`) or a packet
/// longer than ``maximumPacketLength`` (`.invalidLength`) leaves the deframer failed,
/// with the error's offset counted in bytes from the start of the stream (the
/// indicator of the bad packet). There is no reliable way to find the next packet
/// boundary in an H4 stream, so the deframer does NOT resynchronise: every later
/// `next()` throws the same error and `append` discards its input until ``reset()``.
/// The caller must treat this as a transport failure: reset or reopen the transport
/// (as BlueZ's hci_uart does), then call `reset()`.
///
/// Memory: one buffer allocated at `init` and grown (doubling) only when a packet does
/// not fit, compacted in place. In steady state appending and taking whole packets
/// does not allocate. The deframer is non-copyable because it owns that buffer and the
/// frames it returns point into it.
public struct H4Deframer: ~Copyable {
    /// Accepts every legal packet: the largest is an ACL packet, 4 + 65535 bytes.
    public static let defaultMaximumPacketLength = 4 + 65535

    /// Largest packet accepted (header + parameters, without the indicator).
    /// Lower it to the controller's buffer sizes to bound memory use further.
    public let maximumPacketLength: Int

    @usableFromInline var storage: UnsafeMutableRawPointer
    @usableFromInline var capacity: Int
    @usableFromInline var readIndex: Int = 0
    @usableFromInline var writeIndex: Int = 0
    /// Stream offset of `storage[readIndex]`.
    @usableFromInline var streamOffset: Int = 0
    @usableFromInline var failure: WireError?

    /// - Parameters:
    ///   - maximumPacketLength: cap on header + parameters; at least 4 (a programming error otherwise).
    ///   - initialCapacity: bytes reserved up front; pick the transport's read size plus
    ///     the largest expected packet so the buffer never grows.
    public init(maximumPacketLength: Int = H4Deframer.defaultMaximumPacketLength, initialCapacity: Int = 4096) {
        precondition(maximumPacketLength >= 4, "maximumPacketLength must cover the longest header")
        self.maximumPacketLength = maximumPacketLength
        self.capacity = max(initialCapacity, 16)
        self.storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Bytes appended and not yet returned as frames.
    @inlinable public var bufferedByteCount: Int { writeIndex &- readIndex }
    /// The error that stopped the deframer, if any.
    @inlinable public var error: WireError? { failure }
    /// Stream offset of the next byte `next()` will look at.
    @inlinable public var offset: Int { streamOffset }

    /// Adds bytes read from the transport. Invalidates frames returned earlier.
    /// Ignored while the deframer is failed.
    @inlinable
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, let src = bytes.baseAddress, bytes.count > 0 else { return }
        let n = bytes.count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
        }
        if capacity &- writeIndex < n {
            makeRoom(n)
        }
        (storage + writeIndex).copyMemory(from: src, byteCount: n)
        writeIndex &+= n
    }

    /// Moves unread bytes to the front and grows the buffer if `n` more still do not fit.
    @usableFromInline
    mutating func makeRoom(_ n: Int) {
        let pending = writeIndex &- readIndex
        if readIndex > 0 {
            if pending > 0 { storage.copyMemory(from: storage + readIndex, byteCount: pending) }
            readIndex = 0
            writeIndex = pending
        }
        let needed = pending + n
        guard needed > capacity else { return }
        var newCapacity = capacity
        while newCapacity < needed { newCapacity = newCapacity > Int.max / 2 ? needed : newCapacity * 2 }
        let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if pending > 0 { newStorage.copyMemory(from: storage, byteCount: pending) }
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }

    /// The next complete packet, or nil when more bytes are needed.
    ///
    /// The frame points into the deframer's buffer: use it before the next mutating
    /// call on the deframer. Throws the stored error again while failed (see the type's
    /// documentation); call ``reset()`` after resetting the transport.
    @inlinable
    public mutating func next() throws(WireError) -> H4Frame? {
        if let failure { throw failure }
        let available = writeIndex &- readIndex
        guard available >= 1 else { return nil }
        let start = storage + readIndex
        let type = H4PacketType(rawValue: start.load(as: UInt8.self))
        guard let headerLength = type.headerLength else {
            return try fail(WireError(.unknownPacketType, at: streamOffset, "unknown H4 packet indicator; the stream is out of sync"))
        }
        guard available > headerLength else { return nil }
        let length = headerLength &+ type.bodyLength(header: start + 1)
        guard length <= maximumPacketLength else {
            return try fail(WireError(.invalidLength, at: streamOffset, "H4 packet longer than the configured maximum"))
        }
        guard available > length else { return nil }
        let frame = H4Frame(type: type, packet: UnsafeRawBufferPointer(start: start + 1, count: length))
        readIndex &+= 1 &+ length
        streamOffset &+= 1 &+ length
        return frame
    }

    @usableFromInline
    mutating func fail(_ error: WireError) throws(WireError) -> H4Frame? {
        failure = error
        readIndex = 0
        writeIndex = 0
        throw error
    }

    /// Clears the error and all buffered bytes; the stream offset restarts at 0.
    /// Call after the transport has been reset or reopened.
    public mutating func reset() {
        failure = nil
        readIndex = 0
        writeIndex = 0
        streamOffset = 0
    }
}

/// The deframer owns its buffer uniquely (it is non-copyable), so it can move between tasks.
extension H4Deframer: @unchecked Sendable {}

/// Any encodable HCI packet preceded by its H4 indicator, e.g.
/// `H4Packet(.command, LESetScanEnable(...)).encoded()`.
public struct H4Packet<Packet: WireEncodable>: WireEncodable {
    /// The packet type (the H4 indicator).
    public var type: H4PacketType
    /// The parsed packet.
    public var packet: Packet

    /// A packet as given.
    @inlinable
    public init(_ type: H4PacketType, _ packet: Packet) {
        self.type = type
        self.packet = packet
    }

    @inlinable public var encodedLength: Int { 1 + packet.encodedLength }

    @inlinable
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        try writer.u8(type.rawValue)
        try packet.encode(into: &writer)
    }
}
