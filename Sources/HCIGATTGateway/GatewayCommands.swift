import BluetoothGATT
import BluetoothWire

// Commands from MQTT (`--commands read|write`): read or write a followed device's
// characteristic. The payload is a small JSON object; this file parses it and keeps the
// answers by id. No I/O.

/// What the gateway takes from MQTT.
public enum GatewayCommandMode: String, Sendable, CaseIterable {
    /// Reads only: a write is refused.
    case read
    /// Reads and writes (to what ``GatewayWriteAllowList`` names).
    case write
}

/// What a write command may change (`--commands-allow UUID…`): the characteristic values
/// and descriptors whose UUIDs are named; none by default. A CCCD (2902) or a control point
/// (a RACP's 2A52, 2A9F, 2AAC, 2A55...) is written only when named: a `0201` to a RACP
/// deletes every stored record, a CCCD write takes over the gateway's own subscriptions.
public struct GatewayWriteAllowList: Sendable, Hashable {
    /// The UUIDs named.
    public var uuids: Set<BluetoothUUID>

    /// An allow-list of `uuids`.
    public init(_ uuids: Set<BluetoothUUID> = []) { self.uuids = uuids }

    /// Why a write to `handle` of `database` is refused (with how to allow it), nil when
    /// it is allowed.
    public func refusal(handle: UInt16, in database: GATTDatabase) -> String? {
        guard let c = database.characteristic(containing: handle) else {
            return "refused: handle \(handle) is no characteristic's value or descriptor"
        }
        let target: BluetoothUUID
        if c.valueHandle == handle {
            target = c.uuid
        } else if let d = c.descriptors.first(where: { $0.handle == handle }) {
            target = d.uuid
        } else {
            return "refused: handle \(handle) is \(c.uuid)'s declaration, which no command writes"
        }
        guard !uuids.contains(target) else { return nil }
        let name = AssignedNumbers.characteristicName(target) ?? AssignedNumbers.descriptorName(target)
        return "refused: writes to \(target)\(name.map { " (\($0))" } ?? "") are not allowed on this gateway"
            + " (it takes writes only to the UUIDs given with --commands-allow: add --commands-allow \(target))"
    }
}

/// One command: `{"id": "…", "op": "read" | "write" | "write-without-response",
/// "uuid": "2A19" | "handle": 42, "hex": "0200" | "text": "…", "timeout": 30}`.
public struct GatewayCommand: Sendable, Equatable {
    /// What to do.
    public enum Operation: String, Sendable, Equatable {
        case read
        case write
        case writeWithoutResponse = "write-without-response"
    }

    /// Which attribute: a characteristic by UUID (its value), or an attribute handle.
    public enum Attribute: Sendable, Equatable {
        case uuid(BluetoothUUID)
        case handle(UInt16)
    }

    /// The sender's id: the reply carries it, and a command redelivered with it is
    /// answered from its first result.
    public var id: String
    /// What to do.
    public var operation: Operation
    /// What to do it on.
    public var attribute: Attribute
    /// The value to write (nil for a read).
    public var value: [UInt8]?
    /// How long the command waits for the device's link to come back (default 30 s).
    public var timeout: Duration

    /// The longest payload taken.
    public static let maximumPayload = 4096
    /// How long a command may ask to wait for the link, at most.
    public static let maximumTimeout: Double = 300

    /// A command as given.
    public init(id: String, operation: Operation, attribute: Attribute, value: [UInt8]? = nil, timeout: Duration = .seconds(30)) {
        self.id = id
        self.operation = operation
        self.attribute = attribute
        self.value = value
        self.timeout = timeout
    }

    /// A payload that is not a command: why, and the id when it had one (so the refusal
    /// reaches the sender).
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The payload's id, when it had a usable one.
        public var id: String?
        /// Why it was refused, for the reply.
        public var reason: String
        public var description: String { reason }
    }

    /// Parses `payload`; unknown keys are ignored.
    public static func parse(_ payload: [UInt8]) throws(Refusal) -> GatewayCommand {
        guard payload.count <= maximumPayload else {
            throw Refusal(id: nil, reason: "the payload is \(payload.count) bytes; at most \(maximumPayload)")
        }
        let object: [String: JSONScalar]
        do throws(JSONError) { object = try JSONObjectReader.parse(payload) } catch {
            throw Refusal(id: nil, reason: "not a JSON object: \(error)")
        }
        let id: String
        switch object["id"] {
        case .string(let s)?: id = s
        case .number(let text)?: id = text
        case nil, .null?: throw Refusal(id: nil, reason: "no \"id\"")
        default: throw Refusal(id: nil, reason: "\"id\" is a string or a number")
        }
        func refuse(_ reason: String) -> Refusal { Refusal(id: id, reason: reason) }
        guard case .string(let opText)? = object["op"] else { throw refuse("no \"op\" (read, write or write-without-response)") }
        guard let operation = Operation(rawValue: opText) else {
            throw refuse("unknown op \"\(opText)\": read, write or write-without-response")
        }
        let attribute: Attribute
        switch (object["uuid"], object["handle"]) {
        case (.string(let text)?, nil):
            guard let u = BluetoothUUID(text) else { throw refuse("\"uuid\" is not a UUID: \"\(text)\"") }
            attribute = .uuid(u)
        case (nil, .number(let text)?):
            guard let n = UInt16(text), n != 0 else { throw refuse("\"handle\" is 1-65535, not \(text)") }
            attribute = .handle(n)
        case (nil, nil): throw refuse("give \"uuid\" or \"handle\"")
        case (.some, .some): throw refuse("give \"uuid\" or \"handle\", not both")
        default: throw refuse("\"uuid\" is a string, \"handle\" a number")
        }
        var value: [UInt8]?
        switch (object["hex"], object["text"]) {
        case (.string(let hex)?, nil):
            guard let bytes = Self.hex(hex) else { throw refuse("\"hex\" is pairs of hex digits, not \"\(hex)\"") }
            value = bytes
        case (nil, .string(let text)?): value = Array(text.utf8)
        case (nil, nil): value = nil
        case (.some, .some): throw refuse("give \"hex\" or \"text\", not both")
        default: throw refuse("\"hex\" and \"text\" are strings")
        }
        switch operation {
        case .read:
            if value != nil { throw refuse("a read takes no value") }
        case .write, .writeWithoutResponse:
            guard let v = value else { throw refuse("a write needs \"hex\" or \"text\"") }
            // Core Vol 3 Part F §3.2.9: an attribute value is at most 512 bytes.
            guard v.count <= 512 else { throw refuse("the value is \(v.count) bytes; an attribute holds at most 512") }
        }
        var timeout = Duration.seconds(30)
        switch object["timeout"] {
        case nil: break
        case .number(let text)?:
            guard let s = Double(text), s > 0, s <= maximumTimeout else {
                throw refuse("\"timeout\" is seconds, more than 0 and at most \(Int(maximumTimeout)), not \(text)")
            }
            timeout = .milliseconds(max(1, Int64(s * 1000)))
        default: throw refuse("\"timeout\" is a number of seconds")
        }
        return GatewayCommand(id: id, operation: operation, attribute: attribute, value: value, timeout: timeout)
    }

    static func hex(_ text: String) -> [UInt8]? { Hex.pairs(text.utf8) }
}

/// The answers to commands by device and id, so a command the broker delivers again (QoS 1
/// may) is answered again, not executed twice. Bounded: the oldest answers are forgotten.
public struct CommandLedger: Sendable {
    /// What to do with a command.
    public enum Decision: Sendable, Equatable {
        /// New: execute it, then ``finish(device:id:reply:)``.
        case execute
        /// Answered before: send this reply again.
        case answered(String)
        /// Being executed: its reply will come.
        case inProgress
    }

    private struct Key: Hashable {
        var device: String
        var id: String
    }

    private var replies: [Key: String?] = [:]
    private var order: [Key] = []
    private var first = 0
    /// How many answered commands are kept.
    public let capacity: Int

    /// A ledger keeping the last `capacity` answered commands (and every running one).
    public init(capacity: Int = 1024) { self.capacity = max(1, capacity) }

    /// Commands remembered.
    public var count: Int { replies.count }

    /// Whether to execute the command `id` for `device`; a new one is noted as in progress.
    public mutating func begin(device: String, id: String) -> Decision {
        let key = Key(device: device, id: id)
        if let r = replies[key] { return r.map { .answered($0) } ?? .inProgress }
        replies[key] = .some(nil)
        order.append(key)
        // The oldest answered ones go; one still running stays (forgetting it would let a
        // redelivery execute it again), moved behind the others.
        var scanned = 0
        let limit = order.count - first
        while replies.count > capacity, scanned < limit {
            let oldest = order[first]
            first += 1
            scanned += 1
            if case .some(.none) = replies[oldest] {
                order.append(oldest)
            } else {
                replies[oldest] = nil
            }
        }
        if first > 4096, first * 2 > order.count {
            order.removeFirst(first)
            first = 0
        }
        return .execute
    }

    /// The command's reply, kept for a redelivery.
    public mutating func finish(device: String, id: String, reply: String) {
        let key = Key(device: device, id: id)
        guard replies[key] != nil else { return }  // forgotten meanwhile: nothing to keep
        replies[key] = .some(reply)
    }
}

/// The reply payloads on `<prefix>/<gateway>/<DEVICE>/reply`.
public enum CommandReply {
    /// `{"id":…,"ok":true}` with `fields` after (hex, decoded ...), JSON already.
    public static func success(id: String, fieldsJSON: String = "") -> String {
        "{\"id\":\(jsonString(id)),\"ok\":true" + (fieldsJSON.isEmpty ? "" : ",\(fieldsJSON)") + "}"
    }

    /// `{"id":…,"ok":false,"error":"…"}`; `id` nil for a payload without one.
    public static func failure(id: String?, error: String) -> String {
        "{\"id\":\(id.map(jsonString) ?? "null"),\"ok\":false,\"error\":\(jsonString(error))}"
    }
}

// MARK: JSON

/// A JSON value the command object holds at its top level (nested objects and arrays are
/// read and skipped: `nested`).
enum JSONScalar: Sendable, Equatable {
    case string(String)
    /// The number's text as written (so an id keeps its spelling).
    case number(String)
    case bool(Bool)
    case null
    case nested
}

/// Why a payload is not JSON: where and what.
struct JSONError: Error, Sendable, CustomStringConvertible {
    var offset: Int
    var reason: String
    var description: String { "\(reason) at byte \(offset)" }
}

/// A JSON object's top-level members (RFC 8259), read with bounds checks; nesting deeper
/// than ``maximumDepth`` is refused rather than recursed into.
struct JSONObjectReader {
    static let maximumDepth = 16

    private let bytes: [UInt8]
    private var i = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    static func parse(_ bytes: [UInt8]) throws(JSONError) -> [String: JSONScalar] {
        var r = JSONObjectReader(bytes)
        r.skipSpace()
        guard r.peek == UInt8(ascii: "{") else { throw r.error("expected an object") }
        var members: [String: JSONScalar] = [:]
        try r.object(depth: 1) { key, value throws(JSONError) in
            if members.updateValue(value, forKey: key) != nil { throw JSONError(offset: 0, reason: "the key \"\(key)\" twice") }
        }
        r.skipSpace()
        guard r.i == bytes.count else { throw r.error("more after the object") }
        return members
    }

    private var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    private func error(_ reason: String) -> JSONError { JSONError(offset: i, reason: reason) }

    private mutating func skipSpace() {
        while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
    }

    private mutating func expect(_ c: UInt8) throws(JSONError) {
        guard peek == c else { throw error("expected '\(Character(Unicode.Scalar(c)))'") }
        i += 1
    }

    /// An object; `member` gets each key and scalar (at depth 1) in order.
    private mutating func object(depth: Int, _ member: (String, JSONScalar) throws(JSONError) -> Void) throws(JSONError) {
        try expect(UInt8(ascii: "{"))
        skipSpace()
        if peek == UInt8(ascii: "}") { i += 1; return }
        while true {
            skipSpace()
            let key = try string()
            skipSpace()
            try expect(UInt8(ascii: ":"))
            skipSpace()
            let v = try value(depth: depth)
            try member(key, v)
            skipSpace()
            switch peek {
            case UInt8(ascii: ",")?: i += 1
            case UInt8(ascii: "}")?: i += 1; return
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONError) {
        try expect(UInt8(ascii: "["))
        skipSpace()
        if peek == UInt8(ascii: "]") { i += 1; return }
        while true {
            skipSpace()
            _ = try value(depth: depth)
            skipSpace()
            switch peek {
            case UInt8(ascii: ",")?: i += 1
            case UInt8(ascii: "]")?: i += 1; return
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func value(depth: Int) throws(JSONError) -> JSONScalar {
        switch peek {
        case UInt8(ascii: "\"")?: return .string(try string())
        case UInt8(ascii: "{")?, UInt8(ascii: "[")?:
            guard depth < Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth)") }
            if peek == UInt8(ascii: "{") {
                try object(depth: depth + 1) { _, _ in }
            } else {
                try array(depth: depth + 1)
            }
            return .nested
        case UInt8(ascii: "t")?: try literal("true"); return .bool(true)
        case UInt8(ascii: "f")?: try literal("false"); return .bool(false)
        case UInt8(ascii: "n")?: try literal("null"); return .null
        case let c? where c == UInt8(ascii: "-") || (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(c):
            return .number(try number())
        case nil: throw error("the payload ends")
        default: throw error("not a JSON value")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw error("the payload ends") }
        for k in 0 ..< n where bytes[i + k] != word.utf8Start[k] { throw error("not a JSON value") }
        i += n
    }

    /// A number as RFC 8259 §6 spells it; returned as its text.
    private mutating func number() throws(JSONError) -> String {
        let start = i
        func digits() -> Int {
            let s = i
            while let c = peek, (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(c) { i += 1 }
            return i - s
        }
        if peek == UInt8(ascii: "-") { i += 1 }
        if peek == UInt8(ascii: "0") {
            i += 1
        } else {
            guard digits() > 0 else { throw error("a number needs digits") }
        }
        if peek == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw error("digits after '.'") }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            i += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw error("digits in the exponent") }
        }
        return String(decoding: bytes[start ..< i], as: UTF8.self)
    }

    private mutating func string() throws(JSONError) -> String {
        try expect(UInt8(ascii: "\""))
        var scalars = String.UnicodeScalarView()
        var run = i  // the start of bytes taken as they are
        var out = ""
        func flush(_ end: Int) throws(JSONError) {
            guard end > run else { return }
            guard let s = String(validating: bytes[run ..< end], as: UTF8.self) else { throw JSONError(offset: run, reason: "not UTF-8") }
            out += s
        }
        while true {
            guard let c = peek else { throw error("the string does not end") }
            switch c {
            case UInt8(ascii: "\""):
                try flush(i)
                i += 1
                return out
            case UInt8(ascii: "\\"):
                try flush(i)
                i += 1
                guard let e = peek else { throw error("the string does not end") }
                i += 1
                switch e {
                case UInt8(ascii: "\""): out += "\""
                case UInt8(ascii: "\\"): out += "\\"
                case UInt8(ascii: "/"): out += "/"
                case UInt8(ascii: "b"): out += "\u{08}"
                case UInt8(ascii: "f"): out += "\u{0C}"
                case UInt8(ascii: "n"): out += "\n"
                case UInt8(ascii: "r"): out += "\r"
                case UInt8(ascii: "t"): out += "\t"
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800 ..< 0xDC00).contains(code) {
                        // A high surrogate: its low one must follow (\uDC00-\uDFFF).
                        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                            throw error("a lone surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00 ..< 0xE000).contains(low) else { throw error("a lone surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("a lone surrogate") }
                    scalars.removeAll()
                    scalars.append(scalar)
                    out += String(scalars)
                default: throw error("a bad escape")
                }
                run = i
            case 0x00 ..< 0x20: throw error("a control character in a string")
            default: i += 1
            }
        }
    }

    private mutating func hex4() throws(JSONError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("the payload ends") }
        var v: UInt32 = 0
        for _ in 0 ..< 4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0") ... UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a") ... UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A") ... UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("\\u takes four hex digits")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }
}
