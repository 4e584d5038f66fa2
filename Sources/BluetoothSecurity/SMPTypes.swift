import BluetoothCrypto
import BluetoothWire

/// The side of pairing (Core Vol 3 Part H §2.3): the central initiates, the peripheral responds.
public enum SMPRole: Sendable, Hashable {
    case initiator
    case responder
}

/// How the two devices authenticate each other (Core Vol 3 Part H §2.3.5.1, Table 2.8).
public enum SMPPairingMethod: Sendable, Hashable, CustomStringConvertible {
    /// No user interaction, no protection against a man in the middle.
    case justWorks
    /// Both show a six-digit number; the users confirm it matches (Secure Connections only).
    case numericComparison
    /// A six-digit passkey: shown on one device and typed on the other, or typed on both.
    case passkeyEntry(localDisplays: Bool, peerDisplays: Bool)

    /// Protected against a man in the middle (the key is "authenticated").
    public var isAuthenticated: Bool { self != .justWorks }

    public var description: String {
        switch self {
        case .justWorks: "Just Works"
        case .numericComparison: "Numeric Comparison"
        case .passkeyEntry(let local, let peer):
            local ? "Passkey Entry (shown here)" : (peer ? "Passkey Entry (shown on the peer)" : "Passkey Entry (typed on both)")
        }
    }

    /// Table 2.8 of Core Vol 3 Part H §2.3.5.1: the method from the IO capabilities when
    /// MITM protection is wanted by either side (and no OOB data).
    public static func select(initiator: SMPIOCapability, responder: SMPIOCapability, secureConnections sc: Bool,
                              role: SMPRole) -> SMPPairingMethod {
        // (initiator displays, responder displays); nil: Just Works; "nc": NC with SC.
        enum Cell { case jw, pk(Bool, Bool), pkOrNC(Bool, Bool), jwOrNC }
        let cell: Cell
        switch (initiator, responder) {
        case (.noInputNoOutput, _), (_, .noInputNoOutput): cell = .jw
        case (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo), (.displayYesNo, .displayOnly): cell = .jw
        case (.displayYesNo, .displayYesNo): cell = .jwOrNC
        case (.displayOnly, .keyboardOnly), (.displayOnly, .keyboardDisplay), (.displayYesNo, .keyboardOnly),
             (.keyboardDisplay, .keyboardOnly):
            cell = .pk(true, false)
        case (.displayYesNo, .keyboardDisplay), (.keyboardDisplay, .keyboardDisplay): cell = .pkOrNC(true, false)
        case (.keyboardOnly, .keyboardOnly): cell = .pk(false, false)
        case (.keyboardOnly, _): cell = .pk(false, true)
        case (.keyboardDisplay, .displayYesNo): cell = .pkOrNC(false, true)
        case (.keyboardDisplay, _): cell = .pk(false, true)
        default: cell = .jw  // reserved capabilities
        }
        func passkey(_ i: Bool, _ r: Bool) -> SMPPairingMethod {
            role == .initiator ? .passkeyEntry(localDisplays: i, peerDisplays: r) : .passkeyEntry(localDisplays: r, peerDisplays: i)
        }
        switch cell {
        case .jw: return .justWorks
        case .jwOrNC: return sc ? .numericComparison : .justWorks
        case .pk(let i, let r): return passkey(i, r)
        case .pkOrNC(let i, let r): return sc ? .numericComparison : passkey(i, r)
        }
    }
}

/// What this device asks for and offers when pairing.
public struct SMPConfiguration: Sendable {
    /// What the user can do on this device (display, keyboard, yes/no...).
    public var ioCapability: SMPIOCapability
    /// Ask to bond (keep the keys); both must for keys to be distributed.
    public var bonding: Bool
    /// Ask for protection against a man in the middle; pairing fails with Authentication
    /// Requirements when the IO capabilities cannot give it.
    public var mitm: Bool
    /// Offer LE Secure Connections (P-256).
    public var secureConnections: Bool
    /// Refuse LE legacy pairing.
    public var secureConnectionsOnly: Bool
    /// The smallest encryption key accepted (7...16 bytes); below it: Encryption Key Size.
    public var minimumKeySize: UInt8
    /// The largest encryption key offered (7...16 bytes).
    public var maximumKeySize: UInt8
    /// Keys this device sends (when the peer accepts them).
    public var localKeys: SMPKeyDistribution
    /// Keys this device wants from the peer.
    public var peerKeys: SMPKeyDistribution
    /// The identity to distribute (Identity Information, Identity Address Information).
    public var identityResolvingKey: UInt128?
    /// The identity address distributed with the IRK.
    public var identityAddress: LEAddress?
    /// The signature key to distribute (random when nil).
    public var signatureKey: UInt128?
    /// SMP's timeout (Core Vol 3 Part H §3.4: 30 s), in nanoseconds.
    public var timeout: UInt64
    /// Ask for Keypress Notifications during Passkey Entry (§3.5.8): used when both ask.
    public var keypressNotifications: Bool = false
    /// Accept a peer that uses the Secure Connections debug key (Core Vol 3 Part H
    /// §2.3.5.6.1): its private key is published, so anyone in range can decrypt such a link.
    /// Off by default (a debug key is refused with Authentication Requirements); for
    /// sniffing one's own devices with `--allow-debug-keys`.
    public var allowsDebugKeys: Bool = false

    /// The defaults: no input or output (Just Works), bonding, Secure Connections offered,
    /// 16-byte keys, every key distributed and asked for, 30 s timeout.
    public init(ioCapability: SMPIOCapability = .noInputNoOutput, bonding: Bool = true, mitm: Bool = false,
                secureConnections: Bool = true, secureConnectionsOnly: Bool = false,
                minimumKeySize: UInt8 = 16, maximumKeySize: UInt8 = 16,
                localKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
                peerKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
                identityResolvingKey: UInt128? = nil, identityAddress: LEAddress? = nil,
                signatureKey: UInt128? = nil, timeout: UInt64 = 30_000_000_000) {
        self.ioCapability = ioCapability
        self.bonding = bonding
        self.mitm = mitm
        self.secureConnections = secureConnections
        self.secureConnectionsOnly = secureConnectionsOnly
        self.minimumKeySize = minimumKeySize
        self.maximumKeySize = maximumKeySize
        self.localKeys = localKeys
        self.peerKeys = peerKeys
        self.identityResolvingKey = identityResolvingKey
        self.identityAddress = identityAddress
        self.signatureKey = signatureKey
        self.timeout = timeout
    }

    var authenticationRequirements: SMPAuthenticationRequirements {
        var a: SMPAuthenticationRequirements = []
        if bonding { a.insert(.bonding) }
        if mitm { a.insert(.mitm) }
        if secureConnections { a.insert(.secureConnections) }
        if keypressNotifications { a.insert(.keypress) }
        return a
    }
}

/// A Long Term Key with the values that name it (EDIV and Rand; both 0 for Secure Connections).
public struct SMPLongTermKey: Sendable, Hashable {
    /// The key.
    public var key: UInt128
    /// Encrypted Diversifier (legacy pairing).
    public var ediv: UInt16
    /// Random Number (legacy pairing).
    public var rand: UInt64
    /// A key with the values that name it.
    public init(key: UInt128, ediv: UInt16 = 0, rand: UInt64 = 0) {
        self.key = key
        self.ediv = ediv
        self.rand = rand
    }
}

/// What a finished pairing produced.
public struct SMPPairingResult: Sendable, Hashable {
    /// The method used (Just Works, passkey, numeric comparison...).
    public var method: SMPPairingMethod
    /// LE Secure Connections (else LE legacy pairing).
    public var secureConnections: Bool
    /// MITM-protected (every method but Just Works).
    public var authenticated: Bool
    /// The encryption key size in bytes.
    public var keySize: UInt8
    /// Both asked to bond: the keys are meant to be stored.
    public var bonded: Bool
    /// The key that encrypts this link again later. Secure Connections: the derived LTK
    /// (either role uses it). Legacy: the one the peer distributed (for us as central).
    public var peerLTK: SMPLongTermKey?
    /// Legacy pairing: the LTK we distributed (for us as peripheral).
    public var localLTK: SMPLongTermKey?
    /// The peer's Identity Resolving Key, if it distributed one.
    public var peerIdentityResolvingKey: UInt128?
    /// The peer's identity address, if it distributed one.
    public var peerIdentityAddress: LEAddress?
    /// The peer's signature key (CSRK), if it distributed one.
    public var peerSignatureKey: UInt128?
    /// The signature key we distributed, if any.
    public var localSignatureKey: UInt128?

    /// A result as the state machine makes it.
    public init(method: SMPPairingMethod, secureConnections: Bool, authenticated: Bool, keySize: UInt8, bonded: Bool,
                peerLTK: SMPLongTermKey? = nil, localLTK: SMPLongTermKey? = nil, peerIdentityResolvingKey: UInt128? = nil,
                peerIdentityAddress: LEAddress? = nil, peerSignatureKey: UInt128? = nil, localSignatureKey: UInt128? = nil) {
        self.method = method
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
        self.bonded = bonded
        self.peerLTK = peerLTK
        self.localLTK = localLTK
        self.peerIdentityResolvingKey = peerIdentityResolvingKey
        self.peerIdentityAddress = peerIdentityAddress
        self.peerSignatureKey = peerSignatureKey
        self.localSignatureKey = localSignatureKey
    }
}

/// Why pairing failed.
public struct SMPFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the failure came from.
    public enum Origin: Sendable, Hashable {
        /// We sent Pairing Failed with `reason`.
        case local
        /// The peer sent Pairing Failed.
        case peer
        /// SMP's 30 s timer expired (no Pairing Failed: the channel is dead on this link).
        case timeout
    }
    /// The reason sent or received in Pairing Failed (`.unspecifiedReason` for a timeout).
    public var reason: SMPPairingFailedReason
    /// Who ended the pairing.
    public var origin: Origin
    /// What happened, for people.
    public var message: String

    public var description: String { message }
}

/// What the pairing state machine asks the host to do.
public enum SMPAction: Sendable, Equatable {
    /// Send this SMP PDU (an L2CAP frame on CID 0x0006).
    case send([UInt8])
    /// Central: start encryption with this key (LE Enable Encryption).
    case encrypt(SMPLongTermKey)
    /// Show this passkey (six digits, leading zeros) to the user: the peer types it.
    case displayPasskey(UInt32)
    /// Ask the user for the passkey shown on the peer; answer with ``SMPPairing/passkeyEntered(_:now:)``.
    case requestPasskey
    /// Show this number and ask the user whether the peer shows the same; answer with
    /// ``SMPPairing/numericComparisonConfirmed(_:now:)``.
    case confirmNumber(UInt32)
    /// The peer reported a keypress during passkey entry.
    case keypress(SMPKeypressNotificationType)
    /// The peer (a peripheral) asks for security; the host pairs or encrypts with a bond.
    case securityRequested(SMPAuthenticationRequirements)
    case paired(SMPPairingResult)
    case failed(SMPFailure)
}

extension UInt128 {
    /// The 16 bytes, most significant first (the specification's notation).
    var bigEndianBytes: [UInt8] { (0 ..< 16).map { UInt8(truncatingIfNeeded: self >> (8 * (15 - UInt128($0)))) } }

    init(bigEndianBytes b: [UInt8]) {
        self = b.prefix(16).reduce(0) { $0 << 8 | UInt128($1) }
    }
}

extension SMPUInt256 {
    /// Most significant byte first.
    var bigEndianBytes: [UInt8] { wireBytes.reversed() }

    init(bigEndianBytes b: [UInt8]) {
        self.init(low: UInt128(bigEndianBytes: Array(b[16 ..< 32])), high: UInt128(bigEndianBytes: Array(b[0 ..< 16])))
    }
}

extension LEAddress {
    /// 0 public, 1 random (identity types map to their base type).
    var smpType: UInt8 { type == .public || type == .publicIdentity ? 0 : 1 }
    /// The 48-bit address, most significant first.
    var addressBytes: [UInt8] { (0 ..< 6).map { UInt8(truncatingIfNeeded: address.rawValue >> (8 * (5 - UInt64($0)))) } }
    /// Type octet, then the address (f5, f6).
    var smpBytes: [UInt8] { [smpType] + addressBytes }
}
