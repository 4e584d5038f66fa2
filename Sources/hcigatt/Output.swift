import BluetoothWire
#if canImport(Glibc)
import Glibc
#endif

/// Line-oriented output without Foundation: stdout through the stdlib's buffered `print`,
/// stderr unbuffered with write(2) so errors interleave correctly with progress.
enum Console {
    static func out(_ s: String) { print(s) }

    static func err(_ s: String) { errRaw(s + "\n") }

    /// Writes to stderr as is (no newline), e.g. a progress line ending in "\r".
    static func errRaw(_ s: String) {
        var line = s
        line.withUTF8 { buf in
            var rest = UnsafeRawBufferPointer(buf)
            while !rest.isEmpty {
                let n = write(2, rest.baseAddress, rest.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            }
        }
    }

    static func flush() { fflush(nil) }
}

/// Renders decoded fields as indented text or as one-line JSON.
enum FieldRenderer {
    // MARK: text

    static func text(title: String, fields: [Field]) -> String {
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

    static func scalarText(_ v: FieldValue) -> String {
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

    static func json(type: String, title: String, fields: [Field]) -> String {
        var s = "{\"type\":"
        appendJSONString(&s, type)
        s += ",\"name\":"
        appendJSONString(&s, title)
        for f in fields {
            s += ","
            appendJSONString(&s, f.name)
            s += ":"
            appendJSON(&s, f.value)
        }
        s += "}"
        return s
    }

    /// One JSON object from fields (no type/name keys).
    static func jsonObject(_ fields: [Field]) -> String {
        var s = ""
        appendJSON(&s, .object(fields))
        return s
    }

    static func appendJSON(_ s: inout String, _ v: FieldValue) {
        switch v {
        case .uint(let u): s += String(u)
        case .int(let i): s += String(i)
        case .double(let d): s += d.isFinite ? String(d) : "null"
        case .bool(let b): s += b ? "true" : "false"
        case .text(let t): appendJSONString(&s, t)
        case .bytes(let b): appendJSONString(&s, Hex.string(b))
        case .named(let raw, let name):
            s += "{\"value\":\(raw),\"name\":"
            appendJSONString(&s, name)
            s += "}"
        case .object(let fields):
            s += "{"
            for (i, f) in fields.enumerated() {
                if i > 0 { s += "," }
                appendJSONString(&s, f.name)
                s += ":"
                appendJSON(&s, f.value)
            }
            s += "}"
        case .list(let items):
            s += "["
            for (i, item) in items.enumerated() {
                if i > 0 { s += "," }
                appendJSON(&s, item)
            }
            s += "]"
        }
    }

    static func appendJSONString(_ s: inout String, _ t: String) {
        s += "\""
        for u in t.unicodeScalars {
            switch u {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case "\n": s += "\\n"
            case "\r": s += "\\r"
            case "\t": s += "\\t"
            default:
                if u.value < 0x20 {
                    s += "\\u00" + Hex.pad(UInt8(u.value), 2).lowercased()
                } else {
                    s.unicodeScalars.append(u)
                }
            }
        }
        s += "\""
    }
}
