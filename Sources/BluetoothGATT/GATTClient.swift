import BluetoothTransport
import BluetoothWire
import Synchronization

/// A GATT client (Core Vol 3 Part G §4) over any ``ATTBearer``.
///
/// One ``ATTClient`` state machine runs under a lock; bearer callbacks and API calls feed it
/// and act on what it returns; PDUs are sent and continuations resumed after the lock is
/// released, in the order the machine produced them (a caller's PDUs leave in its order;
/// one request is outstanding, so responses cannot overtake). The transaction timer is one
/// task per deadline change, cancelled and re-armed.
///
/// Every procedure first exchanges the MTU once (offering the bearer's ``ATTBearer/maximumMTU``)
/// and uses the largest payloads the MTU allows. When the bearer closes or the ATT bearer
/// dies (transaction timeout, protocol violation), every pending call and subscription
/// fails at once with that reason, and later calls fail with it too.
///
/// Subscriptions are reference-counted per characteristic: the CCCD is written when the
/// wanted bits change (first subscriber, notify ↔ indicate) and cleared when the last
/// stream ends. Each subscriber has a bounded buffer: notifications beyond it drop the
/// oldest, counted in ``GATTValue/droppedBefore`` and ``droppedNotifications``; indications
/// are never dropped: the Handle Value Confirmation is sent only once every subscriber
/// took the value from its stream, which holds the server back.
///
/// This file holds the state and the ATT request path; the procedures are in
/// GATTClient+Procedures.swift, subscriptions and Service Changed in GATTClient+Subscriptions.swift.
public final class GATTClient: Sendable {
    /// How a client behaves.
    public struct Options: Sendable {
        /// The ATT transaction timeout (Core Vol 3 Part F §3.3.3: 30 s).
        public var requestTimeout: Duration
        /// Notifications buffered per subscriber before the oldest are dropped.
        public var notificationBufferSize: Int
        /// Enable Service Changed indications after ``GATTClient/discoverAll()`` and
        /// re-discover the changed range when one arrives.
        public var handleServiceChanged: Bool
        /// When a request fails with Insufficient Authentication, Insufficient Encryption or
        /// Encryption Key Size Too Short and the bearer can raise its security
        /// (``ATTSecurityRaising``), raise it once and send the request again.
        public var raisesSecurity: Bool
        /// Told what happened when security was raised (the CLI prints it).
        public var securityObserver: (@Sendable (GATTSecurityEvent) -> Void)?
        /// Notifications and indications of handles no subscriber takes, given here (on the
        /// host's thread: keep it short) instead of being kept or counted: for a proxy
        /// whose own client wrote the CCCDs. Indications are confirmed all the same.
        public var unsubscribedValues: (@Sendable (GATTValue) -> Void)?

        /// The defaults: 30 s transactions, 256 notifications buffered per subscriber, Service
        /// Changed handled, security raised once when a server asks for it.
        public init(requestTimeout: Duration = .seconds(30), notificationBufferSize: Int = 256,
                    handleServiceChanged: Bool = true, raisesSecurity: Bool = true,
                    securityObserver: (@Sendable (GATTSecurityEvent) -> Void)? = nil,
                    unsubscribedValues: (@Sendable (GATTValue) -> Void)? = nil) {
            precondition(requestTimeout > .zero, "requestTimeout must be positive")
            precondition(notificationBufferSize > 0, "notificationBufferSize must be positive")
            self.requestTimeout = requestTimeout
            self.notificationBufferSize = notificationBufferSize
            self.handleServiceChanged = handleServiceChanged
            self.raisesSecurity = raisesSecurity
            self.securityObserver = securityObserver
            self.unsubscribedValues = unsubscribedValues
        }
    }

    typealias Effect = () -> Void
    typealias ResponseContinuation = CheckedContinuation<Result<ATTResponse, GATTError>, Never>
    typealias ValueContinuation = CheckedContinuation<Result<GATTValue?, GATTError>, Never>

    enum Waiter {
        case request(ResponseContinuation)
        case mtu
        case ignore
    }

    enum MTUState {
        case idle
        case running([CheckedContinuation<Result<Int, GATTError>, Never>])
        case done
    }

    struct Entry {
        var value: GATTValue
        /// The indication this entry holds back, if any.
        var token: UInt64?
    }

    struct Subscriber {
        /// The characteristics it takes values of (value handle → indications rather than
        /// notifications), all on one stream in arrival order.
        var handles: [UInt16: Bool]
        var buffer: [Entry] = []
        var bufferedNotifications = 0
        var dropped = 0
        var waiting: ValueContinuation?
        var ended: GATTError?
        /// Ended by its owner (``GATTSubscription/end()``): values still come to it until
        /// the CCCD write is answered (`.clearing`); then (`.cleared`) it hands out what it
        /// holds and ends.
        var finishing: Finishing?
    }

    enum Finishing: Equatable {
        case clearing, cleared
    }

    struct CCCD {
        var cccdHandle: UInt16
        /// The value last written (or being written).
        var requested: UInt16 = 0
        var subscribers: [UInt64] = []
        /// Service Changed indications enabled by the client itself.
        var internalIndications = false
    }

    struct State {
        var att: ATTClient
        var waiters: [ATTRequestID: Waiter] = [:]
        var terminal: GATTError?
        var timer = DeadlineTimer()
        var mtuState: MTUState = .idle
        var subscribers: [UInt64: Subscriber] = [:]
        var cccds: [UInt16: CCCD] = [:]
        var indicationTakers: [UInt64: Int] = [:]
        var nextToken: UInt64 = 1
        var longWriteBusy = false
        var longWriteWaiters: [CheckedContinuation<Void, Never>] = []
        var database: GATTDatabase?
        var serviceChangedHandle: UInt16?
        /// Rediscovering after Database Out Of Sync (its own requests must not start another).
        var resyncing = false
        var droppedNotifications = 0
        var unhandledNotifications = 0
        /// Indications that came before anyone subscribed to their characteristic (a bonded
        /// device whose CCCD it kept sends at once after encryption: a cuff's stored
        /// readings), confirmed, kept for the first ``GATTClient/subscription(to:indicate:)``
        /// that takes indications; dropped once we clear that CCCD ourselves, and on Service
        /// Changed. Bounded: see ``EarlyIndications``.
        var earlyIndications = EarlyIndications()
    }

    /// The bearer the client speaks on.
    public let bearer: any ATTBearer
    /// The options it was made with.
    public let options: Options
    let state: Mutex<State>
    let subscriberIDs = Atomic<UInt64>(1)
    /// Database changes announced by the server (Service Changed), after re-discovery.
    public let databaseChanged: AsyncStream<GATTDatabaseChange>
    let databaseChangedContinuation: AsyncStream<GATTDatabaseChange>.Continuation

    /// Starts the bearer and runs the client on it.
    public init(bearer: any ATTBearer, options: Options = .init()) {
        self.bearer = bearer
        self.options = options
        state = Mutex(State(att: ATTClient(maximumMTU: bearer.maximumMTU, transactionTimeout: options.requestTimeout)))
        (databaseChanged, databaseChangedContinuation) = AsyncStream.makeStream(of: GATTDatabaseChange.self,
                                                                                bufferingPolicy: .bufferingNewest(16))
        bearer.start(received: { [weak self] pdu in self?.received(pdu) },
                     closed: { [weak self] reason in self?.closed(reason) })
    }

    deinit {
        state.withLock { $0.timer.cancel() }
        databaseChangedContinuation.finish()
    }

    // MARK: Status

    /// The current ATT_MTU.
    public var mtu: Int { state.withLock { $0.att.mtu } }
    /// ATT requests sent so far (round trips), including Exchange MTU.
    public var roundTrips: Int { state.withLock { $0.att.requestsSent } }
    /// Notifications dropped because a subscriber's buffer was full.
    public var droppedNotifications: Int { state.withLock { $0.droppedNotifications } }
    /// Notifications and indications for handles nobody subscribed to.
    public var unhandledNotifications: Int { state.withLock { $0.unhandledNotifications } }
    /// Indications that came before a subscription and were not kept for it: for a handle
    /// with no indicating characteristic, or past the caps (64 per characteristic, 64 KiB
    /// per link).
    public var droppedEarlyIndications: Int { state.withLock { $0.earlyIndications.dropped } }
    /// Malformed or unexpected PDUs from the peer that were ignored.
    public var peerFaults: Int { state.withLock { $0.att.peerFaults } }
    /// Why the client stopped working (bearer closed, transaction timeout), or nil.
    public var failure: GATTError? { state.withLock { $0.terminal } }
    /// The database from the last ``discoverAll()``, kept up to date by Service Changed.
    public var database: GATTDatabase? { state.withLock { $0.database } }

    /// Closes the bearer; pending calls fail with the bearer's reason.
    public func close() { bearer.close() }

    // MARK: MTU

    /// Exchange MTU (Core Vol 3 Part G §4.3.1): offers the bearer's maximum and returns the
    /// ATT_MTU in use. Done once; later calls (and every procedure) just return the MTU.
    /// A server that does not support the request leaves the MTU at 23.
    @discardableResult
    public func exchangeMTU() async throws(GATTError) -> Int {
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Int, GATTError>, Never>) in
            locked { s, fx in
                if let e = s.terminal {
                    fx.append { c.resume(returning: .failure(e)) }
                    return
                }
                switch s.mtuState {
                case .done:
                    let m = s.att.mtu
                    fx.append { c.resume(returning: .success(m)) }
                case .running(var list):
                    list.append(c)
                    s.mtuState = .running(list)
                case .idle:
                    if s.att.mtuExchanged || s.att.maximumMTU <= UInt16(ATT.defaultMTU) {
                        s.mtuState = .done
                        let m = s.att.mtu
                        fx.append { c.resume(returning: .success(m)) }
                        return
                    }
                    s.mtuState = .running([c])
                    let (id, actions) = s.att.submit(.exchangeMTU(clientRxMTU: s.att.maximumMTU), now: now())
                    s.waiters[id] = .mtu
                    apply(actions, &s, &fx)
                }
            }
        }
        return try result.get()
    }

    // MARK: - Internals: the ATT request path

    func now() -> UInt64 { monotonicNow() }

    func currentMTU() -> Int { state.withLock { $0.att.mtu } }

    func wrongResponse(_ request: ATTOpcode) -> GATTError {
        .malformedResponse(request: request, detail: "response of the wrong kind")
    }

    func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
        if let v = uuid.uuid16 { return [UInt8(v & 0xFF), UInt8(v >> 8)] }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: uuid.low >> (8 * UInt64(i)))) }
        for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: uuid.high >> (8 * UInt64(i)))) }
        return out
    }

    /// Sends one request and waits for its response.
    /// One ATT request; refused for security, raised once and sent again (see ``Options/raisesSecurity``).
    func request(_ r: ATTRequest) async throws(GATTError) -> ATTResponse {
        do {
            return try await requestOnce(r)
        } catch {
            if error.attErrorCode == .databaseOutOfSync {
                // Robust caching (Core Vol 3 Part G §2.5.2.1): the server's database changed
                // and this client did not know; what it knows is rediscovered (and announced on
                // ``databaseChanged``) before the caller hears of it: its handles may be stale.
                await resynchronize()
                throw error
            }
            guard await raiseSecurityToRetry(after: error) else { throw error }
            return try await requestOnce(r)
        }
    }

    func resynchronize() async {
        let start: Bool = locked { s, _ in
            if s.resyncing { return false }
            s.resyncing = true
            return true
        }
        guard start else { return }
        await rediscover(0x0001 ... 0xFFFF, cached: database != nil)
        locked { s, _ in s.resyncing = false }
    }

    /// After `error`: raises the bearer's security when that can help; true when the
    /// request should be sent again.
    func raiseSecurityToRetry(after error: GATTError) async -> Bool {
        guard options.raisesSecurity, !Self.securityRaisingHeld, let code = error.attErrorCode,
              code == .insufficientAuthentication || code == .insufficientEncryption || code == .encryptionKeySizeTooShort,
              let raiser = bearer as? any ATTSecurityRaising else { return false }
        let observer = options.securityObserver
        do throws(ATTSecurityFailure) {
            guard let level = try await raiser.raiseSecurity(after: code, announce: { observer?(.raising(error: code, level: $0)) }) else {
                return false
            }
            observer?(.raised(level: level))
            return true
        } catch {
            observer?(.failed(error))
            return false
        }
    }

    func requestOnce(_ r: ATTRequest) async throws(GATTError) -> ATTResponse {
        let result = await withCheckedContinuation { (c: ResponseContinuation) in
            locked { s, fx in
                if let e = s.terminal {
                    fx.append { c.resume(returning: .failure(e)) }
                    return
                }
                let (id, actions) = s.att.submit(r, now: now())
                s.waiters[id] = .request(c)
                apply(actions, &s, &fx)
            }
        }
        return try result.get()
    }

    /// Runs `body` under the lock, re-arms the timer, then runs the effects it queued.
    func locked<R: Sendable>(_ body: (inout State, inout [Effect]) -> R) -> R {
        var fx: [Effect] = []
        let r = state.withLock { s -> R in
            let r = body(&s, &fx)
            rearm(&s)
            return r
        }
        for f in fx { f() }
        return r
    }

    func rearm(_ s: inout State) {
        s.timer.arm(s.terminal == nil ? s.att.nextDeadline : nil) { [weak self] in self?.timerFired() }
    }

    func timerFired() {
        locked { s, fx in
            let actions = s.att.timerFired(now: now())
            s.timer.fired()
            apply(actions, &s, &fx)
        }
    }

    func received(_ pdu: UnsafeRawBufferPointer) {
        locked { s, fx in
            // Notifications skip the action list: the value copy is the only allocation.
            if let n = s.att.receiveNotification(bytes: pdu) {
                deliver(handle: n.handle, value: n.value, indication: false, &s, &fx)
                return
            }
            let actions = s.att.receive(bytes: pdu, now: now())
            apply(actions, &s, &fx)
        }
    }

    func closed(_ reason: ATTBearerClosed) {
        locked { s, fx in
            let actions = s.att.bearerClosed(reason)
            apply(actions, &s, &fx)
            if s.terminal == nil { terminate(.bearerClosed(reason), &s, &fx) }
        }
    }

    func apply(_ actions: [ATTClientAction], _ s: inout State, _ fx: inout [Effect]) {
        for action in actions {
            switch action {
            case .send(let pdu):
                // After the lock is released: a bearer's send may block (the kernel socket).
                let bearer = self.bearer
                fx.append { [weak self] in
                    do throws(ATTBearerClosed) {
                        try bearer.send(pdu)
                    } catch {
                        self?.closed(error)
                    }
                }
            case .complete(let id, let result):
                complete(id, result, &s, &fx)
            case .notification(let handle, let value):
                deliver(handle: handle, value: value, indication: false, &s, &fx)
            case .indication(let handle, let value):
                deliver(handle: handle, value: value, indication: true, &s, &fx)
            case .mtuChanged(let mtu):
                let bearer = self.bearer
                fx.append { bearer.mtuNegotiated(mtu) }
            case .peerFault:
                break
            case .failed(let error):
                terminate(error, &s, &fx)
            }
        }
    }

    func complete(_ id: ATTRequestID, _ result: Result<ATTResponse, GATTError>, _ s: inout State, _ fx: inout [Effect]) {
        guard let waiter = s.waiters.removeValue(forKey: id) else { return }
        switch waiter {
        case .request(let c):
            fx.append { c.resume(returning: result) }
        case .ignore:
            break
        case .mtu:
            guard case .running(let list) = s.mtuState else { return }
            s.mtuState = .done
            let outcome: Result<Int, GATTError>
            switch result {
            case .success:
                outcome = .success(s.att.mtu)
            case .failure(let e):
                switch e {
                case .attError, .malformedResponse: outcome = .success(s.att.mtu) // stays 23
                case .transactionTimeout, .bearerClosed, .protocolViolation, .invalidRequest: outcome = .failure(e)
                }
            }
            for c in list { fx.append { c.resume(returning: outcome) } }
        }
    }

    func terminate(_ error: GATTError, _ s: inout State, _ fx: inout [Effect]) {
        guard s.terminal == nil else { return }
        s.terminal = error
        s.timer.cancel()
        for (id, waiter) in s.waiters {
            if case .request(let c) = waiter { fx.append { c.resume(returning: .failure(error)) } }
            s.waiters[id] = nil
        }
        if case .running(let list) = s.mtuState {
            for c in list { fx.append { c.resume(returning: .failure(error)) } }
        }
        s.mtuState = .done
        s.indicationTakers = [:]
        for id in Array(s.subscribers.keys) {
            s.subscribers[id]?.ended = error
            if let sub = s.subscribers[id], sub.buffer.isEmpty, let w = sub.waiting {
                s.subscribers[id]?.waiting = nil
                fx.append { w.resume(returning: .failure(error)) }
            }
        }
        let waiters = s.longWriteWaiters
        s.longWriteWaiters = []
        s.longWriteBusy = false
        for w in waiters { fx.append { w.resume() } }
        let c = databaseChangedContinuation
        fx.append { c.finish() }
    }
}

/// Indications kept for a subscription still to come, bounded whatever the server sends:
/// only for value handles that take indications in the known database (any handle while
/// none is known yet, pruned when it is), the newest ``perHandle`` per handle and
/// ``costLimit`` per link, each value charged its bytes and ``entryCost`` (empty values
/// on thousands of handles cost memory too); what is not kept is counted in ``dropped``.
struct EarlyIndications: Sendable {
    /// The most kept per characteristic.
    static let perHandle = 64
    /// What one kept value costs beside its bytes (the array slot, the dictionary entry).
    static let entryCost = 32
    /// The most cost kept per link: 64 KiB, so at most 2048 values.
    static let costLimit = 64 * 1024

    private var values: [UInt16: [GATTValue]] = [:]
    /// The cost of the values kept.
    private(set) var cost = 0
    /// Indications not kept (no such characteristic, the caps).
    private(set) var dropped = 0

    static func cost(_ v: GATTValue) -> Int { v.value.count + entryCost }

    /// Keeps `v` if `database` (when known) has an indicating characteristic at its handle
    /// and the caps allow; the oldest of its handle gives way to it past ``perHandle``.
    mutating func keep(_ v: GATTValue, database: GATTDatabase?) {
        if let database, !Self.indicates(v.handle, in: database) {
            dropped += 1
            return
        }
        var kept = values[v.handle] ?? []
        if kept.count >= Self.perHandle {
            cost -= Self.cost(kept.removeFirst())
            dropped += 1
        }
        guard cost + Self.cost(v) <= Self.costLimit else {
            dropped += 1
            values[v.handle] = kept.isEmpty ? nil : kept
            return
        }
        kept.append(v)
        cost += Self.cost(v)
        values[v.handle] = kept
    }

    /// The values kept for `handle`, taken out.
    mutating func take(_ handle: UInt16) -> [GATTValue]? {
        guard let kept = values.removeValue(forKey: handle) else { return nil }
        cost -= kept.reduce(0) { $0 + Self.cost($1) }
        return kept
    }

    /// Drops what is kept for `handle`.
    mutating func drop(_ handle: UInt16) { _ = take(handle) }

    /// Drops everything (handles may have moved).
    mutating func removeAll() {
        values = [:]
        cost = 0
    }

    /// The database is known now: what it has no indicating characteristic for goes.
    mutating func prune(to database: GATTDatabase) {
        for handle in Array(values.keys) where !Self.indicates(handle, in: database) {
            dropped += values[handle]?.count ?? 0
            drop(handle)
        }
    }

    static func indicates(_ handle: UInt16, in database: GATTDatabase) -> Bool {
        guard let c = database.characteristic(containing: handle) else { return false }
        return c.valueHandle == handle && c.properties.contains(.indicate)
    }
}

extension GATTClient {
    /// Set within ``withoutRaisingSecurity(_:)``.
    @TaskLocal static var securityRaisingHeld = false

    /// Runs `body` with no security raised for the requests it makes, on any client: a
    /// refusal for encryption or authentication comes back as the ATT error, nothing is
    /// paired or encrypted. For requests made for someone else on a link (a gateway's
    /// commands from MQTT): asking to read a value must never create a bond.
    public static func withoutRaisingSecurity<T: Sendable>(_ body: () async throws(GATTError) -> T) async throws(GATTError) -> T {
        let result: Result<T, GATTError> = await $securityRaisingHeld.withValue(true) {
            do throws(GATTError) { return .success(try await body()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
