/// Advertising or scan response data, owned. Up to 31 bytes (all legacy data, Vol 6 Part B
/// §2.3.1) are kept inline, so a scanner storing a new device's report and a snapshot of it
/// allocate nothing; longer (extended) data, up to 1650 bytes, is kept in an array.
public struct AdvertisingBytes: Sendable, Hashable, CustomDebugStringConvertible {
    /// Bytes 0 ..< 31 of inline data, zero after the end (so equal data has equal words);
    /// byte ``countOffset`` is the count. All zero while `heap` holds the data.
    @usableFromInline var inline: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    /// The data when longer than ``inlineCapacity`` (and only then).
    @usableFromInline var heap: [UInt8]?

    /// The longest data kept inline: legacy advertising data's maximum.
    public static let inlineCapacity = AdvertisingData.legacyMaximumLength
    /// Where in the inline words the count is: the byte after the longest inline data.
    @usableFromInline static let countOffset = 31

    /// No data.
    public init() {}

    /// A copy of `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer) { replace(with: bytes) }

    /// A copy of `bytes`.
    public init(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { replace(with: $0) }
    }

    /// Bytes held.
    @inlinable
    public var count: Int {
        if let heap { return heap.count }
        return Int(Swift.withUnsafeBytes(of: inline) { $0[Self.countOffset] })
    }

    /// No bytes held.
    @inlinable
    public var isEmpty: Bool { count == 0 }

    /// The bytes as an array (a copy: read through ``withUnsafeBytes(_:)`` on hot paths).
    public var array: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Calls `body` with the bytes, valid only inside it.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let heap { return try heap.withUnsafeBytes(body) }
        let words = inline
        return try Swift.withUnsafeBytes(of: words) { b in
            try body(UnsafeRawBufferPointer(rebasing: b[0 ..< Int(b[Self.countOffset])]))
        }
    }

    /// Whether these are the bytes of `other` (word compares for inline data: a
    /// scanner asks this of every report from a known device).
    public func equals(_ other: UnsafeRawBufferPointer) -> Bool {
        guard other.count <= Self.inlineCapacity else {
            guard let heap, heap.count == other.count else { return false }
            return heap.withUnsafeBytes { $0.elementsEqual(other) }
        }
        guard heap == nil else { return false }
        return Self.words(other) == inline
    }

    /// Now holds a copy of `bytes`: inline when they fit, else in the array it had when
    /// that has room (copied first if a snapshot shares it), else in a new one.
    public mutating func replace(with bytes: UnsafeRawBufferPointer) {
        guard bytes.count > Self.inlineCapacity else {
            heap = nil
            inline = Self.words(bytes)
            return
        }
        inline = (0, 0, 0, 0)
        guard var stored = heap.take(), stored.capacity >= bytes.count else {
            heap = Array(bytes)
            return
        }
        stored.removeAll(keepingCapacity: true)
        stored.append(contentsOf: bytes)
        heap = stored
    }

    /// Inline words of at most 31 bytes: the bytes, zeros, the count.
    @usableFromInline
    static func words(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let n = min(bytes.count, inlineCapacity)
        Swift.withUnsafeMutableBytes(of: &words) { w in
            UnsafeMutableRawBufferPointer(rebasing: w[0 ..< n]).copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0 ..< n]))
            w[countOffset] = UInt8(truncatingIfNeeded: n)
        }
        return words
    }

    /// The bytes in hex ("020106"), as a test failure shows them.
    public var debugDescription: String {
        withUnsafeBytes { b in
            var out = OutputBuffer(capacity: 2 * b.count + 2)
            out.byte(UInt8(ascii: "\""))
            out.hexLower(b)
            out.byte(UInt8(ascii: "\""))
            return out.string
        }
    }

    public static func == (a: AdvertisingBytes, b: AdvertisingBytes) -> Bool {
        switch (a.heap, b.heap) {
        case (nil, nil): a.inline == b.inline
        case let (x?, y?): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes { b in
            hasher.combine(b.count)
            hasher.combine(bytes: b)
        }
    }
}
