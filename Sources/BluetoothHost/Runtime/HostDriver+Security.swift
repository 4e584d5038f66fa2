import BluetoothSecurity
import BluetoothTransport
import BluetoothWire
import Glibc

/// Pairing on one link: the sans-I/O machine, who answers for the user, who waits.
struct PairingRecord {
    var machine: SMPPairing
    var agent: PairingAgent
    var waiters: [CheckedContinuation<Result<SMPPairingResult, HostError>, Never>] = []
}

// The Security Manager on the driver thread: SMP PDUs (CID 6) into each link's pairing
// machine, its actions out (PDUs, LE Enable Encryption, the user's agent), the
// controller's encryption events (Encryption Change, Key Refresh, LE Long Term Key
// Request) into it and into the link's security, which the ATT server's checks read.
extension HostDriver {
    var nextPairingDeadline: UInt64? { pairings.values.compactMap(\.machine.deadline).min() }

    func pairingTimersFired(now: UInt64) {
        for handle in pairings.keys.sorted() {
            guard var r = pairings[handle], let d = r.machine.deadline, d <= now else { continue }
            let actions = r.machine.timerFired(now: now)
            pairings[handle] = r
            executeSMP(handle, actions)
        }
    }

    /// A machine for the link, made on first use with the host's configuration.
    private func machine(_ handle: UInt16, configuration: SMPConfiguration?, agent: PairingAgent?, peerStarted: Bool = false) -> Bool {
        if pairings[handle] != nil { return true }
        guard let conn = links[handle]?.connection, var config = configuration ?? security else { return false }
        if peerStarted, let bond = try? bondStore?.bond(for: conn.peerIdentity) {
            // A pairing the peer starts may not replace its bond with a weaker one: an
            // impostor with the peer's address would get in with Just Works. What the bond
            // had is required (Zephyr refuses the same way); `hcigatt unpair` lifts it.
            if bond.authenticated { config.mitm = true }
            if bond.secureConnections {
                config.secureConnections = true
                config.secureConnectionsOnly = true
            }
        }
        var own = LEAddress(info?.address ?? .zero, type: .public)
        if conn.role == .peripheral, let a = conn.localRandomAddress {
            own = LEAddress(a, type: .random)  // what the central connected to (c1, f5, f6 use it)
        }
        if let irk = localIdentityResolvingKey, config.identityResolvingKey == nil, info?.address != .zero {
            // Privacy: our IRK and identity go to the peer, so it knows us behind our RPAs.
            config.identityResolvingKey = irk
            config.identityAddress = LEAddress(info?.address ?? .zero, type: .public)
        }
        let role: SMPRole = conn.role == .central ? .initiator : .responder
        pairings[handle] = PairingRecord(machine: SMPPairing(role: role, configuration: config, localAddress: own, peerAddress: conn.address),
                                         agent: agent ?? pairingAgent)
        return true
    }

    /// ``LEConnection/pair(configuration:agent:)``: starts pairing as central, or asks the
    /// central to (Security Request) as peripheral; resumes with the result.
    func startPairing(_ conn: LEConnection, _ configuration: SMPConfiguration?, _ agent: PairingAgent?,
                      _ c: CheckedContinuation<Result<SMPPairingResult, HostError>, Never>) {
        guard links[conn.handle]?.connection === conn else {
            c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
            return
        }
        if let r = pairings[conn.handle], !r.machine.isActive, configuration != nil || agent != nil {
            // A new pairing with other settings replaces a finished one.
            if r.machine.timedOut {
                c.resume(returning: .failure(HostError(.pairingFailed(.unspecifiedReason), "SMP timed out on this link; it needs a new connection (Core Vol 3 Part H §3.4)")))
                return
            }
            pairings[conn.handle] = nil
        }
        guard machine(conn.handle, configuration: configuration, agent: agent), var r = pairings[conn.handle] else {
            c.resume(returning: .failure(HostError(.notSupported, "pairing is turned off on this host (HostOptions.security is nil)")))
            return
        }
        if r.machine.timedOut {
            c.resume(returning: .failure(HostError(.pairingFailed(.unspecifiedReason), "SMP timed out on this link; it needs a new connection (Core Vol 3 Part H §3.4)")))
            return
        }
        let now = Sys.now()
        if !r.machine.isActive {
            let wait = repeatedAttemptsRemaining(conn, now: now)
            if wait > 0 {
                c.resume(returning: .failure(HostError(.pairingFailed(.repeatedAttempts),
                    "pairing with \(conn.address) failed its checks just before: wait \((wait + 999_999_999) / 1_000_000_000) s (Repeated Attempts, Core Vol 3 Part H §2.3.6)")))
                return
            }
        }
        r.waiters.append(c)
        let actions = r.machine.isActive ? [] : (r.machine.role == .initiator ? r.machine.start(now: now) : r.machine.requestSecurity(now: now))
        pairings[conn.handle] = r
        executeSMP(conn.handle, actions)
    }

    /// How long a peer waits after `failures` failed checks in a row: 2, 4, 8 ... 64 s
    /// (doubling, as §2.3.6 asks, from BlueZ's and Zephyr's order of magnitude).
    static func repeatedAttemptsWait(_ failures: Int) -> UInt64 {
        UInt64(1) << UInt64(min(failures, 6)) * 1_000_000_000
    }

    /// Nanoseconds the peer on `conn` must still wait before pairing again (0: none).
    func repeatedAttemptsRemaining(_ conn: LEConnection, now: UInt64) -> UInt64 {
        guard let b = pairingBackoff[conn.peerIdentity], b.until > now else { return 0 }
        return b.until - now
    }

    func smpReceived(_ handle: UInt16, _ payload: UnsafeRawBufferPointer) {
        guard machine(handle, configuration: nil, agent: nil, peerStarted: true), var r = pairings[handle] else { return }
        // A new Pairing Request (we respond) or Security Request (we would start) from a
        // peer still waiting out failed attempts: Pairing Failed, Repeated Attempts.
        if !r.machine.isActive, let code = payload.first,
           (code == SMPCode.pairingRequest.rawValue && r.machine.role == .responder)
            || (code == SMPCode.securityRequest.rawValue && r.machine.role == .initiator),
           let conn = links[handle]?.connection, repeatedAttemptsRemaining(conn, now: Sys.now()) > 0 {
            if let frame = try? L2CAPChannels.frame(.smp, [SMPCode.pairingFailed.rawValue, SMPPairingFailedReason.repeatedAttempts.rawValue]) {
                sendFrame(frame, handle: handle, accounted: false)
            }
            return
        }
        let actions = r.machine.received(payload, now: Sys.now())
        pairings[handle] = r
        executeSMP(handle, actions)
    }

    func executeSMP(_ handle: UInt16, _ actions: [SMPAction]) {
        guard let conn = links[handle]?.connection else { return }
        for action in actions {
            switch action {
            case .send(let pdu):
                if let frame = try? L2CAPChannels.frame(.smp, pdu) { sendFrame(frame, handle: handle, accounted: false) }
            case .encrypt(let key):
                let command = LEEnableEncryptionCommand(connectionHandle: handle, randomNumber: key.rand,
                                                        encryptedDiversifier: key.ediv, longTermKey: SMP.bytes(key.key))
                if let error = submit(command, waiter: .security(handle: handle)) { securityCommandAnswered(handle, .failure(error)) }
            case .displayPasskey(let v):
                let agent = pairings[handle]?.agent ?? pairingAgent
                agent.displayPasskey(conn, v)
            case .requestPasskey:
                let agent = pairings[handle]?.agent ?? pairingAgent
                let g = pairings[handle]?.machine.generation ?? 0
                Task { [weak self] in
                    let v = await agent.enterPasskey(conn)
                    self?.post(.run({ $0.userAnswered(handle, conn, g) { m, now in m.passkeyEntered(v, now: now) } }, refused: { _ in }))
                }
            case .confirmNumber(let n):
                let agent = pairings[handle]?.agent ?? pairingAgent
                let g = pairings[handle]?.machine.generation ?? 0
                Task { [weak self] in
                    let ok = await agent.confirmNumber(conn, n)
                    self?.post(.run({ $0.userAnswered(handle, conn, g) { m, now in m.numericComparisonConfirmed(ok, now: now) } }, refused: { _ in }))
                }
            case .keypress(let type):
                (pairings[handle]?.agent ?? pairingAgent).keypress(conn, type)
            case .securityRequested:
                // A peripheral asks: encrypt with its bond when there is one, else pair.
                if conn.security.encrypted { break }
                if let bond = try? bondStore?.bond(for: conn.peerIdentity), let key = bond.centralKey {
                    bondedSecurity[handle] = LinkSecurity(encrypted: true, keySize: Int(bond.keySize), authenticated: bond.authenticated,
                                                          secureConnections: bond.secureConnections, bonded: true)
                    let command = LEEnableEncryptionCommand(connectionHandle: handle, randomNumber: key.rand,
                                                            encryptedDiversifier: key.ediv, longTermKey: SMP.bytes(key.key))
                    _ = submit(command, waiter: .security(handle: handle))
                } else if var r = pairings[handle], r.machine.role == .initiator, !r.machine.isActive {
                    let more = r.machine.start(now: Sys.now())
                    pairings[handle] = r
                    executeSMP(handle, more)
                }
            case .paired(let claimed):
                let result = Self.checkedIdentity(claimed, on: conn)
                pairingBackoff[conn.peerIdentity] = nil
                if let id = result.peerIdentityAddress {
                    conn.setIdentity(id)
                    if let irk = result.peerIdentityResolvingKey, result.bonded { learnIdentity(irk: irk, identity: id) }
                }
                conn.setSecurity(LinkSecurity(encrypted: true, keySize: Int(result.keySize), authenticated: result.authenticated,
                                              secureConnections: result.secureConnections, bonded: result.bonded))
                let waiters = pairings[handle]?.waiters ?? []
                pairings[handle]?.waiters = []
                pairingEvents.yield(.paired(conn, result))
                for c in waiters { c.resume(returning: .success(result)) }
                if waiters.isEmpty, result.bonded, let store = bondStore {
                    // The peer started it: nobody awaits pair(), so the host files the bond.
                    let bond = Bond(identity: conn.peerIdentity, result: result, created: Int64(time(nil)))
                    let events = pairingEvents
                    Task {
                        let saved: Result<Void, BondStoreError> = await runOnOwnThread {
                            do throws(BondStoreError) { try store.saveUnlessWeaker(bond); return .success(()) } catch { return .failure(error) }
                        }
                        if case .failure(let e) = saved { events.yield(.bondNotStored(conn, HostError(.bondStore, e.description))) }
                    }
                }
            case .failed(let f):
                if f.origin == .local, [.confirmValueFailed, .dhKeyCheckFailed].contains(f.reason) {
                    // Our check failed: a wrong passkey, or someone guessing; the next attempt waits.
                    let now = Sys.now()
                    if pairingBackoff.count >= 256 { pairingBackoff = pairingBackoff.filter { $0.value.until > now } }
                    let n = (pairingBackoff[conn.peerIdentity]?.failures ?? 0) + 1
                    pairingBackoff[conn.peerIdentity] = (n, now &+ Self.repeatedAttemptsWait(n))
                }
                let waiters = pairings[handle]?.waiters ?? []
                pairings[handle]?.waiters = []
                let detail = f.origin == .local ? "\(f.message) (Pairing Failed: \(f.reason))" : f.message
                let error = HostError(.pairingFailed(f.reason), "pairing with \(conn.address) failed: \(detail)")
                pairingEvents.yield(.failed(conn, error))
                for c in waiters { c.resume(returning: .failure(error)) }
            }
        }
    }

    /// The identity a pairing may claim on this link (Core Vol 3 Part H §2.4.2.1, as BlueZ
    /// checks it): a peer that connected from its identity address must distribute that
    /// one, a peer behind a resolvable private address an IRK that resolves it. Anything
    /// else is dropped (the bond is kept under the address it connected from), so a new
    /// peer cannot take over a bonded device's identity with a key of its own.
    static func checkedIdentity(_ r: SMPPairingResult, on conn: LEConnection) -> SMPPairingResult {
        guard let claimed = r.peerIdentityAddress else { return r }
        let a = conn.address
        let ok: Bool
        if ResolvablePrivateAddress.isResolvable(a) {
            ok = r.peerIdentityResolvingKey.map { $0 != 0 && ResolvablePrivateAddress.resolves(a.address, irk: $0) } ?? false
        } else {
            let base = LEAddress(a.address, type: a.type == .publicIdentity ? .public : (a.type == .randomIdentity ? .random : a.type))
            ok = base == claimed
        }
        if ok { return r }
        var out = r
        out.peerIdentityAddress = nil
        out.peerIdentityResolvingKey = nil
        return out
    }

    func userAnswered(_ handle: UInt16, _ conn: LEConnection, _ generation: Int, _ body: (inout SMPPairing, UInt64) -> [SMPAction]) {
        // An answer to an earlier pairing's question is ignored.
        guard links[handle]?.connection === conn, var r = pairings[handle], r.machine.generation == generation else { return }
        let actions = body(&r.machine, Sys.now())
        pairings[handle] = r
        executeSMP(handle, actions)
    }

    func securityCommandAnswered(_ handle: UInt16, _ result: CommandResult) {
        // A refused LE Enable Encryption (or LTK reply) means no encryption comes.
        if case .failure = result { encryptionChanged(handle, status: .unspecifiedError, enabled: false, keySize: nil) }
    }

    /// ``LEConnection/encryptWithBond()``: LE Enable Encryption with the bond's key.
    func startEncryption(_ conn: LEConnection, _ bond: Bond, _ c: CheckedContinuation<Result<Void, HostError>, Never>) {
        if pairings[conn.handle]?.machine.isActive == true {
            c.resume(returning: .failure(HostError(.busy, "pairing runs on this link; encrypting with the bond waits for it")))
            return
        }
        guard links[conn.handle]?.connection === conn, let key = bond.centralKey else {
            c.resume(returning: .failure(conn.disconnectError ?? HostError(.bondStore, "the bond of \(conn.address) has no key for a central")))
            return
        }
        bondedSecurity[conn.handle] = LinkSecurity(encrypted: true, keySize: Int(bond.keySize), authenticated: bond.authenticated,
                                                   secureConnections: bond.secureConnections, bonded: true)
        encryptionWaiters[conn.handle, default: []].append(c)
        let command = LEEnableEncryptionCommand(connectionHandle: conn.handle, randomNumber: key.rand,
                                                encryptedDiversifier: key.ediv, longTermKey: SMP.bytes(key.key))
        if let error = submit(command, waiter: .security(handle: conn.handle)) {
            encryptionWaiters[conn.handle] = nil
            c.resume(returning: .failure(error))
        }
    }

    /// Encryption Change / Key Refresh Complete.
    func encryptionChanged(_ handle: UInt16, status: HCIErrorCode, enabled: Bool, keySize: UInt8?) {
        guard let conn = links[handle]?.connection else { return }
        let ok = status == .success && enabled
        if let waiters = encryptionWaiters.removeValue(forKey: handle) {
            let result: Result<Void, HostError> = ok ? .success(())
                : .failure(HostError(.pairingFailed(.unspecifiedReason), "encrypting with the bond of \(conn.address) failed: \(status) (the device may have lost the bond: pair again)"))
            if ok, let s = bondedSecurity.removeValue(forKey: handle) {
                conn.setSecurity(LinkSecurity(encrypted: true, keySize: keySize.map(Int.init) ?? s.keySize, authenticated: s.authenticated,
                                              secureConnections: s.secureConnections, bonded: true))
            }
            bondedSecurity[handle] = nil
            for c in waiters { c.resume(returning: result) }
            if ok && pairings[handle]?.machine.isActive != true { return }
        }
        if !ok { bondedSecurity[handle] = nil }
        if ok, let s = bondedSecurity.removeValue(forKey: handle) {
            conn.setSecurity(s)
        } else if ok {
            var s = conn.security
            let size = keySize.map(Int.init) ?? (s.keySize > 0 ? s.keySize : Int(pairings[handle]?.machine.keySize ?? 16))
            s = LinkSecurity(encrypted: true, keySize: size, authenticated: s.authenticated, secureConnections: s.secureConnections, bonded: s.bonded)
            conn.setSecurity(s)
        } else if status == .success {
            conn.setSecurity(.unencrypted)
        }
        guard var r = pairings[handle] else { return }
        let actions = r.machine.encryptionChanged(encrypted: ok, now: Sys.now())
        pairings[handle] = r
        executeSMP(handle, actions)
    }

    /// LE Long Term Key Request (we are peripheral): the pairing's key, else a negative
    /// reply (the controller would otherwise wait and drop the link).
    func longTermKeyRequested(_ e: LELongTermKeyRequest) {
        let handle = e.connectionHandle
        guard links[handle] != nil else { return }
        var key = pairings[handle]?.machine.keyForEncryption(ediv: e.encryptedDiversifier, rand: e.randomNumber)
        if key == nil, let conn = links[handle]?.connection, let bond = try? bondStore?.bond(for: conn.peerIdentity),
           let k = bond.peripheralKey(ediv: e.encryptedDiversifier, rand: e.randomNumber) {
            // A bonded central re-encrypts: the link has the bond's security once encrypted.
            key = k
            bondedSecurity[handle] = LinkSecurity(encrypted: true, keySize: Int(bond.keySize), authenticated: bond.authenticated,
                                                  secureConnections: bond.secureConnections, bonded: true)
        }
        if let key {
            _ = submit(LELongTermKeyRequestReplyCommand(connectionHandle: handle, longTermKey: SMP.bytes(key)), waiter: .security(handle: handle))
        } else {
            _ = submit(LELongTermKeyRequestNegativeReplyCommand(connectionHandle: handle), waiter: .security(handle: handle))
        }
    }

    func pairingLinkClosed(_ handle: UInt16, _ error: HostError) {
        bondedSecurity[handle] = nil
        if let waiters = encryptionWaiters.removeValue(forKey: handle) { for c in waiters { c.resume(returning: .failure(error)) } }
        guard let r = pairings.removeValue(forKey: handle) else { return }
        for c in r.waiters { c.resume(returning: .failure(error)) }
    }
}

extension LEConnection {
    /// The host's pairing settings (``HostOptions/security``).
    public var hostSecurity: SMPConfiguration? { driver.security }

    /// The bond kept for this peer, if the host has a bond store and one.
    public func storedBond() throws(HostError) -> Bond? {
        guard let store = driver.bondStore else { return nil }
        do throws(BondStoreError) { return try store.bond(for: peerIdentity) } catch {
            throw HostError(.bondStore, error.description)
        }
    }

    /// Central: encrypts the link with the stored bond's key (LE Enable Encryption), no
    /// pairing. False when there is no bond; throws when encryption fails (the device lost
    /// the bond: pair again).
    public func encryptWithBond() async throws(HostError) -> Bool {
        guard role == .central, let bond = try storedBond(), bond.centralKey != nil else { return false }
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, HostError>, Never>) in
            driver.post(.run({ $0.startEncryption(self, bond, c) }, refused: { c.resume(returning: .failure($0)) }))
        }
        try result.get()
        return true
    }

    /// Pairs with the peer (Core Vol 3 Part H): as central it sends Pairing Request; as
    /// peripheral it asks the central with a Security Request. Returns once the link is
    /// encrypted with the new key and the keys are exchanged; ``security`` then says how.
    /// `configuration` and `agent` default to the host's (``HostOptions/security``,
    /// ``HostOptions/pairingAgent``).
    public func pair(configuration: SMPConfiguration? = nil, agent: PairingAgent? = nil) async throws(HostError) -> SMPPairingResult {
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<SMPPairingResult, HostError>, Never>) in
            driver.post(.run({ $0.startPairing(self, configuration, agent, c) }, refused: { c.resume(returning: .failure($0)) }))
        }
        let r = try result.get()
        // A bond is kept when both asked for it (and the host has a store).
        if r.bonded, let store = driver.bondStore {
            let bond = Bond(identity: peerIdentity, result: r, created: Int64(time(nil)))
            let saved: Result<Void, BondStoreError> = await runOnOwnThread {
                do throws(BondStoreError) { try store.saveUnlessWeaker(bond); return .success(()) } catch { return .failure(error) }
            }
            if case .failure(let e) = saved { throw HostError(.bondStore, "paired, but the bond could not be stored: \(e)") }
        }
        return r
    }
}
