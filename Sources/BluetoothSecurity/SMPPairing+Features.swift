import BluetoothCrypto
import BluetoothWire

/// The Pairing Feature Exchange (Core Vol 3 Part H §2.3, §3.5.1–3.5.2).
extension SMPPairing {
    func localParameters(peer: SMPPairingParameters?) -> SMPPairingParameters {
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
    mutating func respond(to params: SMPPairingParameters, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        generation += 1
        state = .idle  // a new pairing: a refusal from here on is reported to the peer
        let mine = localParameters(peer: params)
        let f = try settle(request: params, response: mine, preq: pdu(.pairingRequest(params)), pres: pdu(.pairingResponse(mine)))
        let out = [send(f.pres, now: now)]
        if f.secureConnections {
            state = .publicKey(f, sent: nil)
            return out
        }
        return out + (try legacyBegin(f, now: now))
    }

    /// Initiator: Pairing Response in; the method starts.
    mutating func responded(_ params: SMPPairingParameters, request: SMPPairingParameters, preq: [UInt8],
                            now: UInt64) throws(SMPStepError) -> [SMPAction] {
        // The responder may only take away keys we offered or asked for.
        guard params.initiatorKeyDistribution.isSubset(of: request.initiatorKeyDistribution),
              params.responderKeyDistribution.isSubset(of: request.responderKeyDistribution) else {
            throw SMPStepError(reason: .invalidParameters, message: "the Pairing Response adds key distribution bits the request did not have")
        }
        let f = try settle(request: request, response: params, preq: preq, pres: pdu(.pairingResponse(params)))
        if f.secureConnections {
            let key = try privateKey()
            state = .publicKey(f, sent: key)
            return [sendPublicKey(key, now: now)]
        }
        return try legacyBegin(f, now: now)
    }

    /// Key size, legacy or Secure Connections, the method (both sides decide alike).
    private func settle(request req: SMPPairingParameters, response rsp: SMPPairingParameters,
                        preq: [UInt8], pres: [UInt8]) throws(SMPStepError) -> Features {
        // Values 0x05-0xFF are reserved (Core Vol 3 Part H §3.5.1): not taken as Just Works.
        for (side, io) in [("request", req.ioCapability), ("response", rsp.ioCapability)] where io.rawValue > SMPIOCapability.keyboardDisplay.rawValue {
            throw SMPStepError(reason: .invalidParameters, message: "the Pairing \(side) has the reserved IO capability 0x\(hex(io.rawValue, 2))")
        }
        let keySize = min(req.maximumEncryptionKeySize, rsp.maximumEncryptionKeySize)
        guard keySize >= max(configuration.minimumKeySize, 7) else {
            throw SMPStepError(reason: .encryptionKeySize,
                               message: "the peer's largest encryption key is \(keySize) bytes; at least \(configuration.minimumKeySize) are required")
        }
        let secureConnections = req.authenticationRequirements.contains(.secureConnections)
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
        return Features(request: req, response: rsp, preq: preq, pres: pres, keySize: keySize,
                        secureConnections: secureConnections, method: m)
    }
}
