import BluetoothCrypto
import BluetoothWire

/// LE pairing on one link (Core Vol 3 Part H §2.3–2.4), sans-I/O: SMP PDUs in, actions out
/// (PDUs to send, encryption to start, user interaction, the result). LE legacy pairing
/// (Just Works, Passkey Entry: c1, s1) and LE Secure Connections (Just Works, Numeric
/// Comparison, Passkey Entry: P-256, f4, f5, f6, g2), as initiator (central) or responder
/// (peripheral), then key distribution (LTK/EDIV/Rand for legacy, IRK + identity address,
/// CSRK).
///
/// Every step is checked: a PDU out of turn, a bad length or value, a confirm or DHKey
/// check that does not match, a public key off the curve fail pairing with the reason the
/// specification names, once; after SMP's 30 s timeout nothing more is sent or accepted on
/// the link (§3.4). Randomness comes from `random` (the system's by default; tests fix it).
///
/// The machine is one `State`: each phase holds the values it needs and no others, so a
/// value from one phase (a nonce, a confirm, the user's answer) cannot leak into another.
public struct SMPPairing: Sendable {
    /// What the Pairing Feature Exchange settled (§2.3.5.1): both PDUs as sent (c1 and f6
    /// take them), the key size and the method.
    struct Features: Sendable {
        var request: SMPPairingParameters
        var response: SMPPairingParameters
        var preq: [UInt8]
        var pres: [UInt8]
        var keySize: UInt8
        var secureConnections: Bool
        var method: SMPPairingMethod

        /// Both Pairing Request and Response asked for keypress notifications.
        var keypressAgreed: Bool {
            request.authenticationRequirements.contains(.keypress) && response.authenticationRequirements.contains(.keypress)
        }
    }

    /// LE legacy pairing's values (§2.3.5.5): TK (0 for Just Works, the passkey otherwise)
    /// and our random value (Mrand or Srand).
    struct Legacy: Sendable {
        var features: Features
        var tk: UInt128
        var localRandom: UInt128
    }

    /// LE Secure Connections after the public keys (§2.3.5.6.1).
    struct KeyExchange: Sendable {
        var features: Features
        var localPublic: P256.PublicKey
        var peerPublic: P256.PublicKey
        var dhKey: [UInt8]
    }

    /// One commitment round of authentication stage 1 (§2.3.5.6.2–3): one for Just Works
    /// and Numeric Comparison, 20 for Passkey Entry (one per bit of the passkey).
    struct Round: Sendable {
        var number: Int
        var localNonce: [UInt8]
        /// The peer's commitment for this round, once it came.
        var peerConfirm: UInt128?
        /// Passkey Entry's passkey; nil for Just Works and Numeric Comparison.
        var passkey: UInt32?

        /// f4's z: 0x80 | bit `number` of the passkey, or 0.
        var z: UInt8 {
            guard let passkey else { return 0 }
            return 0x80 | UInt8(truncatingIfNeeded: (passkey >> UInt32(number)) & 1)
        }
    }

    /// Authentication stage 2 (§2.3.5.6.5): f5's keys and what f6 checks.
    struct Check: Sendable {
        var exchange: KeyExchange
        var na: [UInt8]
        var nb: [UInt8]
        var macKey: [UInt8]
        var ltk: UInt128
        /// f6's r: the passkey for Passkey Entry, 0 otherwise.
        var r: UInt32

        var features: Features { exchange.features }
    }

    /// Key distribution (§3.6.1): the keys still to come from the peer and the result so far.
    struct Distribution: Sendable {
        var features: Features
        var expected: SMPKeyDistribution
        var result: SMPPairingResult
        /// Encryption Information came; Central Identification completes it.
        var receivedLTK: UInt128?
    }

    enum State: Sendable {
        case idle
        /// Initiator: Pairing Request sent.
        case featureExchange(request: SMPPairingParameters, preq: [UInt8])
        /// Legacy Passkey Entry: the user types the passkey the peer shows; a responder keeps
        /// the initiator's confirm that arrives meanwhile.
        case legacyPasskeyEntry(Features, localRandom: UInt128, peerConfirm: UInt128?)
        /// Initiator: Mconfirm sent. Responder: waiting for Mconfirm.
        case legacyConfirm(Legacy)
        /// Both confirms exchanged; the random values are checked against them.
        case legacyRandom(Legacy, peerConfirm: UInt128)
        /// Waiting for the peer's public key; `sent` is our private key whose public half
        /// went out (the initiator's; the responder makes its own when the initiator's arrives).
        case publicKey(Features, sent: P256.PrivateKey?)
        /// Secure Connections Passkey Entry: the user types the passkey the peer shows.
        case scPasskeyEntry(KeyExchange, peerConfirm: UInt128?)
        /// A round's commitment: the initiator's went out (Passkey Entry), or the
        /// initiator waits for Cb (Just Works, Numeric Comparison), or the responder waits.
        case scConfirm(KeyExchange, Round)
        /// A round's nonces are exchanged; each side checks the other's against its commitment
        /// (in Just Works and Numeric Comparison only the initiator checks: only Cb exists).
        case scRandom(KeyExchange, Round)
        /// The user compares the numbers; a responder keeps the initiator's Ea meanwhile.
        case numericComparison(Check, heldCheck: UInt128?)
        /// Initiator: Ea sent, waiting for Eb. Responder: waiting for Ea.
        case dhKeyCheck(Check)
        /// Waiting for the link to be encrypted with `key` (the STK, or the LTK of Secure
        /// Connections).
        case encryption(Features, key: UInt128)
        case keyDistribution(Distribution)
        case done(Features)
        /// Ended by a failure; what the features had settled, if they got that far (the
        /// key size of an encryption the controller still reports).
        case failed(Features?)
        /// The SMP timer expired: no SMP on this link any more (§3.4).
        case timedOut(Features?)
    }

    /// Initiator (central) or responder (peripheral).
    public let role: SMPRole
    /// What this side asks for and offers.
    public private(set) var configuration: SMPConfiguration
    /// Our address and the peer's as the link uses them (c1, f5, f6).
    public let localAddress: LEAddress
    /// The peer's address as the link uses it.
    public let peerAddress: LEAddress
    let random: @Sendable () -> UInt64
    /// A key given at init (tests, the debug key) is used for every pairing; otherwise
    /// each pairing makes one (§2.3.5.6.1).
    let fixedPrivateKey: P256.PrivateKey?
    /// Counts pairings on this link: user answers name the one they belong to.
    public internal(set) var generation = 0

    var state: State = .idle
    /// When the SMP timer expires (reset whenever a PDU is queued).
    public internal(set) var deadline: UInt64?

    /// A pairing machine for one link; `privateKey` fixes the P-256 key (tests, the debug key),
    /// else each pairing makes a new one.
    public init(role: SMPRole, configuration: SMPConfiguration, localAddress: LEAddress, peerAddress: LEAddress,
                privateKey: P256.PrivateKey? = nil,
                random: @escaping @Sendable () -> UInt64 = { var g = SystemRandomNumberGenerator(); return g.next() }) {
        self.role = role
        self.configuration = configuration
        self.localAddress = localAddress
        self.peerAddress = peerAddress
        self.fixedPrivateKey = privateKey
        self.random = random
    }

    /// Pairing runs (started, not finished or failed).
    public var isActive: Bool {
        if case .idle = state { return false }
        return !hasEnded
    }

    /// A pairing ran and ended here: finished, failed or timed out.
    private var hasEnded: Bool {
        switch state {
        case .done, .failed, .timedOut: true
        default: false
        }
    }

    /// The timer expired: no SMP on this link any more (Core Vol 3 Part H §3.4).
    public var timedOut: Bool {
        if case .timedOut = state { return true }
        return false
    }

    /// What the feature exchange settled, from then until the pairing ends.
    var features: Features? {
        switch state {
        case .idle, .featureExchange: nil
        case .failed(let f), .timedOut(let f): f
        case .legacyPasskeyEntry(let f, _, _), .publicKey(let f, _), .encryption(let f, _), .done(let f): f
        case .legacyConfirm(let l), .legacyRandom(let l, _): l.features
        case .scPasskeyEntry(let x, _), .scConfirm(let x, _), .scRandom(let x, _): x.features
        case .numericComparison(let c, _), .dhKeyCheck(let c): c.features
        case .keyDistribution(let d): d.features
        }
    }

    /// The method both sides' features chose (nil until the features were exchanged; kept
    /// after the pairing ended, until the next one starts).
    public var method: SMPPairingMethod? { features?.method }
    /// LE Secure Connections was chosen (both offered it).
    public var secureConnections: Bool { features?.secureConnections ?? false }
    /// The encryption key size both settled on (0 until then; kept like ``method``).
    public var keySize: UInt8 { features?.keySize ?? 0 }

    // MARK: Starting

    /// Initiator: sends Pairing Request.
    public mutating func start(now: UInt64) -> [SMPAction] {
        guard role == .initiator, !isActive, !timedOut else { return [] }
        generation += 1
        let p = localParameters(peer: nil)
        let preq = pdu(.pairingRequest(p))
        state = .featureExchange(request: p, preq: preq)
        return [send(preq, now: now)]
    }

    /// Replaces the configuration between pairings (the host raises what a pairing over a
    /// bond needs just before a Pairing Request is answered); false, and nothing changes,
    /// while one runs.
    @discardableResult
    public mutating func reconfigure(_ c: SMPConfiguration) -> Bool {
        guard !isActive else { return false }
        configuration = c
        return true
    }

    /// Responder: asks the central to pair (Security Request, §3.6.7).
    public mutating func requestSecurity(now: UInt64) -> [SMPAction] {
        guard role == .responder, !isActive, !timedOut else { return [] }
        // No timer: the central may answer by encrypting with a bond, or not at all.
        return [.send(pdu(.securityRequest(configuration.authenticationRequirements)))]
    }

    // MARK: Input

    /// One SMP PDU from the peer (the L2CAP payload on CID 0x0006).
    public mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [SMPAction] {
        if timedOut { return [] }
        let ended = hasEnded
        // Finished or failed: only a new pairing (or a Security Request) is looked at.
        if ended, bytes.first != SMPCode.pairingRequest.rawValue, bytes.first != SMPCode.securityRequest.rawValue {
            return []
        }
        let parsed: SMPPDU
        do throws(WireError) {
            parsed = try SMPPDU(parsing: bytes)
        } catch {
            // Known command with a wrong length or a bad value: Invalid Parameters (after a
            // finished pairing, a broken new request is refused without a failure report).
            if ended { return [.send(pdu(.pairingFailed(reason: .invalidParameters)))] }
            return fail(.invalidParameters, "malformed SMP PDU: \(error)", now: now)
        }
        return step(now: now) { (m) throws(SMPStepError) in try m.handle(parsed, now: now) }
    }

    /// The user typed the passkey shown on the peer (nil: cancelled).
    public mutating func passkeyEntered(_ value: UInt32?, now: UInt64) -> [SMPAction] {
        switch state {
        case .legacyPasskeyEntry, .scPasskeyEntry: break
        default: return []
        }
        guard let value, value <= 999_999 else { return fail(.passkeyEntryFailed, "passkey entry cancelled or out of range", now: now) }
        return step(now: now) { (m) throws(SMPStepError) in try m.passkeyTyped(value, now: now) }
    }

    /// The user typing the passkey pressed a key: tell the peer (Pairing Keypress
    /// Notification, §3.5.8) when both asked for keypress notifications; nothing otherwise.
    public mutating func keypress(_ type: SMPKeypressNotificationType, now: UInt64) -> [SMPAction] {
        let agreed: Bool
        switch state {
        case .legacyPasskeyEntry(let f, _, _): agreed = f.keypressAgreed
        case .scPasskeyEntry(let x, _): agreed = x.features.keypressAgreed
        default: return []
        }
        return agreed ? [send(pdu(.pairingKeypressNotification(type)), now: now)] : []
    }

    /// The user compared the numbers (false: they differ, or the user said no).
    public mutating func numericComparisonConfirmed(_ same: Bool, now: UInt64) -> [SMPAction] {
        guard case .numericComparison(let check, let held) = state else { return [] }
        guard same else { return fail(.numericComparisonFailed, "the numbers were not confirmed", now: now) }
        return step(now: now) { (m) throws(SMPStepError) in
            if m.role == .initiator { return [try m.sendCheck(check, now: now)] }
            if let ea = held { return try m.checkAndAnswer(check, ea, now: now) }
            m.state = .dhKeyCheck(check)
            return []
        }
    }

    /// The link's encryption changed (Encryption Change / Key Refresh Complete).
    public mutating func encryptionChanged(encrypted: Bool, now: UInt64) -> [SMPAction] {
        guard case .encryption(let f, let key) = state else { return [] }
        guard encrypted else { return fail(.unspecifiedReason, "the link was not encrypted with the new key", now: now) }
        return startDistribution(f, key: key, now: now)
    }

    /// Responder: the controller asks for the key of an encryption the central starts (LE Long
    /// Term Key Request). During pairing, the STK or the new LTK (EDIV and Rand 0); nil otherwise.
    public func keyForEncryption(ediv: UInt16, rand: UInt64) -> UInt128? {
        guard role == .responder, case .encryption(_, let key) = state, ediv == 0, rand == 0 else { return nil }
        return key
    }

    /// Time passed: after the deadline pairing fails and the link's SMP is dead.
    public mutating func timerFired(now: UInt64) -> [SMPAction] {
        guard let d = deadline, now >= d, isActive else { return [] }
        deadline = nil
        state = .timedOut(features)
        return [.failed(SMPFailure(reason: .unspecifiedReason, origin: .timeout,
                                   message: "pairing timed out: no answer within \(configuration.timeout / 1_000_000_000) s (SMP timeout, Core Vol 3 Part H §3.4)"))]
    }

    // MARK: Steps

    /// Runs one step; a step that cannot go on fails pairing with its reason.
    private mutating func step(now: UInt64, _ body: (inout SMPPairing) throws(SMPStepError) -> [SMPAction]) -> [SMPAction] {
        do throws(SMPStepError) {
            return try body(&self)
        } catch {
            return fail(error.reason, error.message, now: now)
        }
    }

    private mutating func handle(_ p: SMPPDU, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch p {
        case .pairingFailed(let reason):
            guard isActive else { return [] }
            state = .failed(features)
            deadline = nil
            return [.failed(SMPFailure(reason: reason, origin: .peer, message: "the peer ended pairing: \(reason)"))]
        case .pairingRequest(let params):
            guard role == .responder, !isActive else { throw .unexpected("Pairing Request") }
            return try respond(to: params, now: now)
        case .pairingResponse(let params):
            guard role == .initiator, case .featureExchange(let request, let preq) = state else { throw .unexpected("Pairing Response") }
            return try responded(params, request: request, preq: preq, now: now)
        case .securityRequest(let auth):
            guard role == .initiator else { throw .unexpected("Security Request") }
            // While pairing runs it is ignored (§3.6.7); otherwise the host decides.
            return isActive ? [] : [.securityRequested(auth)]
        case .pairingConfirm(let value):
            return try confirm(value, now: now)
        case .pairingRandom(let value):
            return try randomValue(value, now: now)
        case .pairingPublicKey(let x, let y):
            return try publicKey(P256.PublicKey(x: x.bigEndianBytes, y: y.bigEndianBytes), now: now)
        case .pairingDHKeyCheck(let value):
            return try dhKeyCheck(value, now: now)
        case .pairingKeypressNotification(let type):
            // Only from the side that types, while the passkey is being typed there.
            guard isActive, let f = features, case .passkeyEntry(_, peerDisplays: false) = f.method, f.keypressAgreed else { return [] }
            return [.keypress(type)]
        case .encryptionInformation, .centralIdentification, .identityInformation, .identityAddressInformation,
             .signingInformation:
            return try key(p, now: now)
        case .unknown(let code, _):
            throw SMPStepError(reason: .commandNotSupported, message: "unknown SMP command 0x\(hex(code.rawValue, 2))")
        }
    }

    /// The user's passkey: the method goes on where it waited.
    private mutating func passkeyTyped(_ value: UInt32, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch state {
        case .legacyPasskeyEntry(let f, let localRandom, let peerConfirm):
            return try legacyPasskeyTyped(Legacy(features: f, tk: UInt128(value), localRandom: localRandom),
                                          peerConfirm: peerConfirm, now: now)
        case .scPasskeyEntry(let x, let peerConfirm):
            return try passkeyRound(x, Round(number: 0, localNonce: nonce(), peerConfirm: peerConfirm, passkey: value), now: now)
        default:
            return []
        }
    }

    private mutating func confirm(_ value: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch state {
        case .legacyPasskeyEntry(let f, let localRandom, nil) where role == .responder:
            state = .legacyPasskeyEntry(f, localRandom: localRandom, peerConfirm: value)
            return []
        case .legacyConfirm(let l):
            return try legacyConfirm(l, peerConfirm: value, now: now)
        case .scPasskeyEntry(let x, nil) where role == .responder:
            state = .scPasskeyEntry(x, peerConfirm: value)
            return []
        case .scConfirm(let x, var round):
            round.peerConfirm = value
            return try scConfirm(x, round, now: now)
        case .legacyPasskeyEntry, .scPasskeyEntry:
            throw .unexpected(role == .initiator ? "Pairing Confirm before ours" : "Pairing Confirm")
        default:
            throw .unexpected("Pairing Confirm")
        }
    }

    private mutating func randomValue(_ value: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch state {
        case .legacyRandom(let l, let peerConfirm): try legacyRandom(l, peerConfirm: peerConfirm, peerRandom: value, now: now)
        case .scRandom(let x, let round): try scRandom(x, round, peerNonce: value.bigEndianBytes, now: now)
        default: throw .unexpected("Pairing Random")
        }
    }

    // MARK: Helpers

    mutating func send(_ bytes: [UInt8], now: UInt64) -> SMPAction {
        deadline = now &+ configuration.timeout
        return .send(bytes)
    }

    func pdu(_ p: SMPPDU) -> [UInt8] { (try? p.encoded()) ?? [] }

    func random128() -> UInt128 { UInt128(random()) << 64 | UInt128(random()) }

    func nonce() -> [UInt8] { random128().bigEndianBytes }

    func newPasskey() -> UInt32 { UInt32(random() % 1_000_000) }

    /// The key cut to the negotiated size: its most significant octets zero (§2.3.4).
    func mask(_ k: UInt128, _ f: Features) -> UInt128 {
        f.keySize >= 16 || f.keySize == 0 ? k : k & ((UInt128(1) << (8 * UInt128(f.keySize))) - 1)
    }

    private mutating func fail(_ reason: SMPPairingFailedReason, _ message: String, now: UInt64) -> [SMPAction] {
        // Once a pairing ended, nothing more is said to the peer.
        let report = !hasEnded
        state = .failed(features)
        deadline = nil
        var out: [SMPAction] = []
        if report { out.append(.send(pdu(.pairingFailed(reason: reason)))) }
        out.append(.failed(SMPFailure(reason: reason, origin: .local, message: message)))
        return out
    }
}

/// A step that cannot go on, with the Pairing Failed reason to send.
struct SMPStepError: Error {
    var reason: SMPPairingFailedReason
    var message: String

    static func unexpected(_ what: String) -> SMPStepError {
        SMPStepError(reason: .unspecifiedReason, message: "\(what) out of turn")
    }
}
