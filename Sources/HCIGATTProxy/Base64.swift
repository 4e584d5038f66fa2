/// Base64 (RFC 4648 §4) for the API's encryption keys: the key as HA shows it and as the
/// set-key request carries it. Decoding is strict (no whitespace inside, padding as the
/// length requires, unused bits zero), so a typo is an error and not another key.
public enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The padded Base64 text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i]), b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0, b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(v & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func value(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A") ... UInt8(ascii: "Z"): UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a") ... UInt8(ascii: "z"): UInt32(c - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// The bytes of `text`, nil when it is not padded Base64.
    public static func decode<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        let t = Array(text)
        guard t.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(t.count / 4 * 3)
        var i = 0
        while i < t.count {
            let last = i + 4 == t.count
            let pad = last ? (t[i + 3] == UInt8(ascii: "=") ? (t[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var v: UInt32 = 0
            for k in 0 ..< 4 - pad {
                guard let x = value(t[i + k]) else { return nil }
                v = v << 6 | x
            }
            v <<= 6 * UInt32(pad)
            // Bits the padding leaves over must be zero (one text, one key).
            if pad == 1, v & 0xFF != 0 { return nil }
            if pad == 2, v & 0xFFFF != 0 { return nil }
            out.append(UInt8(v >> 16 & 0xFF))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }

    /// The bytes of `text`, nil when it is not padded Base64.
    public static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }
}
