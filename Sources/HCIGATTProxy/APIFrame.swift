// The two framings of the ESPHome native API (server side), as bytes in → frames out:
//   plaintext: 0x00, varint payload length, varint message type, payload
//   Noise:     0x01, big-endian u16 length, data (handshake frames, then encrypted
//              messages: u16 BE type, u16 BE length, payload inside each)
// Pure and bounded: a frame longer than the limit is an error before it is buffered.

/// A protobuf message of the API: its type id (api.proto's `option (id)`) and payload.
struct APIMessage: Sendable, Equatable {
    var type: UInt16
    var payload: [UInt8]
    init(_ type: UInt16, _ payload: [UInt8] = []) {
        self.type = type
        self.payload = payload
    }
}

/// Why the bytes from a client cannot be framed.
enum APIFrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first byte of a frame is not this framing's indicator.
    case badIndicator(UInt8)
    /// A length over the limit (or a varint that never ends).
    case tooLong(Int)
    /// A plaintext header's varint is longer than ESPHome's (3 bytes of length, 2 of type).
    case badHeader
    /// An encrypted message shorter than its type and length, or whose length disagrees.
    case badInnerLength

    var description: String {
        switch self {
        case .badIndicator(let b): "frame indicator 0x\(String(b, radix: 16)) is not this framing's"
        case .tooLong(let n): "frame of \(n) bytes is over the limit"
        case .badHeader: "frame header is malformed"
        case .badInnerLength: "encrypted message length does not match"
        }
    }
}

/// Gathers bytes and cuts frames off the front; what is left waits for more.
struct APIFrameReader: Sendable {
    /// ESPHome's own limit for a message (ESP32): 32 KiB.
    static let maxMessage = 32 * 1024
    /// ESPHome's limit for a handshake frame.
    static let maxHandshake = 128

    private var buffer: [UInt8] = []
    private var start = 0

    init() {}

    /// Bytes received and not yet framed.
    var pending: Int { buffer.count - start }

    mutating func append(_ bytes: [UInt8]) {
        if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next plaintext frame; nil until it is all here.
    mutating func nextPlaintext() throws(APIFrameError) -> APIMessage? {
        guard start < buffer.count else { return nil }
        guard buffer[start] == 0x00 else { throw .badIndicator(buffer[start]) }
        var i = start + 1
        func varint(maxBytes: Int) throws(APIFrameError) -> UInt64? {
            var v: UInt64 = 0
            for k in 0 ..< maxBytes {
                guard i < buffer.count else { return nil }
                let b = buffer[i]
                i += 1
                v |= UInt64(b & 0x7F) << (7 * UInt64(k))
                if b & 0x80 == 0 { return v }
            }
            throw .badHeader
        }
        guard let length = try varint(maxBytes: 3) else { return nil }
        guard length <= UInt64(Self.maxMessage) else { throw .tooLong(Int(length)) }
        guard let type = try varint(maxBytes: 3) else { return nil }
        guard type <= 0xFFFF else { throw .badHeader }
        guard buffer.count - i >= Int(length) else { return nil }
        let payload = Array(buffer[i ..< i + Int(length)])
        start = i + Int(length)
        return APIMessage(UInt16(type), payload)
    }

    /// The next Noise frame's data; nil until it is all here. `limit`: the handshake's or
    /// a message's.
    mutating func nextNoise(limit: Int) throws(APIFrameError) -> [UInt8]? {
        guard start < buffer.count else { return nil }
        guard buffer[start] == 0x01 else { throw .badIndicator(buffer[start]) }
        guard buffer.count - start >= 3 else { return nil }
        let length = Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
        guard length <= limit else { throw .tooLong(length) }
        guard buffer.count - start - 3 >= length else { return nil }
        let data = Array(buffer[start + 3 ..< start + 3 + length])
        start += 3 + length
        return data
    }
}

/// Writes frames.
enum APIFrameWriter {
    /// A plaintext frame around `message`.
    static func plaintext(_ message: APIMessage, into out: inout [UInt8]) {
        out.append(0x00)
        ProtoWriter.appendVarint(UInt64(message.payload.count), to: &out)
        ProtoWriter.appendVarint(UInt64(message.type), to: &out)
        out.append(contentsOf: message.payload)
    }

    /// A Noise frame around `data` (at most 65535 bytes).
    static func noise(_ data: [UInt8], into out: inout [UInt8]) {
        out.append(0x01)
        out.append(UInt8(truncatingIfNeeded: data.count >> 8))
        out.append(UInt8(truncatingIfNeeded: data.count))
        out.append(contentsOf: data)
    }

    /// What goes inside an encrypted frame: u16 BE type, u16 BE length, payload.
    static func inner(_ message: APIMessage) -> [UInt8] {
        [UInt8(message.type >> 8), UInt8(truncatingIfNeeded: message.type),
         UInt8(truncatingIfNeeded: message.payload.count >> 8), UInt8(truncatingIfNeeded: message.payload.count)] + message.payload
    }

    /// The message inside a decrypted frame; ESPHome's rule: the length may be shorter than
    /// what follows (padding), never longer.
    static func message(fromInner inner: [UInt8]) throws(APIFrameError) -> APIMessage {
        guard inner.count >= 4 else { throw .badInnerLength }
        let type = UInt16(inner[0]) << 8 | UInt16(inner[1])
        let length = Int(inner[2]) << 8 | Int(inner[3])
        guard length <= inner.count - 4 else { throw .badInnerLength }
        return APIMessage(type, Array(inner[4 ..< 4 + length]))
    }
}
