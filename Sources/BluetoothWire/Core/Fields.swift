/// A decoded packet as named fields, for display (`hcigatt decode`) and JSON output.
///
/// Not used on the hot path: building fields allocates. Every parsed packet type
/// conforms to ``FieldDescribable`` so the CLI can print any of them the same way.
public indirect enum FieldValue: Sendable, Equatable {
    case uint(UInt64)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case text(String)
    /// Raw bytes, printed as hex.
    case bytes([UInt8])
    /// A number shown with its symbolic name, e.g. an opcode or an error code.
    case named(UInt64, String)
    case object([Field])
    case list([FieldValue])
}

/// One named value of a decoded packet or characteristic.
public struct Field: Sendable, Equatable {
    /// The name, like the specification's in snake_case.
    public var name: String
    /// The value.
    public var value: FieldValue
    /// A field as given.
    @inlinable public init(_ name: String, _ value: FieldValue) {
        self.name = name
        self.value = value
    }
}

/// A value that describes itself as named fields (the text and JSON renderers print them).
public protocol FieldDescribable {
    /// A short title, e.g. "HCI_LE_Advertising_Report".
    var fieldTitle: String { get }
    /// The fields, named like the specification in snake_case.
    var fields: [Field] { get }
}

extension FieldValue {
    /// Bytes, copied.
    @inlinable public static func bytes(_ b: UnsafeRawBufferPointer) -> FieldValue { .bytes(Array(b)) }
    /// A 16-bit value (a number; the renderers decide how to show it).
    @inlinable public static func hex16(_ v: UInt16) -> FieldValue { .uint(UInt64(v)) }
}

/// Hex helpers shared by descriptions (not the hot path).
/// `v` in uppercase hex, zero-padded to `width` digits ("0x" not included): for messages.
public func hex(_ v: some BinaryInteger, _ width: Int) -> String { Hex.pad(v, width) }

/// Hex text: rendering and parsing.
public enum Hex {
    static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The bytes as hex digits, two per byte, with `separator` between them.
    public static func string(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        // Build UTF-8 bytes, then one String: appending scalars one by one is slow.
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * (2 + separator.utf8.count))
        var first = true
        for b in bytes {
            if !first { out.append(contentsOf: separator.utf8) }
            first = false
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Fixed-width uppercase hex of an integer, e.g. `pad(0x2a, 4)` → "002A".
    public static func pad(_ v: some BinaryInteger, _ width: Int) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// Pairs of hex digits and nothing else (no separators, no "0x"), as files and wire
    /// formats spell bytes; nil otherwise.
    public static func pairs(_ digits: some Collection<UInt8>) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var high: UInt8?
        for c in digits {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return out
    }

    /// Parses hex text, ignoring spaces, colons, dashes and a leading "0x".
    /// Returns nil (with the offending character index) on anything else or an odd digit count.
    public static func parse(_ text: some StringProtocol) -> Result<[UInt8], HexError> {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count / 2)
        var high: UInt8? = nil
        var index = 0
        var prev: UInt8 = 0
        for c in text.utf8 {
            defer { index += 1; prev = c }
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "-"), UInt8(ascii: "\t"), UInt8(ascii: ","), UInt8(ascii: "|"):
                if high != nil { return .failure(HexError(index: index, reason: "odd number of hex digits in a group")) }
                continue
            case UInt8(ascii: "x"), UInt8(ascii: "X"):
                // Accept a "0x" prefix: the '0' was taken as a high nibble.
                if high == 0 && prev == UInt8(ascii: "0") { high = nil; continue }
                return .failure(HexError(index: index, reason: "unexpected 'x'"))
            default:
                return .failure(HexError(index: index, reason: "not a hex digit"))
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        if high != nil { return .failure(HexError(index: index, reason: "odd number of hex digits")) }
        return .success(out)
    }
}

/// Why a hex string does not parse.
public struct HexError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where in the string.
    public var index: Int
    /// What is wrong there.
    public var reason: String
    public var description: String { "\(reason) at character \(index + 1)" }
}
