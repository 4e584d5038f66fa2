/// The btsnoop capture file format (RFC 1761 "snoop" adapted for HCI; the format
/// Wireshark, tshark, btmon and Android's `btsnoop_hci.log` use).
///
/// Layout, every integer big-endian:
///
/// ```
/// file header (16 bytes):  "btsnoop\0" | version u32 = 1 | datalink u32 (1002 = H4)
/// record header (24 bytes): original length u32 | included length u32 | flags u32
///                           | cumulative drops u32 | timestamp i64
/// record data:              `included length` bytes (for datalink 1002: H4 indicator + packet)
/// ```
///
/// The timestamp counts microseconds since midnight, January 1st of year 0 (nominally;
/// the constant every tool uses is 719 540 days before 1970); ``BTSnoop/epochDelta``
/// converts to and from the Unix epoch. Flags: bit 0 is the direction (0 = sent by the host, 1 = received from
/// the controller), bit 1 is set for commands and events and clear for data packets.
///
/// This file is pure: encoders write into a ``ByteWriter``, ``BTSnoopReader`` walks the
/// records of a file already in memory without allocating.
public enum BTSnoop {
    /// "btsnoop" followed by a NUL byte, read as a big-endian integer.
    public static let magic: UInt64 = 0x6274_736E_6F6F_7000
    /// The only version defined.
    public static let version: UInt32 = 1
    /// Bytes in the file header.
    public static let fileHeaderLength = 16
    /// Bytes in each record header.
    public static let recordHeaderLength = 24
    /// Microseconds from 0000-01-01T00:00:00 to 1970-01-01T00:00:00.
    public static let epochDelta: Int64 = 0x00DC_DDB3_0F2F_8000

    /// The btsnoop timestamp for a Unix time in microseconds.
    @inlinable
    public static func timestamp(unixMicroseconds: Int64) -> Int64 { unixMicroseconds &+ epochDelta }

    /// Writes the 16-byte file header.
    @inlinable
    public static func encodeFileHeader(datalink: BTSnoopDatalink = .h4, into w: inout ByteWriter) throws(WireError) {
        try w.u64(magic.byteSwapped)
        try w.u32(version.byteSwapped)
        try w.u32(datalink.rawValue.byteSwapped)
    }

    /// Writes one record: its 24-byte header and `data`.
    ///
    /// `originalLength` defaults to the data length (nothing cut off); it must not be
    /// smaller than the data (`.invalidLength`), and the data must fit a u32.
    @inlinable
    public static func encodeRecord(
        _ data: UnsafeRawBufferPointer,
        originalLength: UInt32? = nil,
        flags: BTSnoopRecordFlags,
        cumulativeDrops: UInt32 = 0,
        timestamp: Int64,
        into w: inout ByteWriter
    ) throws(WireError) {
        guard let included = UInt32(exactly: data.count) else {
            throw WireError(.valueOutOfRange, at: w.count, "btsnoop record data longer than 4 GiB")
        }
        let original = originalLength ?? included
        guard original >= included else {
            throw WireError(.invalidLength, at: w.count, "btsnoop original length smaller than the included data")
        }
        guard w.remaining >= recordHeaderLength &+ data.count else {
            throw WireError(.bufferTooSmall, at: w.count, "output buffer too small")
        }
        try w.u32(original.byteSwapped)
        try w.u32(included.byteSwapped)
        try w.u32(flags.rawValue.byteSwapped)
        try w.u32(cumulativeDrops.byteSwapped)
        try w.u64(UInt64(bitPattern: timestamp).byteSwapped)
        try w.bytes(data)
    }

    /// Bytes `encodeRecord` writes for `dataLength` bytes of data.
    @inlinable
    public static func encodedRecordLength(dataLength: Int) -> Int { recordHeaderLength &+ dataLength }
}

/// The link type of a btsnoop file: what each record's data holds.
public struct BTSnoopDatalink: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// HCI packets without an indicator; the flags say command/event vs data.
    public static let hciUnencapsulated = BTSnoopDatalink(rawValue: 1001)
    /// HCI UART (H4): each record is the indicator byte followed by the packet.
    public static let h4 = BTSnoopDatalink(rawValue: 1002)
    /// BCSP.
    public static let bcsp = BTSnoopDatalink(rawValue: 1003)
    /// Three-wire UART (H5).
    public static let h5 = BTSnoopDatalink(rawValue: 1004)
    /// BlueZ monitor channel (btmon).
    public static let monitor = BTSnoopDatalink(rawValue: 2001)

    public var description: String {
        switch rawValue {
        case 1001: "HCI unencapsulated (1001)"
        case 1002: "HCI UART H4 (1002)"
        case 1003: "BCSP (1003)"
        case 1004: "H5 (1004)"
        case 2001: "Linux monitor (2001)"
        default: "datalink \(rawValue)"
        }
    }
}

/// The flags word of a record.
public struct BTSnoopRecordFlags: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Bit 0: 1 = received by the host (controller → host), 0 = sent by the host.
    @inlinable public var isReceived: Bool { rawValue & 1 != 0 }
    /// Bit 1: 1 = HCI command or event, 0 = data (ACL/SCO/ISO).
    @inlinable public var isCommandOrEvent: Bool { rawValue & 2 != 0 }

    /// Flags for a packet in one direction and of one kind.
    @inlinable
    public init(received: Bool, commandOrEvent: Bool) {
        rawValue = (received ? 1 : 0) | (commandOrEvent ? 2 : 0)
    }

    /// The flags for an H4 packet of `type` travelling in the given direction.
    @inlinable
    public init(_ type: H4PacketType, received: Bool) {
        self.init(received: received, commandOrEvent: type == .command || type == .event)
    }
}

/// One record of a btsnoop file: a view into the file's bytes.
public struct BTSnoopRecord {
    /// Length of the packet as captured (may exceed `data.count` if it was cut).
    public var originalLength: UInt32
    /// Direction and command/event bits.
    public var flags: BTSnoopRecordFlags
    /// Packets the recorder lost before this one (cumulative).
    public var cumulativeDrops: UInt32
    /// Microseconds since 0000-01-01 (see ``BTSnoop/epochDelta``).
    public var timestamp: Int64
    /// The included bytes (for datalink H4: indicator + HCI packet).
    public var data: UnsafeRawBufferPointer
    /// Byte offset of the record header in the file.
    public var offset: Int

    /// A record header as given.
    @inlinable
    public init(originalLength: UInt32, flags: BTSnoopRecordFlags, cumulativeDrops: UInt32, timestamp: Int64, data: UnsafeRawBufferPointer, offset: Int) {
        self.originalLength = originalLength
        self.flags = flags
        self.cumulativeDrops = cumulativeDrops
        self.timestamp = timestamp
        self.data = data
        self.offset = offset
    }

    /// The timestamp as microseconds since the Unix epoch.
    @inlinable public var unixMicroseconds: Int64 { timestamp &- BTSnoop.epochDelta }
    /// True when the whole packet was captured.
    @inlinable public var isComplete: Bool { Int(originalLength) == data.count }

    /// Re-encodes the record exactly as it was read.
    @inlinable
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try BTSnoop.encodeRecord(data, originalLength: originalLength, flags: flags, cumulativeDrops: cumulativeDrops, timestamp: timestamp, into: &w)
    }
}

/// Walks the records of a btsnoop file held in memory. Allocation-free: records are
/// views into `bytes`, which must stay valid while records are used.
///
/// ```swift
/// var reader = try BTSnoopReader(fileBytes)
/// while let record = try reader.next() { handle(record.data) }
/// ```
///
/// Errors (typed, offsets from the start of the file):
/// - header: `.truncated` (shorter than 16 bytes), `.invalidValue` at 0 (not "btsnoop\0"),
///   at 8 (version other than 1), at 12 (datalink other than `expectedDatalink`);
/// - records: `.truncated` at the record's offset when its header or data is cut off
///   (typically the last record of a capture that was not closed cleanly),
///   `.invalidLength` at the record's offset when the included length exceeds the
///   original length.
/// After an error `next()` keeps throwing it.
public struct BTSnoopReader {
    /// The whole file (a view).
    public let bytes: UnsafeRawBufferPointer
    /// The datalink its header declares (H4 for hcigatt's files).
    public let datalink: BTSnoopDatalink
    /// The format version (1).
    public let version: UInt32
    @usableFromInline var position: Int
    @usableFromInline var failure: WireError?
    /// Where `bytes` starts in the file (a window of a file read in blocks).
    @usableFromInline var baseOffset = 0

    /// Parses the file header. `expectedDatalink` nil accepts any datalink.
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer, expectedDatalink: BTSnoopDatalink? = .h4) throws(WireError) {
        guard bytes.count >= BTSnoop.fileHeaderLength else {
            throw WireError(.truncated, at: bytes.count, "btsnoop file header truncated (need 16 bytes)")
        }
        guard UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)) == BTSnoop.magic else {
            throw WireError(.invalidValue, at: 0, "not a btsnoop file (the magic \"btsnoop\\0\" is missing)")
        }
        let version = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard version == BTSnoop.version else {
            throw WireError(.invalidValue, at: 8, "unsupported btsnoop version (only 1 is defined)")
        }
        let datalink = BTSnoopDatalink(rawValue: UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
        if let expectedDatalink, datalink != expectedDatalink {
            throw WireError(.invalidValue, at: 12, "unexpected btsnoop datalink (expected 1002, HCI UART H4)")
        }
        self.bytes = bytes
        self.datalink = datalink
        self.version = version
        self.position = BTSnoop.fileHeaderLength
    }

    /// Reads records from a window of a file whose header was read already: `bytes`
    /// starts with a record at file offset `fileOffset` (offsets in records and errors are
    /// the file's). A record cut off at the window's end is `.truncated`, as at the end of
    /// a file; ``offset`` then tells where to continue once more bytes are read.
    @inlinable
    public init(window bytes: UnsafeRawBufferPointer, fileOffset: Int, datalink: BTSnoopDatalink) {
        self.bytes = bytes
        self.datalink = datalink
        self.version = BTSnoop.version
        self.position = 0
        self.baseOffset = fileOffset
    }

    /// Offset in `bytes` of the next record (= bytes consumed so far).
    @inlinable public var offset: Int { position }
    /// The error that stopped the reader, if any.
    @inlinable public var error: WireError? { failure }

    /// The next record, nil at the end of the file.
    @inlinable
    public mutating func next() throws(WireError) -> BTSnoopRecord? {
        if let failure { throw failure }
        let start = position
        let left = bytes.count &- start
        if left == 0 { return nil }
        guard left >= BTSnoop.recordHeaderLength else {
            return try fail(WireError(.truncated, at: baseOffset &+ start, "btsnoop record header truncated"))
        }
        let original = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self))
        let included = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: start &+ 4, as: UInt32.self))
        let flags = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: start &+ 8, as: UInt32.self))
        let drops = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: start &+ 12, as: UInt32.self))
        let time = Int64(bigEndian: bytes.loadUnaligned(fromByteOffset: start &+ 16, as: Int64.self))
        guard included <= original else {
            return try fail(WireError(.invalidLength, at: baseOffset &+ start, "btsnoop included length larger than the original length"))
        }
        // included ≤ UInt32.max and left < Int.max: the comparison cannot overflow on 64-bit.
        let dataStart = start &+ BTSnoop.recordHeaderLength
        guard UInt64(included) <= UInt64(left &- BTSnoop.recordHeaderLength) else {
            return try fail(WireError(.truncated, at: baseOffset &+ start, "btsnoop record data truncated (the capture was cut off)"))
        }
        let end = dataStart &+ Int(included)
        position = end
        return BTSnoopRecord(
            originalLength: original,
            flags: BTSnoopRecordFlags(rawValue: flags),
            cumulativeDrops: drops,
            timestamp: time,
            data: UnsafeRawBufferPointer(rebasing: bytes[dataStart ..< end]),
            offset: baseOffset &+ start
        )
    }

    @usableFromInline
    mutating func fail(_ e: WireError) throws(WireError) -> BTSnoopRecord? {
        failure = e
        throw e
    }
}
