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
public final class GATTClient: Sendable {
    public struct Options: Sendable {
        /// The ATT transaction timeout (Core Vol 3 Part F §3.3.3: 30 s).
        public var requestTimeout: Duration
        /// Notifications buffered per subscriber before the oldest are dropped.
        public var notificationBufferSize: Int
        /// Enable Service Changed indications after ``GATTClient/discoverAll()`` and
        /// re-discover the changed range when one arrives.
        public var handleServiceChanged: Bool

        public init(requestTimeout: Duration = .seconds(30), notificationBufferSize: Int = 256,
                    handleServiceChanged: Bool = true) {
            precondition(requestTimeout > .zero, "requestTimeout must be positive")
            precondition(notificationBufferSize > 0, "notificationBufferSize must be positive")
            self.requestTimeout = requestTimeout
            self.notificationBufferSize = notificationBufferSize
            self.handleServiceChanged = handleServiceChanged
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
        var valueHandle: UInt16
        var indicate: Bool
        var buffer: [Entry] = []
        var bufferedNotifications = 0
        var dropped = 0
        var waiting: ValueContinuation?
        var ended: GATTError?
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
        var droppedNotifications = 0
        var unhandledNotifications = 0
    }

    public let bearer: any ATTBearer
    public let options: Options
    private let state: Mutex<State>
    private let clockBase = ContinuousClock.now
    private let subscriberIDs = Atomic<UInt64>(1)
    /// Database changes announced by the server (Service Changed), after re-discovery.
    public let databaseChanged: AsyncStream<GATTDatabaseChange>
    private let databaseChangedContinuation: AsyncStream<GATTDatabaseChange>.Continuation

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

    // MARK: Discovery

    /// Discover All Primary Services (Core Vol 3 Part G §4.4.1): Read By Group Type.
    public func discoverPrimaryServices() async throws(GATTError) -> [GATTService] {
        try await exchangeMTU()
        return try await primaryServices(in: 0x0001 ... 0xFFFF)
    }

    /// Discover Primary Service by Service UUID (§4.4.2): Find By Type Value.
    public func discoverPrimaryServices(uuid: BluetoothUUID) async throws(GATTError) -> [GATTService] {
        try await exchangeMTU()
        let value = uuidBytes(uuid)
        var services: [GATTService] = []
        var start: UInt16 = 0x0001
        while true {
            let ranges: [ATTHandleRange]
            do throws(GATTError) {
                let r = try await request(.findByTypeValue(start: start, end: 0xFFFF, type: 0x2800, value: value))
                guard case .findByTypeValue(let list) = r else { throw wrongResponse(.findByTypeValueRequest) }
                ranges = list
            } catch {
                if error.attErrorCode == .attributeNotFound { break }
                throw error
            }
            var last = start
            for r in ranges {
                guard r.start >= start, r.end >= r.start else {
                    throw .malformedResponse(request: .findByTypeValueRequest, detail: "handle range 0x\(hex(r.start, 4))-0x\(hex(r.end, 4)) out of order")
                }
                services.append(GATTService(startHandle: r.start, endHandle: r.end, uuid: uuid))
                last = r.end
            }
            if last == 0xFFFF { break }
            start = last + 1
        }
        return services
    }

    /// Find Included Services (§4.5.1): Read By Type «Include» over the service; a 128-bit
    /// included service UUID is read from its declaration.
    public func discoverIncludedServices(of service: GATTService) async throws(GATTError) -> [GATTIncludedService] {
        try await exchangeMTU()
        return try await includes(in: service.startHandle ... service.endHandle)
    }

    /// Discover All Characteristics of a Service (§4.6.1): Read By Type «Characteristic»;
    /// each ends one before the next declaration, the last at the service end.
    public func discoverCharacteristics(of service: GATTService) async throws(GATTError) -> [GATTCharacteristic] {
        try await exchangeMTU()
        var chars = try await characteristicDeclarations(in: service.startHandle ... service.endHandle)
        for i in chars.indices {
            chars[i].endHandle = i + 1 < chars.count ? chars[i + 1].declarationHandle - 1 : service.endHandle
        }
        return chars
    }

    /// Discover All Characteristic Descriptors (§4.7.1): Find Information after the value.
    public func discoverDescriptors(of characteristic: GATTCharacteristic) async throws(GATTError) -> [GATTDescriptor] {
        try await exchangeMTU()
        guard characteristic.valueHandle < characteristic.endHandle else { return [] }
        let found = try await findInformation(in: characteristic.valueHandle + 1 ... characteristic.endHandle)
        return found.map { GATTDescriptor(handle: $0.handle, uuid: $0.uuid) }
    }

    /// Discovers the whole database: primary services, included (and secondary) services,
    /// characteristics and descriptors, in as few round trips as the MTU allows (one
    /// Read By Type over all services for includes and for characteristics; Find Information
    /// over merged descriptor ranges). Enables Service Changed indications when the server
    /// has them (``Options/handleServiceChanged``) and caches the result in ``database``.
    public func discoverAll() async throws(GATTError) -> GATTDatabase {
        try await exchangeMTU()
        let db = GATTDatabase(services: try await discoverDatabase(in: 0x0001 ... 0xFFFF))
        locked { s, _ in s.database = db }
        if options.handleServiceChanged,
           let sc = db.service(uuid: BluetoothUUID(0x1801))?.characteristics.first(where: { $0.uuid == GATTAttributeType.serviceChanged }),
           sc.properties.contains(.indicate), let cccd = sc.cccdHandle {
            try await enableServiceChanged(valueHandle: sc.valueHandle, cccdHandle: cccd)
        }
        return db
    }

    // MARK: Reads

    /// Read Characteristic Value (§4.8.1), continued with Read Blob (§4.8.3) while parts
    /// fill the MTU, so long values come back whole.
    public func read(handle: UInt16) async throws(GATTError) -> [UInt8] {
        try await exchangeMTU()
        guard case .read(var value) = try await request(.read(handle: handle)) else { throw wrongResponse(.readRequest) }
        var partSize = currentMTU() - 1
        var lastPart = value.count
        while lastPart >= partSize {
            guard value.count < Int(UInt16.max) else {
                throw .malformedResponse(request: .readBlobRequest, detail: "value longer than 65535 bytes")
            }
            let part: [UInt8]
            do throws(GATTError) {
                let r = try await request(.readBlob(handle: handle, offset: UInt16(value.count)))
                guard case .readBlob(let p) = r else { throw wrongResponse(.readBlobRequest) }
                part = p
            } catch {
                // Attribute Not Long: the value fitted after all (§4.8.3).
                if error.attErrorCode == .attributeNotLong { break }
                throw error
            }
            value += part
            lastPart = part.count
            partSize = currentMTU() - 1
        }
        return value
    }

    /// Read Using Characteristic UUID (§4.8.2): Read By Type over `range`, continued to the
    /// end of the range. Values longer than the response allows come back truncated.
    public func read(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001 ... 0xFFFF) async throws(GATTError) -> [ATTHandleValue] {
        try await exchangeMTU()
        var out: [ATTHandleValue] = []
        var start = range.lowerBound
        while true {
            // Attribute Not Found ends the read once something was found; at first it is the answer.
            guard let list = try await readByTypePage(from: start, to: range.upperBound, type: uuid, notFoundEnds: !out.isEmpty) else { break }
            guard let last = list.last?.handle, last >= start, list.allSatisfy({ range.contains($0.handle) }) else {
                throw .malformedResponse(request: .readByTypeRequest, detail: "handles outside 0x\(hex(start, 4))-0x\(hex(range.upperBound, 4))")
            }
            out += list
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    /// Read Multiple Characteristic Values (§4.8.4): the values concatenated.
    public func readMultiple(handles: [UInt16]) async throws(GATTError) -> [UInt8] {
        try await exchangeMTU()
        guard handles.count >= 2 else { throw .invalidRequest("Read Multiple needs at least two handles") }
        guard case .readMultiple(let v) = try await request(.readMultiple(handles: handles)) else {
            throw wrongResponse(.readMultipleRequest)
        }
        return v
    }

    /// Read Multiple Variable Length Characteristic Values (§4.8.5).
    public func readMultipleVariable(handles: [UInt16]) async throws(GATTError) -> [[UInt8]] {
        try await exchangeMTU()
        guard handles.count >= 2 else { throw .invalidRequest("Read Multiple Variable needs at least two handles") }
        guard case .readMultipleVariable(let v) = try await request(.readMultipleVariable(handles: handles)) else {
            throw wrongResponse(.readMultipleVariableRequest)
        }
        return v
    }

    // MARK: Writes

    /// Write Characteristic Value (§4.9.3), or Write Long Characteristic Values (§4.9.4:
    /// Prepare Write in MTU−5 parts, then Execute Write) when the value exceeds MTU−3.
    /// Long and reliable writes never interleave with each other.
    public func write(handle: UInt16, value: [UInt8]) async throws(GATTError) {
        try await exchangeMTU()
        if value.count <= currentMTU() - 3 {
            guard case .write = try await request(.write(handle: handle, value: value)) else { throw wrongResponse(.writeRequest) }
            return
        }
        try await preparedWrite([ATTHandleValue(handle: handle, value: value)])
    }

    /// Write Without Response (§4.9.1): a Write Command, at most MTU−3 bytes.
    public func writeWithoutResponse(handle: UInt16, value: [UInt8]) async throws(GATTError) {
        try await exchangeMTU()
        let result: Result<Void, GATTError> = locked { s, fx in
            if let e = s.terminal { return .failure(e) }
            do throws(GATTError) {
                let actions = try s.att.writeCommand(handle: handle, value: value)
                apply(actions, &s, &fx)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Reliable Writes (§4.9.5): every value prepared (in parts when long), each echo
    /// checked, then executed; on a mismatch or error the queue is cancelled.
    public func reliableWrite(_ writes: [ATTHandleValue]) async throws(GATTError) {
        try await exchangeMTU()
        guard !writes.isEmpty else { return }
        try await preparedWrite(writes)
    }

    // MARK: Notifications and indications

    /// Subscribes to a characteristic's notifications (or indications with `indicate`):
    /// writes its CCCD (0x0001 / 0x0002) unless another subscriber already enabled that,
    /// and returns the values. The CCCD is cleared when the last stream for the
    /// characteristic ends (iteration finished, task cancelled, stream released).
    /// Descriptors are discovered first when the characteristic has none listed.
    public func subscribe(characteristic: GATTCharacteristic, indicate: Bool = false) async throws(GATTError)
        -> AsyncThrowingStream<GATTValue, Error>
    {
        try await exchangeMTU()
        let needed: GATTCharacteristicProperties = indicate ? .indicate : .notify
        guard characteristic.properties.contains(needed) else {
            throw .invalidRequest("characteristic \(characteristic.uuid) at 0x\(hex(characteristic.valueHandle, 4)) does not support \(indicate ? "indications" : "notifications")")
        }
        var cccd = characteristic.cccdHandle
        if cccd == nil {
            cccd = try await discoverDescriptors(of: characteristic)
                .first { $0.uuid == GATTAttributeType.clientCharacteristicConfiguration }?.handle
        }
        guard let cccd else {
            throw .invalidRequest("characteristic \(characteristic.uuid) at 0x\(hex(characteristic.valueHandle, 4)) has no Client Characteristic Configuration descriptor")
        }
        let id = subscriberIDs.add(1, ordering: .relaxed).oldValue
        let valueHandle = characteristic.valueHandle
        let result = await withCheckedContinuation { (c: ResponseContinuation) in
            locked { s, fx in
                if let e = s.terminal {
                    fx.append { c.resume(returning: .failure(e)) }
                    return
                }
                s.subscribers[id] = Subscriber(valueHandle: valueHandle, indicate: indicate)
                var entry = s.cccds[valueHandle] ?? CCCD(cccdHandle: cccd)
                entry.subscribers.append(id)
                s.cccds[valueHandle] = entry
                if !updateCCCD(valueHandle: valueHandle, waiter: .request(c), &s, &fx) {
                    fx.append { c.resume(returning: .success(.write)) }
                }
            }
        }
        switch result {
        case .success:
            let lifetime = SubscriptionLifetime(client: self, id: id)
            return AsyncThrowingStream(unfolding: { try await lifetime.next() })
        case .failure(let error):
            locked { s, fx in removeSubscriber(id, &s, &fx, writeFailed: true) }
            throw error
        }
    }

    /// Ends every subscription stream of `characteristic` and waits until its CCCD is
    /// cleared on the server, so a tool can disconnect right after, having unsubscribed
    /// cleanly. Does nothing when nobody is subscribed.
    public func unsubscribe(characteristic: GATTCharacteristic) async throws(GATTError) {
        let valueHandle = characteristic.valueHandle
        let result = await withCheckedContinuation { (c: ResponseContinuation) in
            locked { s, fx in
                guard let entry = s.cccds[valueHandle], !entry.subscribers.isEmpty else {
                    fx.append { c.resume(returning: .success(.write)) }
                    return
                }
                for id in entry.subscribers {
                    guard let sub = s.subscribers.removeValue(forKey: id) else { continue }
                    for e in sub.buffer { if let t = e.token { taken(t, &s, &fx) } }
                    if let w = sub.waiting { fx.append { w.resume(returning: .success(nil)) } }
                }
                s.cccds[valueHandle]?.subscribers = []
                if !updateCCCD(valueHandle: valueHandle, waiter: .request(c), &s, &fx) {
                    fx.append { c.resume(returning: .success(.write)) }
                }
            }
        }
        _ = try result.get()
    }

    // MARK: - Internals: the ATT request path

    func now() -> UInt64 { DeadlineTimer.now(since: clockBase) }

    private func currentMTU() -> Int { state.withLock { $0.att.mtu } }

    private func wrongResponse(_ request: ATTOpcode) -> GATTError {
        .malformedResponse(request: request, detail: "response of the wrong kind")
    }

    private func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
        if let v = uuid.uuid16 { return [UInt8(v & 0xFF), UInt8(v >> 8)] }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: uuid.low >> (8 * UInt64(i)))) }
        for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: uuid.high >> (8 * UInt64(i)))) }
        return out
    }

    /// Sends one request and waits for its response.
    func request(_ r: ATTRequest) async throws(GATTError) -> ATTResponse {
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
    private func locked<R: Sendable>(_ body: (inout State, inout [Effect]) -> R) -> R {
        var fx: [Effect] = []
        let r = state.withLock { s -> R in
            let r = body(&s, &fx)
            rearm(&s)
            return r
        }
        for f in fx { f() }
        return r
    }

    private func rearm(_ s: inout State) {
        s.timer.arm(s.terminal == nil ? s.att.nextDeadline : nil, base: clockBase) { [weak self] in self?.timerFired() }
    }

    private func timerFired() {
        locked { s, fx in
            let actions = s.att.timerFired(now: now())
            s.timer.fired()
            apply(actions, &s, &fx)
        }
    }

    private func received(_ pdu: UnsafeRawBufferPointer) {
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

    private func closed(_ reason: ATTBearerClosed) {
        locked { s, fx in
            let actions = s.att.bearerClosed(reason)
            apply(actions, &s, &fx)
            if s.terminal == nil { terminate(.bearerClosed(reason), &s, &fx) }
        }
    }

    private func apply(_ actions: [ATTClientAction], _ s: inout State, _ fx: inout [Effect]) {
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

    private func complete(_ id: ATTRequestID, _ result: Result<ATTResponse, GATTError>, _ s: inout State, _ fx: inout [Effect]) {
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

    private func terminate(_ error: GATTError, _ s: inout State, _ fx: inout [Effect]) {
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

    // MARK: Internals: subscribers

    private func deliver(handle: UInt16, value: [UInt8], indication: Bool, _ s: inout State, _ fx: inout [Effect]) {
        if indication, handle == s.serviceChangedHandle { serviceChanged(value, &s) }
        let ids = s.cccds[handle]?.subscribers ?? []
        guard !ids.isEmpty else {
            if handle != s.serviceChangedHandle { s.unhandledNotifications += 1 }
            if indication { apply(s.att.confirmIndication(), &s, &fx) }
            return
        }
        var token: UInt64?
        if indication {
            token = s.nextToken
            s.nextToken += 1
            s.indicationTakers[s.nextToken - 1] = ids.count
        }
        let item = GATTValue(handle: handle, value: value, isIndication: indication)
        for id in ids {
            guard var sub = s.subscribers[id] else { continue }
            if let w = sub.waiting {
                sub.waiting = nil
                var v = item
                v.droppedBefore = sub.dropped
                sub.dropped = 0
                s.subscribers[id] = sub
                fx.append { w.resume(returning: .success(v)) }
                if let token { taken(token, &s, &fx) }
                continue
            }
            if !indication, sub.bufferedNotifications >= options.notificationBufferSize,
               let oldest = sub.buffer.firstIndex(where: { $0.token == nil }) {
                sub.buffer.remove(at: oldest)
                sub.bufferedNotifications -= 1
                sub.dropped += 1
                s.droppedNotifications += 1
            }
            sub.buffer.append(Entry(value: item, token: token))
            if !indication { sub.bufferedNotifications += 1 }
            s.subscribers[id] = sub
        }
    }

    /// One subscriber took (or gave up) an indication; the last one confirms it.
    private func taken(_ token: UInt64, _ s: inout State, _ fx: inout [Effect]) {
        guard let n = s.indicationTakers[token] else { return }
        if n > 1 {
            s.indicationTakers[token] = n - 1
        } else {
            s.indicationTakers[token] = nil
            apply(s.att.confirmIndication(), &s, &fx)
        }
    }

    func nextValue(_ id: UInt64) async throws(GATTError) -> GATTValue? {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: ValueContinuation) in
                locked { s, fx in
                    guard var sub = s.subscribers[id] else {
                        fx.append { c.resume(returning: .success(nil)) }
                        return
                    }
                    if !sub.buffer.isEmpty {
                        let e = sub.buffer.removeFirst()
                        if e.token == nil { sub.bufferedNotifications -= 1 }
                        var v = e.value
                        v.droppedBefore = sub.dropped
                        sub.dropped = 0
                        s.subscribers[id] = sub
                        if let t = e.token { taken(t, &s, &fx) }
                        fx.append { c.resume(returning: .success(v)) }
                    } else if let e = sub.ended {
                        removeSubscriber(id, &s, &fx, writeFailed: false)
                        fx.append { c.resume(returning: .failure(e)) }
                    } else if Task.isCancelled {
                        removeSubscriber(id, &s, &fx, writeFailed: false)
                        fx.append { c.resume(returning: .success(nil)) }
                    } else {
                        sub.waiting = c
                        s.subscribers[id] = sub
                    }
                }
            }
        } onCancel: {
            subscriberEnded(id)
        }
        return try result.get()
    }

    func subscriberEnded(_ id: UInt64) {
        locked { s, fx in removeSubscriber(id, &s, &fx, writeFailed: false) }
    }

    private func removeSubscriber(_ id: UInt64, _ s: inout State, _ fx: inout [Effect], writeFailed: Bool) {
        guard let sub = s.subscribers.removeValue(forKey: id) else { return }
        for e in sub.buffer { if let t = e.token { taken(t, &s, &fx) } }
        if let w = sub.waiting { fx.append { w.resume(returning: .success(nil)) } }
        guard var entry = s.cccds[sub.valueHandle] else { return }
        entry.subscribers.removeAll { $0 == id }
        if writeFailed { entry.requested = 0 }
        s.cccds[sub.valueHandle] = entry
        if !writeFailed { _ = updateCCCD(valueHandle: sub.valueHandle, waiter: .ignore, &s, &fx) }
    }

    /// Writes the CCCD if the wanted bits changed; returns false when nothing was written.
    private func updateCCCD(valueHandle: UInt16, waiter: Waiter, _ s: inout State, _ fx: inout [Effect]) -> Bool {
        guard var entry = s.cccds[valueHandle], s.terminal == nil else { return false }
        var bits: UInt16 = entry.internalIndications ? 0x0002 : 0
        for id in entry.subscribers {
            if let sub = s.subscribers[id] { bits |= sub.indicate ? 0x0002 : 0x0001 }
        }
        guard bits != entry.requested else { return false }
        entry.requested = bits
        s.cccds[valueHandle] = entry
        let (id, actions) = s.att.submit(.write(handle: entry.cccdHandle, value: [UInt8(bits & 0xFF), UInt8(bits >> 8)]), now: now())
        s.waiters[id] = waiter
        apply(actions, &s, &fx)
        return true
    }

    // MARK: Internals: Service Changed

    private func enableServiceChanged(valueHandle: UInt16, cccdHandle: UInt16) async throws(GATTError) {
        let result = await withCheckedContinuation { (c: ResponseContinuation) in
            locked { s, fx in
                s.serviceChangedHandle = valueHandle
                var entry = s.cccds[valueHandle] ?? CCCD(cccdHandle: cccdHandle)
                entry.internalIndications = true
                s.cccds[valueHandle] = entry
                if !updateCCCD(valueHandle: valueHandle, waiter: .request(c), &s, &fx) {
                    fx.append { c.resume(returning: .success(.write)) }
                }
            }
        }
        if case .failure(let e) = result {
            // A server that refuses is still usable; only a dead bearer is an error here.
            switch e {
            case .attError, .malformedResponse, .invalidRequest: return
            case .transactionTimeout, .bearerClosed, .protocolViolation: throw e
            }
        }
    }

    private func serviceChanged(_ value: [UInt8], _ s: inout State) {
        let range: ClosedRange<UInt16>
        if value.count == 4 {
            let start = UInt16(value[0]) | UInt16(value[1]) << 8
            let end = UInt16(value[2]) | UInt16(value[3]) << 8
            range = min(start, end) ... max(start, end)
        } else {
            range = 0x0001 ... 0xFFFF
        }
        let cached = s.database != nil
        Task { [weak self] in await self?.rediscover(range, cached: cached) }
    }

    private func rediscover(_ range: ClosedRange<UInt16>, cached: Bool) async {
        guard cached else {
            databaseChangedContinuation.yield(GATTDatabaseChange(range: range, database: nil))
            return
        }
        do throws(GATTError) {
            let fresh = try await discoverDatabase(in: range)
            let db: GATTDatabase = locked { s, _ in
                var services = (s.database?.services ?? []).filter {
                    !($0.startHandle <= range.upperBound && range.lowerBound <= $0.endHandle)
                }
                services += fresh
                let db = GATTDatabase(services: services)
                s.database = db
                return db
            }
            databaseChangedContinuation.yield(GATTDatabaseChange(range: range, database: db))
        } catch {
            databaseChangedContinuation.yield(GATTDatabaseChange(range: range, database: nil, error: error))
        }
    }

    // MARK: Internals: discovery steps

    private func primaryServices(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTService] {
        var services: [GATTService] = []
        var start = range.lowerBound
        while true {
            let list: [ATTGroupValue]
            do throws(GATTError) {
                let r = try await request(.readByGroupType(start: start, end: range.upperBound, type: GATTAttributeType.primaryService))
                guard case .readByGroupType(let l) = r else { throw wrongResponse(.readByGroupTypeRequest) }
                list = l
            } catch {
                if error.attErrorCode == .attributeNotFound { break }
                throw error
            }
            var last = start
            for e in list {
                guard e.handle >= start, e.endGroupHandle >= e.handle, e.value.count == 2 || e.value.count == 16 else {
                    throw .malformedResponse(request: .readByGroupTypeRequest,
                                             detail: "bad service entry at 0x\(hex(e.handle, 4)) (end 0x\(hex(e.endGroupHandle, 4)), \(e.value.count)-byte UUID)")
                }
                let uuid = e.value.withUnsafeBytes { try? BluetoothUUID(wire: $0) } ?? BluetoothUUID(0)
                services.append(GATTService(startHandle: e.handle, endHandle: e.endGroupHandle, uuid: uuid))
                last = e.endGroupHandle
            }
            if last >= range.upperBound { break }
            start = last + 1
        }
        return services
    }

    /// One Read By Type request from `start` to `end` (Core Vol 3 Part G §4.5.1, §4.6.1,
    /// §4.8.2); nil when the server answers Attribute Not Found and `notFoundEnds` (no more
    /// attributes of that type), else that error is thrown like any other.
    private func readByTypePage(from start: UInt16, to end: UInt16, type: BluetoothUUID,
                                notFoundEnds: Bool = true) async throws(GATTError) -> [ATTHandleValue]? {
        do throws(GATTError) {
            let r = try await request(.readByType(start: start, end: end, type: type))
            guard case .readByType(let list) = r else { throw wrongResponse(.readByTypeRequest) }
            return list
        } catch {
            if notFoundEnds, error.attErrorCode == .attributeNotFound { return nil }
            throw error
        }
    }

    private func includes(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTIncludedService] {
        var out: [GATTIncludedService] = []
        var start = range.lowerBound
        while true {
            guard let list = try await readByTypePage(from: start, to: range.upperBound, type: GATTAttributeType.include) else { break }
            var last = start
            for e in list {
                let v = e.value
                guard e.handle >= start, v.count == 6 || v.count == 4 else {
                    throw .malformedResponse(request: .readByTypeRequest, detail: "bad «Include» declaration at 0x\(hex(e.handle, 4))")
                }
                let s = UInt16(v[0]) | UInt16(v[1]) << 8
                let end = UInt16(v[2]) | UInt16(v[3]) << 8
                var uuid = BluetoothUUID(0)
                if v.count == 6 {
                    uuid = BluetoothUUID(UInt16(v[4]) | UInt16(v[5]) << 8)
                } else {
                    // 128-bit UUID: read the included service's declaration (§4.5.1).
                    guard case .read(let u) = try await request(.read(handle: s)), u.count == 16 else {
                        throw .malformedResponse(request: .readRequest, detail: "included service declaration at 0x\(hex(s, 4)) is not a 128-bit UUID")
                    }
                    uuid = u.withUnsafeBytes { try? BluetoothUUID(wire: $0) } ?? uuid
                }
                out.append(GATTIncludedService(declarationHandle: e.handle, startHandle: s, endHandle: end, uuid: uuid))
                last = e.handle
            }
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    /// Characteristic declarations in `range`, with `endHandle` left at the range end.
    private func characteristicDeclarations(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTCharacteristic] {
        var out: [GATTCharacteristic] = []
        var start = range.lowerBound
        while true {
            guard let list = try await readByTypePage(from: start, to: range.upperBound, type: GATTAttributeType.characteristic) else { break }
            var last = start
            for e in list {
                let v = e.value
                guard e.handle >= start, v.count == 5 || v.count == 19 else {
                    throw .malformedResponse(request: .readByTypeRequest, detail: "bad «Characteristic» declaration at 0x\(hex(e.handle, 4))")
                }
                let valueHandle = UInt16(v[1]) | UInt16(v[2]) << 8
                let uuid = v[3...].withUnsafeBytes { try? BluetoothUUID(wire: $0) } ?? BluetoothUUID(0)
                guard valueHandle > e.handle else {
                    throw .malformedResponse(request: .readByTypeRequest, detail: "characteristic value handle 0x\(hex(valueHandle, 4)) not after its declaration 0x\(hex(e.handle, 4))")
                }
                out.append(GATTCharacteristic(declarationHandle: e.handle, valueHandle: valueHandle, endHandle: range.upperBound,
                                              uuid: uuid, properties: GATTCharacteristicProperties(rawValue: v[0])))
                last = e.handle
            }
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    private func findInformation(in range: ClosedRange<UInt16>) async throws(GATTError) -> [ATTHandleUUID] {
        var out: [ATTHandleUUID] = []
        var start = range.lowerBound
        while true {
            let list: [ATTHandleUUID]
            do throws(GATTError) {
                let r = try await request(.findInformation(start: start, end: range.upperBound))
                guard case .findInformation(let l) = r else { throw wrongResponse(.findInformationRequest) }
                list = l
            } catch {
                if error.attErrorCode == .attributeNotFound { break }
                throw error
            }
            guard let last = list.last?.handle, last >= start, list.allSatisfy({ range.contains($0.handle) }) else {
                throw .malformedResponse(request: .findInformationRequest, detail: "handles outside 0x\(hex(start, 4))-0x\(hex(range.upperBound, 4))")
            }
            out += list
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    /// Services, includes, characteristics and descriptors in `range`.
    private func discoverDatabase(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTService] {
        var services = try await primaryServices(in: range)
        guard let first = services.first?.startHandle, let last = services.map(\.endHandle).max() else { return [] }
        let span = first ... last

        // Included services (one Read By Type over every service), and the secondary
        // services they reach.
        for inc in try await includes(in: span) {
            if let i = services.firstIndex(where: { $0.contains(handle: inc.declarationHandle) }) {
                services[i].includedServices.append(inc)
            }
            if !services.contains(where: { $0.startHandle == inc.startHandle }) {
                services.append(GATTService(startHandle: inc.startHandle, endHandle: inc.endHandle, uuid: inc.uuid, isPrimary: false))
            }
        }
        services.sort { $0.startHandle < $1.startHandle }
        let all = (services.map(\.startHandle).min() ?? first) ... (services.map(\.endHandle).max() ?? last)

        // Characteristics (one Read By Type over everything), ends per §4.6.1.
        let decls = try await characteristicDeclarations(in: all)
        for (i, var c) in decls.enumerated() {
            guard let si = services.firstIndex(where: { $0.contains(handle: c.declarationHandle) }) else { continue }
            let serviceEnd = services[si].endHandle
            c.endHandle = i + 1 < decls.count ? min(decls[i + 1].declarationHandle - 1, serviceEnd) : serviceEnd
            services[si].characteristics.append(c)
        }

        // Descriptors: Find Information over the gaps after each value, neighbouring gaps
        // merged while one response could cover them; declarations and values found in
        // between are known and skipped. A gap holding a value with a 128-bit type is not
        // merged over: the response format would change there and cost a request anyway.
        let capacity = max(1, (currentMTU() - 2) / 4)
        var spans: [ClosedRange<UInt16>] = []
        var wideSinceLastSpan = false
        for s in services {
            for c in s.characteristics {
                if c.uuid.uuid16 == nil { wideSinceLastSpan = true }
                guard c.valueHandle < c.endHandle else { continue }
                let r = c.valueHandle + 1 ... c.endHandle
                if let lastSpan = spans.last, !wideSinceLastSpan,
                   Int(r.upperBound) - Int(lastSpan.lowerBound) + 1 <= capacity {
                    spans[spans.count - 1] = lastSpan.lowerBound ... r.upperBound
                } else {
                    spans.append(r)
                }
                wideSinceLastSpan = false
            }
        }
        for span in spans {
            for info in try await findInformation(in: span) {
                for si in services.indices where services[si].contains(handle: info.handle) {
                    if let ci = services[si].characteristics.firstIndex(where: { $0.valueHandle < info.handle && info.handle <= $0.endHandle }) {
                        services[si].characteristics[ci].descriptors.append(GATTDescriptor(handle: info.handle, uuid: info.uuid))
                    }
                }
            }
        }
        return services
    }

    // MARK: Internals: prepared writes

    private func acquireLongWrite() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            locked { s, fx in
                if s.longWriteBusy {
                    s.longWriteWaiters.append(c)
                } else {
                    s.longWriteBusy = true
                    fx.append { c.resume() }
                }
            }
        }
    }

    private func releaseLongWrite() {
        locked { s, fx in
            if s.longWriteWaiters.isEmpty {
                s.longWriteBusy = false
            } else {
                let next = s.longWriteWaiters.removeFirst()
                fx.append { next.resume() }
            }
        }
    }

    private func preparedWrite(_ writes: [ATTHandleValue]) async throws(GATTError) {
        await acquireLongWrite()
        defer { releaseLongWrite() }
        do throws(GATTError) {
            for w in writes {
                guard w.value.count <= Int(UInt16.max) else { throw .invalidRequest("value longer than 65535 bytes") }
                var offset = 0
                repeat {
                    let part = Array(w.value[offset ..< min(w.value.count, offset + currentMTU() - 5)])
                    let r = try await request(.prepareWrite(handle: w.handle, offset: UInt16(offset), value: part))
                    guard case .prepareWrite(let h, let o, let echoed) = r, h == w.handle, Int(o) == offset, echoed == part else {
                        throw .malformedResponse(request: .prepareWriteRequest,
                                                 detail: "Prepare Write Response does not echo handle 0x\(hex(w.handle, 4)) offset \(offset)")
                    }
                    offset += part.count
                } while offset < w.value.count
            }
            guard case .executeWrite = try await request(.executeWrite(.write)) else { throw wrongResponse(.executeWriteRequest) }
        } catch {
            switch error {
            case .attError, .malformedResponse, .invalidRequest:
                _ = try? await request(.executeWrite(.cancel))
            case .transactionTimeout, .bearerClosed, .protocolViolation:
                break
            }
            throw error
        }
    }
}

/// Keeps a subscription alive while its stream (or an iterator of it) exists.
final class SubscriptionLifetime: Sendable {
    let client: GATTClient
    let id: UInt64
    init(client: GATTClient, id: UInt64) {
        self.client = client
        self.id = id
    }
    deinit { client.subscriberEnded(id) }
    func next() async throws -> GATTValue? { try await client.nextValue(id) }
}
