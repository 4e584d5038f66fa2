/// Bytes of output being built: lines appended in place, handed to `write(2)` in large
/// pieces by whoever owns the file descriptor. Kept and reused, so a line costs no
/// allocation once the buffer has grown to its working size.
public struct OutputBuffer: Sendable {
    /// What has been written and not yet taken.
    public var bytes: [UInt8] = []

    /// An empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 1 << 16) { bytes.reserveCapacity(capacity) }

    /// Bytes written and not taken yet.
    @inlinable public var count: Int { bytes.count }

    /// Forgets the content, keeping the storage.
    @inlinable public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// One byte.
    @inlinable public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Literal text.
    @inlinable public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A String's UTF-8 as is.
    @inlinable public mutating func utf8(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Bytes as is.
    @inlinable public mutating func append(_ b: UnsafeRawBufferPointer) { bytes.append(contentsOf: b) }

    /// `n` copies of `b` (padding).
    @inlinable public mutating func repeated(_ b: UInt8, _ n: Int) {
        if n > 0 { bytes.append(contentsOf: repeatElement(b, count: n)) }
    }

    /// A decimal number.
    public mutating func decimal(_ v: UInt64) {
        if v < 10 { bytes.append(0x30 &+ UInt8(v)); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for 20 digits
        let n = withUnsafeMutableBytes(of: &digits) { buf -> Int in
            var i = 24
            var x = v
            while x > 0 {
                i -= 1
                buf[i] = 0x30 &+ UInt8(truncatingIfNeeded: x % 10)
                x /= 10
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[i...]))
            return 24 - i
        }
        _ = n
    }

    /// A signed decimal number.
    public mutating func decimal(_ v: Int64) {
        if v < 0 { bytes.append(UInt8(ascii: "-")) }
        decimal(v.magnitude)
    }

    /// A real number as Swift prints it (`String(d)`: shortest round-trip form).
    public mutating func double(_ d: Double) {
        // description is a small string (no allocation) for any Double.
        utf8(d.description)
    }

    @usableFromInline static let lowerDigits: StaticString = "0123456789abcdef"
    @usableFromInline static let upperDigits: StaticString = "0123456789ABCDEF"

    /// `v` in uppercase hex, at least `width` digits.
    public mutating func hexUpper(_ v: UInt64, width: Int) {
        var n = 1
        while n < 16 && v >> (4 * UInt64(n)) != 0 { n += 1 }
        n = max(n, width)
        Self.upperDigits.withUTF8Buffer { digits in
            var shift = 4 * (n - 1)
            while shift >= 0 {
                bytes.append(digits[Int((v >> UInt64(shift)) & 0xF)])
                shift -= 4
            }
        }
    }

    /// Two lowercase hex digits per byte, `separator` between bytes (0: none).
    public mutating func hexLower(_ b: UnsafeRawBufferPointer, separator: UInt8 = 0) {
        guard !b.isEmpty else { return }
        let start = bytes.count
        let per = separator == 0 ? 2 : 3
        let total = b.count * per - (separator == 0 ? 0 : 1)
        bytes.append(contentsOf: repeatElement(separator, count: total))
        bytes.withUnsafeMutableBufferPointer { out in
            Self.lowerDigits.withUTF8Buffer { digits in
                var k = start
                for x in b {
                    out[k] = digits[Int(x >> 4)]
                    out[k &+ 1] = digits[Int(x & 0xF)]
                    k &+= per
                }
            }
        }
    }

    /// An address as ``BluetoothAddress/description`` writes it ("C0:00:00:00:00:2A").
    public mutating func address(_ a: BluetoothAddress) {
        Self.upperDigits.withUTF8Buffer { digits in
            var shift = 40
            while shift >= 0 {
                let b = Int(truncatingIfNeeded: a.rawValue >> UInt64(shift)) & 0xFF
                bytes.append(digits[b >> 4])
                bytes.append(digits[b & 0xF])
                if shift > 0 { bytes.append(UInt8(ascii: ":")) }
                shift -= 8
            }
        }
    }

    /// A UUID as ``BluetoothUUID/description`` writes it (short form for aliases).
    public mutating func uuid(_ u: BluetoothUUID) {
        if let v = u.uuid16 { hexUpper(UInt64(v), width: 4); return }
        if let v = u.uuid32 { hexUpper(UInt64(v), width: 8); return }
        Self.upperDigits.withUTF8Buffer { digits in
            for i in 0 ..< 16 {
                if i == 4 || i == 6 || i == 8 || i == 10 { bytes.append(UInt8(ascii: "-")) }
                let word = i < 8 ? u.high : u.low
                let b = Int(truncatingIfNeeded: word >> UInt64(56 - 8 * (i & 7))) & 0xFF
                bytes.append(digits[b >> 4])
                bytes.append(digits[b & 0xF])
            }
        }
    }

    /// UTF-8 off the wire, invalid sequences replaced by U+FFFD as `String(decoding:as:)`
    /// does (valid text, the usual case, is copied at once).
    public mutating func utf8Repairing(_ b: UnsafeRawBufferPointer) {
        if Self.isValidUTF8(b) {
            bytes.append(contentsOf: b)
        } else {
            utf8(String(decoding: b, as: UTF8.self))
        }
    }

    /// Whether `b` is well-formed UTF-8 (Unicode 3.9 Table 3-7).
    static func isValidUTF8(_ b: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            if c < 0x80 { i &+= 1; continue }
            let len: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch c {
            case 0xC2 ... 0xDF: len = 2
            case 0xE0: len = 3; lo = 0xA0
            case 0xE1 ... 0xEC, 0xEE ... 0xEF: len = 3
            case 0xED: len = 3; hi = 0x9F
            case 0xF0: len = 4; lo = 0x90
            case 0xF1 ... 0xF3: len = 4
            case 0xF4: len = 4; hi = 0x8F
            default: return false
            }
            guard i + len <= n, (lo ... hi).contains(b[i + 1]) else { return false }
            var k = 2
            while k < len {
                guard (0x80 ... 0xBF).contains(b[i + k]) else { return false }
                k += 1
            }
            i &+= len
        }
        return true
    }

    /// Bytes that may need an escape in a JSON string: C0 controls, `"`, `\\`, DEL, and
    /// 0xC2 (the lead byte of the C1 controls U+0080...U+009F).
    @usableFromInline static let jsonAttention: [Bool] = (0 ... 255).map { c in
        c < 0x20 || c == 0x22 || c == 0x5C || c == 0x7F || c == 0xC2
    }

    /// A JSON string literal: quotes, backslashes and control characters (C0, DEL and C1)
    /// escaped, so JSON read on a terminal carries no control sequence from a peer.
    /// Runs that need no escape are copied at once.
    public mutating func jsonString(_ utf8: UnsafeRawBufferPointer) {
        bytes.append(UInt8(ascii: "\""))
        var run = 0
        var i = 0
        let n = utf8.count
        Self.jsonAttention.withUnsafeBufferPointer { attention in
            while i < n {
                let c = utf8[i]
                if !attention[Int(c)] { i &+= 1; continue }
                if c == 0xC2 {
                    guard i &+ 1 < n, (0x80 ... 0x9F).contains(utf8[i &+ 1]) else { i &+= 1; continue }
                    if run < i { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[run ..< i])) }
                    escapeControl(utf8[i &+ 1])
                    i &+= 2
                    run = i
                    continue
                }
                if run < i { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[run ..< i])) }
                switch c {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case UInt8(ascii: "\n"): raw("\\n")
                case UInt8(ascii: "\r"): raw("\\r")
                case UInt8(ascii: "\t"): raw("\\t")
                default: escapeControl(c)
                }
                i &+= 1
                run = i
            }
        }
        if run == 0 {
            bytes.append(contentsOf: utf8)
        } else if run < n {
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[run...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escapeControl(_ c: UInt8) {
        raw("\\u00")
        Self.lowerDigits.withUTF8Buffer { digits in
            bytes.append(digits[Int(c >> 4)])
            bytes.append(digits[Int(c & 0xF)])
        }
    }

    /// A JSON string literal of a String.
    public mutating func jsonString(_ s: String) {
        var s = s
        s.withUTF8 { jsonString(UnsafeRawBufferPointer($0)) }
    }

    /// A JSON string literal of literal text.
    public mutating func jsonString(_ s: StaticString) {
        s.withUTF8Buffer { jsonString(UnsafeRawBufferPointer($0)) }
    }
}
