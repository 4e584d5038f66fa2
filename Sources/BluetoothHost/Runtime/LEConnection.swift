import BluetoothWire
import Synchronization

/// The side of an ATT bearer a consumer takes (Core Vol 3 Part F §2).
public enum ATTRole: Sendable, Hashable {
    case client
    case server
}

/// One LE link of an ``HCIHost``: its state, disconnection, and the primitives an ATT
/// bearer is built on (the fixed ATT channel, CID 4).
///
/// Received ATT PDUs and the close notification are delivered on the host's driver
/// thread, in order; keep the handlers short. PDUs that arrive before ``startATT(received:closed:)``
/// are buffered (up to ``bufferedATTLimit``; more are dropped and counted in
/// ``HostStatistics/droppedATT``).
public final class LEConnection: Sendable, CustomStringConvertible {
    /// The peer's address as the link layer reported it.
    public let address: LEAddress
    /// Connection_Handle.
    public let handle: UInt16
    /// Our role: central (we connected) or peripheral (it connected to our advertising).
    public let role: LEConnectionRole
    /// The largest ATT_MTU this host takes: 517 (Core Vol 3 Part F §3.2.8, 512-byte values + 5).
    public let maximumATTMTU: UInt16 = 517
    /// PDUs kept for a bearer that has not started yet.
    public static let bufferedATTLimit = 64
    /// Bytes that may wait for controller buffers before ``sendATT(_:)`` refuses more.
    public static let maximumQueuedBytes = 256 * 1024

    struct State {
        var link: LELinkState
        var closed: (reason: HCIErrorCode?, message: String)?
        var attClientStarted = false
        var attServerStarted = false
        var security = LinkSecurity.unencrypted
        var attMTU = 23
        var identity: LEAddress?
        /// Callers of ``closed()``, resumed when the link goes down.
        var closeWaiters: [CheckedContinuation<HCIErrorCode?, Never>] = []
    }

    let driver: HostDriver
    let state: Mutex<State>
    /// L2CAP bytes posted by ``sendATT(_:)`` and not yet written to the transport.
    let queuedBytes = Atomic<Int>(0)
    /// Callers of ``waitForRoom(_:)``: the bytes each wants to queue.
    let roomWaiters = Mutex<[(bytes: Int, continuation: CheckedContinuation<Void, Never>)]>([])
    /// Nonzero while someone waits (the driver then takes the lock when bytes leave).
    let roomWaiterCount = Atomic<Int>(0)
    let securityObservers = Mutex<[@Sendable (LinkSecurity) -> Void]>([])
    /// Peripheral: the random address we advertised when the central connected (nil: the
    /// public one). Driver thread only.
    nonisolated(unsafe) var localRandomAddress: BluetoothAddress?

    init(driver: HostDriver, link: LELinkState) {
        self.driver = driver
        self.address = link.peer
        self.handle = link.handle
        self.role = link.role
        self.state = Mutex(State(link: link))
    }

    /// The peer's identity address when it is known: resolved from its private address with
    /// a bond's IRK (or by the controller), or distributed while pairing on this link.
    public var identity: LEAddress? { state.withLock { $0.identity } }

    /// Who the peer is for bonds: its identity, else the address it connected with.
    public var peerIdentity: LEAddress { identity ?? address }

    func setIdentity(_ identity: LEAddress) {
        state.withLock { $0.identity = identity }
    }

    /// Current parameters: interval, latency, supervision timeout, data length, PHY.
    public var parameters: LELinkState { state.withLock { $0.link } }
    /// The link's security (unencrypted until pairing or encryption).
    public var security: LinkSecurity { state.withLock { $0.security } }
    /// The ATT_MTU of the link's ATT bearer: 23 until an Exchange MTU (by either side's
    /// client) completes. Client and server on the link share it.
    public var attMTU: Int { state.withLock { $0.attMTU } }

    /// Records the ATT_MTU an Exchange MTU settled on (called by the side that ran it).
    public func noteATTMTU(_ mtu: Int) {
        state.withLock { $0.attMTU = max($0.attMTU, min(mtu, Int(maximumATTMTU))) }
    }

    /// Sets the link's security (pairing and encryption do; tests may).
    public func setSecurity(_ security: LinkSecurity) {
        state.withLock { $0.security = security }
        for o in securityObservers.withLock({ $0 }) { o(security) }
    }

    /// Calls `body` with the link's new security after each change (encryption with a new
    /// or a stored key, key refresh), on the host's driver thread: keep it short. A GATT
    /// server uses it to restore a bonded client's subscriptions once the link is encrypted.
    public func observeSecurity(_ body: @escaping @Sendable (LinkSecurity) -> Void) {
        securityObservers.withLock { $0.append(body) }
    }
    /// Whether the link is still up.
    public var isConnected: Bool { state.withLock { $0.closed == nil } }
    /// Why the link went down (HCI reason of the Disconnection Complete); nil while it is up
    /// or when the host itself was closed.
    public var disconnectReason: HCIErrorCode? { state.withLock { $0.closed?.reason } }
    /// The error pending and later operations on this link fail with, once it is down.
    public var disconnectError: HostError? {
        state.withLock { s in s.closed.map { HostError(.disconnected($0.reason), $0.message) } }
    }

    /// "F0:F1:F2:F3:F4:01 (public), handle 0x0040"
    public var description: String { "\(address), handle 0x\(hex(handle, 4))" }

    /// Disconnects (HCI_Disconnect with `reason`) and returns once the link is down (or at
    /// once if it already is, or when the controller refuses).
    public func disconnect(reason: HCIErrorCode = .remoteUserTerminatedConnection) async {
        if !isConnected { return }
        let driver = self.driver
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            driver.post(.link(.disconnect(self, reason, c)))
        }
    }

    /// Asks the controller to change the link's parameters (LE Connection Update, Core Vol 4
    /// Part E §7.8.18) and returns the parameters in force once LE Connection Update
    /// Complete arrives. Values outside the spec's limits, a refusal by the controller, a
    /// failed procedure (its status) and the link going down are errors. No timer here:
    /// the controller always ends the procedure, with the event or by dropping the link
    /// (LL response timeout, Core Vol 6 Part B §5.2).
    public func updateParameters(_ parameters: L2CAPConnectionParameters) async throws(HostError) -> LELinkState {
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<LELinkState, HostError>, Never>) in
            driver.post(.link(.updateParameters(self, parameters, c)))  // a refused post resumes c itself
        }
        return try result.get()
    }

    /// Asks for the link's PHYs (LE Set PHY): `tx` and `rx` are what we take (LE 2M for
    /// speed, Coded for range); returns the PHYs in use once the controllers settled it (LE
    /// PHY Update Complete, which comes also when nothing changed). A refusal, a peer without
    /// the PHY (the status) and the link going down are errors.
    public func setPHY(tx: LEPHYSet, rx: LEPHYSet, options: LECodedPHYOptions = .noPreference) async throws(HostError) -> LELinkState {
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<LELinkState, HostError>, Never>) in
            driver.post(.link(.setPHY(self, tx: tx, rx: rx, options, c)))  // a refused post resumes c itself
        }
        return try result.get()
    }

    /// Asks for link layer payloads of up to `txOctets` bytes taking up to `txTime` µs (LE
    /// Set Data Length); returns once the controller took the request. The sizes in force
    /// (``parameters``) change with LE Data Length Change, when the peer agrees.
    @discardableResult
    public func setDataLength(txOctets: UInt16, txTime: UInt16) async throws(HostError) -> LELinkState {
        if let error = disconnectError { throw error }
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<LELinkState, HostError>, Never>) in
            driver.post(.link(.setDataLength(self, txOctets: txOctets, txTime: txTime, c)))
        }
        return try result.get()
    }

    /// Starts ATT delivery for one side of the link's ATT bearer: `received` gets each
    /// ATT PDU from the peer (opcode first) for that side, in order, buffered ones first, as
    /// a view valid only during the call; `closed` is called once when the link goes down,
    /// with the HCI reason (nil when the host closed) and a message for the user.
    ///
    /// The server side gets requests, commands and confirmations; the client side gets
    /// responses, notifications and indications, and everything while no server side has
    /// started (it refuses requests itself). Start the server side first on a link that
    /// serves. Each side once per link.
    public func startATT(role: ATTRole = .client, received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
                         closed: @escaping @Sendable (HCIErrorCode?, String) -> Void) {
        let first = state.withLock { s in
            switch role {
            case .client:
                defer { s.attClientStarted = true }
                return !s.attClientStarted
            case .server:
                defer { s.attServerStarted = true }
                return !s.attServerStarted
            }
        }
        precondition(first, "startATT(role: \(role)) called twice on \(self)")
        driver.post(.link(.startATT(self, role, received, closed)))
    }

    /// Queues one ATT PDU for the peer in an L2CAP frame on CID 4, fragmented and
    /// flow-controlled by the host. Fails when the link is down (`.disconnected(reason)`),
    /// the host closed, or too much is already waiting (`.sendQueueFull`).
    public func sendATT(_ pdu: [UInt8]) throws(HostError) {
        if let error = disconnectError { throw error }
        guard pdu.count <= 65535 else {
            throw HostError(.notSupported, "ATT PDU of \(pdu.count) bytes does not fit an L2CAP frame")
        }
        let frame = try L2CAPChannels.frame(.att, pdu)
        let before = queuedBytes.wrappingAdd(frame.count, ordering: .relaxed).oldValue
        if before + frame.count > Self.maximumQueuedBytes {
            queuedBytes.wrappingSubtract(frame.count, ordering: .relaxed)
            throw HostError(.sendQueueFull, "\(Self.maximumQueuedBytes) bytes already wait to be sent on \(self)")
        }
        if let refused = driver.post(.link(.sendACL(self, frame))) {
            queuedBytes.wrappingSubtract(frame.count, ordering: .relaxed)
            throw refused
        }
    }

    /// Whether an ATT PDU of `bytes` fits in the link's send queue now (``sendATT(_:)``
    /// would not refuse it with `.sendQueueFull`).
    public func hasRoom(forATT bytes: Int) -> Bool {
        queuedBytes.load(ordering: .relaxed) + bytes + L2CAPBasicFrame.headerLength <= Self.maximumQueuedBytes
    }

    /// Waits until an ATT PDU of `bytes` fits in the send queue (the controller took what
    /// was queued) or the link is down: the back-pressure a sender of notifications uses
    /// instead of growing memory.
    public func waitForRoom(forATT bytes: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = roomWaiters.withLock { w -> Bool in
                if hasRoom(forATT: bytes) || !isConnected { return true }
                w.append((bytes, c))
                roomWaiterCount.add(1, ordering: .relaxed)
                return false
            }
            if ready { c.resume() }
        }
    }

    // MARK: Driver side

    /// `n` queued bytes left for the controller (or were dropped): wakes waiters that fit now.
    func bytesLeft(_ n: Int) {
        queuedBytes.wrappingSubtract(n, ordering: .relaxed)
        guard roomWaiterCount.load(ordering: .relaxed) > 0 else { return }
        wakeRoomWaiters(all: false)
    }

    func wakeRoomWaiters(all: Bool) {
        let ready = roomWaiters.withLock { w -> [CheckedContinuation<Void, Never>] in
            var keep: [(bytes: Int, continuation: CheckedContinuation<Void, Never>)] = []
            var out: [CheckedContinuation<Void, Never>] = []
            for e in w {
                if all || hasRoom(forATT: e.bytes) { out.append(e.continuation) } else { keep.append(e) }
            }
            w = keep
            roomWaiterCount.subtract(out.count, ordering: .relaxed)
            return out
        }
        for c in ready { c.resume() }
    }

    func update(_ link: LELinkState) {
        state.withLock { $0.link = link }
    }

    /// Why the link is down (the host-closed message when it never was marked).
    var closeInfo: (reason: HCIErrorCode?, message: String) {
        state.withLock { $0.closed } ?? (nil, HostError.disconnectMessage(nil))
    }

    func markClosed(_ reason: HCIErrorCode?, _ message: String) {
        let waiters = state.withLock { s -> [CheckedContinuation<HCIErrorCode?, Never>] in
            if s.closed == nil { s.closed = (reason, message) }
            let w = s.closeWaiters
            s.closeWaiters = []
            return w
        }
        wakeRoomWaiters(all: true)
        for w in waiters { w.resume(returning: reason) }
    }

    /// Returns when the link is down, with the HCI reason (nil when the host closed): for
    /// those that hold a link for someone else (a proxy's client) and must say when it went.
    public func closed() async -> HCIErrorCode? {
        await withCheckedContinuation { (c: CheckedContinuation<HCIErrorCode?, Never>) in
            let done: HCIErrorCode?? = state.withLock { s in
                if let c = s.closed { return .some(c.reason) }
                s.closeWaiters.append(c)
                return nil
            }
            if let done { c.resume(returning: done) }
        }
    }
}
