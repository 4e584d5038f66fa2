/// A bounds-checked little-endian cursor over borrowed bytes.
///
/// Every read checks the remaining length and throws ``WireError`` instead of trapping.
/// Nothing is copied: `bytes(_:)` returns a slice of the same memory, valid as long as
/// the caller's buffer is.
public struct ByteReader {
    /// The bytes read (a view).
    public let buffer: UnsafeRawBufferPointer
    /// Position of the next read, relative to `buffer`.
    @usableFromInline var _position: Int
    /// The offset of the next byte.
    @inlinable public var position: Int { _position }
    /// Added to `position` in errors so offsets refer to the whole packet.
    public let baseOffset: Int

    /// A reader at the start of `buffer`; `baseOffset` is added to the offsets errors report.
    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer, baseOffset: Int = 0) {
        self.buffer = buffer
        self._position = 0
        self.baseOffset = baseOffset
    }

    /// Offset of the next byte within the whole packet.
    @inlinable public var offset: Int { baseOffset &+ position }
    /// Bytes left.
    @inlinable public var remaining: Int { buffer.count &- position }
    /// Nothing is left.
    @inlinable public var isAtEnd: Bool { _position >= buffer.count }

    /// An error at the current position (offset with the base added).
    @inlinable
    public func error(_ code: WireError.Code, _ reason: StaticString) -> WireError {
        WireError(code, at: offset, reason)
    }

    @inlinable @inline(__always)
    /// Reads a UInt8; `field` names it in the error when the bytes run out.
    public mutating func u8(_ field: StaticString = "field") throws(WireError) -> UInt8 {
        guard _position < buffer.count else { throw WireError(.truncated, at: offset, field) }
        let v = buffer.load(fromByteOffset: _position, as: UInt8.self)
        _position &+= 1
        return v
    }

    @inlinable @inline(__always)
    /// Reads an Int8.
    public mutating func i8(_ field: StaticString = "field") throws(WireError) -> Int8 {
        Int8(bitPattern: try u8(field))
    }

    @inlinable @inline(__always)
    /// Reads a UInt16, little endian.
    public mutating func u16(_ field: StaticString = "field") throws(WireError) -> UInt16 {
        guard remaining >= 2 else { throw WireError(.truncated, at: offset, field) }
        let v = buffer.loadUnaligned(fromByteOffset: _position, as: UInt16.self)
        _position &+= 2
        return UInt16(littleEndian: v)
    }

    @inlinable @inline(__always)
    /// Reads a 24-bit value, little endian.
    public mutating func u24(_ field: StaticString = "field") throws(WireError) -> UInt32 {
        guard remaining >= 3 else { throw WireError(.truncated, at: offset, field) }
        let lo = UInt32(UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: _position, as: UInt16.self)))
        let hi = UInt32(buffer.load(fromByteOffset: _position &+ 2, as: UInt8.self))
        _position &+= 3
        return lo | hi << 16
    }

    @inlinable @inline(__always)
    /// Reads a UInt32, little endian.
    public mutating func u32(_ field: StaticString = "field") throws(WireError) -> UInt32 {
        guard remaining >= 4 else { throw WireError(.truncated, at: offset, field) }
        let v = buffer.loadUnaligned(fromByteOffset: _position, as: UInt32.self)
        _position &+= 4
        return UInt32(littleEndian: v)
    }

    @inlinable @inline(__always)
    /// Reads a 48-bit value (a BD_ADDR), little endian.
    public mutating func u48(_ field: StaticString = "field") throws(WireError) -> UInt64 {
        guard remaining >= 6 else { throw WireError(.truncated, at: offset, field) }
        let lo = UInt64(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: _position, as: UInt32.self)))
        let hi = UInt64(UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: _position &+ 4, as: UInt16.self)))
        _position &+= 6
        return lo | hi << 32
    }

    @inlinable @inline(__always)
    /// Reads a UInt64, little endian.
    public mutating func u64(_ field: StaticString = "field") throws(WireError) -> UInt64 {
        guard remaining >= 8 else { throw WireError(.truncated, at: offset, field) }
        let v = buffer.loadUnaligned(fromByteOffset: _position, as: UInt64.self)
        _position &+= 8
        return UInt64(littleEndian: v)
    }

    /// The next `count` bytes, without copying.
    @inlinable @inline(__always)
    public mutating func bytes(_ count: Int, _ field: StaticString = "field") throws(WireError) -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw WireError(.truncated, at: offset, field) }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[_position ..< _position &+ count])
        _position &+= count
        return slice
    }

    /// A reader over the next `count` bytes (for length-prefixed sub-structures);
    /// its errors report offsets in the whole packet.
    @inlinable
    public mutating func subReader(_ count: Int, _ field: StaticString = "field") throws(WireError) -> ByteReader {
        let start = offset
        return ByteReader(try bytes(count, field), baseOffset: start)
    }

    /// Everything not read yet.
    @inlinable
    public mutating func rest() -> UnsafeRawBufferPointer {
        let slice = UnsafeRawBufferPointer(rebasing: buffer[_position ..< buffer.count])
        _position = buffer.count
        return slice
    }

    @inlinable @inline(__always)
    /// Skips `count` bytes.
    public mutating func skip(_ count: Int, _ field: StaticString = "field") throws(WireError) {
        guard count >= 0, remaining >= count else { throw WireError(.truncated, at: offset, field) }
        _position &+= count
    }

    /// Throws if any bytes are left: a complete packet must be consumed exactly.
    @inlinable
    public func expectEnd(_ what: StaticString = "unexpected bytes after the packet") throws(WireError) {
        guard isAtEnd else { throw WireError(.trailingBytes, at: offset, what) }
    }
}
