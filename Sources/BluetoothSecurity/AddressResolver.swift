import BluetoothCrypto
import BluetoothWire

/// Resolvable private addresses (Core Vol 6 Part B §1.3.2.2): a 24-bit hash of a 24-bit
/// random part under an Identity Resolving Key, so only holders of the IRK recognise the
/// device behind addresses that change every few minutes.
public enum ResolvablePrivateAddress {
    /// True for a random address whose two most significant bits are 0b01.
    public static func isResolvable(_ address: LEAddress) -> Bool {
        address.type == .random && address.address.rawValue >> 46 == 0b01
    }

    /// prand (the upper 24 bits, its top two bits 0b01) and hash (the lower 24).
    public static func split(_ address: BluetoothAddress) -> (prand: UInt32, hash: UInt32) {
        (UInt32(truncatingIfNeeded: address.rawValue >> 24), UInt32(truncatingIfNeeded: address.rawValue & 0xFF_FFFF))
    }

    /// True when `address` was made with the IRK `key` holds expanded (§1.3.2.3: hash ==
    /// ah(IRK, prand)): one AES block, no allocation, for the resolver's hot path.
    public static func resolves(_ address: BluetoothAddress, key: AES128Key) -> Bool {
        let (prand, hash) = split(address)
        guard prand >> 22 == 0b01 else { return false }
        // r' = padding || prand (Core Vol 3 Part H §2.2.2): 13 zero bytes, then prand.
        var block: (UInt64, UInt64) = (0, UInt64(prand).bigEndian)
        var out: (UInt64, UInt64) = (0, 0)
        withUnsafeBytes(of: &block) { b in
            withUnsafeMutableBytes(of: &out) { o in
                if let bp = b.baseAddress, let op = o.baseAddress { key.encrypt(bp, into: op) }
            }
        }
        // ah is the last three bytes of the block, most significant first.
        return UInt32(truncatingIfNeeded: UInt64(bigEndian: out.1)) & 0xFF_FFFF == hash
    }

    /// True when `address` was made with `irk` (§1.3.2.3: hash == ah(IRK, prand)).
    public static func resolves(_ address: BluetoothAddress, irk: UInt128) -> Bool {
        let (prand, hash) = split(address)
        guard prand >> 22 == 0b01, let h = try? SecurityFunctions.ah(k: irk.bigEndianBytes, r: prand) else { return false }
        return h == hash
    }

    /// A new address from `irk` and 22 random bits (§1.3.2.2); neither part all zeros or
    /// all ones, as the specification asks.
    public static func make(irk: UInt128, random: UInt32) throws(SecurityFunctions.Failure) -> BluetoothAddress {
        var bits = random & 0x3F_FFFF
        if bits == 0 || bits == 0x3F_FFFF { bits = 0x15_5555 }
        let prand = 0x40_0000 | bits
        let hash = try SecurityFunctions.ah(k: irk.bigEndianBytes, r: prand)
        return BluetoothAddress(rawValue: UInt64(prand) << 24 | UInt64(hash))
    }
}

/// The host's resolving list: the IRKs of bonded peers with their identity addresses.
/// ``resolve(_:)`` answers which bonded peer a resolvable private address belongs to; it
/// keeps the last answers (one AES per IRK is the cost of a miss), so a crowd of advertisers
/// reporting again and again costs a dictionary lookup each.
public struct AddressResolver: Sendable {
    /// One bonded peer: the IRK it distributed and the identity it goes with.
    public struct Entry: Sendable, Hashable {
        /// The peer's Identity Resolving Key.
        public var irk: UInt128
        /// The identity address its private addresses resolve to.
        public var identity: LEAddress
        /// An entry as the bond gives it.
        public init(irk: UInt128, identity: LEAddress) {
            self.irk = irk
            self.identity = identity
        }
    }

    /// The keys, one per identity.
    public private(set) var entries: [Entry]
    /// Each entry's IRK with its AES schedule expanded, in the same order: a miss costs one
    /// block per IRK and nothing else.
    private var keys: [AES128Key] = []
    /// Address → index into `entries` (-1: resolves to none of them).
    private var answers: [UInt64: Int] = [:]
    /// Answers kept before the table starts over.
    public static let answerLimit = 4096

    /// A resolver over `entries` (a later entry for an identity replaces an earlier one).
    public init(_ entries: [Entry] = []) {
        self.entries = []
        for e in entries { add(e) }
    }

    /// No key: nothing resolves.
    public var isEmpty: Bool { entries.isEmpty }

    /// Adds (or replaces, by identity) a peer's key.
    public mutating func add(_ entry: Entry) {
        remove(identity: entry.identity)
        entries.append(entry)
        keys.append(AES128Key(entry.irk))
    }

    /// Forgets the key of `identity` (unpaired).
    public mutating func remove(identity: LEAddress) {
        if let i = entries.firstIndex(where: { $0.identity == identity }) {
            entries.remove(at: i)
            keys.remove(at: i)
        }
        answers = [:]
    }

    /// The identity behind `address`: nil when it is not a resolvable private address or
    /// no key resolves it.
    public mutating func resolve(_ address: LEAddress) -> LEAddress? {
        guard !entries.isEmpty, ResolvablePrivateAddress.isResolvable(address) else { return nil }
        let raw = address.address.rawValue
        if let i = answers[raw] { return i >= 0 ? entries[i].identity : nil }
        let i = keys.firstIndex { ResolvablePrivateAddress.resolves(address.address, key: $0) } ?? -1
        if answers.count >= Self.answerLimit { answers = [:] }
        answers[raw] = i
        return i >= 0 ? entries[i].identity : nil
    }
}
