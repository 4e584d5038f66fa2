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
        case .company: AssignedNumbers.companyLabel(key)
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

/// JSON renderings of AD structures met before, by their type and data: lines of a crowd,
/// and of distinct devices of one make, repeat the same service lists and manufacturer
/// data, and a hit costs a hash and two copies instead of the lookups and hex of a
/// rendering. Direct-mapped (a miss renders and replaces the slot); an advertiser who
/// makes its structures collide only makes them miss.
struct StructureJSONCache: Sendable {
    private static let slots = 128
    /// Per slot: key length (0: empty), value length, the key (type byte, then the data:
    /// up to 31 bytes), then the value.
    private static let slotSize = 256
    private static let keyAt = 2
    private static let valueAt = 34
    private static let valueCapacity = slotSize - valueAt
    private var storage = [UInt8](repeating: 0, count: slots * slotSize)

    @inline(__always)
    private static func slot(_ type: UInt8, _ data: UnsafeRawBufferPointer) -> Int {
        var h = (UInt64(type) << 8 | UInt64(data.count)) &* 0x9E37_79B9_7F4A_7C15
        let n = data.count
        guard let p = data.baseAddress else { return Int(truncatingIfNeeded: h >> 57) }
        var i = 0
        while i &+ 8 <= n {
            h = (h ^ p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            i &+= 8
        }
        if i < n {
            // The last up-to-seven bytes: two overlapping loads when there are four or more.
            let rest = n &- i
            var tail: UInt64
            if rest >= 4 {
                tail = UInt64(p.loadUnaligned(fromByteOffset: i, as: UInt32.self))
                    | UInt64(p.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self)) << 32
            } else {
                tail = UInt64(p.load(fromByteOffset: i, as: UInt8.self))
                    | UInt64(p.load(fromByteOffset: i &+ rest / 2, as: UInt8.self)) << 8
                    | UInt64(p.load(fromByteOffset: n &- 1, as: UInt8.self)) << 16
            }
            h = (h ^ tail) &* 0xFF51_AFD7_ED55_8CCD
        }
        h ^= h >> 29
        return Int(truncatingIfNeeded: h >> 57)  // 7 bits: 128 slots
    }

    /// Whether the `data.count` bytes at `p` are `data`'s, eight at a time.
    @inline(__always)
    private static func equal(_ p: UnsafeRawPointer, _ data: UnsafeRawBufferPointer) -> Bool {
        guard let q = data.baseAddress else { return true }
        let n = data.count
        var i = 0
        while i &+ 8 <= n {
            if p.loadUnaligned(fromByteOffset: i, as: UInt64.self) != q.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i &+= 8
        }
        while i < n {
            if p.load(fromByteOffset: i, as: UInt8.self) != q.load(fromByteOffset: i, as: UInt8.self) { return false }
            i &+= 1
        }
        return true
    }

    /// Appends the rendering of (`type`, `data`) when it is cached; false otherwise.
    func write(_ type: UInt8, _ data: UnsafeRawBufferPointer, into out: inout OutputBuffer) -> Bool {
        guard data.count < Self.valueAt &- Self.keyAt else { return false }
        let i = Self.slot(type, data)
        return storage.withUnsafeBytes { all -> Bool in
            guard let slot = all.baseAddress?.advanced(by: i &* Self.slotSize),
                  Int(slot.load(as: UInt8.self)) == data.count &+ 1,
                  slot.load(fromByteOffset: Self.keyAt, as: UInt8.self) == type,
                  Self.equal(slot + (Self.keyAt &+ 1), data) else { return false }
            let length = Int(slot.load(fromByteOffset: 1, as: UInt8.self))
            out.append(UnsafeRawBufferPointer(start: slot + Self.valueAt, count: length))
            return true
        }
    }

    /// Keeps `rendered` as the rendering of (`type`, `data`) if both fit a slot.
    mutating func store(_ type: UInt8, _ data: UnsafeRawBufferPointer, rendered: UnsafeRawBufferPointer) {
        guard data.count < Self.valueAt &- Self.keyAt, rendered.count <= Self.valueCapacity,
              let source = rendered.baseAddress else { return }
        let i = Self.slot(type, data)
        storage.withUnsafeMutableBytes { all in
            guard let slot = all.baseAddress?.advanced(by: i &* Self.slotSize) else { return }
            slot.storeBytes(of: UInt8(data.count &+ 1), as: UInt8.self)
            slot.storeBytes(of: UInt8(rendered.count), toByteOffset: 1, as: UInt8.self)
            slot.storeBytes(of: type, toByteOffset: Self.keyAt, as: UInt8.self)
            if let d = data.baseAddress { (slot + (Self.keyAt &+ 1)).copyMemory(from: d, byteCount: data.count) }
            (slot + Self.valueAt).copyMemory(from: source, byteCount: rendered.count)
        }
    }
}
