import BluetoothSecurity
import BluetoothWire

/// The driver's side of LE credit-based channels: who waits for what.
struct L2CAPRuntime {
    struct Key: Hashable {
        var handle: UInt16
        var cid: UInt16
    }
    var nextToken: UInt64 = 1
    var opens: [UInt64: (connection: LEConnection, continuation: CheckedContinuation<Result<L2CAPChannel, HostError>, Never>)] = [:]
    var sends: [UInt64: (key: Key, continuation: CheckedContinuation<Result<Void, HostError>, Never>)] = [:]
    var channels: [Key: L2CAPChannel] = [:]
    var listeners: [UInt16: AsyncStream<L2CAPChannel>.Continuation] = [:]

    mutating func token() -> UInt64 {
        defer { nextToken &+= 1 }
        return nextToken
    }
}

// Credit-based channels on the driver thread: signaling of that family goes to the
// sans-I/O machine (L2CAPCreditChannels), its frames to the link, its events to the
// channel objects and the callers waiting on them.
extension HostDriver {
    /// True while `channel` is the open channel its link and CID name (not a closed one
    /// whose CID went to a newer channel).
    func isCurrent(_ channel: L2CAPChannel) -> Bool {
        channelRuntime.channels[L2CAPRuntime.Key(handle: channel.info.handle, cid: channel.info.localCID)] === channel
    }

    /// Every listener's stream ends (the host stops).
    func finishListeners() {
        for l in channelRuntime.listeners.values { l.finish() }
        channelRuntime.listeners = [:]
    }

    /// The link's next signaling identifier (shared with the connection manager's requests).
    func signalingIdentifier(_ handle: UInt16) -> UInt8 {
        connections.allocateSignalingIdentifier(handle: handle) ?? 1
    }

    /// The link's next signaling identifier for an indication (no response awaited).
    func indicationIdentifier(_ handle: UInt16) -> UInt8 {
        connections.allocateSignalingIdentifier(handle: handle, awaitingResponse: false) ?? 1
    }

    /// A frame of the LE signaling channel: the connection manager owns it and hands the
    /// credit-based channels' commands to their machine.
    func signalingReceived(_ handle: UInt16, _ payload: UnsafeRawBufferPointer) {
        switch connections.receivedSignaling(handle: handle, payload: payload) {
        case .handled(let actions):
            execute(actions)
        case .creditChannels(let command):
            guard let conn = links[handle]?.connection else { return }
            execute(creditChannels.signaling(handle: handle, command, security: conn.security, now: Sys.now(),
                                             nextIdentifier: { [unowned self] in self.signalingIdentifier(handle) }))
        }
    }

    func execute(_ actions: [L2CAPChannelAction]) {
        for action in actions {
            switch action {
            case .send(let handle, let frame):
                sendFrame(frame, handle: handle, accounted: false)
            case .event(let e):
                channelEvent(e)
            }
        }
    }

    private func channelEvent(_ e: L2CAPChannelEvent) {
        switch e {
        case .opened(let request, let info):
            guard let waiter = channelRuntime.opens.removeValue(forKey: request) else { return }
            let channel = L2CAPChannel(info: info, connection: waiter.connection)
            channelRuntime.channels[L2CAPRuntime.Key(handle: info.handle, cid: info.localCID)] = channel
            waiter.continuation.resume(returning: .success(channel))
        case .openFailed(let request, let end):
            guard let waiter = channelRuntime.opens.removeValue(forKey: request) else { return }
            waiter.continuation.resume(returning: .failure(Self.channelError(end)))
        case .accepted(let info):
            guard let conn = links[info.handle]?.connection else { return }
            let channel = L2CAPChannel(info: info, connection: conn)
            channelRuntime.channels[L2CAPRuntime.Key(handle: info.handle, cid: info.localCID)] = channel
            // Nobody takes it any more (the listener's stream ended): close it again.
            guard let listener = channelRuntime.listeners[info.spsm], case .enqueued = listener.yield(channel) else {
                channelRuntime.channels[L2CAPRuntime.Key(handle: info.handle, cid: info.localCID)] = nil
                execute(creditChannels.disconnect(handle: info.handle, cid: info.localCID, identifier: signalingIdentifier(info.handle)))
                return
            }
        case .received(let handle, let cid, let sdu, let frames):
            channelRuntime.channels[L2CAPRuntime.Key(handle: handle, cid: cid)]?.deliver(sdu, frames: frames)
        case .sent(_, _, let token):
            channelRuntime.sends.removeValue(forKey: token)?.continuation.resume(returning: .success(()))
        case .closed(let handle, let cid, let end):
            let key = L2CAPRuntime.Key(handle: handle, cid: cid)
            channelRuntime.channels.removeValue(forKey: key)?.finish(end)
            for (token, s) in channelRuntime.sends where s.key == key {
                channelRuntime.sends[token] = nil
                s.continuation.resume(returning: .failure(HostError(.disconnected(nil), "the L2CAP channel closed: \(end)")))
            }
        }
    }

    static func channelError(_ end: L2CAPChannelEnd) -> HostError {
        switch end {
        case .refused(let r): HostError(.l2capRefused(r.rawValue), "the L2CAP channel was \(end)")
        case .linkClosed: HostError(.disconnected(nil), "the link closed before the L2CAP channel opened")
        default: HostError(.notSupported, "the L2CAP channel did not open: \(end)")
        }
    }

    func openChannel(_ conn: LEConnection, psm: UInt16, parameters: L2CAPChannelParameters,
                     _ c: CheckedContinuation<Result<L2CAPChannel, HostError>, Never>) {
        guard links[conn.handle]?.connection === conn, let id = connections.allocateSignalingIdentifier(handle: conn.handle) else {
            c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
            return
        }
        let request = channelRuntime.token()
        channelRuntime.opens[request] = (conn, c)
        execute(creditChannels.connect(handle: conn.handle, spsm: psm, parameters: parameters, identifier: id, request: request, now: Sys.now()))
    }

    func sendSDU(_ info: L2CAPChannelInfo, _ sdu: [UInt8], token: UInt64, _ c: CheckedContinuation<Result<Void, HostError>, Never>) {
        channelRuntime.sends[token] = (L2CAPRuntime.Key(handle: info.handle, cid: info.localCID), c)
        do throws(HostError) {
            execute(try creditChannels.send(handle: info.handle, cid: info.localCID, sdu: sdu, token: token))
        } catch {
            channelRuntime.sends[token] = nil
            c.resume(returning: .failure(error))
        }
    }
}

extension LEConnection {
    /// Opens an LE credit-based channel to `psm` on this link (LE Credit Based Connection
    /// Request). A refusal throws `.l2capRefused(result)`; refused for security
    /// (Insufficient Authentication/Encryption), the link is encrypted with the stored bond
    /// or paired, and the request sent once more.
    public func openL2CAPChannel(psm: UInt16, parameters: L2CAPChannelParameters = .init()) async throws(HostError) -> L2CAPChannel {
        do throws(HostError) {
            return try await openL2CAPChannelOnce(psm: psm, parameters: parameters)
        } catch {
            guard case .l2capRefused(let r) = error.kind, role == .central else { throw error }
            let s = security
            switch L2CAPCreditBasedConnectionResult(rawValue: r) {
            case .insufficientEncryption, .encryptionKeySizeTooShort:
                // Encryption is what helps; a link encrypted already gains nothing from pairing.
                guard !s.encrypted else { throw error }
                if (try? await encryptWithBond()) != true { _ = try await pair() }
            case .insufficientAuthentication:
                guard !s.authenticated else { throw error }
                if !s.encrypted, let bond = try? storedBond(), bond.authenticated, (try? await encryptWithBond()) == true {
                    break
                }
                // MITM protection is what the peer wants (fails cleanly when the IO cannot give it).
                var c = hostSecurity ?? SMPConfiguration()
                c.mitm = true
                _ = try await pair(configuration: c)
            default:
                throw error
            }
            return try await openL2CAPChannelOnce(psm: psm, parameters: parameters)
        }
    }

    func openL2CAPChannelOnce(psm: UInt16, parameters: L2CAPChannelParameters) async throws(HostError) -> L2CAPChannel {
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<L2CAPChannel, HostError>, Never>) in
            driver.post(.run({ $0.openChannel(self, psm: psm, parameters: parameters, c) }, refused: { c.resume(returning: .failure($0)) }))
        }
        return try result.get()
    }
}

extension HCIHost {
    /// Accepts LE credit-based channels to `psm` (0x0080–0x00FF for applications) on every
    /// link, with `security` required of the link; the channels come from the stream.
    /// Another call for the same PSM replaces it; ``stopListeningL2CAP(psm:)`` ends it.
    public func listenL2CAP(psm: UInt16, parameters: L2CAPChannelParameters = .init(),
                            security: L2CAPChannelSecurity = .none) -> AsyncStream<L2CAPChannel> {
        let (stream, continuation) = AsyncStream<L2CAPChannel>.makeStream()
        driver.post(.run({ d in
            d.channelRuntime.listeners[psm]?.finish()
            d.channelRuntime.listeners[psm] = continuation
            d.creditChannels.listen(spsm: psm, parameters: parameters, security: security)
        }, refused: { _ in continuation.finish() }))
        return stream
    }

    /// Refuses new channels to `psm` again; open channels stay open.
    public func stopListeningL2CAP(psm: UInt16) {
        driver.post(.run({ d in
            d.creditChannels.stopListening(spsm: psm)
            d.channelRuntime.listeners.removeValue(forKey: psm)?.finish()
        }, refused: { _ in }))
    }
}
