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
        Self.copySmall(base + length, source, n)
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

    /// A newline and `n` spaces (the text writer's indent): eight spaces a store.
    @inlinable @inline(__always) public mutating func newlineIndent(_ n: Int) {
        reserve(n &+ 17)
        Self.storeIndent(base + length, n)
        length &+= n &+ 1
    }

    /// A newline and `n` spaces at `p`, with room for at least 17 bytes and `n + 1`: two
    /// stores up to sixteen spaces (the usual depth), more a word at a time. Bytes past
    /// `n + 1` are reserved room, not counted.
    @inlinable @inline(__always) static func storeIndent(_ p: UnsafeMutableRawPointer, _ n: Int) {
        let spaces: UInt64 = 0x2020_2020_2020_2020
        p.storeBytes(of: UInt8(ascii: "\n"), as: UInt8.self)
        p.storeBytes(of: spaces, toByteOffset: 1, as: UInt64.self)
        p.storeBytes(of: spaces, toByteOffset: 9, as: UInt64.self)
        var i = 17
        while i <= n {
            p.storeBytes(of: spaces, toByteOffset: i, as: UInt64.self)
            i &+= 8
        }
    }

    /// A text field's start: newline, `indent` spaces, `name`, `": "`. One capacity check
    /// for all (every line of the text writer begins so).
    @inlinable public mutating func textFieldStart(indent: Int, name: UnsafeRawBufferPointer) {
        let n = name.count
        reserve(indent &+ n &+ 18)
        let p = base + length
        Self.storeIndent(p, indent)
        let to = p + (indent &+ 1)
        if let source = name.baseAddress { Self.copySmall(to, source, n) }
        to.storeBytes(of: UInt8(ascii: ":"), toByteOffset: n, as: UInt8.self)
        to.storeBytes(of: UInt8(ascii: " "), toByteOffset: n &+ 1, as: UInt8.self)
        length &+= indent &+ n &+ 3
    }

    /// "00" to "99": two digits per load (a computed literal: no lazy global to check).
    @usableFromInline static var decimalPairs: UnsafeRawPointer {
        UnsafeRawPointer(("00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899" as StaticString).utf8Start)
    }
    /// "00" to "ff", each byte's two lowercase hex digits.
    @usableFromInline static var lowerHexPairs: UnsafeRawPointer {
        UnsafeRawPointer(("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff" as StaticString).utf8Start)
    }
    /// "00" to "FF".
    @usableFromInline static var upperHexPairs: UnsafeRawPointer {
        UnsafeRawPointer(("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9FA0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF" as StaticString).utf8Start)
    }

    /// The two digits of `v` (< 100, or a byte for the hex tables) from `table`, at `offset`.
    @inlinable @inline(__always)
    mutating func storePair(_ table: UnsafeRawPointer, _ v: Int, at offset: Int) {
        base.storeBytes(of: table.loadUnaligned(fromByteOffset: v &* 2, as: UInt16.self), toByteOffset: offset, as: UInt16.self)
    }

    /// A decimal number (two digits per division). Below 100 (lengths, counts, indexes:
    /// most numbers of a described packet) inline, without a call.
    @inlinable @inline(__always)
    public mutating func decimal(_ v: UInt64) {
        if v < 100 {
            reserve(2)
            if v < 10 {
                base.storeBytes(of: 0x30 &+ UInt8(truncatingIfNeeded: v), toByteOffset: length, as: UInt8.self)
                length &+= 1
            } else {
                storePair(Self.decimalPairs, Int(truncatingIfNeeded: v), at: length)
                length &+= 2
            }
            return
        }
        decimalFrom100(v)
    }

    @usableFromInline mutating func decimalFrom100(_ v: UInt64) {
        let table = Self.decimalPairs
        var digits = 3
        var limit: UInt64 = 1000
        while v >= limit && digits < 20 {
            digits &+= 1
            if limit > UInt64.max / 10 { break }
            limit &*= 10
        }
        reserve(digits)
        var at = length &+ digits
        var x = v
        while x >= 100 {
            let r = Int(truncatingIfNeeded: x % 100)
            x /= 100
            at &-= 2
            storePair(table, r, at: at)
        }
        if x >= 10 {
            storePair(table, Int(truncatingIfNeeded: x), at: at &- 2)
        } else {
            base.storeBytes(of: 0x30 &+ UInt8(truncatingIfNeeded: x), toByteOffset: at &- 1, as: UInt8.self)
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

    /// A time in seconds from nanoseconds, as a JSON number: the decimals it needs (none
    /// to nine), never an exponent ("0.0", "0.00005", "12.3456"). The same digits as
    /// ``double(_:)`` of `nanoseconds / 1e9` below 11 days and from 0.0001 s, written
    /// with integer arithmetic.
    public mutating func seconds(nanoseconds: UInt64) {
        decimal(nanoseconds / 1_000_000_000)
        var x = nanoseconds % 1_000_000_000
        if x == 0 { raw(".0"); return }
        // All nine digits, two per division, then the trailing zeros taken back (the
        // fraction is not 0: a digit other than 0 stops the scan).
        reserve(10)
        base.storeBytes(of: UInt8(ascii: "."), toByteOffset: length, as: UInt8.self)
        let start = length &+ 1
        let table = Self.decimalPairs
        base.storeBytes(of: 0x30 &+ UInt8(truncatingIfNeeded: x % 10), toByteOffset: start &+ 8, as: UInt8.self)
        x /= 10
        storePair(table, Int(truncatingIfNeeded: x % 100), at: start &+ 6)
        x /= 100
        storePair(table, Int(truncatingIfNeeded: x % 100), at: start &+ 4)
        x /= 100
        storePair(table, Int(truncatingIfNeeded: x % 100), at: start &+ 2)
        storePair(table, Int(truncatingIfNeeded: x / 100), at: start)
        var end = start &+ 9
        while base.load(fromByteOffset: end &- 1, as: UInt8.self) == 0x30 { end &-= 1 }
        length = end
    }

    /// `v` in uppercase hex, at least `width` digits (up to 16). A byte in two digits
    /// (codes and types: "0x1A") inline.
    @inlinable @inline(__always)
    public mutating func hexUpper(_ v: UInt64, width: Int) {
        if width == 2 && v <= 0xFF {
            reserve(2)
            storePair(Self.upperHexPairs, Int(truncatingIfNeeded: v), at: length)
            length &+= 2
            return
        }
        hexUpperAny(v, width: width)
    }

    /// ` (0xHH)`, or ` (0xHHHH)` above a byte: the code after a named value's label, in
    /// one capacity check and three stores for a byte.
    @inlinable @inline(__always)
    public mutating func parenthesizedHex(_ v: UInt64) {
        if v <= 0xFF {
            reserve(8)
            // " (0x" as one word, its bytes in memory order on any host.
            base.storeBytes(of: UInt32(0x7830_2820).littleEndian, toByteOffset: length, as: UInt32.self)
            storePair(Self.upperHexPairs, Int(truncatingIfNeeded: v), at: length &+ 4)
            base.storeBytes(of: UInt8(ascii: ")"), toByteOffset: length &+ 6, as: UInt8.self)
            length &+= 7
            return
        }
        raw(" (0x")
        hexUpper(v, width: 4)
        byte(UInt8(ascii: ")"))
    }

    @usableFromInline mutating func hexUpperAny(_ v: UInt64, width: Int) {
        let n = max(max(width, 1), (64 &- v.leadingZeroBitCount &+ 3) / 4)
        reserve(n)
        let table = Self.upperHexPairs
        var at = length &+ n
        var x = v
        while at &- length >= 2 {
            at &-= 2
            storePair(table, Int(truncatingIfNeeded: x & 0xFF), at: at)
            x >>= 8
        }
        if at > length {
            // An odd count: the first digit alone (the second of its pair).
            base.storeBytes(of: table.load(fromByteOffset: Int(truncatingIfNeeded: x & 0xF) &* 2 &+ 1, as: UInt8.self),
                            toByteOffset: length, as: UInt8.self)
        }
        length &+= n
    }

    /// Two lowercase hex digits per byte, `separator` between bytes (0: none).
    public mutating func hexLower(_ b: UnsafeRawBufferPointer, separator: UInt8 = 0) {
        guard !b.isEmpty else { return }
        let table = Self.lowerHexPairs
        if separator == 0 {
            // Advertising data, manufacturer data, values: one table load and one two-byte
            // store per byte.
            reserve(2 &* b.count)
            var k = length
            for x in b {
                storePair(table, Int(x), at: k)
                k &+= 2
            }
            length = k
            return
        }
        // The separator after the last byte is written and not counted.
        reserve(3 &* b.count)
        var k = length
        for x in b {
            storePair(table, Int(x), at: k)
            base.storeBytes(of: separator, toByteOffset: k &+ 2, as: UInt8.self)
            k &+= 3
        }
        length = k &- 1
    }

    /// An address as ``BluetoothAddress/description`` writes it ("C0:00:00:00:00:2A").
    public mutating func address(_ a: BluetoothAddress) {
        // 17 bytes: one capacity check, then stores (every scan line has one or two).
        reserve(17)
        let table = Self.upperHexPairs
        var k = length
        var shift = 40
        while shift > 0 {
            storePair(table, Int(truncatingIfNeeded: a.rawValue >> UInt64(shift)) & 0xFF, at: k)
            base.storeBytes(of: UInt8(ascii: ":"), toByteOffset: k &+ 2, as: UInt8.self)
            k &+= 3
            shift &-= 8
        }
        storePair(table, Int(truncatingIfNeeded: a.rawValue) & 0xFF, at: k)
        length &+= 17
    }

    /// A UUID as ``BluetoothUUID/description`` writes it (short form for aliases).
    public mutating func uuid(_ u: BluetoothUUID) {
        if let v = u.uuid16 { hexUpper(UInt64(v), width: 4); return }
        if let v = u.uuid32 { hexUpper(UInt64(v), width: 8); return }
        // 8-4-4-4-12: 36 bytes, one capacity check.
        reserve(36)
        let table = Self.upperHexPairs
        var k = length
        for i in 0 ..< 16 {
            if i == 4 || i == 6 || i == 8 || i == 10 {
                base.storeBytes(of: UInt8(ascii: "-"), toByteOffset: k, as: UInt8.self)
                k &+= 1
            }
            let word = i < 8 ? u.high : u.low
            storePair(table, Int(truncatingIfNeeded: word >> UInt64(56 &- 8 &* (i & 7))) & 0xFF, at: k)
            k &+= 2
        }
        length = k
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
        reserve(2)
        storePair(Self.lowerHexPairs, Int(c), at: length)
        length &+= 2
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

    /// A JSON string of this library's literal text that needs no escape (names of
    /// types and kinds): quoted and copied, not scanned.
    @inlinable @inline(__always) public mutating func jsonLiteral(_ s: StaticString) {
        guard s.hasPointerRepresentation else { jsonString(s); return }
        let n = s.utf8CodeUnitCount
        reserve(n &+ 2)
        base.storeBytes(of: UInt8(ascii: "\""), toByteOffset: length, as: UInt8.self)
        Self.copySmall(base + (length &+ 1), UnsafeRawPointer(s.utf8Start), n)
        base.storeBytes(of: UInt8(ascii: "\""), toByteOffset: length &+ 1 &+ n, as: UInt8.self)
        length &+= n &+ 2
    }

    /// Copies `n` bytes: words for up to 64 (the last word overlapping), bytes below 8,
    /// memcpy above 64 (most pieces of a line are short: a call costs more than they do).
    @inlinable @inline(__always)
    static func copySmall(_ to: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ n: Int) {
        if n >= 8 && n <= 64 {
            var i = 0
            while i &+ 8 <= n {
                to.storeBytes(of: source.loadUnaligned(fromByteOffset: i, as: UInt64.self), toByteOffset: i, as: UInt64.self)
                i &+= 8
            }
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
    }

    /// A JSON string literal of literal text.
    public mutating func jsonString(_ s: StaticString) {
        s.withUTF8Buffer { jsonString(UnsafeRawBufferPointer($0)) }
    }
}
