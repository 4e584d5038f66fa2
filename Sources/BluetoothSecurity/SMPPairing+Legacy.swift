import BluetoothCrypto
import BluetoothWire

/// LE legacy pairing, phase 2 (Core Vol 3 Part H §2.3.5.2–2.3.5.5): TK, c1 confirms, s1's STK.
extension SMPPairing {
    mutating func legacyBegin(_ f: Features, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        let localRandom = random128()
        var out: [SMPAction] = []
        let legacy: Legacy
        switch f.method {
        case .passkeyEntry(localDisplays: true, _):
            let v = newPasskey()
            legacy = Legacy(features: f, tk: UInt128(v), localRandom: localRandom)
            out.append(.displayPasskey(v))
        case .passkeyEntry(localDisplays: false, _):
            // The initiator's confirm waits for the passkey; the responder's too.
            state = .legacyPasskeyEntry(f, localRandom: localRandom, peerConfirm: nil)
            return [.requestPasskey]
        default:
            legacy = Legacy(features: f, tk: 0, localRandom: localRandom)
        }
        state = .legacyConfirm(legacy)
        if role == .initiator { out.append(send(pdu(.pairingConfirm(confirmValue: try c1(legacy, legacy.localRandom))), now: now)) }
        return out
    }

    /// The passkey typed: the initiator sends Mconfirm; a responder answers the Mconfirm that came meanwhile.
    mutating func legacyPasskeyTyped(_ l: Legacy, peerConfirm: UInt128?, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        if role == .initiator {
            state = .legacyConfirm(l)
            return [send(pdu(.pairingConfirm(confirmValue: try c1(l, l.localRandom))), now: now)]
        }
        guard let peerConfirm else {
            state = .legacyConfirm(l)
            return []
        }
        state = .legacyRandom(l, peerConfirm: peerConfirm)
        return [send(pdu(.pairingConfirm(confirmValue: try c1(l, l.localRandom))), now: now)]
    }

    /// The peer's confirm: the initiator answers with Mrand, the responder with Sconfirm.
    mutating func legacyConfirm(_ l: Legacy, peerConfirm: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        state = .legacyRandom(l, peerConfirm: peerConfirm)
        if role == .initiator { return [send(pdu(.pairingRandom(randomValue: l.localRandom)), now: now)] }
        return [send(pdu(.pairingConfirm(confirmValue: try c1(l, l.localRandom))), now: now)]
    }

    /// The peer's random value, checked against its confirm; then the STK (s1).
    mutating func legacyRandom(_ l: Legacy, peerConfirm: UInt128, peerRandom: UInt128, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard try c1(l, peerRandom) == peerConfirm else {
            throw SMPStepError(reason: .confirmValueFailed, message: "the peer's confirm value does not match its random value (wrong passkey?)")
        }
        let (mrand, srand) = role == .initiator ? (l.localRandom, peerRandom) : (peerRandom, l.localRandom)
        let stk: UInt128
        do throws(BluetoothCrypto.Failure) {
            stk = mask(UInt128(bigEndianBytes: try SecurityFunctions.s1(k: l.tk.bigEndianBytes, r1: srand.bigEndianBytes, r2: mrand.bigEndianBytes)), l.features)
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
        state = .encryption(l.features, key: stk)
        if role == .initiator { return [.encrypt(SMPLongTermKey(key: stk))] }
        return [send(pdu(.pairingRandom(randomValue: l.localRandom)), now: now)]
    }

    /// c1 of random value `r` (ours or the peer's) with this link's TK, PDUs and addresses.
    private func c1(_ l: Legacy, _ r: UInt128) throws(SMPStepError) -> UInt128 {
        let (ia, ra) = role == .initiator ? (localAddress, peerAddress) : (peerAddress, localAddress)
        do throws(BluetoothCrypto.Failure) {
            return UInt128(bigEndianBytes: try SecurityFunctions.c1(
                k: l.tk.bigEndianBytes, r: r.bigEndianBytes, preq: l.features.preq, pres: l.features.pres,
                iat: ia.smpType, ia: ia.addressBytes, rat: ra.smpType, ra: ra.addressBytes))
        } catch {
            throw SMPStepError(reason: .unspecifiedReason, message: "\(error)")
        }
    }
}
