import BluetoothWire

/// Phase 3, transport-specific key distribution (Core Vol 3 Part H §3.6).
extension SMPPairing {
    /// The link is encrypted with the new key: the responder distributes first (§3.6.1).
    mutating func startDistribution(_ f: Features, key: UInt128, now: UInt64) -> [SMPAction] {
        var d = Distribution(features: f, expected: [], result: baseResult(f), receivedLTK: nil)
        // Secure Connections derived the LTK both sides hold.
        if f.secureConnections { d.result.peerLTK = SMPLongTermKey(key: key) }
        var out: [SMPAction] = []
        if role == .responder {
            out += distribute(f.response.responderKeyDistribution, into: &d, now: now)
            d.expected = filtered(f.response.initiatorKeyDistribution, f)
        } else {
            d.expected = filtered(f.response.responderKeyDistribution, f)
        }
        state = .keyDistribution(d)
        if d.expected.isEmpty { out += finishDistribution(d, now: now) }
        return out
    }

    /// The keys that are really exchanged: Secure Connections derives the LTK (no
    /// Encryption Information / Central Identification).
    private func filtered(_ keys: SMPKeyDistribution, _ f: Features) -> SMPKeyDistribution {
        var k = keys.intersection([.encryptionKey, .identityKey, .signingKey])
        if f.secureConnections { k.remove(.encryptionKey) }
        return k
    }

    private mutating func distribute(_ keys: SMPKeyDistribution, into d: inout Distribution, now: UInt64) -> [SMPAction] {
        let k = filtered(keys, d.features)
        var out: [SMPAction] = []
        if k.contains(.encryptionKey) {
            let l = SMPLongTermKey(key: mask(random128(), d.features), ediv: UInt16(truncatingIfNeeded: random()), rand: random())
            d.result.localLTK = l
            out.append(send(pdu(.encryptionInformation(longTermKey: l.key)), now: now))
            out.append(send(pdu(.centralIdentification(ediv: l.ediv, rand: l.rand)), now: now))
        }
        if k.contains(.identityKey), let irk = configuration.identityResolvingKey, let address = configuration.identityAddress {
            out.append(send(pdu(.identityInformation(identityResolvingKey: irk)), now: now))
            out.append(send(pdu(.identityAddressInformation(LEAddress(address.address, type: address.smpType == 0 ? .public : .random))), now: now))
        }
        if k.contains(.signingKey) {
            let csrk = configuration.signatureKey ?? random128()
            d.result.localSignatureKey = csrk
            out.append(send(pdu(.signingInformation(signatureKey: csrk)), now: now))
        }
        return out
    }

    /// One key PDU from the peer: only the keys agreed, each once; Central Identification
    /// after Encryption Information and Identity Address after Identity Information (the
    /// pairs of §3.6.1; the order between the kinds is not enforced, as BlueZ and Zephyr).
    mutating func key(_ p: SMPPDU, now: UInt64) throws(SMPStepError) -> [SMPAction] {
        guard case .keyDistribution(var d) = state else { throw .unexpected("key distribution before encryption") }
        switch p {
        case .encryptionInformation(let ltk):
            guard d.expected.contains(.encryptionKey), d.receivedLTK == nil else { throw .unexpected("Encryption Information") }
            d.receivedLTK = ltk
        case .centralIdentification(let ediv, let rand):
            guard d.expected.contains(.encryptionKey), let ltk = d.receivedLTK else { throw .unexpected("Central Identification") }
            d.result.peerLTK = SMPLongTermKey(key: ltk, ediv: ediv, rand: rand)
            d.expected.remove(.encryptionKey)
        case .identityInformation(let irk):
            guard d.expected.contains(.identityKey), d.result.peerIdentityResolvingKey == nil else { throw .unexpected("Identity Information") }
            d.result.peerIdentityResolvingKey = irk
        case .identityAddressInformation(let address):
            guard d.expected.contains(.identityKey), d.result.peerIdentityResolvingKey != nil else { throw .unexpected("Identity Address Information") }
            // A public address, or a static random one (top two bits set); never zero.
            let raw = address.address.rawValue
            guard raw != 0, address.type == .public || (address.type == .random && raw >> 46 == 0b11) else {
                throw SMPStepError(reason: .invalidParameters, message: "the peer's identity address \(address) is neither public nor static random")
            }
            d.result.peerIdentityAddress = address
            d.expected.remove(.identityKey)
        case .signingInformation(let csrk):
            guard d.expected.contains(.signingKey) else { throw .unexpected("Signing Information") }
            d.result.peerSignatureKey = csrk
            d.expected.remove(.signingKey)
        default:
            throw .unexpected("key")
        }
        state = .keyDistribution(d)
        return d.expected.isEmpty ? finishDistribution(d, now: now) : []
    }

    /// Every key came: the initiator distributes its own, and pairing is done.
    private mutating func finishDistribution(_ d: Distribution, now: UInt64) -> [SMPAction] {
        var d = d
        var out: [SMPAction] = []
        if role == .initiator { out += distribute(d.features.response.initiatorKeyDistribution, into: &d, now: now) }
        state = .done(d.features)
        deadline = nil
        out.append(.paired(d.result))
        return out
    }

    private func baseResult(_ f: Features) -> SMPPairingResult {
        SMPPairingResult(method: f.method, secureConnections: f.secureConnections, authenticated: f.method.isAuthenticated,
                         keySize: f.keySize,
                         bonded: f.request.authenticationRequirements.contains(.bonding)
                             && f.response.authenticationRequirements.contains(.bonding))
    }
}
