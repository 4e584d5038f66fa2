import BluetoothSecurity
import BluetoothTransport
import BluetoothWire
import Glibc

// The Security Manager on the driver thread: SMP PDUs (CID 6) into each link's pairing
// machine in the SecurityRuntime, its actions out (PDUs, LE Enable Encryption, the user's
// agent), the controller's encryption events (Encryption Change, Key Refresh, LE Long Term
// Key Request) into it and into the link's security, which the ATT server's checks read.
extension HostDriver {
    func handle(_ request: SecurityRequest) {
        switch request {
        case .pair(let conn, let configuration, let agent, let c): startPairing(conn, configuration, agent, c)
        case .encrypt(let conn, let bond, let c): startEncryption(conn, bond, c)
        case .answered(let conn, let generation, let answer): userAnswered(conn, generation: generation, answer)
        }
    }

    func pairingTimersFired(now: UInt64) {
        for handle in security.pairings.keys.sorted() {
            guard let d = security.pairings[handle]?.machine.deadline, d <= now,
                  let actions = security.pairings[handle]?.machine.timerFired(now: now) else { continue }
            executeSMP(handle, actions)
        }
    }

    /// The peer's bond, or nil; a bond file that cannot be read fails what asked for it
    /// with the error naming the file (it is not "no bond", which would let a pairing
    /// overwrite it).
    private func storedBond(_ conn: LEConnection) -> Result<Bond?, HostError> {
        guard let store = bondStore else { return .success(nil) }
        do throws(BondStoreError) { return .success(try store.bond(for: conn.peerIdentity)) } catch {
            return .failure(HostError(.bondStore, "the bond of \(conn.peerIdentity) cannot be read: \(error)"))
        }
    }

    /// A machine for the link, made on first use with the host's configuration.
    private func machine(_ handle: UInt16, configuration: SMPConfiguration?, agent: PairingAgent?) -> Bool {
        if security.pairings[handle] != nil { return true }
        guard let conn = links.connection(handle), var config = configuration ?? pairingConfiguration else { return false }
        var own = LEAddress(info?.address ?? .zero, type: .public)
        if conn.role == .peripheral, let a = conn.localRandomAddress {
            own = LEAddress(a, type: .random)  // what the central connected to (c1, f5, f6 use it)
        }
        config = withLocalIdentity(config)
        let role: SMPRole = conn.role == .central ? .initiator : .responder
        security.pairings[handle] = SecurityRuntime.Pairing(
            machine: SMPPairing(role: role, configuration: config, localAddress: own, peerAddress: conn.address),
            agent: agent ?? pairingAgent)
        return true
    }

    /// `config` with our IRK and identity to distribute when the host has privacy on, so the
    /// peer knows us behind our RPAs.
    private func withLocalIdentity(_ config: SMPConfiguration) -> SMPConfiguration {
        var c = config
        if let irk = localIdentityResolvingKey, c.identityResolvingKey == nil, info?.address != .zero {
            c.identityResolvingKey = irk
            c.identityAddress = LEAddress(info?.address ?? .zero, type: .public)
        }
        return c
    }

    /// ``LEConnection/pair(configuration:agent:)``: starts pairing as central, or asks the
    /// central to (Security Request) as peripheral; resumes with the result.
    func startPairing(_ conn: LEConnection, _ configuration: SMPConfiguration?, _ agent: PairingAgent?,
                      _ c: SecurityRuntime.PairingWaiter) {
        guard links.isCurrent(conn) else {
            c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
            return
        }
        let timedOut = HostError(.pairingFailed(.unspecifiedReason), "SMP timed out on this link; it needs a new connection (Core Vol 3 Part H §3.4)")
        if let r = security.pairings[conn.handle], !r.machine.isActive, configuration != nil || agent != nil {
            // A new pairing with other settings: the machine takes them between pairings. It
            // is kept (not replaced), so callers already waiting on it (our Security Request's)
            // stay answered, and its generation goes on: a late answer of the user to an
            // earlier pairing's prompt cannot confirm this one.
            if r.machine.timedOut { return c.resume(returning: .failure(timedOut)) }
            if let configuration { security.pairings[conn.handle]?.machine.reconfigure(withLocalIdentity(configuration)) }
            if let agent { security.pairings[conn.handle]?.agent = agent }
        }
        guard machine(conn.handle, configuration: configuration, agent: agent), var r = security.pairings[conn.handle] else {
            c.resume(returning: .failure(HostError(.notSupported, "pairing is turned off on this host (HostOptions.security is nil)")))
            return
        }
        if r.machine.timedOut { return c.resume(returning: .failure(timedOut)) }
        let now = Sys.now()
        if !r.machine.isActive {
            let wait = security.attempts.remaining(conn.peerIdentity, now: now)
            if wait > 0 {
                c.resume(returning: .failure(HostError(.pairingFailed(.repeatedAttempts),
                    "pairing with \(conn.address) failed its checks just before: wait \((wait + 999_999_999) / 1_000_000_000) s (Repeated Attempts, Core Vol 3 Part H §2.3.6)")))
                return
            }
        }
        if !r.machine.isActive, let store = bondStore {
            // A bond that cannot be read is never paired over: said before any SMP goes.
            do throws(BondStoreError) { _ = try store.bond(for: conn.peerIdentity) } catch {
                c.resume(returning: .failure(HostError(.bondStore, "\(error.description): the bond cannot be read, so no pairing is started over it (fix or remove the file)")))
                return
            }
        }
        r.waiters.append(c)
        let actions = r.machine.isActive ? [] : (r.machine.role == .initiator ? r.machine.start(now: now) : r.machine.requestSecurity(now: now))
        security.pairings[conn.handle] = r
        executeSMP(conn.handle, actions)
    }

    func smpReceived(_ handle: UInt16, _ payload: UnsafeRawBufferPointer) {
        guard machine(handle, configuration: nil, agent: nil), let m = security.pairings[handle]?.machine,
              let conn = links.connection(handle) else { return }
        if payload.first == SMPCode.pairingRequest.rawValue, m.role == .responder, !m.isActive {
            // Every Pairing Request to answer is checked against the peer's bond, whatever
            // came before it on the link (a stray PDU, our own Security Request): a bond that
            // cannot be read stops it, one that can raises what the pairing needs
            // (``SecurityRuntime/repairing(_:over:allowsRepairing:)``).
            switch storedBond(conn) {
            case .failure(let error):
                sendSMP([SMPCode.pairingFailed.rawValue, SMPPairingFailedReason.unspecifiedReason.rawValue], handle: handle)
                pairingFailed(conn, error)
                return
            case .success(let bond?):
                security.pairings[handle]?.machine.reconfigure(SecurityRuntime.repairing(m.configuration, over: bond, allowsRepairing: allowsRepairing))
                security.pairings[handle]?.overBond = true
            case .success(nil):
                break
            }
        }
        // A new Pairing Request (we respond) or Security Request (we would start) from a
        // peer still waiting out failed attempts: Pairing Failed, Repeated Attempts.
        if !m.isActive, let code = payload.first,
           (code == SMPCode.pairingRequest.rawValue && m.role == .responder)
            || (code == SMPCode.securityRequest.rawValue && m.role == .initiator),
           let conn = links.connection(handle), security.attempts.remaining(conn.peerIdentity, now: Sys.now()) > 0 {
            sendSMP([SMPCode.pairingFailed.rawValue, SMPPairingFailedReason.repeatedAttempts.rawValue], handle: handle)
            return
        }
        guard let actions = security.pairings[handle]?.machine.received(payload, now: Sys.now()) else { return }
        executeSMP(handle, actions)
    }

    private func sendSMP(_ pdu: [UInt8], handle: UInt16) {
        if let frame = try? L2CAPChannels.frame(.smp, pdu) { sendFrame(frame, handle: handle, accounted: false) }
    }

    private func enableEncryption(_ handle: UInt16, _ key: SMPLongTermKey) -> HostError? {
        submit(LEEnableEncryptionCommand(connectionHandle: handle, randomNumber: key.rand, encryptedDiversifier: key.ediv,
                                         longTermKey: SMP.bytes(key.key)), waiter: .security(handle: handle))
    }

    func executeSMP(_ handle: UInt16, _ actions: [SMPAction]) {
        guard let conn = links.connection(handle) else { return }
        let agent = security.pairings[handle]?.agent ?? pairingAgent
        let generation = security.pairings[handle]?.machine.generation ?? 0
        for action in actions {
            switch action {
            case .send(let pdu):
                sendSMP(pdu, handle: handle)
            case .encrypt(let key):
                if let error = enableEncryption(handle, key) { securityCommandAnswered(handle, .failure(error)) }
            case .displayPasskey(let v):
                agent.displayPasskey(conn, v)
            case .requestPasskey:
                Task { [weak self] in
                    let v = await agent.enterPasskey(conn)
                    self?.post(.security(.answered(conn, generation: generation, .passkey(v))))
                }
            case .confirmNumber(let n):
                Task { [weak self] in
                    let ok = await agent.confirmNumber(conn, n)
                    self?.post(.security(.answered(conn, generation: generation, .confirmed(ok))))
                }
            case .keypress(let type):
                agent.keypress(conn, type)
            case .securityRequested:
                // A peripheral asks: encrypt with its bond when there is one, else pair.
                if conn.security.encrypted { break }
                let stored = storedBond(conn)
                if case .failure(let error) = stored {
                    pairingFailed(conn, error)
                    break
                }
                if case .success(let bond?) = stored, let key = bond.centralKey {
                    security.encrypting(handle, with: bond)
                    if let error = enableEncryption(handle, key) {
                        for w in security.encryptionNotStarted(handle) { w.resume(returning: .failure(error)) }
                    }
                } else if let m = security.pairings[handle]?.machine, m.role == .initiator, !m.isActive {
                    // A bond with no key for us as central (made while we were peripheral):
                    // the pairing the peer asks for meets what re-pairing over it needs, as
                    // one it starts with a Pairing Request.
                    if case .success(let bond?) = stored {
                        security.pairings[handle]?.machine.reconfigure(SecurityRuntime.repairing(m.configuration, over: bond, allowsRepairing: allowsRepairing))
                        security.pairings[handle]?.overBond = true
                    }
                    if let more = security.pairings[handle]?.machine.start(now: Sys.now()) { executeSMP(handle, more) }
                }
            case .paired(let claimed):
                paired(conn, claimed)
            case .failed(let f):
                if f.origin == .local, [.confirmValueFailed, .dhKeyCheckFailed].contains(f.reason) {
                    // Our check failed: a wrong passkey, or someone guessing; the next attempt waits.
                    security.checkFailed(conn.peerIdentity, now: Sys.now())
                }
                var detail = f.origin == .local ? "\(f.message) (Pairing Failed: \(f.reason))" : f.message
                if f.origin == .local, f.reason == .authenticationRequirements, security.pairings[handle]?.overBond == true {
                    detail += "; the device is bonded here, and pairing again over a bond must be authenticated "
                        + "and as strong as the bond (allow re-pairing, or remove the bond, to let it pair)"
                }
                pairingFailed(conn, HostError(.pairingFailed(f.reason), "pairing with \(conn.address) failed: \(detail)"))
            }
        }
    }

    /// The pairing's keys are all exchanged: the identity it claims is checked against the
    /// bonds, then the link takes it and its security; a bond the peer started is filed.
    private func paired(_ conn: LEConnection, _ claimed: SMPPairingResult) {
        let bonded: Result<Bond?, BondStoreError>
        if let id = claimed.peerIdentityAddress, let store = bondStore {
            do throws(BondStoreError) { bonded = .success(try store.bond(for: id)) } catch { bonded = .failure(error) }
        } else {
            bonded = .success(nil)
        }
        let result: SMPPairingResult
        switch SecurityRuntime.admittedIdentity(claimed, from: conn.address, bonded: bonded) {
        case .admitted(let r):
            result = r
        case .refused(let why):
            // Nothing of the existing bond, the resolver or the server's state changes; the
            // link, encrypted with the impostor's key, goes.
            pairingFailed(conn, HostError(.pairingFailed(.unspecifiedReason), "pairing with \(conn.address) refused: \(why)"))
            execute(links.manager.disconnect(conn.handle, reason: .authenticationFailure))
            return
        }
        security.paired(conn.peerIdentity)
        if let id = result.peerIdentityAddress {
            conn.setIdentity(id)
            if let irk = result.peerIdentityResolvingKey, result.bonded, security.learn(irk: irk, identity: id) {
                resolvableIdentities.withLock { _ = $0.insert(id.address) }
            }
        }
        conn.setSecurity(LinkSecurity(encrypted: true, keySize: Int(result.keySize), authenticated: result.authenticated,
                                      secureConnections: result.secureConnections, bonded: result.bonded))
        let waiters = security.pairings[conn.handle]?.waiters ?? []
        security.pairings[conn.handle]?.waiters = []
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
    }

    private func pairingFailed(_ conn: LEConnection, _ error: HostError) {
        let waiters = security.pairings[conn.handle]?.waiters ?? []
        security.pairings[conn.handle]?.waiters = []
        pairingEvents.yield(.failed(conn, error))
        for c in waiters { c.resume(returning: .failure(error)) }
    }

    /// The user's answer to a passkey or number question; one to an earlier pairing's
    /// question (another generation) is ignored.
    func userAnswered(_ conn: LEConnection, generation: Int, _ answer: SecurityRequest.Answer) {
        let handle = conn.handle
        guard links.isCurrent(conn), security.pairings[handle]?.machine.generation == generation else { return }
        let now = Sys.now()
        let actions: [SMPAction]?
        switch answer {
        case .passkey(let v): actions = security.pairings[handle]?.machine.passkeyEntered(v, now: now)
        case .confirmed(let ok): actions = security.pairings[handle]?.machine.numericComparisonConfirmed(ok, now: now)
        }
        executeSMP(handle, actions ?? [])
    }

    func securityCommandAnswered(_ handle: UInt16, _ result: CommandResult) {
        // A refused LE Enable Encryption (or LTK reply) means no encryption comes.
        if case .failure = result { encryptionChanged(handle, status: .unspecifiedError, enabled: false, keySize: nil) }
    }

    /// ``LEConnection/encryptWithBond()``: LE Enable Encryption with the bond's key.
    func startEncryption(_ conn: LEConnection, _ bond: Bond, _ c: SecurityRuntime.EncryptionWaiter) {
        if security.pairings[conn.handle]?.machine.isActive == true {
            c.resume(returning: .failure(HostError(.busy, "pairing runs on this link; encrypting with the bond waits for it")))
            return
        }
        guard links.isCurrent(conn), let key = bond.centralKey else {
            c.resume(returning: .failure(conn.disconnectError ?? HostError(.bondStore, "the bond of \(conn.address) has no key for a central")))
            return
        }
        security.encrypting(conn.handle, with: bond, waiter: c)
        if let error = enableEncryption(conn.handle, key) {
            for w in security.encryptionNotStarted(conn.handle) { w.resume(returning: .failure(error)) }
        }
    }

    /// Encryption Change / Key Refresh Complete.
    func encryptionChanged(_ handle: UInt16, status: HCIErrorCode, enabled: Bool, keySize: UInt8?) {
        guard let conn = links.connection(handle) else { return }
        let (changed, waiters) = security.encryptionChanged(handle, status: status, enabled: enabled, keySize: keySize, current: conn.security)
        if let changed { conn.setSecurity(changed) }
        let ok = status == .success && enabled
        let result: Result<Void, HostError> = ok ? .success(())
            : .failure(HostError(.pairingFailed(.unspecifiedReason), "encrypting with the bond of \(conn.address) failed: \(status) (the device may have lost the bond: pair again)"))
        for c in waiters { c.resume(returning: result) }
        guard let actions = security.pairings[handle]?.machine.encryptionChanged(encrypted: ok, now: Sys.now()) else { return }
        executeSMP(handle, actions)
    }

    /// LE Long Term Key Request (we are peripheral): the pairing's key, else a negative
    /// reply (the controller would otherwise wait and drop the link).
    func longTermKeyRequested(_ e: LELongTermKeyRequest) {
        let handle = e.connectionHandle
        guard let conn = links.connection(handle) else { return }
        var key = security.pairings[handle]?.machine.keyForEncryption(ediv: e.encryptedDiversifier, rand: e.randomNumber)
        if key == nil, let bond = try? bondStore?.bond(for: conn.peerIdentity),
           let k = bond.peripheralKey(ediv: e.encryptedDiversifier, rand: e.randomNumber) {
            // A bonded central re-encrypts: the link has the bond's security once encrypted.
            key = k
            security.encrypting(handle, with: bond)
        }
        if let key {
            if let error = submit(LELongTermKeyRequestReplyCommand(connectionHandle: handle, longTermKey: SMP.bytes(key)), waiter: .security(handle: handle)) {
                // Never sent: the bond's security must not be applied by a later Encryption Change.
                for w in security.encryptionNotStarted(handle) { w.resume(returning: .failure(error)) }
            }
        } else {
            _ = submit(LELongTermKeyRequestNegativeReplyCommand(connectionHandle: handle), waiter: .security(handle: handle))
        }
    }

    func pairingLinkClosed(_ handle: UInt16, _ error: HostError) {
        let (pairings, encryptions) = security.linkClosed(handle)
        for c in encryptions { c.resume(returning: .failure(error)) }
        for c in pairings { c.resume(returning: .failure(error)) }
    }
}

extension LEConnection {
    /// The host's pairing settings (``HostOptions/security``).
    public var hostSecurity: SMPConfiguration? { driver.pairingConfiguration }

    /// The bond kept for this peer, if the host has a bond store and one.
    public func storedBond() throws(HostError) -> Bond? {
        guard let store = driver.bondStore else { return nil }
        do throws(BondStoreError) { return try store.bond(for: peerIdentity) } catch {
            throw HostError(.bondStore, error.description)
        }
    }

    /// Pairing the stack starts on its own because a server or a channel asked for security
    /// the link lacks (not the user): over a stored bond it must meet what re-pairing over
    /// that bond needs, as a pairing the peer starts does; without a bond, the host's
    /// settings. `mitm`: the peer asked for authentication.
    public func pairUnasked(mitm: Bool) async throws(HostError) -> SMPPairingResult {
        guard var c = hostSecurity else { return try await pair() }  // says pairing is off
        if mitm { c.mitm = true }
        if let bond = try storedBond() {
            c = SecurityRuntime.repairing(c, over: bond, allowsRepairing: driver.allowsRepairing)
        }
        return try await pair(configuration: c)
    }

    /// Central: encrypts the link with the stored bond's key (LE Enable Encryption), no
    /// pairing. False when there is no bond; throws when encryption fails (the device lost
    /// the bond: pair again).
    public func encryptWithBond() async throws(HostError) -> Bool {
        guard role == .central, let bond = try storedBond(), bond.centralKey != nil else { return false }
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, HostError>, Never>) in
            driver.post(.security(.encrypt(self, bond, c)))
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
            driver.post(.security(.pair(self, configuration, agent, c)))
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
