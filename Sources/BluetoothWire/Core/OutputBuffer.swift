/// Bytes of output being built: lines appended in place, handed to `write(2)` in large
/// pieces by whoever owns the file descriptor. Kept and reused, so a line costs no
/// allocation once the buffer has grown to its working size.
///
/// Not copyable: one owner appends, with no reference counting or uniqueness check per
/// append (a scan line is a hundred small appends). Sendable: it has one owner at a time.
public struct OutputBuffer: ~Copyable, @unchecked Sendable {
    @usableFromInline var base: UnsafeMutableRawPointer
    @usableFromInline var capacity: Int
    @usableFromInline var length = 0
    /// Bytes written and not taken yet.
    @inlinable public var count: Int { length }

    /// An empty buffer with room for `capacity` bytes (it grows as needed).
    public init(capacity: Int = 1 << 16) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// Forgets the content, keeping the storage.
    @inlinable public mutating func removeAll() { length = 0 }

    /// Drops the last `n` bytes (a final newline, say).
    public mutating func removeLast(_ n: Int = 1) { length = max(0, length - n) }

    /// The bytes written, valid inside `body`.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The content as a String (invalid UTF-8 repaired).
    public var string: String { withBytes { String(decoding: $0, as: UTF8.self) } }

    /// Makes room for `n` more bytes.
    @inlinable @inline(__always)
    mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(n) }
    }

    @usableFromInline mutating func grow(_ n: Int) {
        let newCapacity = max(capacity * 2, count + n)
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        bigger.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = bigger
        capacity = newCapacity
    }

    /// One byte.
    @inline(__always)
    @inlinable public mutating func byte(_ b: UInt8) {
        reserve(1)
        base.storeBytes(of: b, toByteOffset: count, as: UInt8.self)
        length &+= 1
    }

    /// Literal text.
    @inline(__always)
    @inlinable public mutating func raw(_ s: StaticString) {
        if s.hasPointerRepresentation {
            append(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        } else {
            s.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
        }
    }

    /// A String's UTF-8 as is.
    @inlinable public mutating func utf8(_ s: String) {
        var s = s
        s.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Bytes as is. Short runs (most of a line: names, numbers, small strings) are copied
    /// eight bytes at a time instead of through a call to memcpy.
    @inline(__always)
    @inlinable public mutating func append(_ b: UnsafeRawBufferPointer) {
        let n = b.count
        guard n > 0, let source = UnsafeRawPointer(b.baseAddress) else { return }
        reserve(n)
        let to = base + length
        if n >= 8 && n <= 64 {
            var i = 0
            while i &+ 8 <= n {
                to.storeBytes(of: source.loadUnaligned(fromByteOffset: i, as: UInt64.self), toByteOffset: i, as: UInt64.self)
                i &+= 8
            }
            // The tail: the last eight bytes again (overlapping what was written).
            if i < n {
                to.storeBytes(of: source.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self), toByteOffset: n &- 8, as: UInt64.self)
            }
        } else if n < 8 {
            var i = 0
            while i < n {
                to.storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
                i &+= 1
            }
        } else {
            to.copyMemory(from: source, byteCount: n)
        }
        length &+= n
    }

    /// `,"name":` (the comma when asked): a JSON object key that needs no escape.
    @inline(__always)
    public mutating func jsonKey(_ name: UnsafeRawBufferPointer, comma: Bool) {
        reserve(name.count &+ 4)
        if comma { base.storeBytes(of: UInt8(ascii: ","), toByteOffset: length, as: UInt8.self); length &+= 1 }
        base.storeBytes(of: UInt8(ascii: "\""), toByteOffset: length, as: UInt8.self)
        length &+= 1
        append(name)
        base.storeBytes(of: UInt8(ascii: "\""), toByteOffset: length, as: UInt8.self)
        base.storeBytes(of: UInt8(ascii: ":"), toByteOffset: length &+ 1, as: UInt8.self)
        length &+= 2
    }

    /// Another buffer's bytes.
    public mutating func append(_ other: borrowing OutputBuffer) {
        append(UnsafeRawBufferPointer(start: other.base, count: other.count))
    }

    /// `n` copies of `b` (padding).
    @inlinable public mutating func repeated(_ b: UInt8, _ n: Int) {
        guard n > 0 else { return }
        reserve(n)
        (base + count).initializeMemory(as: UInt8.self, repeating: b, count: n)
        length &+= n
    }

    /// A decimal number.
    public mutating func decimal(_ v: UInt64) {
        if v < 10 { byte(0x30 &+ UInt8(truncatingIfNeeded: v)); return }
        var digits = 1
        var x = v
        while x >= 10 { x /= 10; digits &+= 1 }
        reserve(digits)
        var at = count &+ digits
        x = v
        while at > count {
            at &-= 1
            base.storeBytes(of: 0x30 &+ UInt8(truncatingIfNeeded: x % 10), toByteOffset: at, as: UInt8.self)
            x /= 10
        }
        length &+= digits
    }

    /// A signed decimal number.
    public mutating func decimal(_ v: Int64) {
        if v < 0 { byte(UInt8(ascii: "-")) }
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
        reserve(n)
        Self.upperDigits.withUTF8Buffer { digits in
            var shift = 4 * (n - 1)
            var at = count
            while shift >= 0 {
                base.storeBytes(of: digits[Int((v >> UInt64(shift)) & 0xF)], toByteOffset: at, as: UInt8.self)
                at &+= 1
                shift -= 4
            }
        }
        length &+= n
    }

    /// Each byte's two lowercase hex digits as one little-endian UInt16, made once.
    @usableFromInline static let lowerHexPairs: [UInt16] = (0 ..< 256).map { v in
        let digits = Array("0123456789abcdef".utf8)
        return UInt16(digits[v >> 4]) | UInt16(digits[v & 0xF]) << 8
    }

    /// Two lowercase hex digits per byte, `separator` between bytes (0: none).
    public mutating func hexLower(_ b: UnsafeRawBufferPointer, separator: UInt8 = 0) {
        guard !b.isEmpty else { return }
        if separator == 0 {
            // Advertising data, manufacturer data, values: one table load and one two-byte
            // store per byte.
            reserve(2 &* b.count)
            let out = base + length
            Self.lowerHexPairs.withUnsafeBufferPointer { pairs in
                var k = 0
                for x in b {
                    out.storeBytes(of: pairs[Int(x)].littleEndian, toByteOffset: k, as: UInt16.self)
                    k &+= 2
                }
            }
            length &+= 2 &* b.count
            return
        }
        let per = separator == 0 ? 2 : 3
        let total = b.count &* per &- (separator == 0 ? 0 : 1)
        reserve(total &+ 1)
        let out = base + count
        Self.lowerDigits.withUTF8Buffer { digits in
            var k = 0
            for x in b {
                out.storeBytes(of: digits[Int(x >> 4)], toByteOffset: k, as: UInt8.self)
                out.storeBytes(of: digits[Int(x & 0xF)], toByteOffset: k &+ 1, as: UInt8.self)
                // The separator after the last byte is written and not counted.
                if per == 3 { out.storeBytes(of: separator, toByteOffset: k &+ 2, as: UInt8.self) }
                k &+= per
            }
        }
        length &+= total
    }

    /// An address as ``BluetoothAddress/description`` writes it ("C0:00:00:00:00:2A").
    public mutating func address(_ a: BluetoothAddress) {
        // 17 bytes: one capacity check, then stores (every scan line has one or two).
        reserve(17)
        let out = base + length
        Self.upperDigits.withUTF8Buffer { digits in
            var k = 0
            var shift = 40
            while shift >= 0 {
                let b = Int(truncatingIfNeeded: a.rawValue >> UInt64(shift)) & 0xFF
                out.storeBytes(of: digits[b >> 4], toByteOffset: k, as: UInt8.self)
                out.storeBytes(of: digits[b & 0xF], toByteOffset: k &+ 1, as: UInt8.self)
                if shift > 0 { out.storeBytes(of: UInt8(ascii: ":"), toByteOffset: k &+ 2, as: UInt8.self) }
                k &+= 3
                shift -= 8
            }
        }
        length &+= 17
    }

    /// A UUID as ``BluetoothUUID/description`` writes it (short form for aliases).
    public mutating func uuid(_ u: BluetoothUUID) {
        if let v = u.uuid16 { hexUpper(UInt64(v), width: 4); return }
        if let v = u.uuid32 { hexUpper(UInt64(v), width: 8); return }
        Self.upperDigits.withUTF8Buffer { digits in
            for i in 0 ..< 16 {
                if i == 4 || i == 6 || i == 8 || i == 10 { byte(UInt8(ascii: "-")) }
                let word = i < 8 ? u.high : u.low
                let b = Int(truncatingIfNeeded: word >> UInt64(56 - 8 * (i & 7))) & 0xFF
                byte(digits[b >> 4])
                byte(digits[b & 0xF])
            }
        }
    }

    /// UTF-8 off the wire, invalid sequences replaced by U+FFFD as `String(decoding:as:)`
    /// does (valid text, the usual case, is copied at once).
    public mutating func utf8Repairing(_ b: UnsafeRawBufferPointer) {
        if Self.isValidUTF8(b) {
            append(b)
        } else {
            utf8(String(decoding: b, as: UTF8.self))
        }
    }

    /// What is wrong with JSON output in `bytes`, or nil: it must be valid UTF-8 with no raw
    /// control character (C0, DEL, C1), newlines only ending lines (`lines`: any number of
    /// them; else one line, its newline last). The invariant every JSON writer's fuzz target
    /// checks.
    static func jsonOutputViolation(_ bytes: UnsafeRawBufferPointer, lines: Bool) -> String? {
        guard isValidUTF8(bytes) else { return "JSON output is not UTF-8" }
        var previous: UInt8 = 0
        for (i, b) in bytes.enumerated() {
            if b == 0x0A {
                if !lines && i != bytes.count - 1 { return "newline inside a JSON line" }
            } else if b < 0x20 || b == 0x7F {
                return "raw control byte in JSON"
            }
            if previous == 0xC2 && (0x80 ... 0x9F).contains(b) { return "raw C1 control in JSON" }
            previous = b
        }
        return nil
    }

    /// Whether `b` is well-formed UTF-8 (Unicode 3.9 Table 3-7).
    public static func isValidUTF8(_ b: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = b.count
        if let p = b.baseAddress {
            // ASCII eight bytes at a time.
            while i &+ 8 <= n && p.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i &+= 8 }
        }
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

    /// A JSON string literal: quotes, backslashes and control characters (C0, DEL and C1)
    /// escaped, so JSON read on a terminal carries no control sequence from a peer.
    /// Printable ASCII (nearly every string written) is found eight bytes at a time and
    /// copied at once.
    public mutating func jsonString(_ utf8: UnsafeRawBufferPointer) {
        let n = utf8.count
        guard let p = utf8.baseAddress, n > 0 else { raw("\"\""); return }
        byte(UInt8(ascii: "\""))
        var i = 0
        while i &+ 8 <= n && !Self.mayNeedEscape(p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { i &+= 8 }
        while i < n {
            let c = p.load(fromByteOffset: i, as: UInt8.self)
            if c < 0x20 || c == 0x22 || c == 0x5C || c >= 0x7F { break }
            i &+= 1
        }
        if i == n { append(utf8) } else { jsonEscaped(p, n, from: i) }
        byte(UInt8(ascii: "\""))
    }

    /// The rest of ``jsonString(_:)`` from the first byte that may need an escape.
    private mutating func jsonEscaped(_ p: UnsafeRawPointer, _ n: Int, from first: Int) {
        var run = 0
        var i = first
        while i < n {
            let c = p.load(fromByteOffset: i, as: UInt8.self)
            // Printable ASCII but '"' and '\\', and UTF-8 bytes but a C1 control's lead byte.
            if c >= 0x20 && c != 0x22 && c != 0x5C && c != 0x7F && c != 0xC2 { i &+= 1; continue }
            if c == 0xC2 {
                guard i &+ 1 < n else { i &+= 1; continue }
                let next = p.load(fromByteOffset: i &+ 1, as: UInt8.self)
                guard next >= 0x80 && next <= 0x9F else { i &+= 1; continue }
                if run < i { append(UnsafeRawBufferPointer(start: p + run, count: i &- run)) }
                escapeControl(next)
                i &+= 2
                run = i
                continue
            }
            if run < i { append(UnsafeRawBufferPointer(start: p + run, count: i &- run)) }
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
        if run < n { append(UnsafeRawBufferPointer(start: p + run, count: n &- run)) }
    }

    /// Whether any byte of `w` is below 0x20, '"', '\\', or 0x7F and above.
    @inline(__always)
    static func mayNeedEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & high }
        let below20 = (w &- 0x2020_2020_2020_2020) & ~w & high
        let quote = hasZero(w ^ 0x2222_2222_2222_2222)
        let backslash = hasZero(w ^ 0x5C5C_5C5C_5C5C_5C5C)
        let del = hasZero(w ^ 0x7F7F_7F7F_7F7F_7F7F)
        return (below20 | quote | backslash | del | (w & high)) != 0
    }

    private mutating func escapeControl(_ c: UInt8) {
        raw("\\u00")
        Self.lowerDigits.withUTF8Buffer { digits in
            byte(digits[Int(c >> 4)])
            byte(digits[Int(c & 0xF)])
        }
    }

    /// A JSON string literal of UTF-8 off the wire (invalid sequences as U+FFFD).
    public mutating func jsonString(repairing utf8: UnsafeRawBufferPointer) {
        if Self.isValidUTF8(utf8) { jsonString(utf8) } else { jsonString(String(decoding: utf8, as: UTF8.self)) }
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
