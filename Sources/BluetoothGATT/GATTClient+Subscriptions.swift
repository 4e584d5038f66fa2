import BluetoothWire
import Synchronization

// Notifications and indications (Core Vol 3 Part G §4.10–4.11): reference-counted
// subscriptions with bounded per-subscriber buffers, and Service Changed (§7.1).
extension GATTClient {
    // MARK: Notifications and indications

    /// Subscribes to a characteristic's notifications (or indications with `indicate`):
    /// writes its CCCD (0x0001 / 0x0002) unless another subscriber already enabled that,
    /// and returns the values. The CCCD is cleared when the last stream for the
    /// characteristic ends (iteration finished, task cancelled, stream released).
    /// Descriptors are discovered first when the characteristic has none listed.
    public func subscribe(characteristic: GATTCharacteristic, indicate: Bool = false) async throws(GATTError)
        -> AsyncThrowingStream<GATTValue, Error>
    {
        do {
            return try await subscribeOnce(characteristic: characteristic, indicate: indicate)
        } catch {
            // A CCCD that needs encryption: raise security once and write it again.
            guard await raiseSecurityToRetry(after: error) else { throw error }
            return try await subscribeOnce(characteristic: characteristic, indicate: indicate)
        }
    }

    /// Subscribes to several characteristics on one stream: the values come in the order the
    /// server sent them, whichever characteristic they are of (``GATTValue/handle`` tells),
    /// which separate streams cannot promise. What a control point procedure needs: records
    /// on their characteristics, then the control point's answer (Record Access Control
    /// Point, Core Vol 3 Part G §4.10–4.11 for the values). Each pair is a characteristic and
    /// whether to take indications (else notifications). The CCCDs are written in order; one
    /// that fails clears those written and throws.
    public func subscribe(_ characteristics: [(GATTCharacteristic, indicate: Bool)]) async throws(GATTError)
        -> AsyncThrowingStream<GATTValue, Error>
    {
        var handles = Set<UInt16>()
        for (c, _) in characteristics where !handles.insert(c.valueHandle).inserted {
            throw .invalidRequest("characteristic \(c.uuid) at 0x\(hex(c.valueHandle, 4)) is named twice for one stream")
        }
        let id = subscriberIDs.add(1, ordering: .relaxed).oldValue
        for (c, indicate) in characteristics {
            do {
                try await addSubscription(id, characteristic: c, indicate: indicate)
            } catch {
                guard await raiseSecurityToRetry(after: error) else {
                    subscriberEnded(id)
                    throw error
                }
                do { try await addSubscription(id, characteristic: c, indicate: indicate) } catch {
                    subscriberEnded(id)
                    throw error
                }
            }
        }
        let lifetime = SubscriptionLifetime(client: self, id: id)
        return AsyncThrowingStream(unfolding: { try await lifetime.next() })
    }

    /// ``subscribe(characteristic:indicate:)`` as a ``GATTSubscription``, which its owner
    /// can end without losing a value: what was received (and, for indications, confirmed
    /// to the server) before the CCCD is cleared is still handed out.
    public func subscription(to characteristic: GATTCharacteristic, indicate: Bool = false) async throws(GATTError)
        -> GATTSubscription
    {
        func once() async throws(GATTError) -> GATTSubscription {
            let id = subscriberIDs.add(1, ordering: .relaxed).oldValue
            try await addSubscription(id, characteristic: characteristic, indicate: indicate, takingEarlyIndications: true)
            return GATTSubscription(SubscriptionLifetime(client: self, id: id))
        }
        do {
            return try await once()
        } catch {
            guard await raiseSecurityToRetry(after: error) else { throw error }
            return try await once()
        }
    }

    /// Takes subscriber `id` off its characteristics (their CCCDs cleared when nobody else
    /// wants them, each write waited for); its stream hands out what it holds, then ends.
    func finishSubscriber(_ id: UInt64) async throws(GATTError) {
        // Until the server has the CCCD write, values still come: the subscriber keeps taking
        // them (confirmed indications must not be lost), but no longer counts for the bits.
        let started: [UInt16]? = locked { s, _ in
            // Ended already (or ending): the first end() finishes it.
            guard var sub = s.subscribers[id], sub.finishing == nil else { return nil }
            sub.finishing = .clearing
            s.subscribers[id] = sub
            return sub.handles.keys.sorted()
        }
        guard let handles = started else { return }
        var failure: GATTError?
        for h in handles {
            let result = await withCheckedContinuation { (c: ResponseContinuation) in
                locked { s, fx in
                    if !updateCCCD(valueHandle: h, waiter: .request(c), &s, &fx) {
                        fx.append { c.resume(returning: .success(.write)) }
                    }
                }
            }
            if case .failure(let e) = result, failure == nil { failure = e }
        }
        locked { s, fx in
            guard var sub = s.subscribers[id] else { return }
            for h in sub.handles.keys { s.cccds[h]?.subscribers.removeAll { $0 == id } }
            sub.handles = [:]
            sub.finishing = .cleared
            s.subscribers[id] = sub
            if sub.buffer.isEmpty, let w = sub.waiting {
                s.subscribers[id] = nil
                fx.append { w.resume(returning: .success(nil)) }
            }
        }
        if let failure { throw failure }
    }

    func subscribeOnce(characteristic: GATTCharacteristic, indicate: Bool) async throws(GATTError)
        -> AsyncThrowingStream<GATTValue, Error>
    {
        let id = subscriberIDs.add(1, ordering: .relaxed).oldValue
        try await addSubscription(id, characteristic: characteristic, indicate: indicate)
        let lifetime = SubscriptionLifetime(client: self, id: id)
        return AsyncThrowingStream(unfolding: { try await lifetime.next() })
    }

    /// Adds `characteristic` to subscriber `id` (made on the first) and writes its CCCD when
    /// the wanted bits change; on failure the characteristic is taken off again.
    func addSubscription(_ id: UInt64, characteristic: GATTCharacteristic, indicate: Bool,
                         takingEarlyIndications: Bool = false) async throws(GATTError) {
        try await exchangeMTU()
        let needed: GATTCharacteristicProperties = indicate ? .indicate : .notify
        guard characteristic.properties.contains(needed) else {
            let props = characteristic.properties
            let what = props.isDisjoint(with: [.notify, .indicate]) ? "can neither notify nor indicate"
                : "does not support \(indicate ? "indications" : "notifications")"
            throw .invalidRequest("characteristic \(characteristic.uuid) at 0x\(hex(characteristic.valueHandle, 4)) \(what) (its properties: \(props.names.isEmpty ? "none" : props.names.joined(separator: ", ")))")
        }
        var cccd = characteristic.cccdHandle
        if cccd == nil {
            cccd = try await discoverDescriptors(of: characteristic)
                .first { $0.uuid == GATTAttributeType.clientCharacteristicConfiguration }?.handle
        }
        guard let cccd else {
            throw .invalidRequest("characteristic \(characteristic.uuid) at 0x\(hex(characteristic.valueHandle, 4)) has no Client Characteristic Configuration descriptor")
        }
        let valueHandle = characteristic.valueHandle
        let result = await withCheckedContinuation { (c: ResponseContinuation) in
            locked { s, fx in
                if let e = s.terminal {
                    fx.append { c.resume(returning: .failure(e)) }
                    return
                }
                var sub = s.subscribers[id] ?? Subscriber(handles: [:])
                sub.handles[valueHandle] = indicate
                s.subscribers[id] = sub
                var entry = s.cccds[valueHandle] ?? CCCD(cccdHandle: cccd)
                entry.subscribers.append(id)
                s.cccds[valueHandle] = entry
                if !updateCCCD(valueHandle: valueHandle, waiter: .request(c), &s, &fx) {
                    fx.append { c.resume(returning: .success(.write)) }
                }
            }
        }
        if case .success = result, takingEarlyIndications, indicate {
            // What the device indicated before anyone subscribed comes first (confirmed
            // already: a token nobody counts), once the subscription stands.
            locked { s, fx in
                guard var sub = s.subscribers[id], let early = s.earlyIndications.take(valueHandle) else { return }
                sub.buffer.insert(contentsOf: early.map { Entry(value: $0, token: Self.confirmedAlready) }, at: 0)
                s.subscribers[id] = sub
                if let w = sub.waiting {
                    let e = sub.buffer.removeFirst()
                    sub.waiting = nil
                    s.subscribers[id] = sub
                    fx.append { w.resume(returning: .success(e.value)) }
                }
            }
        }
        if case .failure(let error) = result {
            locked { s, fx in
                // Only this characteristic's write failed: the stream's others stay as written.
                s.subscribers[id]?.handles[valueHandle] = nil
                if s.subscribers[id]?.handles.isEmpty == true { removeSubscriber(id, &s, &fx, writeFailed: false) }
                s.cccds[valueHandle]?.subscribers.removeAll { $0 == id }
                s.cccds[valueHandle]?.requested = 0
            }
            throw error
        }
    }

    /// Ends every subscription stream of `characteristic` (a stream of several
    /// characteristics goes on with the others) and waits until its CCCD is
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
                    guard var sub = s.subscribers[id] else { continue }
                    if sub.handles.count > 1 {
                        // A stream of several characteristics goes on with the others.
                        sub.handles[valueHandle] = nil
                        s.subscribers[id] = sub
                        continue
                    }
                    s.subscribers[id] = nil
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

    // MARK: Internals: subscribers

    /// The most indications kept per characteristic before anyone subscribes to it.
    static var earlyIndicationLimit: Int { EarlyIndications.perHandle }
    /// The token of an indication confirmed when it came (``taken(_:_:_:)`` ignores it).
    static var confirmedAlready: UInt64 { .max }

    func deliver(handle: UInt16, value: [UInt8], indication: Bool, _ s: inout State, _ fx: inout [Effect]) {
        if indication, handle == s.serviceChangedHandle { serviceChanged(value, &s) }
        let ids = s.cccds[handle]?.subscribers ?? []
        guard !ids.isEmpty else {
            if let taker = options.unsubscribedValues {
                let v = GATTValue(handle: handle, value: value, isIndication: indication)
                fx.append { taker(v) }
            } else if handle != s.serviceChangedHandle {
                s.unhandledNotifications += 1
                if indication { s.earlyIndications.keep(GATTValue(handle: handle, value: value, isIndication: true), database: s.database) }
            }
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
                // The confirmation goes out before the consumer runs: what it sends next (a
                // new control point request) must not overtake it on the bearer.
                if let token { taken(token, &s, &fx) }
                fx.append { w.resume(returning: .success(v)) }
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
    func taken(_ token: UInt64, _ s: inout State, _ fx: inout [Effect]) {
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
                    } else if sub.finishing == .cleared {
                        removeSubscriber(id, &s, &fx, writeFailed: false)
                        fx.append { c.resume(returning: .success(nil)) }
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

    func removeSubscriber(_ id: UInt64, _ s: inout State, _ fx: inout [Effect], writeFailed: Bool) {
        guard let sub = s.subscribers.removeValue(forKey: id) else { return }
        for e in sub.buffer { if let t = e.token { taken(t, &s, &fx) } }
        if let w = sub.waiting { fx.append { w.resume(returning: .success(nil)) } }
        for valueHandle in sub.handles.keys.sorted() {
            guard var entry = s.cccds[valueHandle] else { continue }
            entry.subscribers.removeAll { $0 == id }
            if writeFailed { entry.requested = 0 }
            s.cccds[valueHandle] = entry
            if !writeFailed { _ = updateCCCD(valueHandle: valueHandle, waiter: .ignore, &s, &fx) }
        }
    }

    /// Writes the CCCD if the wanted bits changed; returns false when nothing was written.
    func updateCCCD(valueHandle: UInt16, waiter: Waiter, _ s: inout State, _ fx: inout [Effect]) -> Bool {
        guard var entry = s.cccds[valueHandle], s.terminal == nil else { return false }
        var bits: UInt16 = entry.internalIndications ? 0x0002 : 0
        for id in entry.subscribers where s.subscribers[id]?.finishing == nil {
            if let indicate = s.subscribers[id]?.handles[valueHandle] { bits |= indicate ? 0x0002 : 0x0001 }
        }
        guard bits != entry.requested else { return false }
        // Cleared by us: what the device indicated before is not for a later subscription.
        if entry.requested & 0x0002 != 0, bits & 0x0002 == 0 { s.earlyIndications.drop(valueHandle) }
        entry.requested = bits
        s.cccds[valueHandle] = entry
        let (id, actions) = s.att.submit(.write(handle: entry.cccdHandle, value: [UInt8(bits & 0xFF), UInt8(bits >> 8)]), now: now())
        s.waiters[id] = waiter
        apply(actions, &s, &fx)
        return true
    }

    // MARK: Internals: Service Changed

    func enableServiceChanged(valueHandle: UInt16, cccdHandle: UInt16) async throws(GATTError) {
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

    func serviceChanged(_ value: [UInt8], _ s: inout State) {
        // Handles may have moved: early values can no longer be placed.
        s.earlyIndications.removeAll()
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

    func rediscover(_ range: ClosedRange<UInt16>, cached: Bool) async {
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

}

/// Keeps a subscription alive while its stream (or an iterator of it) exists.
/// One subscription's values (``GATTClient/subscription(to:indicate:)``), which its owner
/// ends with ``end()``: the CCCD is cleared (unless another stream wants the values) and
/// what arrived before that is still handed out, then the sequence ends. Released or
/// cancelled unfinished, it ends as a ``GATTClient/subscribe(characteristic:indicate:)``
/// stream does.
public struct GATTSubscription: AsyncSequence, Sendable {
    public typealias Element = GATTValue
    let lifetime: SubscriptionLifetime

    init(_ lifetime: SubscriptionLifetime) { self.lifetime = lifetime }

    /// Hands out the values in order; nil once ended.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let lifetime: SubscriptionLifetime
        public mutating func next() async throws -> GATTValue? { try await lifetime.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(lifetime: lifetime) }

    /// Stops the values: returns once the CCCD write is answered (at once when another
    /// stream still wants them). Values received before are still handed out.
    public func end() async throws(GATTError) { try await lifetime.client.finishSubscriber(lifetime.id) }
}

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
