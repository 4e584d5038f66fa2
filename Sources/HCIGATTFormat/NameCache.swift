import BluetoothWire

/// Assigned-number names looked up before, by table and key, with their JSON string: the
/// lines of a crowd name the same few services and companies, and each lookup is a binary
/// search over thousands of keys. Direct-mapped; a miss looks up and replaces the slot.
struct NameCache: Sendable {
    enum Kind: UInt32 { case service, company, appearance }

    private static let slots = 64
    private static let slotBytes = 96
    private var keys = [UInt32](repeating: .max, count: NameCache.slots)
    private var names = [AssignedNumbers.Name?](repeating: nil, count: NameCache.slots)
    /// Length of the slot's JSON string, 0 when the name is longer than a slot holds.
    private var jsonLengths = [Int](repeating: 0, count: NameCache.slots)
    private var json = [UInt8](repeating: 0, count: NameCache.slots * NameCache.slotBytes)

    private mutating func slot(_ kind: Kind, _ key: UInt16) -> Int {
        let k = kind.rawValue << 16 | UInt32(key)
        let i = Int(truncatingIfNeeded: (k &* 0x9E37_79B1) >> 26)
        if keys[i] == k { return i }
        // The only place these lookups are made: a service's name (its table first, then the
        // other UUID tables), a company's, an appearance's (else its category's).
        let name: AssignedNumbers.Name? = switch kind {
        case .service: AssignedNumbers.lookup(key, in: .services) ?? AssignedNumbers.uuidLookup(BluetoothUUID(key))
        case .company: AssignedNumbers.lookup(key, in: .companies)
        case .appearance: AssignedNumbers.lookup(key, in: .appearances) ?? AssignedNumbers.lookup(key & ~0x3F, in: .appearances)
        }
        keys[i] = k
        names[i] = name
        jsonLengths[i] = 0
        if let name {
            var out = OutputBuffer(capacity: 2 * Self.slotBytes)
            out.jsonString(UnsafeRawBufferPointer(name.utf8))
            if out.count <= Self.slotBytes {
                let length = out.count
                out.withBytes { rendered in
                    json.withUnsafeMutableBytes { all in
                        all.baseAddress?.advanced(by: i * Self.slotBytes).copyMemory(from: rendered.baseAddress!, byteCount: length)
                    }
                }
                jsonLengths[i] = length
            }
        }
        return i
    }

    /// The name of `key` in the table of `kind` (services: also the other UUID tables).
    mutating func name(_ kind: Kind, _ key: UInt16) -> AssignedNumbers.Name? { names[slot(kind, key)] }

    /// Writes the name as a JSON string; false (nothing written) when it has none.
    mutating func writeJSON(_ kind: Kind, _ key: UInt16, into out: inout OutputBuffer) -> Bool {
        let i = slot(kind, key)
        guard let name = names[i] else { return false }
        let length = jsonLengths[i]
        if length == 0 {
            out.jsonString(UnsafeRawBufferPointer(name.utf8))
        } else {
            json.withUnsafeBytes { all in out.append(UnsafeRawBufferPointer(rebasing: all[i * Self.slotBytes ..< i * Self.slotBytes + length])) }
        }
        return true
    }
}

/// JSON pieces every scan line has, rendered once for all 256 values: an AD structure's
/// `,"type":{"value":T,"name":"NAME"},"value":` and a flags value `{"value":F,"name":"…"}`.
final class ADJSONFragments: @unchecked Sendable {
    static let shared = ADJSONFragments()

    private let types: UnsafeMutableRawPointer
    private let typeOffsets: UnsafeMutablePointer<Int>
    private let flags: UnsafeMutableRawPointer
    private let flagOffsets: UnsafeMutablePointer<Int>

    private init() {
        (types, typeOffsets) = Self.render { v, out in
            out.raw(",\"type\":{\"value\":")
            out.decimal(UInt64(v))
            out.raw(",\"name\":")
            out.jsonString(ADType(rawValue: v).nameLiteral ?? "unknown")
            out.raw("},\"value\":")
        }
        (flags, flagOffsets) = Self.render { v, out in
            out.raw("{\"value\":")
            out.decimal(UInt64(v))
            out.raw(",\"name\":")
            out.jsonString(ADFlags.description(ofRawValue: v))
            out.byte(UInt8(ascii: "}"))
        }
    }

    /// The 256 pieces back to back in static storage (made once, never freed), and 257 offsets.
    private static func render(_ piece: (UInt8, inout OutputBuffer) -> Void) -> (UnsafeMutableRawPointer, UnsafeMutablePointer<Int>) {
        var out = OutputBuffer(capacity: 1 << 14)
        let offsets = UnsafeMutablePointer<Int>.allocate(capacity: 257)
        for v in 0 ... 255 {
            offsets[v] = out.count
            piece(UInt8(v), &out)
        }
        offsets[256] = out.count
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: out.count, alignment: 16)
        out.withBytes { if let b = $0.baseAddress { bytes.copyMemory(from: b, byteCount: $0.count) } }
        return (bytes, offsets)
    }

    @inline(__always)
    func type(_ v: UInt8, into out: inout OutputBuffer) {
        let i = Int(v)
        out.append(UnsafeRawBufferPointer(start: types + typeOffsets[i], count: typeOffsets[i &+ 1] &- typeOffsets[i]))
    }

    @inline(__always)
    func flags(_ v: UInt8, into out: inout OutputBuffer) {
        let i = Int(v)
        out.append(UnsafeRawBufferPointer(start: flags + flagOffsets[i], count: flagOffsets[i &+ 1] &- flagOffsets[i]))
    }
}
