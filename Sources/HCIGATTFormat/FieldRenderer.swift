import BluetoothWire

/// Renders decoded fields as indented text or as one-line JSON.
public enum FieldRenderer {
    // MARK: text

    /// The fields as indented text under `title`.
    public static func text(title: String, fields: [Field]) -> String {
        var s = title
        for f in fields { appendText(&s, f, indent: 1) }
        return s
    }

    private static func appendText(_ s: inout String, _ f: Field, indent: Int) {
        let pad = String(repeating: "  ", count: indent)
        switch f.value {
        case .object(let sub):
            s += "\n\(pad)\(f.name):"
            for g in sub { appendText(&s, g, indent: indent + 1) }
        case .list(let items):
            s += "\n\(pad)\(f.name): [\(items.count)]"
            for (n, item) in items.enumerated() {
                switch item {
                case .object(let sub):
                    s += "\n\(pad)  [\(n)]"
                    for g in sub { appendText(&s, g, indent: indent + 2) }
                default:
                    s += "\n\(pad)  [\(n)] \(scalarText(item))"
                }
            }
        default:
            s += "\n\(pad)\(f.name): \(scalarText(f.value))"
        }
    }

    /// One scalar value as text (numbers, hex bytes, strings quoted).
    public static func scalarText(_ v: FieldValue) -> String {
        switch v {
        case .uint(let u): return String(u)
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .bool(let b): return b ? "yes" : "no"
        case .text(let t): return "\"\(t)\""
        case .bytes(let b): return b.isEmpty ? "(empty)" : "\(Hex.string(b, separator: " ")) (\(b.count) bytes)"
        case .named(let raw, let name): return "\(name) (0x\(Hex.pad(raw, raw > 0xFF ? 4 : 2)))"
        case .object(let fields): return "{" + fields.map { "\($0.name): \(scalarText($0.value))" }.joined(separator: ", ") + "}"
        case .list(let items): return "[" + items.map(scalarText).joined(separator: ", ") + "]"
        }
    }

    // MARK: JSON
    // Rendered into a byte buffer and turned into one String at the end: appending to a
    // String piece by piece costs several times more (a scan line is ~1 KB of JSON).

    /// The fields as one JSON object with `type` and `title`.
    public static func json(type: String, title: String, fields: [Field]) -> String {
        var o = JSONBytes()
        o.raw("{\"type\":")
        o.string(type)
        o.raw(",\"name\":")
        o.string(title)
        for f in fields {
            o.raw(",")
            o.string(f.name)
            o.raw(":")
            o.value(f.value)
        }
        o.raw("}")
        return o.text
    }

    /// One JSON object from fields (no type/name keys).
    public static func jsonObject(_ fields: [Field]) -> String {
        var o = JSONBytes()
        o.value(.object(fields))
        return o.text
    }

    /// JSON for one value.
    public static func json(_ v: FieldValue) -> String {
        var o = JSONBytes()
        o.value(v)
        return o.text
    }
}

/// A JSON writer over UTF-8 bytes.
struct JSONBytes {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(1024) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func number(_ s: String) {
        bytes.append(contentsOf: s.utf8)
    }

    mutating func value(_ v: FieldValue) {
        switch v {
        case .uint(let u): number(String(u))
        case .int(let i): number(String(i))
        case .double(let d): if d.isFinite { number(String(d)) } else { raw("null") }
        case .bool(let b): if b { raw("true") } else { raw("false") }
        case .text(let t): string(t)
        case .bytes(let b):
            bytes.append(UInt8(ascii: "\""))
            hex(b)
            bytes.append(UInt8(ascii: "\""))
        case .named(let raw, let name):
            self.raw("{\"value\":")
            number(String(raw))
            self.raw(",\"name\":")
            string(name)
            self.raw("}")
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            for (i, f) in fields.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                string(f.name)
                bytes.append(UInt8(ascii: ":"))
                value(f.value)
            }
            bytes.append(UInt8(ascii: "}"))
        case .list(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                value(item)
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Two lowercase hex digits per byte, written in place (one growth, no per-byte append).
    mutating func hex(_ b: [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 2 * b.count))
        bytes.withUnsafeMutableBufferPointer { out in
            Self.hexDigits.withUnsafeBufferPointer { digits in
                var k = start
                for x in b {
                    out[k] = digits[Int(x >> 4)]
                    out[k + 1] = digits[Int(x & 0xF)]
                    k += 2
                }
            }
        }
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped. Runs of
    /// bytes that need no escape are copied at once (this is most of a scan's JSON line).
    mutating func string(_ t: String) {
        var t = t
        t.withUTF8 { escaped($0) }
    }

    mutating func escaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var run = 0
        var i = 0
        while i < utf8.count {
            let c = utf8[i]
            defer { i += 1 }
            if c >= 0x20 && c != 0x7F && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") {
                // C1 controls (U+0080-U+009F, UTF-8 C2 80...C2 9F) are escaped too: JSON read
                // on a terminal must not carry control sequences from a peer's strings.
                guard c == 0xC2, i + 1 < utf8.count, (0x80 ... 0x9F).contains(utf8[i + 1]) else { continue }
                if run < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run ..< i])) }
                let c1 = utf8[i + 1]
                raw("\\u00")
                bytes.append(Self.hexDigits[Int(c1 >> 4)])
                bytes.append(Self.hexDigits[Int(c1 & 0xF)])
                i += 1
                run = i + 1
                continue
            }
            if run < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run ..< i])) }
            run = i + 1
            switch c {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case UInt8(ascii: "\n"): raw("\\n")
            case UInt8(ascii: "\r"): raw("\\r")
            case UInt8(ascii: "\t"): raw("\\t")
            default:
                raw("\\u00")
                bytes.append(Self.hexDigits[Int(c >> 4)])
                bytes.append(Self.hexDigits[Int(c & 0xF)])
            }
        }
        if run < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...])) }
        bytes.append(UInt8(ascii: "\""))
    }
}
