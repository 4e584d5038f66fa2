import BluetoothCrypto
import BluetoothWire

/// LE Secure Connections, phase 2 (Core Vol 3 Part H §2.3.5.6): public keys, authentication
/// stage 1 (f4 commitments, g2's number) and stage 2 (f5's keys, f6 checks).
extension SMPPairing {
    /// This pairing's P-256 key: the fixed one, or a new one.
    func privateKey() throws(SMPStepError) -> P256.PrivateKey {
        if let fixedPrivateKey { return fixedPrivateKey }
        do throws(P256.KeyError) { return try P256.PrivateKey.generate() } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "cannot make a P-256 key: \(error)")
        }
    }

    mutating func sendPublicKey(_ key: P256.PrivateKey, now: UInt64) -> SMPAction {
        send(pdu(.pairingPublicKey(x: SMPUInt256(bigEndianBytes: key.publicKey.x), y: SMPUInt256(bigEndianBytes: key.publicKey.y))), now: now)
    }

    /// The x coordinate of the debug public key (Core Vol 3 Part H §2.3.5.6.1), most
    /// significant octet first.
    static let debugPublicKeyX: [UInt8] = [
        0x20, 0xB0, 0x03, 0xD2, 0xF2, 0x97, 0xBE, 0x2C, 0x5E, 0x2C, 0x83, 0xA7, 0xE9, 0xF9, 0xA5, 0xB9,
        0xEF, 0xF4, 0x91, 0x11, 0xAC, 0xF4, 0xFD, 0xDB, 0xCC, 0x03, 0x01, 0x48, 0x0E, 0x35, 0x9D, 0xE6,
    ]

    mutating func publicKey(_ peer: P256.PublicKey, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard case .publicKey(let f, let sent) = state else { throw .unexpected("Pairing Public Key") }
        // An invalid key, or our own reflected back, is refused and never used (§2.3.5.6.1).
        guard peer.isValid else {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer's public key is not a point of P-256")
        }
        guard configuration.allowsDebugKeys || peer.x != Self.debugPublicKeyX else {
            throw SMPStepError(reason: .authenticationRequirements,
                               message: "the peer uses the Secure Connections debug key, whose private key is public: anyone could decrypt the link (allow it with --allow-debug-keys)")
        }
        var out: [SMPAction] = []
        let key: P256.PrivateKey
        if let sent {
            key = sent
        } else {
            key = try privateKey()
            out.append(sendPublicKey(key, now: now))
        }
        // Our x with either y is our key reflected: f4, f5 and the DHKey use x alone, so
        // (x, p − y) would pass a comparison of the whole point (CVE-2020-26558).
        guard peer.x != key.publicKey.x else {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer sent our own public key back")
        }
        let dhKey: [UInt8]
        do throws(P256.KeyError) { dhKey = try key.sharedSecret(with: peer) } catch {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "\(error)")
        }
        let x = KeyExchange(features: f, localPublic: key.publicKey, peerPublic: peer, dhKey: dhKey)
        switch f.method {
        case .passkeyEntry(localDisplays: true, _):
            let v = newPasskey()
            out.append(.displayPasskey(v))
            out += try passkeyRound(x, Round(number: 0, localNonce: nonce(), passkey: v), now: now)
        case .passkeyEntry(localDisplays: false, _):
            state = .scPasskeyEntry(x, peerConfirm: nil)
            out.append(.requestPasskey)
        default:
            // Just Works / Numeric Comparison: the responder commits to its nonce (Cb).
            let round = Round(number: 0, localNonce: nonce(), passkey: nil)
            if role == .responder {
                state = .scRandom(x, round)
                out.append(send(pdu(.pairingConfirm(confirmValue: try commitment(x, round))), now: now))
            } else {
                state = .scConfirm(x, round)
            }
        }
        return out
    }

    /// A Passkey Entry round starts: the initiator commits first (Cai); the responder waits for
    /// it, or answers the one that came while its user typed (Cbi).
    mutating func passkeyRound(_ x: KeyExchange, _ round: Round, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        if role == .initiator || round.peerConfirm != nil {
            state = role == .initiator ? .scConfirm(x, round) : .scRandom(x, round)
            return [send(pdu(.pairingConfirm(confirmValue: try commitment(x, round))), now: now)]
        }
        state = .scConfirm(x, round)
        return []
    }

    /// The peer's commitment for the round came (`round.peerConfirm`).
    mutating func scConfirm(_ x: KeyExchange, _ round: Round, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        if case .passkeyEntry = x.features.method, role == .responder {
            state = .scRandom(x, round)
            return [send(pdu(.pairingConfirm(confirmValue: try commitment(x, round))), now: now)]
        }
        // The initiator answers the responder's commitment with its nonce (in Just Works and
        // Numeric Comparison only the responder commits).
        guard role == .initiator else { throw .unexpected("Pairing Confirm") }
        state = .scRandom(x, round)
        return [send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: round.localNonce))), now: now)]
    }

    /// The peer's nonce for the round, checked against its commitment where one came.
    mutating func scRandom(_ x: KeyExchange, _ round: Round, peerNonce: [UInt8], now: UInt64) throws(SMPStepError) -> [SMPAction] {
        var out: [SMPAction] = []
        if case .passkeyEntry = x.features.method {
            guard let c = round.peerConfirm, try f4(x.peerPublic.x, x.localPublic.x, peerNonce, round.z) == c else {
                throw SMPStepError(reason: .confirmValueFailed, message: "passkey round \(round.number + 1): the peer's confirm value does not match (wrong passkey?)")
            }
            if role == .responder { out.append(send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: round.localNonce))), now: now)) }
            if round.number + 1 < 20 {
                return out + (try passkeyRound(x, Round(number: round.number + 1, localNonce: nonce(), passkey: round.passkey), now: now))
            }
        } else if role == .initiator {
            guard let c = round.peerConfirm, try f4(x.peerPublic.x, x.localPublic.x, peerNonce, 0) == c else {
                throw SMPStepError(reason: .confirmValueFailed, message: "the peer's confirm value does not match its nonce")
            }
        } else {
            out.append(send(pdu(.pairingRandom(randomValue: UInt128(bigEndianBytes: round.localNonce))), now: now))
        }
        let check = try stageTwo(x, localNonce: round.localNonce, peerNonce: peerNonce, r: round.passkey ?? 0)
        if x.features.method == .numericComparison {
            state = .numericComparison(check, heldCheck: nil)
            out.append(.confirmNumber(try numericValue(check) % 1_000_000))
            return out
        }
        if role == .initiator { out.append(try sendCheck(check, now: now)) } else { state = .dhKeyCheck(check) }
        return out
    }

    /// Initiator: Ea goes out; Eb is awaited.
    mutating func sendCheck(_ c: Check, now: UInt64) throws(SMPStepError) -> SMPAction {
        state = .dhKeyCheck(c)
        return send(pdu(.pairingDHKeyCheck(try f6(c, ofInitiator: true))), now: now)
    }

    mutating func dhKeyCheck(_ value: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        switch state {
        case .numericComparison(let c, nil) where role == .responder:
            // Held until the user confirms.
            state = .numericComparison(c, heldCheck: value)
            return []
        case .numericComparison where role == .initiator:
            // An Eb before our Ea would skip the user's comparison.
            throw .unexpected("Pairing DHKey Check before ours")
        case .dhKeyCheck(let c) where role == .initiator:
            guard try f6(c, ofInitiator: false) == value else {
                throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer's DHKey check value does not match")
            }
            state = .encryption(c.features, key: c.ltk)
            return [.encrypt(SMPLongTermKey(key: c.ltk))]
        case .dhKeyCheck(let c):
            return try checkAndAnswer(c, value, now: now)
        default:
            throw .unexpected("Pairing DHKey Check")
        }
    }

    /// Responder: Ea checked, Eb sent; the central encrypts next.
    mutating func checkAndAnswer(_ c: Check, _ ea: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard try f6(c, ofInitiator: true) == ea else {
            throw SMPStepError(reason: .dhKeyCheckFailed, message: "the peer's DHKey check value does not match")
        }
        state = .encryption(c.features, key: c.ltk)
        return [send(pdu(.pairingDHKeyCheck(try f6(c, ofInitiator: false))), now: now)]
    }

    // MARK: Functions

    /// Our commitment for the round: f4(PKx ours, PKx theirs, our nonce, z).
    private func commitment(_ x: KeyExchange, _ round: Round) throws(SMPStepError) -> UInt128 {
        try f4(x.localPublic.x, x.peerPublic.x, round.localNonce, round.z)
    }

    /// Initiator's and responder's values in that order (PKa/PKb, A/B).
    private func ordered<T>(local: T, peer: T) -> (T, T) { role == .initiator ? (local, peer) : (peer, local) }

    private func stageTwo(_ x: KeyExchange, localNonce: [UInt8], peerNonce: [UInt8], r: UInt32) throws(SMPStepError) -> Check {
        let (na, nb) = ordered(local: localNonce, peer: peerNonce)
        let (a, b) = ordered(local: localAddress, peer: peerAddress)
        do throws(BluetoothCrypto.Failure) {
            let k = try SecurityFunctions.f5(w: x.dhKey, n1: na, n2: nb, a1: a.smpBytes, a2: b.smpBytes)
            return Check(exchange: x, na: na, nb: nb, macKey: k.macKey, ltk: mask(UInt128(bigEndianBytes: k.ltk), x.features), r: r)
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    private func numericValue(_ c: Check) throws(SMPStepError) -> UInt32 {
        let (pka, pkb) = ordered(local: c.exchange.localPublic.x, peer: c.exchange.peerPublic.x)
        do throws(BluetoothCrypto.Failure) {
            return try SecurityFunctions.g2(u: pka, v: pkb, x: c.na, y: c.nb)
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    /// IOcap (AuthReq, OOB flag, IO capability) of the initiator or the responder.
    private func ioCap(_ p: SMPPairingParameters) -> [UInt8] {
        [p.authenticationRequirements.rawValue, p.oobDataFlag.rawValue, p.ioCapability.rawValue]
    }

    /// Ea (initiator) or Eb (responder), §2.3.5.6.5.
    private func f6(_ c: Check, ofInitiator: Bool) throws(SMPStepError) -> UInt128 {
        let r = UInt128(c.r).bigEndianBytes
        let (a, b) = ordered(local: localAddress, peer: peerAddress)
        do throws(BluetoothCrypto.Failure) {
            let e = ofInitiator
                ? try SecurityFunctions.f6(w: c.macKey, n1: c.na, n2: c.nb, r: r, ioCap: ioCap(c.features.request), a1: a.smpBytes, a2: b.smpBytes)
                : try SecurityFunctions.f6(w: c.macKey, n1: c.nb, n2: c.na, r: r, ioCap: ioCap(c.features.response), a1: b.smpBytes, a2: a.smpBytes)
            return UInt128(bigEndianBytes: e)
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }

    private func f4(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ z: UInt8) throws(SMPStepError) -> UInt128 {
        do throws(BluetoothCrypto.Failure) {
            return UInt128(bigEndianBytes: try SecurityFunctions.f4(u: u, v: v, x: x, z: z))
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }
}
