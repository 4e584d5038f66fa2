// MQTT control packets, sans I/O: what the client sends, encoded; what the broker sends,
// decoded with bounds checks and typed errors. MQTT 3.1.1 (OASIS Standard, 2014) and
// MQTT 5.0 (OASIS Standard, 2019); section numbers below are MQTT 5's, the 3.1.1 ones are
// given where they differ.

/// The protocol level of CONNECT (§3.1.2.2): 4 is MQTT 3.1.1, 5 is MQTT 5.
public enum MQTTVersion: UInt8, Sendable {
    case v311 = 4
    case v5 = 5
}

/// Control packet types (§2.1.2).
enum MQTTPacketType: UInt8 {
    case connect = 1, connack, publish, puback, pubrec, pubrel, pubcomp, subscribe, suback, unsubscribe, unsuback,
         pingreq, pingresp, disconnect, auth
}

/// A packet from the broker that breaks the protocol: where and why. The client closes the
/// connection on it (§4.13: a Malformed Packet or Protocol Error).
public struct MQTTDecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Offset in the packet (0: the fixed header's first byte).
    public var offset: Int
    /// What is wrong there.
    public var reason: String
    /// The error at `offset`.
    public init(offset: Int, _ reason: String) {
        self.offset = offset
        self.reason = reason
    }
    public var description: String { "malformed MQTT packet at byte \(offset): \(reason)" }
}

/// What CONNACK (§3.2) says.
public struct MQTTConnAck: Sendable, Equatable {
    /// The broker kept the session of this client identifier (§3.2.2.1.1).
    public var sessionPresent: Bool
    /// 0: accepted. MQTT 3.1.1: 1...5 (§3.2.2.3 of 3.1.1); MQTT 5: a reason code ≥ 0x80.
    public var code: UInt8
    /// MQTT 5: how many QoS 1 publications may wait for PUBACK at once (§3.2.2.3.3).
    public var receiveMaximum: UInt16 = 65535
    /// MQTT 5: the largest packet the broker takes (§3.2.2.3.6); nil: no limit.
    public var maximumPacketSize: UInt32?
    /// MQTT 5: the keep-alive the broker wants instead of ours (§3.2.2.3.14).
    public var serverKeepAlive: UInt16?
    /// MQTT 5: the highest QoS the broker takes (§3.2.2.3.4).
    public var maximumQoS: UInt8 = 1
    /// MQTT 5: whether the broker takes retained messages (§3.2.2.3.5).
    public var retainAvailable = true
    /// MQTT 5: the broker's words about a refusal (§3.2.2.3.9).
    public var reasonString: String?
}

/// A PUBLISH from the broker (§3.3).
public struct MQTTIncomingPublish: Sendable, Equatable {
    /// The Topic Name.
    public var topic: String
    /// The Application Message.
    public var payload: [UInt8]
    /// 0 or 1 (2 is refused by the session: it subscribes at QoS 1).
    public var qos: UInt8
    /// Sent because of a new subscription, from what the broker kept (§3.3.1.3).
    public var retain: Bool
    /// The broker may have sent it before.
    public var dup: Bool
    /// Present for QoS 1 and 2.
    public var packetID: UInt16?
}

/// A packet from the broker.
public enum MQTTIncoming: Sendable, Equatable {
    case connack(MQTTConnAck)
    case publish(MQTTIncomingPublish)
    /// PUBACK (§3.4): MQTT 5 adds a reason code (0 when absent, §3.4.2.1).
    case puback(packetID: UInt16, reason: UInt8)
    /// SUBACK (§3.9): one return code per filter (0...2: the granted QoS; ≥ 0x80: refused).
    case suback(packetID: UInt16, codes: [UInt8])
    case unsuback(packetID: UInt16)
    case pingresp
    /// MQTT 5: the broker closes the connection, with a reason (§3.14).
    case disconnect(reason: UInt8, reasonString: String?)
    /// QoS 2 packets and AUTH, which this client never asks for: a protocol error.
    case unexpected(type: UInt8)
}

/// Splits the byte stream from the broker into packets: the fixed header's type and flags,
/// and the Remaining Length (§2.1.4, a Variable Byte Integer of at most 4 bytes).
public struct MQTTFrameReader: Sendable {
    /// Packets larger than this are not taken. MQTT 5 tells the broker the limit in
    /// CONNECT, so a larger packet is a broken or hostile broker (an error); MQTT 3.1.1
    /// cannot, so one (a big retained message) is skipped (`skipsOversized`).
    public let maximumPacketSize: Int
    /// Skip packets over the limit instead of failing.
    public let skipsOversized: Bool
    /// Packets skipped for their size.
    public private(set) var skippedCount = 0
    private var buffer: [UInt8] = []
    private var start = 0
    /// Bytes of a skipped packet still to come.
    private var skipping = 0

    /// A reader refusing (or skipping) packets over `maximumPacketSize` bytes.
    public init(maximumPacketSize: Int = 1 << 20, skipsOversized: Bool = false) {
        self.maximumPacketSize = maximumPacketSize
        self.skipsOversized = skipsOversized
    }

    /// Takes bytes as they arrive.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65536, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        if skipping > 0, start == buffer.count {
            // Inside a skipped packet: its bytes are never kept.
            let n = min(skipping, bytes.count)
            skipping -= n
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[n...]))
            return
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole packet (fixed header included), nil when more bytes are needed.
    public mutating func next() throws(MQTTDecodeError) -> [UInt8]? {
        while true {
            if skipping > 0 {
                let n = min(skipping, buffer.count - start)
                start += n
                skipping -= n
                if skipping > 0 { return nil }
            }
            let available = buffer.count - start
            guard available >= 2 else { return nil }
            var length = 0, shift = 0, i = 1
            while true {
                guard i < available else { return nil }
                guard i <= 4 else { throw MQTTDecodeError(offset: i, "Remaining Length longer than 4 bytes") }
                let b = buffer[start + i]
                length |= Int(b & 0x7F) << shift
                shift += 7
                i += 1
                if b & 0x80 == 0 { break }
            }
            let total = i + length
            guard total <= maximumPacketSize else {
                guard skipsOversized else {
                    throw MQTTDecodeError(offset: 1, "a \(total)-byte packet, over the \(maximumPacketSize)-byte limit")
                }
                skippedCount += 1
                skipping = total
                continue
            }
            guard available >= total else { return nil }
            let packet = Array(buffer[start ..< start + total])
            start += total
            return packet
        }
    }
}

/// Reads a packet's fields with bounds checks.
struct MQTTReader {
    let bytes: [UInt8]
    var offset: Int
    let end: Int

    mutating func byte() throws(MQTTDecodeError) -> UInt8 {
        guard offset < end else { throw MQTTDecodeError(offset: offset, "ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() throws(MQTTDecodeError) -> UInt16 {
        UInt16(try byte()) << 8 | UInt16(try byte())
    }

    mutating func uint32() throws(MQTTDecodeError) -> UInt32 {
        UInt32(try uint16()) << 16 | UInt32(try uint16())
    }

    /// A Variable Byte Integer (§1.5.5).
    mutating func varint() throws(MQTTDecodeError) -> Int {
        var value = 0
        for i in 0 ..< 4 {
            let b = try byte()
            value |= Int(b & 0x7F) << (7 * i)
            if b & 0x80 == 0 { return value }
        }
        throw MQTTDecodeError(offset: offset - 1, "Variable Byte Integer longer than 4 bytes")
    }

    mutating func data(_ n: Int) throws(MQTTDecodeError) -> ArraySlice<UInt8> {
        guard n >= 0, end - offset >= n else { throw MQTTDecodeError(offset: offset, "a \(n)-byte field past the end") }
        defer { offset += n }
        return bytes[offset ..< offset + n]
    }

    /// A UTF-8 Encoded String (§1.5.4): a 2-byte length, then the bytes. Ill-formed UTF-8
    /// or U+0000 is malformed [MQTT-1.5.4-1, MQTT-1.5.4-2] (3.1.1: [MQTT-1.5.3-1, MQTT-1.5.3-2]).
    mutating func string() throws(MQTTDecodeError) -> String {
        let at = offset
        let n = Int(try uint16())
        let raw = try data(n)
        guard !raw.contains(0), let s = String(validating: raw, as: UTF8.self) else {
            throw MQTTDecodeError(offset: at, "a string that is not well-formed UTF-8")
        }
        return s
    }
}

extension MQTTIncoming {
    /// Decodes one whole packet (as `MQTTFrameReader.next()` returns it).
    public static func decode(_ packet: [UInt8], version: MQTTVersion) throws(MQTTDecodeError) -> MQTTIncoming {
        guard let first = packet.first else { throw MQTTDecodeError(offset: 0, "empty") }
        var r = MQTTReader(bytes: packet, offset: 1, end: packet.count)
        let remaining = try r.varint()
        guard r.offset + remaining == packet.count else { throw MQTTDecodeError(offset: 1, "Remaining Length does not match") }
        let flags = first & 0x0F
        guard let type = MQTTPacketType(rawValue: first >> 4) else {
            throw MQTTDecodeError(offset: 0, "packet type 0 is reserved")
        }
        func fixedFlags(_ expected: UInt8) throws(MQTTDecodeError) {
            // §2.1.3: reserved flags are as listed [MQTT-2.1.3-1] (3.1.1: [MQTT-2.2.2-2]).
            guard flags == expected else { throw MQTTDecodeError(offset: 0, "reserved flags 0x\(String(flags, radix: 16))") }
        }
        switch type {
        case .connack:
            try fixedFlags(0)
            let ackFlags = try r.byte()
            // §3.2.2.1: bits 7-1 are reserved [MQTT-3.2.2-1].
            guard ackFlags & 0xFE == 0 else { throw MQTTDecodeError(offset: r.offset - 1, "reserved Connect Acknowledge Flags") }
            var ack = MQTTConnAck(sessionPresent: ackFlags & 1 == 1, code: try r.byte())
            if version == .v5 {
                try r.properties { (id, value, at) throws(MQTTDecodeError) in
                    switch (id, value) {
                    case (0x21, .int(let v)):
                        // §3.2.2.3.3: 0 is a Protocol Error.
                        guard v > 0 else { throw MQTTDecodeError(offset: at, "Receive Maximum 0") }
                        ack.receiveMaximum = UInt16(v)
                    case (0x27, .int(let v)):
                        guard v > 0 else { throw MQTTDecodeError(offset: at, "Maximum Packet Size 0") }
                        ack.maximumPacketSize = UInt32(v)
                    case (0x13, .int(let v)): ack.serverKeepAlive = UInt16(v)
                    case (0x24, .int(let v)): ack.maximumQoS = UInt8(truncatingIfNeeded: v)
                    case (0x25, .int(let v)): ack.retainAvailable = v != 0
                    case (0x1F, .string(let s)): ack.reasonString = s
                    default: break
                    }
                }
            }
            guard r.offset == r.end else { throw MQTTDecodeError(offset: r.offset, "bytes after CONNACK") }
            return .connack(ack)
        case .publish:
            let qos = (flags >> 1) & 3
            // §3.3.1.2: QoS 3 is malformed [MQTT-3.3.1-4]; DUP with QoS 0 too [MQTT-3.3.1-2].
            guard qos < 3 else { throw MQTTDecodeError(offset: 0, "QoS 3") }
            guard !(qos == 0 && flags & 0x08 != 0) else { throw MQTTDecodeError(offset: 0, "DUP set on a QoS 0 message") }
            let topic = try r.string()
            // §4.7.3: wildcards are not allowed in a Topic Name [MQTT-3.3.2-2].
            guard !topic.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) else {
                throw MQTTDecodeError(offset: 3, "a wildcard in a Topic Name")
            }
            var packetID: UInt16?
            if qos > 0 {
                let id = try r.uint16()
                guard id != 0 else { throw MQTTDecodeError(offset: r.offset - 2, "Packet Identifier 0") }
                packetID = id
            }
            if version == .v5 { try r.properties { _, _, _ in } }
            // A topic alias would need state this client never asked for (Topic Alias Maximum 0).
            guard !(topic.isEmpty) else { throw MQTTDecodeError(offset: 3, "an empty Topic Name (no topic alias was allowed)") }
            let payload = Array(try r.data(r.end - r.offset))
            return .publish(MQTTIncomingPublish(topic: topic, payload: payload, qos: qos, retain: flags & 1 == 1,
                                                dup: flags & 0x08 != 0, packetID: packetID))
        case .puback:
            try fixedFlags(0)
            let id = try r.uint16()
            var reason: UInt8 = 0
            if version == .v5, r.offset < r.end {
                reason = try r.byte()
                if r.offset < r.end { try r.properties { _, _, _ in } }
            }
            guard r.offset == r.end else { throw MQTTDecodeError(offset: r.offset, "bytes after PUBACK") }
            return .puback(packetID: id, reason: reason)
        case .suback:
            try fixedFlags(0)
            let id = try r.uint16()
            if version == .v5 { try r.properties { _, _, _ in } }
            let codes = Array(try r.data(r.end - r.offset))
            guard !codes.isEmpty else { throw MQTTDecodeError(offset: r.offset, "SUBACK without a return code") }
            return .suback(packetID: id, codes: codes)
        case .unsuback:
            try fixedFlags(0)
            return .unsuback(packetID: try r.uint16())
        case .pingresp:
            try fixedFlags(0)
            guard remaining == 0 else { throw MQTTDecodeError(offset: 1, "PINGRESP with a body") }
            return .pingresp
        case .disconnect:
            try fixedFlags(0)
            // MQTT 3.1.1: a server never sends DISCONNECT; MQTT 5 may, with a reason (§3.14).
            guard version == .v5 else { throw MQTTDecodeError(offset: 0, "DISCONNECT from an MQTT 3.1.1 server") }
            var reason: UInt8 = 0
            var text: String?
            if r.offset < r.end {
                reason = try r.byte()
                if r.offset < r.end {
                    try r.properties { id, value, _ in if id == 0x1F, case .string(let s) = value { text = s } }
                }
            }
            return .disconnect(reason: reason, reasonString: text)
        case .pubrec, .pubrel, .pubcomp, .auth:
            return .unexpected(type: type.rawValue)
        case .connect, .subscribe, .unsubscribe, .pingreq:
            throw MQTTDecodeError(offset: 0, "a packet only clients send (type \(type.rawValue))")
        }
    }
}

/// An MQTT 5 property value (§2.2.2.2).
enum MQTTPropertyValue {
    case int(UInt32)
    case string(String)
    case other
}

extension MQTTReader {
    /// MQTT 5 Properties (§2.2.2): a length, then identifier/value pairs, each identifier
    /// typed by the table of §2.2.2.2. An unknown identifier is malformed: its length is
    /// unknown, so nothing after it can be read.
    mutating func properties(_ each: (UInt8, MQTTPropertyValue, Int) throws(MQTTDecodeError) -> Void) throws(MQTTDecodeError) {
        let length = try varint()
        guard end - offset >= length else { throw MQTTDecodeError(offset: offset, "Property Length \(length) past the end") }
        var p = MQTTReader(bytes: bytes, offset: offset, end: offset + length)
        while p.offset < p.end {
            let at = p.offset
            let id = try p.varint()
            let value: MQTTPropertyValue
            switch id {
            case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A: value = .int(UInt32(try p.byte()))
            case 0x13, 0x21, 0x22, 0x23: value = .int(UInt32(try p.uint16()))
            case 0x02, 0x11, 0x18, 0x27: value = .int(try p.uint32())
            case 0x0B: value = .int(UInt32(try p.varint()))
            case 0x03, 0x08, 0x12, 0x15, 0x1A, 0x1C, 0x1F: value = .string(try p.string())
            case 0x09, 0x16: _ = try p.data(Int(try p.uint16())); value = .other
            case 0x26: _ = try p.string(); _ = try p.string(); value = .other
            default: throw MQTTDecodeError(offset: at, "unknown property 0x\(String(id, radix: 16))")
            }
            try each(UInt8(truncatingIfNeeded: id), value, at)
        }
        offset = p.end
    }
}

/// The last will (§3.1.2.5): published by the broker when the connection ends without
/// DISCONNECT.
public struct MQTTWill: Sendable, Equatable {
    /// Where the broker publishes it.
    public var topic: String
    /// What it publishes.
    public var payload: [UInt8]
    /// Published retained.
    public var retain: Bool
    /// Its QoS (0 or 1).
    public var qos: UInt8
    /// A will.
    public init(topic: String, payload: [UInt8], retain: Bool, qos: UInt8 = 1) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
        self.qos = qos
    }
}

/// What CONNECT (§3.1) carries.
public struct MQTTConnect: Sendable, Equatable {
    /// 3.1.1 or 5.
    public var version: MQTTVersion
    /// The Client Identifier: stable, so the broker keeps the session.
    public var clientID: String
    /// 3.1.1: Clean Session; 5: Clean Start (§3.1.2.4).
    public var cleanStart: Bool
    /// Seconds (§3.1.2.10); 0 turns keep-alive off.
    public var keepAlive: UInt16
    /// User Name, if the broker wants one.
    public var username: String?
    /// Password, if the broker wants one.
    public var password: [UInt8]?
    /// The last will.
    public var will: MQTTWill?
    /// MQTT 5: seconds the broker keeps the session after the connection ends (§3.1.2.11.2).
    public var sessionExpiry: UInt32 = 0
    /// MQTT 5: the largest packet this client takes (§3.1.2.11.4).
    public var maximumPacketSize: UInt32?

    /// Why these fields cannot be sent (a string over 65 535 bytes or with U+0000, a will
    /// topic with a wildcard), nil when they can.
    public var problem: String? {
        if !MQTTEncode.isValidString(clientID) { return "the client identifier is not a valid MQTT string" }
        if let u = username, !MQTTEncode.isValidString(u) { return "the user name is not a valid MQTT string" }
        if let p = password, p.count > 65535 { return "the password is longer than 65 535 bytes" }
        if let w = will {
            if w.topic.isEmpty || !MQTTEncode.isValidString(w.topic)
                || w.topic.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) {
                return "the will's topic is not a valid Topic Name"
            }
            if w.payload.count > 65535 { return "the will's message is longer than 65 535 bytes" }
        }
        return nil
    }

    /// A CONNECT without credentials, will or MQTT 5 properties.
    public init(version: MQTTVersion, clientID: String, cleanStart: Bool, keepAlive: UInt16) {
        self.version = version
        self.clientID = clientID
        self.cleanStart = cleanStart
        self.keepAlive = keepAlive
    }
}

/// Encoders of the packets the client sends.
public enum MQTTEncode {
    static func varint(_ n: Int, into out: inout [UInt8]) {
        var v = n
        repeat {
            var b = UInt8(v & 0x7F)
            v >>= 7
            if v > 0 { b |= 0x80 }
            out.append(b)
        } while v > 0
    }

    static func string<S: Collection>(_ bytes: S, into out: inout [UInt8]) where S.Element == UInt8 {
        out.append(UInt8(truncatingIfNeeded: bytes.count >> 8))
        out.append(UInt8(truncatingIfNeeded: bytes.count))
        out.append(contentsOf: bytes)
    }

    /// The fixed header (§2.1.1) in front of `body`.
    static func frame(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [first]
        out.reserveCapacity(body.count + 5)
        varint(body.count, into: &out)
        out.append(contentsOf: body)
        return out
    }

    /// The largest Remaining Length (§2.1.4): 268 435 455.
    public static let maximumRemainingLength = 268_435_455

    /// Whether a string fits a UTF-8 Encoded String (at most 65 535 bytes, no U+0000).
    public static func isValidString(_ s: String) -> Bool {
        s.utf8.count <= 65535 && !s.utf8.contains(0)
    }

    /// CONNECT (§3.1). Check ``MQTTConnect/problem`` first: the fields must fit their
    /// encodings.
    public static func connect(_ c: MQTTConnect) -> [UInt8] {
        var c = c
        // MQTT 3.1.1: a password needs a user name [MQTT-3.1.2-22]; an empty one it is.
        if c.version == .v311, c.password != nil, c.username == nil { c.username = "" }
        var body: [UInt8] = [0, 4]
        body.append(contentsOf: Array("MQTT".utf8))
        body.append(c.version.rawValue)
        var flags: UInt8 = c.cleanStart ? 0x02 : 0
        if let w = c.will { flags |= 0x04 | (w.qos & 3) << 3 | (w.retain ? 0x20 : 0) }
        if c.password != nil { flags |= 0x40 }
        if c.username != nil { flags |= 0x80 }
        body.append(flags)
        body.append(UInt8(c.keepAlive >> 8))
        body.append(UInt8(truncatingIfNeeded: c.keepAlive))
        if c.version == .v5 {
            var props: [UInt8] = []
            if c.sessionExpiry > 0 { props.append(0x11); uint32(c.sessionExpiry, into: &props) }
            if let m = c.maximumPacketSize { props.append(0x27); uint32(m, into: &props) }
            varint(props.count, into: &body)
            body.append(contentsOf: props)
        }
        string(Array(c.clientID.utf8), into: &body)
        if let w = c.will {
            if c.version == .v5 { body.append(0) }  // no Will Properties
            string(Array(w.topic.utf8), into: &body)
            string(w.payload, into: &body)
        }
        if let u = c.username { string(Array(u.utf8), into: &body) }
        if let p = c.password { string(p, into: &body) }
        return frame(0x10, body)
    }

    static func uint32(_ v: UInt32, into out: inout [UInt8]) {
        out.append(contentsOf: [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)])
    }

    /// PUBLISH (§3.3). `packetID` for QoS 1.
    public static func publish(topic: String, payload: UnsafeRawBufferPointer, qos: UInt8, retain: Bool, dup: Bool,
                               packetID: UInt16?, version: MQTTVersion) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(topic.utf8.count + payload.count + 5)
        string(Array(topic.utf8), into: &body)
        if qos > 0, let id = packetID {
            body.append(UInt8(id >> 8))
            body.append(UInt8(truncatingIfNeeded: id))
        }
        if version == .v5 { body.append(0) }
        body.append(contentsOf: payload)
        return frame(0x30 | (dup ? 0x08 : 0) | (qos & 3) << 1 | (retain ? 1 : 0), body)
    }

    /// PUBACK (§3.4), success.
    public static func puback(_ id: UInt16) -> [UInt8] {
        [0x40, 2, UInt8(id >> 8), UInt8(truncatingIfNeeded: id)]
    }

    /// SUBSCRIBE (§3.8) of one filter; the fixed header's flags are 0010 [MQTT-3.8.1-1].
    public static func subscribe(_ filter: String, qos: UInt8, packetID: UInt16, version: MQTTVersion) -> [UInt8] {
        var body: [UInt8] = [UInt8(packetID >> 8), UInt8(truncatingIfNeeded: packetID)]
        if version == .v5 { body.append(0) }
        string(Array(filter.utf8), into: &body)
        body.append(qos & 3)
        return frame(0x82, body)
    }

    /// PINGREQ (§3.12).
    public static let pingreq: [UInt8] = [0xC0, 0]
    /// DISCONNECT (§3.14), normal disconnection: the broker discards the will.
    public static let disconnect: [UInt8] = [0xE0, 0]
}
