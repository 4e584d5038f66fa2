/// A malformed or unencodable packet: what went wrong, where, and why.
///
/// Equality is on `code` and `offset`; `reason` is a human explanation.
/// `reason` is a `StaticString` so raising an error never allocates.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. Open set: new codes can be added without breaking switches.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The input ended before a field that must be present.
        public static let truncated = Code(rawValue: 1)
        /// A length field disagrees with the bytes present or with the spec's limits.
        public static let invalidLength = Code(rawValue: 2)
        /// A field holds a value the spec forbids.
        public static let invalidValue = Code(rawValue: 3)
        /// Bytes remain after a complete packet where none are allowed.
        public static let trailingBytes = Code(rawValue: 4)
        /// An H4 packet indicator that is not 0x01...0x05.
        public static let unknownPacketType = Code(rawValue: 5)
        /// The opcode/code byte does not match what the parser expected.
        public static let unexpectedOpcode = Code(rawValue: 6)
        /// The caller's output buffer is too small for the encoded packet.
        public static let bufferTooSmall = Code(rawValue: 7)
        /// A value does not fit the field it must be encoded into.
        public static let valueOutOfRange = Code(rawValue: 8)

        public var description: String {
            switch self {
            case .truncated: "truncated"
            case .invalidLength: "invalid length"
            case .invalidValue: "invalid value"
            case .trailingBytes: "trailing bytes"
            case .unknownPacketType: "unknown packet type"
            case .unexpectedOpcode: "unexpected opcode"
            case .bufferTooSmall: "buffer too small"
            case .valueOutOfRange: "value out of range"
            default: "error \(rawValue)"
            }
        }
    }

    /// What kind of problem.
    public var code: Code
    /// Byte offset into the parsed input where the fault was found.
    public var offset: Int
    /// What was expected there (the field's name).
    public var reason: StaticString

    /// An error at `offset`.
    @inlinable
    public init(_ code: Code, at offset: Int, _ reason: StaticString) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public static func == (lhs: WireError, rhs: WireError) -> Bool {
        lhs.code == rhs.code && lhs.offset == rhs.offset
    }

    public var description: String {
        "\(code) at offset \(offset): \(reason)"
    }
}
