import BluetoothSecurity
import BluetoothWire

/// The driver's side of LE credit-based channels: who waits for what.
/// Credit-based channels' part of the driver: the sans-I/O machine (L2CAPCreditChannels),
/// the channel objects, their listeners and the callers waiting to open or send. It answers
/// those itself from the machine's events and hands the driver the frames to send.
struct CreditChannelRuntime {
    struct Key: Hashable {
        var handle: UInt16
        var cid: UInt16
    }
    typealias Open = CheckedContinuation<Result<L2CAPChannel, HostError>, Never>
    typealias Send = CheckedContinuation<Result<Void, HostError>, Never>
    /// A frame for a link's L2CAP.
    typealias Frame = (handle: UInt16, frame: [UInt8])

    /// The machine: the driver hands it signaling, K-frames and time, and passes what it
    /// returns to ``perform(_:connection:identifier:)``.
    var machine: L2CAPCreditChannels

    /// `minimumKeySize`: the host's pairing minimum, what secured listeners ask of a link.
    init(minimumKeySize: Int = 16) { machine = L2CAPCreditChannels(minimumKeySize: minimumKeySize) }
    private var nextRequest: UInt64 = 1
    private var opens: [UInt64: (connection: LEConnection, continuation: Open)] = [:]
    private var sends: [UInt64: (key: Key, continuation: Send)] = [:]
    private var channels: [Key: L2CAPChannel] = [:]
    private var listeners: [UInt16: AsyncStream<L2CAPChannel>.Continuation] = [:]

    /// True while `channel` is the open channel its link and CID name (not a closed one
    /// whose CID went to a newer channel).
    func isCurrent(_ channel: L2CAPChannel) -> Bool {
        channels[Key(handle: channel.info.handle, cid: channel.info.localCID)] === channel
    }

    /// Opens a channel on `conn` (signaling `identifier`); `c` resumes when it opened or failed.
    mutating func open(_ conn: LEConnection, psm: UInt16, parameters: L2CAPChannelParameters, identifier: UInt8,
                       now: UInt64, _ c: Open) -> [L2CAPChannelAction] {
        let request = nextRequest
        nextRequest &+= 1
        opens[request] = (conn, c)
        return machine.connect(handle: conn.handle, spsm: psm, parameters: parameters, identifier: identifier, request: request, now: now)
    }

    /// Queues an SDU; `c` resumes when all of it left (or the channel closed).
    mutating func send(_ info: L2CAPChannelInfo, _ sdu: [UInt8], token: UInt64, _ c: Send) -> [L2CAPChannelAction] {
        do throws(HostError) {
            let actions = try machine.send(handle: info.handle, cid: info.localCID, sdu: sdu, token: token)
            sends[token] = (Key(handle: info.handle, cid: info.localCID), c)
            return actions
        } catch {
            c.resume(returning: .failure(error))
            return []
        }
    }

    /// The caller of send `token` left (cancelled); the SDU stays queued.
    mutating func sendCancelled(_ token: UInt64) {
        sends.removeValue(forKey: token)?.continuation.resume(returning: .failure(HostError(.cancelled, "sending on the L2CAP channel was cancelled")))
    }

    /// Channels to `psm` are accepted into `listener` (a previous listener's stream ends).
    mutating func listen(psm: UInt16, parameters: L2CAPChannelParameters, security: L2CAPChannelSecurity,
                         _ listener: AsyncStream<L2CAPChannel>.Continuation) {
        listeners[psm]?.finish()
        listeners[psm] = listener
        machine.listen(spsm: psm, parameters: parameters, security: security)
    }

    mutating func stopListening(psm: UInt16) {
        machine.stopListening(spsm: psm)
        listeners.removeValue(forKey: psm)?.finish()
    }

    /// Every listener's stream ends (the host stops).
    mutating func finishListeners() {
        for l in listeners.values { l.finish() }
        listeners = [:]
    }

    /// The machine's actions: its events answered here (callers, channel objects,
    /// listeners), its frames returned for the driver to send, in order. `connection` names
    /// a link's connection; `identifier` allocates a signaling identifier on a link.
    mutating func perform(_ actions: [L2CAPChannelAction], connection: (UInt16) -> LEConnection?,
                          identifier: (UInt16) -> UInt8) -> [Frame] {
        var frames: [Frame] = []
        for action in actions {
            switch action {
            case .send(let handle, let frame):
                frames.append((handle, frame))
            case .event(let e):
                frames += perform(event(e, connection: connection, identifier: identifier), connection: connection, identifier: identifier)
            case .requestExpired:
                break  // the driver frees the identifier (execute)
            }
        }
        return frames
    }

    /// One event; what it makes the machine do next (a channel nobody takes is closed again).
    private mutating func event(_ e: L2CAPChannelEvent, connection: (UInt16) -> LEConnection?,
                                identifier: (UInt16) -> UInt8) -> [L2CAPChannelAction] {
        switch e {
        case .opened(let request, let info):
            guard let waiter = opens.removeValue(forKey: request) else { return [] }
            let channel = L2CAPChannel(info: info, connection: waiter.connection)
            channels[Key(handle: info.handle, cid: info.localCID)] = channel
            waiter.continuation.resume(returning: .success(channel))
        case .openFailed(let request, let end):
            opens.removeValue(forKey: request)?.continuation.resume(returning: .failure(Self.channelError(end)))
        case .accepted(let info):
            guard let conn = connection(info.handle) else { return [] }
            let key = Key(handle: info.handle, cid: info.localCID)
            let channel = L2CAPChannel(info: info, connection: conn)
            channels[key] = channel
            // Nobody takes it any more (the listener's stream ended): close it again.
            guard let listener = listeners[info.spsm], case .enqueued = listener.yield(channel) else {
                channels[key] = nil
                return machine.disconnect(handle: info.handle, cid: info.localCID, identifier: identifier(info.handle))
            }
        case .received(let handle, let cid, let sdu, let frames):
            channels[Key(handle: handle, cid: cid)]?.deliver(sdu, frames: frames)
        case .sent(_, _, let token):
            sends.removeValue(forKey: token)?.continuation.resume(returning: .success(()))
        case .closed(let handle, let cid, let end):
            let key = Key(handle: handle, cid: cid)
            channels.removeValue(forKey: key)?.finish(end)
            for (token, s) in sends where s.key == key {
                sends[token] = nil
                s.continuation.resume(returning: .failure(HostError(.disconnected(nil), "the L2CAP channel closed: \(end)")))
            }
        }
        return []
    }

    static func channelError(_ end: L2CAPChannelEnd) -> HostError {
        switch end {
        case .refused(let r): HostError(.l2capRefused(r.rawValue), "the L2CAP channel was \(end)")
        case .linkClosed: HostError(.disconnected(nil), "the link closed before the L2CAP channel opened")
        default: HostError(.notSupported, "the L2CAP channel did not open: \(end)")
        }
    }
}

// Credit-based channels on the driver thread: signaling of that family goes to the
// CreditChannelRuntime's machine, its frames to the link.
extension HostDriver {
    func handle(_ request: ChannelRequest) {
        switch request {
        case .open(let conn, let psm, let parameters, let c):
            openChannel(conn, psm: psm, parameters: parameters, c)
        case .send(let channel, let sdu, let token, let c):
            // A closed channel's CID may belong to a newer channel by now.
            guard creditChannels.isCurrent(channel) else {
                c.resume(returning: .failure(HostError(.disconnected(nil), "the L2CAP channel is closed")))
                return
            }
            execute(creditChannels.send(channel.info, sdu, token: token, c))
        case .sendCancelled(let token):
            creditChannels.sendCancelled(token)
        case .consumed(let channel, let frames):
            guard creditChannels.isCurrent(channel) else { return }
            let info = channel.info
            execute(creditChannels.machine.consumed(handle: info.handle, cid: info.localCID, frames: frames,
                                                    indicationIdentifier: { indicationIdentifier(info.handle) }))
        case .close(let channel, let c):
            let info = channel.info
            if creditChannels.isCurrent(channel), let id = links.manager.allocateSignalingIdentifier(handle: info.handle) {
                execute(creditChannels.machine.disconnect(handle: info.handle, cid: info.localCID, identifier: id, now: Sys.now()))
            }
            c.resume()
        case .listen(let psm, let parameters, let security, let listener):
            creditChannels.listen(psm: psm, parameters: parameters, security: security, listener)
        case .stopListening(let psm):
            creditChannels.stopListening(psm: psm)
        }
    }

    /// The link's next signaling identifier (shared with the connection manager's requests).
    func signalingIdentifier(_ handle: UInt16) -> UInt8 {
        links.manager.allocateSignalingIdentifier(handle: handle) ?? 1
    }

    /// The link's next signaling identifier for an indication (no response awaited).
    func indicationIdentifier(_ handle: UInt16) -> UInt8 {
        links.manager.allocateSignalingIdentifier(handle: handle, awaitingResponse: false) ?? 1
    }

    /// A frame of the LE signaling channel: the connection manager owns it and hands the
    /// credit-based channels' commands to their machine.
    func signalingReceived(_ handle: UInt16, _ payload: UnsafeRawBufferPointer) {
        switch links.manager.receivedSignaling(handle: handle, payload: payload) {
        case .handled(let actions):
            execute(actions)
        case .creditChannels(let command):
            guard let conn = links.connection(handle) else { return }
            execute(creditChannels.machine.signaling(handle: handle, command, security: conn.security, now: Sys.now(),
                                                     nextIdentifier: { [unowned self] in self.signalingIdentifier(handle) }))
        }
    }

    func execute(_ actions: [L2CAPChannelAction]) {
        for case .requestExpired(let handle, let id) in actions { links.manager.releaseSignalingIdentifier(handle: handle, id) }
        let frames = creditChannels.perform(actions, connection: { links.connection($0) }, identifier: { signalingIdentifier($0) })
        for (handle, frame) in frames { sendFrame(frame, handle: handle, accounted: false) }
    }

    func openChannel(_ conn: LEConnection, psm: UInt16, parameters: L2CAPChannelParameters,
                     _ c: CheckedContinuation<Result<L2CAPChannel, HostError>, Never>) {
        guard links.isCurrent(conn), let id = links.manager.allocateSignalingIdentifier(handle: conn.handle) else {
            c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
            return
        }
        execute(creditChannels.open(conn, psm: psm, parameters: parameters, identifier: id, now: Sys.now(), c))
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
                // A bond's key refused is not paired over unasked (BLESA): encryptWithBond throws.
                if try await encryptWithBond() != true { _ = try await pairUnasked(mitm: false) }
            case .insufficientAuthentication:
                guard !s.authenticated else { throw error }
                if !s.encrypted, let bond = try storedBond(), bond.authenticated, try await encryptWithBond() {
                    break
                }
                // MITM protection is what the peer wants (fails cleanly when the IO cannot give it).
                _ = try await pairUnasked(mitm: true)
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
            driver.post(.channel(.open(self, psm: psm, parameters, c)))
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
        driver.post(.channel(.listen(psm: psm, parameters, security, continuation)))
        return stream
    }

    /// Refuses new channels to `psm` again; open channels stay open.
    public func stopListeningL2CAP(psm: UInt16) {
        driver.post(.channel(.stopListening(psm: psm)))
    }
}
