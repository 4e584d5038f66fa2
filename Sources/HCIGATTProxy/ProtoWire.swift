// Protocol Buffers' wire format, the part the ESPHome native API uses: varints, zigzag
// sint32, fixed32/fixed64, length-delimited bytes, strings and embedded messages
// (protobuf.dev "Encoding"). Reading never traps: every length is checked against what is
// left, errors name the offset; unknown fields are skipped, as protobuf requires.

/// A message that did not decode: where and why.
struct ProtoError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Reason: Sendable, Equatable {
        /// The bytes end inside a field.
        case truncated
        /// A varint longer than 10 bytes.
        case varintTooLong
        /// Wire type 3, 4 (groups), 6 or 7.
        case unsupportedWireType(UInt8)
        /// Field number 0.
        case fieldZero
        /// A field has the wrong wire type for what it holds.
        case wrongWireType(field: UInt32)
        /// A string field that is not UTF-8.
        case notUTF8(field: UInt32)
    }
    /// The offset in the message where decoding stopped.
    var offset: Int
    var reason: Reason
    init(offset: Int, _ reason: Reason) {
        self.offset = offset
        self.reason = reason
    }
    var description: String {
        switch reason {
        case .truncated: "message ends inside a field at byte \(offset)"
        case .varintTooLong: "varint longer than 10 bytes at byte \(offset)"
        case .unsupportedWireType(let t): "wire type \(t) at byte \(offset) is not supported"
        case .fieldZero: "field number 0 at byte \(offset)"
        case .wrongWireType(let f): "field \(f) has the wrong wire type at byte \(offset)"
        case .notUTF8(let f): "field \(f) at byte \(offset) is not UTF-8"
        }
    }
}

/// One field's value as it is on the wire.
enum ProtoValue: Sendable, Equatable {
    case varint(UInt64)
    case fixed64(UInt64)
    case bytes(Range<Int>)
    case fixed32(UInt32)
}

/// Reads the fields of one message from `bytes` (the whole message, nothing around it).
struct ProtoReader {
    let bytes: [UInt8]
    private var range: Range<Int>
    /// Offset of the field being read (for errors).
    private(set) var fieldOffset: Int

    init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        self.range = range ?? bytes.indices
        fieldOffset = self.range.lowerBound
    }

    /// Reads a varint at `i`, moving `i` past it.
    static func varint(_ bytes: [UInt8], _ i: inout Int, end: Int) throws(ProtoError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        let start = i
        while true {
            guard i < end else { throw ProtoError(offset: start, .truncated) }
            let b = bytes[i]
            i += 1
            guard shift < 64 else { throw ProtoError(offset: start, .varintTooLong) }
            value |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// The next field, nil at the end of the message.
    mutating func next() throws(ProtoError) -> (field: UInt32, value: ProtoValue)? {
        var i = range.lowerBound
        let end = range.upperBound
        guard i < end else { return nil }
        fieldOffset = i
        let key = try Self.varint(bytes, &i, end: end)
        let field = UInt32(truncatingIfNeeded: key >> 3)
        guard key >> 3 != 0, key >> 3 <= UInt64(UInt32.max >> 3) else { throw ProtoError(offset: fieldOffset, .fieldZero) }
        let value: ProtoValue
        switch UInt8(key & 7) {
        case 0:
            value = .varint(try Self.varint(bytes, &i, end: end))
        case 1:
            guard end - i >= 8 else { throw ProtoError(offset: i, .truncated) }
            var v: UInt64 = 0
            for k in 0 ..< 8 { v |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
            i += 8
            value = .fixed64(v)
        case 2:
            let lengthOffset = i
            let n = try Self.varint(bytes, &i, end: end)
            guard n <= UInt64(end - i) else { throw ProtoError(offset: lengthOffset, .truncated) }
            value = .bytes(i ..< i + Int(n))
            i += Int(n)
        case 5:
            guard end - i >= 4 else { throw ProtoError(offset: i, .truncated) }
            var v: UInt32 = 0
            for k in 0 ..< 4 { v |= UInt32(bytes[i + k]) << (8 * UInt32(k)) }
            i += 4
            value = .fixed32(v)
        case let t:
            throw ProtoError(offset: fieldOffset, .unsupportedWireType(t))
        }
        range = i ..< end
        return (field, value)
    }

    // The typed views of a value: a field of the wrong wire type is an error.

    func uint(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> UInt64 {
        guard case .varint(let x) = v else { throw ProtoError(offset: fieldOffset, .wrongWireType(field: field)) }
        return x
    }

    func uint32(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> UInt32 {
        UInt32(truncatingIfNeeded: try uint(v, field))
    }

    func bool(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> Bool { try uint(v, field) != 0 }

    /// sint32 (zigzag).
    func sint32(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> Int32 {
        let u = UInt32(truncatingIfNeeded: try uint(v, field))
        return Int32(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    /// int32 (two's complement, sign-extended to 64 bits on the wire).
    func int32(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> Int32 {
        Int32(truncatingIfNeeded: Int64(bitPattern: try uint(v, field)))
    }

    func range(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> Range<Int> {
        guard case .bytes(let r) = v else { throw ProtoError(offset: fieldOffset, .wrongWireType(field: field)) }
        return r
    }

    func data(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> [UInt8] {
        Array(bytes[try range(v, field)])
    }

    func string(_ v: ProtoValue, _ field: UInt32) throws(ProtoError) -> String {
        let r = try range(v, field)
        guard let s = String(validating: bytes[r], as: UTF8.self) else { throw ProtoError(offset: r.lowerBound, .notUTF8(field: field)) }
        return s
    }

    /// The values of a repeated varint field, packed or not (`into` gathers them).
    func uints(_ v: ProtoValue, _ field: UInt32, into out: inout [UInt64]) throws(ProtoError) {
        switch v {
        case .varint(let x): out.append(x)
        case .bytes(let r):
            var i = r.lowerBound
            while i < r.upperBound { out.append(try Self.varint(bytes, &i, end: r.upperBound)) }
        default: throw ProtoError(offset: fieldOffset, .wrongWireType(field: field))
        }
    }
}

/// Writes fields of one message. Default values (0, false, empty) are left out, as proto3
/// does; callers that must send one say so.
struct ProtoWriter: Sendable {
    var bytes: [UInt8]

    init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    static func varintSize(_ v: UInt64) -> Int {
        var n = 1
        var x = v >> 7
        while x != 0 { n += 1; x >>= 7 }
        return n
    }

    static func appendVarint(_ v: UInt64, to bytes: inout [UInt8]) {
        var x = v
        while x >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: x) | 0x80)
            x >>= 7
        }
        bytes.append(UInt8(x))
    }

    mutating func rawVarint(_ v: UInt64) { Self.appendVarint(v, to: &bytes) }

    mutating func key(_ field: UInt32, _ wireType: UInt8) { rawVarint(UInt64(field) << 3 | UInt64(wireType)) }

    mutating func uint(_ field: UInt32, _ v: UInt64) {
        guard v != 0 else { return }
        key(field, 0)
        rawVarint(v)
    }

    mutating func uint(_ field: UInt32, _ v: UInt32) { uint(field, UInt64(v)) }

    mutating func bool(_ field: UInt32, _ v: Bool) { uint(field, v ? UInt64(1) : 0) }

    /// int32: negative values take 10 bytes (sign-extended), as protobuf writes them.
    mutating func int32(_ field: UInt32, _ v: Int32) { uint(field, UInt64(bitPattern: Int64(v))) }

    /// sint32 (zigzag).
    mutating func sint32(_ field: UInt32, _ v: Int32) {
        uint(field, UInt64(UInt32(bitPattern: (v << 1) ^ (v >> 31))))
    }

    mutating func bytes<C: Collection>(_ field: UInt32, _ v: C) where C.Element == UInt8 {
        guard !v.isEmpty else { return }
        key(field, 2)
        rawVarint(UInt64(v.count))
        bytes.append(contentsOf: v)
    }

    mutating func string(_ field: UInt32, _ v: String) { bytes(field, v.utf8) }

    /// An embedded message, even when empty (its presence can mean something).
    mutating func message(_ field: UInt32, _ body: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter(capacity: 32)
        body(&inner)
        key(field, 2)
        rawVarint(UInt64(inner.bytes.count))
        bytes.append(contentsOf: inner.bytes)
    }

    /// A packed repeated varint field.
    mutating func packed(_ field: UInt32, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        key(field, 2)
        rawVarint(UInt64(values.reduce(0) { $0 + Self.varintSize($1) }))
        for v in values { rawVarint(v) }
    }
}
