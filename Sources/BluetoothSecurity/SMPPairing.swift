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
public struct SMPPairing: Sendable {
    enum Phase: Sendable, Equatable {
        case idle
        /// Initiator: Pairing Request sent.
        case featureExchange
        case legacyConfirm
        case legacyRandom
        case publicKey
        case scConfirm
        case scRandom
        case dhKeyCheck
        /// Waiting for the link to be encrypted with the new key.
        case encryption
        case keyDistribution
        case done
        case failed
    }

    /// Initiator (central) or responder (peripheral).
    public let role: SMPRole
    /// What this side asks for and offers.
    public let configuration: SMPConfiguration
    /// Our address and the peer's as the link uses them (c1, f5, f6).
    public let localAddress: LEAddress
    /// The peer's address as the link uses it.
    public let peerAddress: LEAddress
    private let random: @Sendable () -> UInt64
    /// A key given at init (tests, the debug key) is kept; otherwise each pairing makes one.
    private let fixedKey: Bool
    /// Counts pairings on this link: user answers name the one they belong to.
    public private(set) var generation = 0

    private(set) var phase: Phase = .idle
    /// When the SMP timer expires (reset whenever a PDU is queued).
    public private(set) var deadline: UInt64?
    /// The method both sides' features chose (nil until the features were exchanged).
    public private(set) var method: SMPPairingMethod?
    /// LE Secure Connections was chosen (both offered it).
    public private(set) var secureConnections = false
    /// The encryption key size both settled on (0 until then).
    public private(set) var keySize: UInt8 = 0

    private var preq: [UInt8] = []
    private var pres: [UInt8] = []
    private var request: SMPPairingParameters?
    private var response: SMPPairingParameters?
    private var passkey: UInt32?
    /// Waiting for the user (passkey typed, number confirmed).
    private var waitingForUser = false
    private var userConfirmed = false

    // Legacy
    private var tk: UInt128 = 0
    private var localRandom: UInt128 = 0
    private var peerConfirm: UInt128?
    private var stk: UInt128?

    // Secure Connections
    private var privateKey: P256.PrivateKey?
    private var localPublic: P256.PublicKey?
    private var peerPublic: P256.PublicKey?
    private var dhKey: [UInt8] = []
    private var localNonce: [UInt8] = []
    private var peerNonce: [UInt8] = []
    private var round = 0
    private var macKey: [UInt8] = []
    private var ltk: UInt128?
    /// Responder: the initiator's DHKey check, held until the user confirms.
    private var pendingCheck: UInt128?
    /// Initiator: Ea went out (an Eb before it is out of turn: it would skip the user's
    /// confirmation in Numeric Comparison).
    private var sentCheck = false

    // Key distribution
    private var expected: SMPKeyDistribution = []
    private var result: SMPPairingResult?
    private var receivedLTK: UInt128?

    /// A pairing machine for one link; `privateKey` fixes the P-256 key (tests, the debug key),
    /// else each pairing makes a new one.
    public init(role: SMPRole, configuration: SMPConfiguration, localAddress: LEAddress, peerAddress: LEAddress,
                privateKey: P256.PrivateKey? = nil,
                random: @escaping @Sendable () -> UInt64 = { var g = SystemRandomNumberGenerator(); return g.next() }) {
        self.role = role
        self.configuration = configuration
        self.localAddress = localAddress
        self.peerAddress = peerAddress
        self.privateKey = privateKey
        self.fixedKey = privateKey != nil
        self.random = random
    }

    /// Pairing runs (started, not finished or failed).
    public var isActive: Bool { phase != .idle && phase != .done && phase != .failed }
    /// The timer expired: no SMP on this link any more (Core Vol 3 Part H §3.4).
    public private(set) var timedOut = false

    // MARK: Starting

    /// Initiator: sends Pairing Request.
    public mutating func start(now: UInt64) -> [SMPAction] {
        guard role == .initiator, !isActive, !timedOut else { return [] }
        reset()
        let p = localParameters(peer: nil)
        request = p
        preq = pdu(.pairingRequest(p))
        phase = .featureExchange
        return [send(preq, now: now)]
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
        guard !timedOut else { return [] }
        // Finished or failed: only a new pairing (or a Security Request) is looked at.
        if phase == .failed || phase == .done,
           bytes.first != SMPCode.pairingRequest.rawValue, bytes.first != SMPCode.securityRequest.rawValue {
            return []
        }
        let parsed: SMPPDU
        do throws(WireError) {
            parsed = try SMPPDU(parsing: bytes)
        } catch {
            // Known command with a wrong length or a bad value: Invalid Parameters (after a
            // finished pairing, a broken new request is refused without a failure report).
            if phase == .done || phase == .failed { return [.send(pdu(.pairingFailed(reason: .invalidParameters)))] }
            return fail(.invalidParameters, "malformed SMP PDU: \(error)", now: now)
        }
        do throws(SMPStepError) {
            return try handle(parsed, now: now)
        } catch {
            return fail(error.reason, error.message, now: now)
        }
    }

    /// The user typed the passkey shown on the peer (nil: cancelled).
    public mutating func passkeyEntered(_ value: UInt32?, now: UInt64) -> [SMPAction] {
        guard isActive, waitingForUser, case .passkeyEntry(false, _)? = method else { return [] }
        guard let value, value <= 999_999 else { return fail(.passkeyEntryFailed, "passkey entry cancelled or out of range", now: now) }
        waitingForUser = false
        passkey = value
        tk = UInt128(value)
        do throws(SMPStepError) { return try resumeAfterUser(now: now) } catch { return fail(error.reason, error.message, now: now) }
    }

    /// The user typing the passkey pressed a key: tell the peer (Pairing Keypress
    /// Notification, §3.5.8) when both asked for keypress notifications; nothing otherwise.
    public mutating func keypress(_ type: SMPKeypressNotificationType, now: UInt64) -> [SMPAction] {
        guard isActive, waitingForUser, case .passkeyEntry(false, _)? = method, keypressAgreed else { return [] }
        return [send(pdu(.pairingKeypressNotification(type)), now: now)]
    }

    /// Both Pairing Request and Response asked for keypress notifications.
    private var keypressAgreed: Bool {
        request?.authenticationRequirements.contains(.keypress) == true
            && response?.authenticationRequirements.contains(.keypress) == true
    }

    /// The user compared the numbers (false: they differ, or the user said no).
    public mutating func numericComparisonConfirmed(_ same: Bool, now: UInt64) -> [SMPAction] {
        guard isActive, waitingForUser, method == .numericComparison else { return [] }
        guard same else { return fail(.numericComparisonFailed, "the numbers were not confirmed", now: now) }
        waitingForUser = false
        userConfirmed = true
        do throws(SMPStepError) { return try resumeAfterUser(now: now) } catch { return fail(error.reason, error.message, now: now) }
    }

    /// The link's encryption changed (Encryption Change / Key Refresh Complete).
    public mutating func encryptionChanged(encrypted: Bool, now: UInt64) -> [SMPAction] {
        guard phase == .encryption else { return [] }
        guard encrypted else { return fail(.unspecifiedReason, "the link was not encrypted with the new key", now: now) }
        phase = .keyDistribution
        var out: [SMPAction] = []
        let initiatorKeys = response?.initiatorKeyDistribution ?? []
        let responderKeys = response?.responderKeyDistribution ?? []
        // The responder distributes first (§3.6.1).
        if role == .responder {
            out += distribute(responderKeys, now: now)
            expected = filtered(initiatorKeys)
        } else {
            expected = filtered(responderKeys)
        }
        if expected.isEmpty { out += finishDistribution(now: now) }
        return out
    }

    /// Responder: the controller asks for the key of an encryption the central starts (LE Long
    /// Term Key Request). During pairing, the STK or the new LTK (EDIV and Rand 0); nil otherwise.
    public func keyForEncryption(ediv: UInt16, rand: UInt64) -> UInt128? {
        guard role == .responder, phase == .encryption, ediv == 0, rand == 0 else { return nil }
        return secureConnections ? ltk : stk
    }

    /// Time passed: after the deadline pairing fails and the link's SMP is dead.
    public mutating func timerFired(now: UInt64) -> [SMPAction] {
        guard let d = deadline, now >= d, isActive else { return [] }
        deadline = nil
        timedOut = true
        phase = .failed
        return [.failed(SMPFailure(reason: .unspecifiedReason, origin: .timeout,
                                   message: "pairing timed out: no answer within \(configuration.timeout / 1_000_000_000) s (SMP timeout, Core Vol 3 Part H §3.4)"))]
    }

    // MARK: Steps

    private mutating func handle(_ p: SMPPDU, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch p {
        case .pairingFailed(let reason):
            guard isActive else { return [] }
            phase = .failed
            deadline = nil
            return [.failed(SMPFailure(reason: reason, origin: .peer, message: "the peer ended pairing: \(reason)"))]
        case .pairingRequest(let params):
            guard role == .responder, !isActive else { throw .unexpected("Pairing Request") }
            return try respond(to: params, now: now)
        case .pairingResponse(let params):
            guard role == .initiator, phase == .featureExchange else { throw .unexpected("Pairing Response") }
            return try responded(params, now: now)
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
            guard isActive, case .passkeyEntry(_, peerDisplays: false)? = method, keypressAgreed else { return [] }
            return [.keypress(type)]
        case .encryptionInformation, .centralIdentification, .identityInformation, .identityAddressInformation,
             .signingInformation:
            return try key(p, now: now)
        case .unknown(let code, _):
            throw SMPStepError(reason: .commandNotSupported, message: "unknown SMP command 0x\(hex(code.rawValue, 2))")
        }
    }

    private func localParameters(peer: SMPPairingParameters?) -> SMPPairingParameters {
        var auth = configuration.authenticationRequirements
        if let peer, !peer.authenticationRequirements.contains(.bonding) { auth.remove(.bonding) }
        let bonding = auth.contains(.bonding)
        // Keys only travel when both bond (§3.6.1); Link Key (BR/EDR) is not offered.
        let mine = bonding ? configuration.localKeys.intersection([.encryptionKey, .identityKey, .signingKey]) : []
        let theirs = bonding ? configuration.peerKeys.intersection([.encryptionKey, .identityKey, .signingKey]) : []
        var offered = mine
        if configuration.identityResolvingKey == nil || configuration.identityAddress == nil { offered.remove(.identityKey) }
        let maxKey = min(max(configuration.maximumKeySize, 7), 16)
        switch role {
        case .initiator:
            return SMPPairingParameters(ioCapability: configuration.ioCapability, authenticationRequirements: auth,
                                        maximumEncryptionKeySize: maxKey, initiatorKeyDistribution: offered,
                                        responderKeyDistribution: theirs)
        case .responder:
            let peerInit = peer?.initiatorKeyDistribution ?? [], peerResp = peer?.responderKeyDistribution ?? []
            return SMPPairingParameters(ioCapability: configuration.ioCapability, authenticationRequirements: auth,
                                        maximumEncryptionKeySize: maxKey,
                                        initiatorKeyDistribution: peerInit.intersection(theirs),
                                        responderKeyDistribution: peerResp.intersection(offered))
        }
    }

    /// Responder: Pairing Request in, Pairing Response out, then the first step of the method.
    private mutating func respond(to params: SMPPairingParameters, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        reset()
        request = params
        preq = pdu(.pairingRequest(params))
        let mine = localParameters(peer: params)
        response = mine
        try decide()
        pres = pdu(.pairingResponse(mine))
        var out = [send(pres, now: now)]
        if secureConnections {
            phase = .publicKey
        } else {
            phase = .legacyConfirm
            out += try legacyBegin(now: now)
        }
        return out
    }

    /// Initiator: Pairing Response in; the method starts.
    private mutating func responded(_ params: SMPPairingParameters, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        response = params
        pres = pdu(.pairingResponse(params))
        // The responder may only take away keys we offered or asked for.
        guard let req = request, params.initiatorKeyDistribution.isSubset(of: req.initiatorKeyDistribution),
              params.responderKeyDistribution.isSubset(of: req.responderKeyDistribution) else {
            throw SMPStepError(reason: .invalidParameters, message: "the Pairing Response adds key distribution bits the request did not have")
        }
        try decide()
        if secureConnections {
            phase = .publicKey
            return [try sendPublicKey(now: now)]
        }
        phase = .legacyConfirm
        return try legacyBegin(now: now)
    }

    /// Key size, legacy or Secure Connections, the method (both sides decide alike).
    private mutating func decide() throws(SMPStepError) {
        guard let req = request, let rsp = response else { throw .unexpected("pairing parameters") }
        keySize = min(req.maximumEncryptionKeySize, rsp.maximumEncryptionKeySize)
        guard keySize >= max(configuration.minimumKeySize, 7) else {
            throw SMPStepError(reason: .encryptionKeySize,
                               message: "the peer's largest encryption key is \(keySize) bytes; at least \(configuration.minimumKeySize) are required")
        }
        secureConnections = req.authenticationRequirements.contains(.secureConnections)
            && rsp.authenticationRequirements.contains(.secureConnections)
        guard secureConnections || !configuration.secureConnectionsOnly else {
            throw SMPStepError(reason: .authenticationRequirements, message: "the peer does not support LE Secure Connections, which is required")
        }
        let mitm = req.authenticationRequirements.contains(.mitm) || rsp.authenticationRequirements.contains(.mitm)
        let m: SMPPairingMethod = mitm
            ? .select(initiator: req.ioCapability, responder: rsp.ioCapability, secureConnections: secureConnections, role: role)
            : .justWorks
        if configuration.mitm && !m.isAuthenticated {
            throw SMPStepError(reason: .authenticationRequirements,
                               message: "MITM protection was required but the IO capabilities allow only Just Works")
        }
        method = m
    }

    // MARK: Legacy pairing (§2.3.5.2–2.3.5.5)

    private mutating func legacyBegin(now: UInt64) throws(SMPStepError) -> [SMPAction] {
        localRandom = random128()
        var out: [SMPAction] = []
        switch method {
        case .passkeyEntry(let localDisplays, _)?:
            if localDisplays {
                let v = newPasskey()
                passkey = v
                tk = UInt128(v)
                out.append(.displayPasskey(v))
            } else {
                waitingForUser = true
                out.append(.requestPasskey)
                return out  // the initiator's confirm waits for the passkey
            }
        default:
            tk = 0
        }
        if role == .initiator { out.append(send(pdu(.pairingConfirm(confirmValue: try legacyConfirmValue(localRandom))), now: now)) }
        return out
    }

    private func legacyConfirmValue(_ r: UInt128) throws(SMPStepError) -> UInt128 {
        let (ia, ra) = role == .initiator ? (localAddress, peerAddress) : (peerAddress, localAddress)
        do throws(BluetoothCrypto.Failure) {
            return UInt128(bigEndianBytes: try SecurityFunctions.c1(
                k: tk.bigEndianBytes, r: r.bigEndianBytes, preq: preq, pres: pres,
                iat: ia.smpType, ia: ia.addressBytes, rat: ra.smpType, ra: ra.addressBytes))
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    // MARK: Secure Connections (§2.3.5.6)

    private mutating func sendPublicKey(now: UInt64) throws(SMPStepError) -> SMPAction {
        let key: P256.PrivateKey
        if let k = privateKey {
            key = k
        } else {
            do throws(P256.KeyError) { key = try P256.PrivateKey.generate() } catch {
                throw SMPStepError(reason: .unspecifiedReason, message: "cannot make a P-256 key: \(error)")
            }
            privateKey = key
        }
        localPublic = key.publicKey
        return send(pdu(.pairingPublicKey(x: SMPUInt256(bigEndianBytes: key.publicKey.x), y: SMPUInt256(bigEndianBytes: key.publicKey.y))), now: now)
    }

    private mutating func publicKey(_ peer: P256.PublicKey, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard secureConnections, phase == .publicKey else { throw .unexpected("Pairing Public Key") }
        // An invalid key, or our own reflected back, is refused and never used (§2.3.5.6.1).
        guard peer.isValid else {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer's public key is not a point of P-256")
        }
        var out: [SMPAction] = []
        if role == .responder { out.append(try sendPublicKey(now: now)) }
        guard peer != localPublic, let key = privateKey else {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer sent our own public key back")
        }
        peerPublic = peer
        do throws(P256.KeyError) { dhKey = try key.sharedSecret(with: peer) } catch {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "\(error)")
        }
        round = 0
        phase = .scConfirm
        switch method {
        case .passkeyEntry(let localDisplays, _)?:
            if localDisplays {
                let v = newPasskey()
                passkey = v
                out.append(.displayPasskey(v))
                out += try passkeyRoundStart(now: now)
            } else {
                waitingForUser = true
                out.append(.requestPasskey)
            }
        default:
            // Just Works / Numeric Comparison: the responder commits to its nonce (Cb).
            localNonce = random128().bigEndianBytes
            if role == .responder {
                out.append(send(pdu(.pairingConfirm(confirmValue: try f4(localPublicX, peerX, localNonce, 0))), now: now))
                phase = .scRandom
            }
        }
        return out
    }

    private var localPublicX: [UInt8] { localPublic?.x ?? [] }
    private var peerX: [UInt8] { peerPublic?.x ?? [] }

    /// Passkey round `round`: a fresh nonce; the initiator commits first.
    private mutating func passkeyRoundStart(now: UInt64) throws(SMPStepError) -> [SMPAction] {
        localNonce = random128().bigEndianBytes
        guard role == .initiator else { return [] }
        return [send(pdu(.pairingConfirm(confirmValue: try f4(localPublicX, peerX, localNonce, passkeyBit))), now: now)]
    }

    private var passkeyBit: UInt8 { 0x80 | UInt8(truncatingIfNeeded: ((passkey ?? 0) >> UInt32(round)) & 1) }

    private mutating func resumeAfterUser(now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch phase {
        case .legacyConfirm:
            if role == .initiator {
                return [send(pdu(.pairingConfirm(confirmValue: try legacyConfirmValue(localRandom))), now: now)]
            }
            // Responder: answer the confirm that arrived meanwhile.
            if peerConfirm != nil {
                phase = .legacyRandom
                return [send(pdu(.pairingConfirm(confirmValue: try legacyConfirmValue(localRandom))), now: now)]
            }
            return []
        case .scConfirm:
            var out = try passkeyRoundStart(now: now)
            if role == .responder, peerConfirm != nil {
                out.append(send(pdu(.pairingConfirm(confirmValue: try f4(localPublicX, peerX, localNonce, passkeyBit))), now: now))
                phase = .scRandom
            }
            return out
        case .dhKeyCheck:
            // Numeric Comparison confirmed.
            if role == .initiator { return [try sendCheck(now: now)] }
            if let ea = pendingCheck {
                pendingCheck = nil
                return try checkAndAnswer(ea, now: now)
            }
            return []
        default:
            return []
        }
    }

    private mutating func confirm(_ value: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch phase {
        case .legacyConfirm:
            if role == .initiator {
                guard !waitingForUser else { throw .unexpected("Pairing Confirm before ours") }
                peerConfirm = value
                phase = .legacyRandom
                return [send(pdu(.pairingRandom(randomValue: localRandom)), now: now)]
            }
            peerConfirm = value
            if waitingForUser { return [] }
            phase = .legacyRandom
            return [send(pdu(.pairingConfirm(confirmValue: try legacyConfirmValue(localRandom))), now: now)]
        case .scConfirm:
            switch method {
            case .passkeyEntry?:
                peerConfirm = value
                if role == .initiator {
                    guard !waitingForUser else { throw .unexpected("Pairing Confirm before ours") }
                    phase = .scRandom
                    return [send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: localNonce))), now: now)]
                }
                if waitingForUser { return [] }
                phase = .scRandom
                return [send(pdu(.pairingConfirm(confirmValue: try f4(localPublicX, peerX, localNonce, passkeyBit))), now: now)]
            default:
                // Just Works / Numeric Comparison: the initiator gets Cb, answers with Na.
                guard role == .initiator else { throw .unexpected("Pairing Confirm") }
                peerConfirm = value
                phase = .scRandom
                return [send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: localNonce))), now: now)]
            }
        default:
            throw .unexpected("Pairing Confirm")
        }
    }

    private mutating func randomValue(_ value: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch phase {
        case .legacyRandom:
            guard let c = peerConfirm, try legacyConfirmValue(value) == c else {
                throw SMPStepError(reason: .confirmValueFailed, message: "the peer's confirm value does not match its random value (wrong passkey?)")
            }
            let (mrand, srand) = role == .initiator ? (localRandom, value) : (value, localRandom)
            do throws(BluetoothCrypto.Failure) {
                stk = mask(UInt128(bigEndianBytes: try SecurityFunctions.s1(k: tk.bigEndianBytes, r1: srand.bigEndianBytes, r2: mrand.bigEndianBytes)))
            } catch {
                throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
            }
            phase = .encryption
            if role == .initiator { return [.encrypt(SMPLongTermKey(key: stk ?? 0))] }
            return [send(pdu(.pairingRandom(randomValue: localRandom)), now: now)]
        case .scRandom:
            peerNonce = value.bigEndianBytes
            switch method {
            case .passkeyEntry?:
                guard let c = peerConfirm, try f4(peerX, localPublicX, peerNonce, passkeyBit) == c else {
                    throw SMPStepError(reason: .confirmValueFailed, message: "passkey round \(round + 1): the peer's confirm value does not match (wrong passkey?)")
                }
                var out: [SMPAction] = []
                if role == .responder {
                    out.append(send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: localNonce))), now: now))
                }
                round += 1
                peerConfirm = nil
                if round < 20 {
                    phase = .scConfirm
                    out += try passkeyRoundStart(now: now)
                    return out
                }
                phase = .dhKeyCheck
                try deriveKeys()
                if role == .initiator { out.append(try sendCheck(now: now)) }
                return out
            default:
                var out: [SMPAction] = []
                if role == .initiator {
                    guard let c = peerConfirm, try f4(peerX, localPublicX, peerNonce, 0) == c else {
                        throw SMPStepError(reason: .confirmValueFailed, message: "the peer's confirm value does not match its nonce")
                    }
                } else {
                    out.append(send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: localNonce))), now: now))
                }
                phase = .dhKeyCheck
                try deriveKeys()
                if method == .numericComparison {
                    waitingForUser = true
                    out.append(.confirmNumber(try numericValue() % 1_000_000))
                    return out
                }
                userConfirmed = true
                if role == .initiator { out.append(try sendCheck(now: now)) }
                return out
            }
        default:
            throw .unexpected("Pairing Random")
        }
    }

    /// Na and Nb in the initiator's and responder's order.
    private var nonces: (na: [UInt8], nb: [UInt8]) { role == .initiator ? (localNonce, peerNonce) : (peerNonce, localNonce) }
    private var addresses: (a: LEAddress, b: LEAddress) { role == .initiator ? (localAddress, peerAddress) : (peerAddress, localAddress) }

    private func numericValue() throws(SMPStepError) -> UInt32 {
        let (pka, pkb) = role == .initiator ? (localPublicX, peerX) : (peerX, localPublicX)
        do throws(BluetoothCrypto.Failure) {
            return try SecurityFunctions.g2(u: pka, v: pkb, x: nonces.na, y: nonces.nb)
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    private mutating func deriveKeys() throws(SMPStepError) {
        do throws(BluetoothCrypto.Failure) {
            let k = try SecurityFunctions.f5(w: dhKey, n1: nonces.na, n2: nonces.nb, a1: addresses.a.smpBytes, a2: addresses.b.smpBytes)
            macKey = k.macKey
            ltk = mask(UInt128(bigEndianBytes: k.ltk))
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    /// IOcap (AuthReq, OOB flag, IO capability) of the initiator (`initiator`) or responder.
    private func ioCap(initiator: Bool) -> [UInt8] {
        guard let p = initiator ? request : response else { return [0, 0, 0] }
        return [p.authenticationRequirements.rawValue, p.oobDataFlag.rawValue, p.ioCapability.rawValue]
    }

    /// Ea (initiator) or Eb (responder), §2.3.5.6.5.
    private func check(ofInitiator: Bool) throws(SMPStepError) -> UInt128 {
        let r = UInt128(passkeyValueForCheck).bigEndianBytes
        let (na, nb) = nonces, (a, b) = addresses
        do throws(BluetoothCrypto.Failure) {
            let e = ofInitiator
                ? try SecurityFunctions.f6(w: macKey, n1: na, n2: nb, r: r, ioCap: ioCap(initiator: true), a1: a.smpBytes, a2: b.smpBytes)
                : try SecurityFunctions.f6(w: macKey, n1: nb, n2: na, r: r, ioCap: ioCap(initiator: false), a1: b.smpBytes, a2: a.smpBytes)
            return UInt128(bigEndianBytes: e)
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    private var passkeyValueForCheck: UInt32 {
        if case .passkeyEntry? = method { return passkey ?? 0 }
        return 0
    }

    private mutating func sendCheck(now: UInt64) throws(SMPStepError) -> SMPAction {
        sentCheck = true
        return send(pdu(.pairingDHKeyCheck(try check(ofInitiator: true))), now: now)
    }

    private mutating func dhKeyCheck(_ value: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard phase == .dhKeyCheck else { throw .unexpected("Pairing DHKey Check") }
        if role == .initiator {
            guard sentCheck else { throw .unexpected("Pairing DHKey Check before ours") }
            guard try check(ofInitiator: false) == value else {
                throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer's DHKey check value does not match")
            }
            phase = .encryption
            return [.encrypt(SMPLongTermKey(key: ltk ?? 0))]
        }
        if waitingForUser {
            pendingCheck = value
            return []
        }
        return try checkAndAnswer(value, now: now)
    }

    private mutating func checkAndAnswer(_ ea: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard try check(ofInitiator: true) == ea else {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer's DHKey check value does not match")
        }
        phase = .encryption
        return [send(pdu(.pairingDHKeyCheck(try check(ofInitiator: false))), now: now)]
    }

    private func f4(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ z: UInt8) throws(SMPStepError) -> UInt128 {
        do throws(BluetoothCrypto.Failure) {
            return UInt128(bigEndianBytes: try SecurityFunctions.f4(u: u, v: v, x: x, z: z))
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    // MARK: Key distribution (§3.6)

    /// The keys that are really exchanged: Secure Connections derives the LTK (no
    /// Encryption Information / Central Identification).
    private func filtered(_ keys: SMPKeyDistribution) -> SMPKeyDistribution {
        var k = keys.intersection([.encryptionKey, .identityKey, .signingKey])
        if secureConnections { k.remove(.encryptionKey) }
        return k
    }

    private mutating func distribute(_ keys: SMPKeyDistribution, now: UInt64) -> [SMPAction] {
        let k = filtered(keys)
        var out: [SMPAction] = []
        var r = result ?? baseResult()
        if k.contains(.encryptionKey) {
            let l = SMPLongTermKey(key: mask(random128()), ediv: UInt16(truncatingIfNeeded: random()), rand: random())
            r.localLTK = l
            out.append(send(pdu(.encryptionInformation(longTermKey: l.key)), now: now))
            out.append(send(pdu(.centralIdentification(ediv: l.ediv, rand: l.rand)), now: now))
        }
        if k.contains(.identityKey), let irk = configuration.identityResolvingKey, let address = configuration.identityAddress {
            out.append(send(pdu(.identityInformation(identityResolvingKey: irk)), now: now))
            out.append(send(pdu(.identityAddressInformation(LEAddress(address.address, type: address.smpType == 0 ? .public : .random))), now: now))
        }
        if k.contains(.signingKey) {
            let csrk = configuration.signatureKey ?? random128()
            r.localSignatureKey = csrk
            out.append(send(pdu(.signingInformation(signatureKey: csrk)), now: now))
        }
        result = r
        return out
    }

    private mutating func key(_ p: SMPPDU, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard phase == .keyDistribution else { throw .unexpected("key distribution before encryption") }
        var r = result ?? baseResult()
        switch p {
        case .encryptionInformation(let ltk):
            guard expected.contains(.encryptionKey), receivedLTK == nil else { throw .unexpected("Encryption Information") }
            receivedLTK = ltk
        case .centralIdentification(let ediv, let rand):
            guard expected.contains(.encryptionKey), let ltk = receivedLTK else { throw .unexpected("Central Identification") }
            r.peerLTK = SMPLongTermKey(key: ltk, ediv: ediv, rand: rand)
            expected.remove(.encryptionKey)
        case .identityInformation(let irk):
            guard expected.contains(.identityKey), r.peerIdentityResolvingKey == nil else { throw .unexpected("Identity Information") }
            r.peerIdentityResolvingKey = irk
        case .identityAddressInformation(let address):
            guard expected.contains(.identityKey), r.peerIdentityResolvingKey != nil else { throw .unexpected("Identity Address Information") }
            // A public address, or a static random one (top two bits set); never zero.
            let raw = address.address.rawValue
            guard raw != 0, address.type == .public || (address.type == .random && raw >> 46 == 0b11) else {
                throw SMPStepError(reason: .invalidParameters, message: "the peer's identity address \(address) is neither public nor static random")
            }
            r.peerIdentityAddress = address
            expected.remove(.identityKey)
        case .signingInformation(let csrk):
            guard expected.contains(.signingKey) else { throw .unexpected("Signing Information") }
            r.peerSignatureKey = csrk
            expected.remove(.signingKey)
        default:
            throw .unexpected("key")
        }
        result = r
        return expected.isEmpty ? finishDistribution(now: now) : []
    }

    private mutating func finishDistribution(now: UInt64) -> [SMPAction] {
        var out: [SMPAction] = []
        if role == .initiator { out += distribute(response?.initiatorKeyDistribution ?? [], now: now) }
        var r = result ?? baseResult()
        if secureConnections, let ltk { r.peerLTK = SMPLongTermKey(key: ltk) }
        phase = .done
        deadline = nil
        out.append(.paired(r))
        return out
    }

    private func baseResult() -> SMPPairingResult {
        let m = method ?? .justWorks
        return SMPPairingResult(method: m, secureConnections: secureConnections, authenticated: m.isAuthenticated,
                                keySize: keySize,
                                bonded: request?.authenticationRequirements.contains(.bonding) == true
                                    && response?.authenticationRequirements.contains(.bonding) == true)
    }

    // MARK: Helpers

    private mutating func reset() {
        generation += 1
        method = nil
        secureConnections = false
        passkey = nil
        waitingForUser = false
        userConfirmed = false
        peerConfirm = nil
        stk = nil
        ltk = nil
        pendingCheck = nil
        sentCheck = false
        result = nil
        if !fixedKey { privateKey = nil }  // a fresh P-256 key for every pairing (§2.3.5.6.1)
        localPublic = nil
        peerPublic = nil
        receivedLTK = nil
        expected = []
        round = 0
    }

    private mutating func send(_ bytes: [UInt8], now: UInt64) -> SMPAction {
        deadline = now &+ configuration.timeout
        return .send(bytes)
    }

    private func pdu(_ p: SMPPDU) -> [UInt8] { (try? p.encoded()) ?? [] }

    private func random128() -> UInt128 { UInt128(random()) << 64 | UInt128(random()) }

    private func newPasskey() -> UInt32 { UInt32(random() % 1_000_000) }

    /// The key cut to the negotiated size: its most significant octets zero (§2.3.4).
    private func mask(_ k: UInt128) -> UInt128 {
        keySize >= 16 || keySize == 0 ? k : k & ((UInt128(1) << (8 * UInt128(keySize))) - 1)
    }

    private mutating func fail(_ reason: SMPPairingFailedReason, _ message: String, now: UInt64) -> [SMPAction] {
        let wasActive = isActive || phase == .idle
        phase = .failed
        deadline = nil
        var out: [SMPAction] = []
        if wasActive { out.append(.send(pdu(.pairingFailed(reason: reason)))) }
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
