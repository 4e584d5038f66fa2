import BluetoothGATT
import BluetoothWire
#if canImport(Glibc)
import Glibc
#endif

/// A parsed JSON value (the CLI links no Foundation).
indirect enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }
}

/// RFC 8259 JSON, strictly: a typo is an error with its byte offset.
struct JSONParser {
    struct Failure: Error {
        var offset: Int
        var reason: String
    }

    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0

    static func parse(_ text: [UInt8]) throws(Failure) -> JSONValue {
        var p = JSONParser(bytes: text)
        let v = try p.value()
        p.skipSpace()
        guard p.i == p.bytes.count else { throw Failure(offset: p.i, reason: "unexpected text after the JSON value") }
        return v
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func skipSpace() {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    private func fail(_ reason: String) -> Failure { Failure(offset: i, reason: reason) }

    private mutating func literal(_ word: String, _ v: JSONValue) throws(Failure) -> JSONValue {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count, Array(bytes[i ..< i + w.count]) == w else { throw fail("expected \(word)") }
        i += w.count
        return v
    }

    private mutating func value() throws(Failure) -> JSONValue {
        skipSpace()
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            depth += 1
            guard depth <= 64 else { throw fail("nested too deeply") }
            defer { depth -= 1 }
            i += 1
            var members: [(String, JSONValue)] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a member name in quotes") }
                let key = try string()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                members.append((key, try value()))
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of input in an object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            depth += 1
            guard depth <= 64 else { throw fail("nested too deeply") }
            defer { depth -= 1 }
            i += 1
            var items: [JSONValue] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                items.append(try value())
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of input in an array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        default: return try number()
        }
    }

    private mutating func number() throws(Failure) -> JSONValue {
        let start = i
        while i < bytes.count, "+-0123456789.eE".utf8.contains(bytes[i]) { i += 1 }
        guard i > start, let d = Double(String(decoding: bytes[start ..< i], as: UTF8.self)), d.isFinite else {
            i = start
            throw fail("expected a value")
        }
        return .number(d)
    }

    private mutating func string() throws(Failure) -> String {
        i += 1  // the opening quote
        var out: [UInt8] = []
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            switch b {
            case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard i < bytes.count else { throw fail("unfinished escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i ..< i + 4], as: UTF8.self), radix: 16) else {
                        throw fail("\\u needs four hex digits")
                    }
                    i += 4
                    out.append(contentsOf: Array(String(Character(Unicode.Scalar(v) ?? "\u{FFFD}")).utf8))
                default: throw fail("unknown escape \\\(Character(Unicode.Scalar(e)))")
                }
            case 0 ..< 0x20: throw fail("control character in a string")
            default: out.append(b)
            }
        }
        throw fail("unterminated string")
    }
}

/// `serve --db FILE`: services from a JSON description.
///
///     {"services": [{"uuid": "180F", "primary": true, "characteristics": [
///         {"uuid": "2A19", "properties": ["read", "notify"], "permissions": ["read"],
///          "value": {"hex": "64"}, "max_length": 1,
///          "descriptors": [{"uuid": "2901", "value": "Battery level"}]}]}]}
///
/// A value is a string (UTF-8 text), {"hex": "..."} or an array of byte numbers.
/// Permissions default to what the properties imply (read, write).
enum DatabaseFile {
    static func load(_ path: String) throws -> [GATTLocalService] {
        guard let f = fopen(path, "rb") else { throw RuntimeError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(f) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n > 0 { data += chunk[0 ..< n] }
            if n < chunk.count { break }
            guard data.count <= 4 << 20 else { throw RuntimeError("\(path): larger than 4 MiB; not a database description") }
        }
        let root: JSONValue
        do { root = try JSONParser.parse(data) } catch {
            throw RuntimeError("\(path): invalid JSON at byte \(error.offset): \(error.reason)")
        }
        do { return try services(root) } catch let e as DescriptionError {
            throw RuntimeError("\(path): \(e.path): \(e.reason)")
        }
    }

    struct DescriptionError: Error {
        var path: String
        var reason: String
    }

    static func services(_ root: JSONValue) throws -> [GATTLocalService] {
        guard case .array(let list)? = root["services"] else {
            throw DescriptionError(path: "$", reason: "needs a \"services\" array")
        }
        return try list.enumerated().map { i, s in try service(s, "services[\(i)]") }
    }

    static func service(_ v: JSONValue, _ path: String) throws -> GATTLocalService {
        let uuid = try uuidField(v, path)
        var primary = true
        if let p = v["primary"] {
            guard case .bool(let b) = p else { throw DescriptionError(path: path + ".primary", reason: "must be true or false") }
            primary = b
        }
        var chars: [GATTLocalCharacteristic] = []
        if let c = v["characteristics"] {
            guard case .array(let list) = c else { throw DescriptionError(path: path + ".characteristics", reason: "must be an array") }
            chars = try list.enumerated().map { i, c in try characteristic(c, "\(path).characteristics[\(i)]") }
        }
        var includes: [BluetoothUUID] = []
        if case .array(let list)? = v["includes"] {
            includes = try list.enumerated().map { i, u in
                guard case .string(let t) = u, let id = BluetoothUUID(t) else {
                    throw DescriptionError(path: "\(path).includes[\(i)]", reason: "must be a UUID string")
                }
                return id
            }
        }
        return GATTLocalService(uuid: uuid, isPrimary: primary, includedServices: includes, characteristics: chars)
    }

    static let propertyNames: [String: GATTCharacteristicProperties] = [
        "broadcast": .broadcast, "read": .read, "write-without-response": .writeWithoutResponse, "write": .write,
        "notify": .notify, "indicate": .indicate, "authenticated-signed-writes": .authenticatedSignedWrites,
        "extended-properties": .extendedProperties,
    ]

    static func characteristic(_ v: JSONValue, _ path: String) throws -> GATTLocalCharacteristic {
        let uuid = try uuidField(v, path)
        var props: GATTCharacteristicProperties = []
        guard case .array(let plist)? = v["properties"] else {
            throw DescriptionError(path: path + ".properties", reason: "needs an array such as [\"read\", \"notify\"]")
        }
        for (i, p) in plist.enumerated() {
            guard case .string(let n) = p, let bit = propertyNames[n] else {
                throw DescriptionError(path: "\(path).properties[\(i)]",
                                       reason: "unknown property; one of \(propertyNames.keys.sorted().joined(separator: ", "))")
            }
            props.insert(bit)
        }
        let permissions = try v["permissions"].map { try permissionList($0, path + ".permissions") }
        var maxLength = ATT.maximumAttributeValueLength
        if let m = v["max_length"] {
            guard case .number(let d) = m, let n = Int(exactly: d), (0 ... 512).contains(n) else {
                throw DescriptionError(path: path + ".max_length", reason: "must be 0-512")
            }
            maxLength = n
        }
        let value = try v["value"].map { try bytes($0, path + ".value") } ?? []
        guard value.count <= maxLength else { throw DescriptionError(path: path + ".value", reason: "longer than max_length (\(maxLength))") }
        var descriptors: [GATTLocalDescriptor] = []
        if let d = v["descriptors"] {
            guard case .array(let list) = d else { throw DescriptionError(path: path + ".descriptors", reason: "must be an array") }
            descriptors = try list.enumerated().map { i, d in
                let p = "\(path).descriptors[\(i)]"
                let u = try uuidField(d, p)
                guard u != BluetoothUUID(0x2902) else { throw DescriptionError(path: p, reason: "the CCCD (2902) is added for notify/indicate; leave it out") }
                return GATTLocalDescriptor(uuid: u, permissions: try d["permissions"].map { try permissionList($0, p + ".permissions") } ?? .readable,
                                           value: .stored(try d["value"].map { try bytes($0, p + ".value") } ?? []))
            }
        }
        return GATTLocalCharacteristic(uuid: uuid, properties: props, permissions: permissions, value: .stored(value),
                                       descriptors: descriptors, maximumLength: maxLength)
    }

    static func uuidField(_ v: JSONValue, _ path: String) throws -> BluetoothUUID {
        guard case .string(let t)? = v["uuid"], let u = BluetoothUUID(t) else {
            throw DescriptionError(path: path + ".uuid", reason: "needs a UUID (\"180F\" or \"12345678-1234-5678-1234-56789abcdef0\")")
        }
        return u
    }

    static func permissionList(_ v: JSONValue, _ path: String) throws -> GATTPermissions {
        guard case .array(let list) = v else { throw DescriptionError(path: path, reason: "must be an array such as [\"read\"]") }
        var p: GATTPermissions = []
        for (i, item) in list.enumerated() {
            guard case .string(let n) = item, let bit = GATTPermissions(name: n) else {
                throw DescriptionError(path: "\(path)[\(i)]", reason: "unknown permission; one of \(GATTPermissions.names.map(\.1).joined(separator: ", "))")
            }
            p.insert(bit)
        }
        return p
    }

    static func bytes(_ v: JSONValue, _ path: String) throws -> [UInt8] {
        switch v {
        case .string(let s): return Array(s.utf8)
        case .object:
            guard case .string(let h)? = v["hex"], case .success(let b) = Hex.parse(h) else {
                throw DescriptionError(path: path, reason: "{\"hex\": \"...\"} needs an even number of hex digits")
            }
            return b
        case .array(let items):
            return try items.map { item in
                guard case .number(let d) = item, let b = UInt8(exactly: d) else {
                    throw DescriptionError(path: path, reason: "byte arrays hold numbers 0-255")
                }
                return b
            }
        default:
            throw DescriptionError(path: path, reason: "a value is a string, {\"hex\": \"...\"} or an array of bytes")
        }
    }
}
