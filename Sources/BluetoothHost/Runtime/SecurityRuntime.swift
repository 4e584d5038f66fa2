import BluetoothSecurity
import BluetoothWire

/// The Security Manager's part of the driver: each link's pairing machine and who waits for
/// it, the encryptions started with a bond's key, the peers that must wait after failing
/// our checks, and the bonded peers' IRKs. Its rules (which identity a pairing may claim,
/// what a link's security becomes, how long a guesser waits) are functions of what it holds
/// and what it is given, tested without a controller; the driver carries out the rest.
struct SecurityRuntime {
    typealias PairingWaiter = CheckedContinuation<Result<SMPPairingResult, HostError>, Never>
    typealias EncryptionWaiter = CheckedContinuation<Result<Void, HostError>, Never>

    /// Pairing on one link: the sans-I/O machine, who answers for the user, who waits.
    struct Pairing {
        var machine: SMPPairing
        var agent: PairingAgent
        var waiters: [PairingWaiter] = []
        /// The machine was raised to what re-pairing over the peer's bond needs: a refusal
        /// says why (the peer's user sees only Authentication Requirements).
        var overBond = false
    }

    /// An encryption with a bond's key under way (LE Enable Encryption as central, or our
    /// answer to a bonded central's LTK request): the security the link has once it is
    /// encrypted, and who waits for it.
    struct BondEncryption {
        var security: LinkSecurity
        var waiters: [EncryptionWaiter] = []
    }

    /// Per link; the driver changes a machine in place (`pairings[h]?.machine.…`).
    var pairings: [UInt16: Pairing] = [:]
    private(set) var encryptions: [UInt16: BondEncryption] = [:]
    private(set) var attempts = RepeatedAttempts()
    private(set) var resolver: AddressResolver

    init(resolving entries: [AddressResolver.Entry]) {
        resolver = AddressResolver(entries)
    }

    /// When a pairing times out (Core Vol 3 Part H §3.4).
    var nextDeadline: UInt64? { pairings.values.compactMap(\.machine.deadline).min() }

    // MARK: Identities

    /// The identity behind a peer's address: the controller's resolution (identity address
    /// types), else a bonded peer's IRK resolving it.
    mutating func identity(of address: LEAddress) -> LEAddress? {
        switch address.type {
        case .publicIdentity: LEAddress(address.address, type: .public)
        case .randomIdentity: LEAddress(address.address, type: .random)
        default: resolve(address)
        }
    }

    /// A bonded peer's identity, if one of their IRKs resolves the address (nil at once
    /// when no bond has an IRK).
    mutating func resolve(_ address: LEAddress) -> LEAddress? {
        resolver.isEmpty ? nil : resolver.resolve(address)
    }

    /// A peer's IRK learned from pairing: its later private addresses resolve to `identity`.
    /// False for the all-zero IRK (the peer does not use private addresses).
    mutating func learn(irk: UInt128, identity: LEAddress) -> Bool {
        guard irk != 0 else { return false }
        resolver.add(AddressResolver.Entry(irk: irk, identity: identity))
        return true
    }

    /// What a pairing that distributed an identity may keep of it (Core Vol 3 Part H
    /// §2.4.2.1, §3.6.4). `address` is where the peer connected from; `bonded` the bond
    /// already kept under the identity it claims (looked up by the caller), or why it could
    /// not be read.
    /// - A claim that is not an identity address (public, or static random) is dropped.
    /// - From an identity address, the claim must be that address; from a resolvable
    ///   private address, the IRK distributed must resolve it. Otherwise the claim is
    ///   dropped and the bond is kept under the address the peer came from (as BlueZ).
    /// - A claimed identity that is bonded already must be backed by that bond: the peer
    ///   came from the identity address itself, or the bond's IRK resolves its address.
    ///   Otherwise the pairing is refused: a peer with an IRK of its own must not take a
    ///   bonded device's identity, its bond, its resolving key or its server state. (Both
    ///   can be replayed, an address or a heard RPA; what stops a replaying impostor is
    ///   that a pairing over the bond must be authenticated, ``repairing(_:over:allowsRepairing:)``.)
    static func admittedIdentity(_ r: SMPPairingResult, from address: LEAddress,
                                 bonded: Result<Bond?, BondStoreError>) -> IdentityAdmission {
        guard let claimed = r.peerIdentityAddress else { return .admitted(r) }
        var dropped = r
        dropped.peerIdentityAddress = nil
        dropped.peerIdentityResolvingKey = nil
        guard claimed.type == .public || (claimed.type == .random && claimed.kind == .randomStatic) else {
            return .admitted(dropped)
        }
        let fromPrivate = ResolvablePrivateAddress.isResolvable(address)
        if fromPrivate {
            guard let irk = r.peerIdentityResolvingKey, irk != 0, ResolvablePrivateAddress.resolves(address.address, irk: irk) else {
                return .admitted(dropped)
            }
        } else if address.identityBase != claimed {
            return .admitted(dropped)
        }
        switch bonded {
        case .failure(let e):
            return .refused("it claims the identity \(claimed), whose bond cannot be read to prove it: \(e)")
        case .success(nil):
            return .admitted(r)
        case .success(let bond?):
            if !fromPrivate { return .admitted(r) }
            if let irk = bond.peerIRK, irk != 0, ResolvablePrivateAddress.resolves(address.address, irk: irk) { return .admitted(r) }
            return .refused("it claims the identity of bonded \(claimed), but that bond's IRK does not resolve its address \(address.address) (an impostor, or the device lost its bond: `hcigatt unpair \(claimed.address)`)")
        }
    }

    /// What a pairing the peer starts must meet when the peer is bonded already: what the
    /// bond had (an impostor with the peer's address must not get in with Just Works over
    /// an authenticated or Secure Connections bond; Zephyr refuses the same way), and MITM
    /// protection over any bond unless `allowsRepairing` (BlueZ's `JustWorksRepairing=never`).
    /// A pairing that cannot meet it fails with Authentication Requirements; the old bond
    /// stays until a new one is complete.
    static func repairing(_ config: SMPConfiguration, over bond: Bond, allowsRepairing: Bool) -> SMPConfiguration {
        var c = config
        c.minimumKeySize = max(c.minimumKeySize, bond.keySize)
        if bond.authenticated || !allowsRepairing { c.mitm = true }
        if bond.secureConnections {
            c.secureConnections = true
            c.secureConnectionsOnly = true
        }
        return c
    }

    // MARK: Encryption

    /// An encryption with `bond`'s key starts on the link (`waiter`: who awaits it).
    mutating func encrypting(_ handle: UInt16, with bond: Bond, waiter: EncryptionWaiter? = nil) {
        var e = encryptions[handle] ?? BondEncryption(security: LinkSecurity(bond))
        e.security = LinkSecurity(bond)
        if let waiter { e.waiters.append(waiter) }
        encryptions[handle] = e
    }

    /// An encryption call that never reached the controller: its waiters, to fail.
    mutating func encryptionNotStarted(_ handle: UInt16) -> [EncryptionWaiter] {
        encryptions.removeValue(forKey: handle)?.waiters ?? []
    }

    /// Encryption Change or Key Refresh Complete: the link's security after it (nil: as it
    /// was) and the callers of an encryption with a bond, to answer with `encrypted`.
    /// `current` is the link's security now; a pairing's encryption keeps what it has and
    /// takes the key size from the event.
    mutating func encryptionChanged(_ handle: UInt16, status: HCIErrorCode, enabled: Bool, keySize: UInt8?,
                                    current: LinkSecurity) -> (security: LinkSecurity?, waiters: [EncryptionWaiter]) {
        let bonded = encryptions.removeValue(forKey: handle)
        let waiters = bonded?.waiters ?? []
        guard status == .success && enabled else {
            return (status == .success ? .unencrypted : nil, waiters)
        }
        if var s = bonded?.security {
            if let keySize { s.keySize = Int(keySize) }
            return (s, waiters)
        }
        var s = current
        s.encrypted = true
        s.keySize = keySize.map(Int.init) ?? (s.keySize > 0 ? s.keySize : Int(pairings[handle]?.machine.keySize ?? 16))
        return (s, waiters)
    }

    // MARK: Repeated attempts

    /// A pairing with `peer` failed one of our checks (a wrong passkey, or a guess).
    mutating func checkFailed(_ peer: LEAddress, now: UInt64) { attempts.failed(peer, now: now) }

    /// A pairing with `peer` succeeded: it waits no more.
    mutating func paired(_ peer: LEAddress) { attempts.succeeded(peer) }

    // MARK: Links

    /// The link is down: everyone waiting on it, to fail.
    mutating func linkClosed(_ handle: UInt16) -> (pairings: [PairingWaiter], encryptions: [EncryptionWaiter]) {
        let e = encryptions.removeValue(forKey: handle)?.waiters ?? []
        let p = pairings.removeValue(forKey: handle)?.waiters ?? []
        return (p, e)
    }
}

/// What ``SecurityRuntime/admittedIdentity(_:from:bonded:)`` decided.
enum IdentityAdmission: Equatable {
    /// The pairing stands with this result (its identity claim dropped where it was not
    /// the peer's to make).
    case admitted(SMPPairingResult)
    /// The pairing is refused: why.
    case refused(String)
}

/// Repeated Attempts (Core Vol 3 Part H §2.3.6): per peer, the pairings that failed our
/// checks in a row and until when the next is refused.
struct RepeatedAttempts {
    private var peers: [LEAddress: (failures: Int, until: UInt64)] = [:]
    /// Peers remembered at most; past it the ones whose wait is over are forgotten.
    static let capacity = 256

    /// How long a peer waits after `failures` failed checks in a row: 2, 4, 8 ... 64 s
    /// (doubling, as §2.3.6 asks, from BlueZ's and Zephyr's order of magnitude).
    static func wait(afterFailures failures: Int) -> UInt64 {
        UInt64(1) << UInt64(min(max(failures, 1), 6)) * 1_000_000_000
    }

    /// Nanoseconds `peer` must still wait before pairing again (0: none).
    func remaining(_ peer: LEAddress, now: UInt64) -> UInt64 {
        guard let b = peers[peer], b.until > now else { return 0 }
        return b.until - now
    }

    mutating func failed(_ peer: LEAddress, now: UInt64) {
        if peers.count >= Self.capacity { peers = peers.filter { $0.value.until > now } }
        let n = (peers[peer]?.failures ?? 0) + 1
        peers[peer] = (n, now &+ Self.wait(afterFailures: n))
    }

    mutating func succeeded(_ peer: LEAddress) { peers[peer] = nil }
}

extension LinkSecurity {
    /// What a link encrypted with the bond's key has.
    init(_ bond: Bond) {
        self.init(encrypted: true, keySize: Int(bond.keySize), authenticated: bond.authenticated,
                  secureConnections: bond.secureConnections, bonded: true)
    }
}

extension LEAddress {
    /// The address as an identity: the controller's resolved types as public or random.
    var identityBase: LEAddress {
        switch type {
        case .publicIdentity: LEAddress(address, type: .public)
        case .randomIdentity: LEAddress(address, type: .random)
        default: self
        }
    }
}
