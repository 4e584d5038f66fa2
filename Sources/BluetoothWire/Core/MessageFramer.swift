/// Messages on a byte stream (GATT writes and notifications, or an L2CAP channel's SDUs):
/// each message is its UTF-8 text and a newline, cut into pieces as large as the carrier
/// takes. The Nordic UART Service carries text the same way, so terminal apps on phones
/// (nRF Toolbox, Bluefruit Connect) talk to `hcigatt chat` too. Pure: what a peer sends
/// goes in, messages come out (fuzzed: `Fuzz/targets/message_framer.swift`).
public struct MessageFramer: Sendable {
    /// Bytes of a message not ended yet.
    public private(set) var pending: [UInt8] = []
    /// A message this long without a newline is delivered as it is.
    public static let limit = 65_536

    /// The messages `bytes` completes (without the newline; a CR before it dropped).
    public mutating func append(_ bytes: [UInt8]) -> [String] {
        var out: [String] = []
        var start = 0
        for (i, b) in bytes.enumerated() where b == 0x0A {
            pending += bytes[start ..< i]
            if pending.last == 0x0D { pending.removeLast() }
            out.append(String(decoding: pending, as: UTF8.self))
            pending.removeAll(keepingCapacity: true)
            start = i + 1
        }
        pending += bytes[start...]
        if pending.count >= Self.limit, let m = flush() { out.append(m) }
        return out
    }

    /// What came without a newline so far, as a message (nil: nothing).
    public mutating func flush() -> String? {
        guard !pending.isEmpty else { return nil }
        defer { pending.removeAll() }
        return String(decoding: pending, as: UTF8.self)
    }

    /// `message` and its newline in pieces of at most `size` bytes (over GATT: ATT_MTU - 3,
    /// and never more than an attribute value's 512: a longer write is refused, and a
    /// refused write without response is lost without a word).
    public static func pieces(_ message: String, size: Int) -> [[UInt8]] {
        let bytes = Array(message.utf8) + [0x0A]
        let size = max(1, size)
        return stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0 ..< min($0 + size, bytes.count)]) }
    }

    /// An empty framer.
    public init() {}

    /// The text with control characters (C0 but tab, DEL, C1) shown as U+FFFD: a peer's
    /// message must not drive the terminal (escape sequences, OSC 52 clipboard writes).
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for u in text.unicodeScalars { out.append(isControl(u) ? "\u{FFFD}" : u) }
        return String(out)
    }

    private static func isControl(_ u: Unicode.Scalar) -> Bool {
        (u.value < 0x20 && u != "\t") || (0x7F ... 0x9F).contains(u.value)
    }
}
