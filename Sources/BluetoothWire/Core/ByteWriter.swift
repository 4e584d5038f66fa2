/// Writes little-endian fields into a caller-provided buffer.
///
/// Running out of room throws ``WireError/Code/bufferTooSmall`` instead of trapping.
public struct ByteWriter {
    /// The buffer written into (the caller's).
    public let buffer: UnsafeMutableRawBufferPointer
    @usableFromInline var _count: Int
    /// Bytes written so far.
    @inlinable public var count: Int { _count }

    /// A writer at the start of `buffer`.
    @inlinable
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
        self._count = 0
    }

    /// Bytes of room left.
    @inlinable public var remaining: Int { buffer.count &- count }

    /// The bytes written so far.
    @inlinable public var written: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[0 ..< _count])
    }

    @inlinable
    mutating func reserve(_ n: Int) throws(WireError) -> Int {
        guard remaining >= n else { throw WireError(.bufferTooSmall, at: _count, "output buffer too small") }
        let at = count
        _count &+= n
        return at
    }

    /// Appends a UInt8; throws when the buffer is full.
    @inlinable
    public mutating func u8(_ v: UInt8) throws(WireError) {
        let at = try reserve(1)
        buffer.storeBytes(of: v, toByteOffset: at, as: UInt8.self)
    }

    /// Appends an Int8.
    @inlinable
    public mutating func i8(_ v: Int8) throws(WireError) { try u8(UInt8(bitPattern: v)) }

    /// Appends a UInt16, little endian.
    @inlinable
    public mutating func u16(_ v: UInt16) throws(WireError) {
        let at = try reserve(2)
        buffer.storeBytes(of: v.littleEndian, toByteOffset: at, as: UInt16.self)
    }

    /// Appends the low 24 bits, little endian.
    @inlinable
    public mutating func u24(_ v: UInt32) throws(WireError) {
        guard v <= 0xFF_FFFF else { throw WireError(.valueOutOfRange, at: _count, "value does not fit 24 bits") }
        try u16(UInt16(truncatingIfNeeded: v))
        try u8(UInt8(truncatingIfNeeded: v >> 16))
    }

    /// Appends a UInt32, little endian.
    @inlinable
    public mutating func u32(_ v: UInt32) throws(WireError) {
        let at = try reserve(4)
        buffer.storeBytes(of: v.littleEndian, toByteOffset: at, as: UInt32.self)
    }

    /// Appends the low 48 bits (a BD_ADDR), little endian.
    @inlinable
    public mutating func u48(_ v: UInt64) throws(WireError) {
        guard v <= 0xFFFF_FFFF_FFFF else { throw WireError(.valueOutOfRange, at: _count, "value does not fit 48 bits") }
        try u32(UInt32(truncatingIfNeeded: v))
        try u16(UInt16(truncatingIfNeeded: v >> 32))
    }

    /// Appends a UInt64, little endian.
    @inlinable
    public mutating func u64(_ v: UInt64) throws(WireError) {
        let at = try reserve(8)
        buffer.storeBytes(of: v.littleEndian, toByteOffset: at, as: UInt64.self)
    }

    /// Appends the bytes.
    @inlinable
    public mutating func bytes(_ src: UnsafeRawBufferPointer) throws(WireError) {
        let at = try reserve(src.count)
        if let base = src.baseAddress, src.count > 0, let dst = buffer.baseAddress {
            (dst + at).copyMemory(from: base, byteCount: src.count)
        }
    }

    /// Appends the bytes.
    @inlinable
    public mutating func bytes(_ src: some Collection<UInt8>) throws(WireError) {
        let at = try reserve(src.count)
        var i = at
        for b in src {
            buffer.storeBytes(of: b, toByteOffset: i, as: UInt8.self)
            i &+= 1
        }
    }

    /// Reserves a byte for a length field to be filled in later with `patch(_:at:)`.
    @inlinable
    public mutating func placeholder8() throws(WireError) -> Int { try reserve(1) }
    /// Reserves two bytes to fill in later (``patch16(_:at:)``); returns their offset.
    @inlinable
    public mutating func placeholder16() throws(WireError) -> Int { try reserve(2) }

    /// Overwrites the byte at `at`.
    @inlinable
    public mutating func patch8(_ v: UInt8, at: Int) {
        precondition(at >= 0 && at < _count)
        buffer.storeBytes(of: v, toByteOffset: at, as: UInt8.self)
    }

    /// Overwrites two bytes at `at`, little endian.
    @inlinable
    public mutating func patch16(_ v: UInt16, at: Int) {
        precondition(at >= 0 && at &+ 2 <= _count)
        buffer.storeBytes(of: v.littleEndian, toByteOffset: at, as: UInt16.self)
    }
}

/// A packet that knows its encoded size and writes itself into a ``ByteWriter``.
public protocol WireEncodable {
    /// Exact number of bytes `encode(into:)` writes.
    var encodedLength: Int { get }
    /// Appends the encoding (exactly ``encodedLength`` bytes); throws when a value is out of range.
    func encode(into writer: inout ByteWriter) throws(WireError)
}

extension WireEncodable {
    /// Encodes into a fresh array (convenience for tests and tools; not the hot path).
    public func encoded() throws(WireError) -> [UInt8] {
        let length = encodedLength
        var failure: WireError?
        let out = [UInt8](unsafeUninitializedCapacity: length) { buf, initialized in
            var w = ByteWriter(UnsafeMutableRawBufferPointer(buf))
            do throws(WireError) {
                try encode(into: &w)
                initialized = w.count
            } catch {
                buf.initialize(repeating: 0)
                initialized = 0
                failure = error
            }
        }
        if let failure { throw failure }
        return out
    }

    /// Encodes into the caller's buffer; returns the number of bytes written.
    @inlinable
    public func encode(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        var w = ByteWriter(buffer)
        try encode(into: &w)
        return w.count
    }
}
