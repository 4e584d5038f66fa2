import BluetoothHost
import BluetoothTransport
import BluetoothWire
import Synchronization

/// A client of a ``GATTServer``: one ATT bearer and who is behind it.
public struct GATTServerClient: Sendable, Hashable, CustomStringConvertible {
    /// The server's handle on the client.
    public var id: ATTServerClientID
    /// The peer ("F0:F1:F2:F3:F4:01 (public)"), as its bearer describes it.
    public var peer: String
    public var description: String { peer }
}

/// What happened on a ``GATTServer``, in order.
public enum GATTServerEvent: Sendable {
    case connected(GATTServerClient)
    /// The bearer closed; `reason` says why ("disconnected by the peer: ...").
    case disconnected(GATTServerClient, reason: String)
    case mtuChanged(GATTServerClient, mtu: Int)
    /// A characteristic value or descriptor was written.
    case wrote(GATTServerClient, handle: UInt16, value: [UInt8], withResponse: Bool)
    /// The client enabled or disabled notifications/indications of the value at `valueHandle`.
    case subscriptionChanged(GATTServerClient, valueHandle: UInt16, GATTClientConfiguration)
    case indicationConfirmed(GATTServerClient, handle: UInt16)
    /// No confirmation within 30 s: the server closed the client's bearer.
    case indicationTimedOut(GATTServerClient, handle: UInt16)
    /// The client sent something malformed or unexpected (dropped; no answer was due).
    case peerFault(GATTServerClient, String)
    /// A bonded client's link was encrypted with its bond and what it configured before
    /// came back: `subscriptions` CCCDs; `serviceChanged` when the database changed since
    /// and a Service Changed indication went out.
    case bondRestored(GATTServerClient, subscriptions: Int, serviceChanged: Bool)
}

/// Why a value update did not reach a client.
public enum GATTServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server state machine refused (not subscribed, unknown handle, dead bearer...).
    case server(ATTServerError)
    /// The bearer refused the PDU (link down, or its send queue is full: try later).
    case bearer(ATTBearerClosed)
    /// Too many indications wait for this client's confirmations.
    case indicationQueueFull(ATTServerClientID)
    /// The client's link has too much queued already: nothing was sent (see
    /// ``GATTServer/notifyWhenReady(_:value:to:store:)``, which waits instead).
    case sendQueueFull(ATTServerClientID)

    public var description: String {
        switch self {
        case .server(let e): e.description
        case .bearer(let e): e.description
        case .indicationQueueFull(let c): "too many indications wait for \(c) to confirm"
        case .sendQueueFull(let c): "the link to \(c) has too much queued; the notification was not sent"
        }
    }
}

/// A GATT server (Core Vol 3 Part G) on any number of ATT bearers: the ``ATTServer`` state
/// machine under a lock, fed by each bearer's receive callback, its PDUs sent after the lock
/// is released. Shaped like CoreBluetooth's `CBPeripheralManager`: a database of services,
/// events for writes and subscriptions, and value updates sent to subscribed clients.
///
/// Back-pressure: ``notify(_:value:to:)`` fails with `.bearer` when a link's send queue is
/// full instead of growing memory; ``indicate(_:value:to:)`` waits for the confirmation and
/// keeps at most ``indicationQueueLimit`` waiting per client.
public final class GATTServer: Sendable {
    struct Client {
        var info: GATTServerClient
        var bearer: any ATTBearer
        /// Indications waiting for the one outstanding to be confirmed.
        var queued: [(handle: UInt16, value: [UInt8], done: CheckedContinuation<Result<Void, GATTServerError>, Never>,
                      confirmed: (@Sendable () -> Void)?)] = []
        var outstanding: CheckedContinuation<Result<Void, GATTServerError>, Never>?
        /// Called when the outstanding indication is confirmed, before the client's next PDU.
        var outstandingConfirmed: (@Sendable () -> Void)?
        /// The bonded state was looked up (restored if there was one).
        var restored = false
        /// The bonded state last handed to ``GATTBondedClients``.
        var saved: ATTBondedClientState?
        /// The CSRK its signed writes are verified with (the bond's, at attach).
        var signingCSRK: UInt128?
    }

    struct State {
        var server: ATTServer
        var clients: [ATTServerClientID: Client] = [:]
        var nextID: UInt64 = 1
        var timer = DeadlineTimer()
        var droppedEvents = 0
    }

    typealias Effect = () -> Void

    /// Indications that may wait per client behind the outstanding one.
    public static let indicationQueueLimit = 32

    private let state: Mutex<State>
    /// Everything that happens, in order; buffers the newest 4096 (older ones are counted
    /// in ``droppedEvents``).
    public let events: AsyncStream<GATTServerEvent>
    private let eventSink: AsyncStream<GATTServerEvent>.Continuation
    /// The attribute layout (handles of every service, characteristic and descriptor).
    public let layout: GATTDatabase

    /// Where bonded clients' CCCDs, features and change-awareness are kept (nil: forgotten
    /// with each connection).
    public let bondedClients: GATTBondedClients?

    /// A server of `services` (with `options`); `bondedClients` keeps bonded clients'
    /// subscriptions across connections.
    public init(services: [GATTLocalService], options: ATTServer.Options = .init(),
                bondedClients: GATTBondedClients? = nil) throws(GATTDatabaseError) {
        self.bondedClients = bondedClients
        let table = try GATTAttributeTable(services: services)
        layout = table.layout
        state = Mutex(State(server: ATTServer(table: table, options: options)))
        (events, eventSink) = AsyncStream.makeStream(of: GATTServerEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    deinit {
        state.withLock { $0.timer.cancel() }
        eventSink.finish()
    }

    /// The ATT_MTU in use with `client` (nil: not a client): a notification carries at most
    /// ATT_MTU - 3 bytes of value.
    public func mtu(of client: ATTServerClientID) -> Int? { state.withLock { $0.server.mtu(of: client) } }

    /// Events that did not fit the event buffer.
    public var droppedEvents: Int { state.withLock { $0.droppedEvents } }
    /// The Database Hash (most significant octet first).
    public var databaseHash: [UInt8] { state.withLock { $0.server.table.hash } }
    /// Connected clients.
    public var clients: [GATTServerClient] { state.withLock { s in s.server.clients.compactMap { s.clients[$0]?.info } } }

    /// The value handle of the first characteristic with `uuid` (in `service`, if given).
    public func valueHandle(of uuid: BluetoothUUID, in service: BluetoothUUID? = nil) -> UInt16? {
        layout.services.lazy.filter { service == nil || $0.uuid == service }
            .flatMap(\.characteristics).first { $0.uuid == uuid }?.valueHandle
    }

    /// Clients subscribed to the value at `handle`.
    public func subscribers(of handle: UInt16) -> [(GATTServerClient, GATTClientConfiguration)] {
        state.withLock { s in s.server.subscribers(of: handle).compactMap { id, c in s.clients[id].map { ($0.info, c) } } }
    }

    // MARK: Bearers

    /// Serves `bearer` (its server side). Returns the client it became.
    @discardableResult
    public func attach(_ bearer: any ATTBearer) -> GATTServerClient {
        let signing = signingKey(for: bearer)
        let info: GATTServerClient = locked { s, fx in
            let id = ATTServerClientID(rawValue: s.nextID)
            s.nextID &+= 1
            let info = GATTServerClient(id: id, peer: bearer.description)
            s.server.connect(id, security: bearer.security)
            if let signing { s.server.setSigningKey(signing, for: id) }
            s.clients[id] = Client(info: info, bearer: bearer, signingCSRK: signing?.csrk.reduce(UInt128(0)) { $0 << 8 | UInt128($1) })
            emit(.connected(info), &s)
            return info
        }
        if bondedClients != nil {
            bearer.observeSecurity { [weak self] security in self?.securityChanged(info.id, security) }
        }
        bearer.start(received: { [weak self] pdu in self?.received(info.id, pdu) },
                     closed: { [weak self] reason in self?.closed(info.id, reason) })
        if bondedClients != nil, bearer.security.bonded { securityChanged(info.id, bearer.security) }
        return info
    }

    /// A bonded peer that distributed a CSRK may sign its writes on an unencrypted link,
    /// unless its SignCounters could not be read (any counter would pass: replays).
    private func signingKey(for bearer: any ATTBearer) -> ATTSigningKey? {
        guard let clients = bondedClients, let identity = bearer.peerIdentity, !clients.countersUnreadable(for: identity),
              let bond = try? clients.store.bond(for: identity), let csrk = bond.peerCSRK else { return nil }
        let strength = LinkSecurity(encrypted: true, keySize: Int(bond.keySize), authenticated: bond.authenticated,
                                    secureConnections: bond.secureConnections, bonded: true)
        let bytes = (0 ..< 16).map { UInt8(truncatingIfNeeded: csrk >> (8 * (15 - UInt128($0)))) }
        return ATTSigningKey(csrk: bytes, lastCounter: clients.signCounters(for: identity).lastPeer(for: csrk), security: strength)
    }

    private func securityChanged(_ id: ATTServerClientID, _ security: LinkSecurity) {
        locked { s, fx in
            guard s.clients[id] != nil else { return }
            s.server.setSecurity(security, for: id)
            keepBondedState(id, &s, &fx)
        }
    }

    /// For a client on a link encrypted with its bond: first brings back what it configured
    /// before (and sends Service Changed if it missed a change), then hands any change of
    /// its state to ``bondedClients`` to keep.
    private func keepBondedState(_ id: ATTServerClientID, _ s: inout State, _ fx: inout [Effect]) {
        guard let store = bondedClients, var cl = s.clients[id] else { return }
        let security = cl.bearer.security
        guard security.encrypted, security.bonded, let identity = cl.bearer.peerIdentity else { return }
        if !cl.restored {
            cl.restored = true
            if let kept = store.state(for: identity) {
                let due = s.server.restore(id, kept)
                let subscriptions = s.server.bondedState(of: id)?.configurations.count ?? 0
                emit(.bondRestored(cl.info, subscriptions: subscriptions, serviceChanged: due), &s)
                if due, let handle = s.server.table.serviceChangedHandle {
                    // The whole range: what changed while it was away is not known.
                    fx.append { [weak self] in
                        Task { try? await self?.indicate(handle, value: [0x01, 0x00, 0xFF, 0xFF], to: id, store: false) }
                    }
                }
            }
        }
        if let now = s.server.bondedState(of: id), now != cl.saved {
            cl.saved = now
            fx.append { store.update(now, for: identity) }
        }
        s.clients[id] = cl
    }

    /// Serves the ATT channel of a link of our host (the server side of its bearer).
    @discardableResult
    public func attach(_ connection: LEConnection) -> GATTServerClient {
        attach(HostATTBearer(connection: connection, role: .server))
    }

    // MARK: Values

    /// Sets a stored value (what clients read next). Does not notify.
    public func setValue(_ value: [UInt8], for handle: UInt16) throws(ATTServerError) {
        let r: Result<Void, ATTServerError> = state.withLock { s in
            do throws(ATTServerError) { try s.server.setValue(value, for: handle); return .success(()) } catch { return .failure(error) }
        }
        try r.get()
    }

    /// Like ``notify(_:value:to:store:)``, but first waits until every target's link has
    /// room for the notification, so a fast producer is held back by the slowest link
    /// instead of losing updates or growing memory.
    @discardableResult
    public func notifyWhenReady(_ handle: UInt16, value: [UInt8], to clients: [ATTServerClientID]? = nil,
                                store: Bool = true) async -> (sent: [ATTServerClientID], failed: [(ATTServerClientID, GATTServerError)]) {
        let bearers: [any ATTBearer] = state.withLock { s in
            let ids = clients ?? s.server.subscribers(of: handle).filter { $0.1.contains(.notify) }.map(\.0)
            return ids.compactMap { s.clients[$0]?.bearer }
        }
        let bytes = 3 + value.count
        for bearer in bearers where !bearer.hasRoom(for: bytes) { await bearer.waitForRoom(for: bytes) }
        return notify(handle, value: value, to: clients, store: store)
    }

    /// A held update released (the client became change-aware): once `client`'s link has
    /// room, the value stored at `handle` when the PDU is built, so an update the
    /// application sent meanwhile is never followed by an older value.
    private func notifyStoredWhenReady(_ handle: UInt16, to client: ATTServerClientID) async {
        let found: (any ATTBearer, Int)? = state.withLock { s in
            guard let bearer = s.clients[client]?.bearer, let v = s.server.table.storedValue(handle) else { return nil }
            return (bearer, 3 + v.count)
        }
        guard let (bearer, bytes) = found else { return }
        if !bearer.hasRoom(for: bytes) { await bearer.waitForRoom(for: bytes) }
        _ = send(handle, value: nil, to: [client], store: false)
    }

    /// Stores `value` and sends it as a notification to every client that enabled
    /// notifications of `handle` (or only `clients`). Returns the clients it was sent to;
    /// failures per client are in the second list: `.sendQueueFull` when the client's link
    /// has too much queued (nothing grows without bound; ``notifyWhenReady(_:value:to:store:)``
    /// waits instead).
    @discardableResult
    public func notify(_ handle: UInt16, value: [UInt8], to clients: [ATTServerClientID]? = nil,
                       store: Bool = true) -> (sent: [ATTServerClientID], failed: [(ATTServerClientID, GATTServerError)]) {
        send(handle, value: value, to: clients, store: store)
    }

    /// ``notify(_:value:to:store:)``; `given` nil sends the value stored at `handle` when the
    /// PDU is built (nothing when only a read handler makes it).
    private func send(_ handle: UInt16, value given: [UInt8]?, to clients: [ATTServerClientID]?,
                      store: Bool) -> (sent: [ATTServerClientID], failed: [(ATTServerClientID, GATTServerError)]) {
        // PDUs are built under the lock and sent under it when the bearer only queues (our
        // host's links), else after it (a socket's send may block); then concurrent
        // callers' updates may interleave, each one's staying in order.
        var failed: [(ATTServerClientID, GATTServerError)] = []
        var sentNow: [ATTServerClientID] = []
        let outgoing: [(ATTServerClientID, any ATTBearer, [UInt8])] = locked { s, fx in
            guard let value = given ?? s.server.table.storedValue(handle) else { return [] }
            if store { try? s.server.setValue(value, for: handle) }
            var out: [(ATTServerClientID, any ATTBearer, [UInt8])] = []
            let targets = clients ?? s.server.subscribers(of: handle).filter { $0.1.contains(.notify) }.map(\.0)
            for id in targets {
                guard let bearer = s.clients[id]?.bearer else {
                    failed.append((id, .server(.unknownClient(id))))
                    continue
                }
                // At most opcode, handle and the value (cut to ATT_MTU - 3 when longer).
                guard bearer.hasRoom(for: 3 + value.count) else {
                    failed.append((id, .sendQueueFull(id)))
                    continue
                }
                var pdu: [UInt8] = []
                do throws(ATTServerError) {
                    pdu = try Self.pdu { (o) throws(ATTServerError) in try s.server.notify(id, handle: handle, value: value, into: &o) }
                } catch {
                    failed.append((id, .server(error)))
                    continue
                }
                guard bearer.sendsWithoutBlocking else {
                    out.append((id, bearer, pdu))
                    continue
                }
                do throws(ATTBearerClosed) {
                    try bearer.send(pdu)
                    sentNow.append(id)
                } catch {
                    failed.append((id, .bearer(error)))
                }
            }
            return out
        }
        var sent = sentNow
        for (id, bearer, pdu) in outgoing {
            do throws(ATTBearerClosed) {
                try bearer.send(pdu)
                sent.append(id)
            } catch {
                failed.append((id, .bearer(error)))
            }
        }
        return (sent, failed)
    }

    /// Stores and notifies several values to one client at once: one ATT_MULTIPLE_HANDLE_VALUE_NTF
    /// (Core Vol 3 Part F §3.4.7.4) per ATT_MTU's worth when the client enabled that feature
    /// in Client Supported Features, else one notification each. Every handle must be
    /// subscribed to (notify). Returns how many values were sent.
    @discardableResult
    public func notify(_ values: [(handle: UInt16, value: [UInt8])], to client: ATTServerClientID,
                       store: Bool = true) throws(GATTServerError) -> Int {
        let r: Result<([[UInt8]], any ATTBearer, Int), GATTServerError> = locked { s, fx in
            guard let bearer = s.clients[client]?.bearer else { return .failure(.server(.unknownClient(client))) }
            if store { for v in values { try? s.server.setValue(v.value, for: v.handle) } }
            var pdus: [[UInt8]] = []
            var count = 0
            do throws(ATTServerError) {
                if s.server.features(of: client)?.contains(.multipleHandleValueNotifications) == true {
                    var rest = values[...]
                    while !rest.isEmpty {
                        var n = 0
                        let multiple = try Self.pdu { (o) throws(ATTServerError) in n = try s.server.notifyMultiple(client, Array(rest), into: &o) }
                        // A value too long for one PDU goes as a notification of its own (cut).
                        if n == 0 {
                            guard let v = rest.first else { break }
                            pdus.append(try Self.pdu { (o) throws(ATTServerError) in _ = try s.server.notify(client, handle: v.handle, value: v.value, into: &o) })
                            rest = rest.dropFirst()
                            count += 1
                            continue
                        }
                        pdus.append(multiple)
                        count += n
                        rest = rest.dropFirst(n)
                    }
                } else {
                    for v in values {
                        pdus.append(try Self.pdu { (o) throws(ATTServerError) in _ = try s.server.notify(client, handle: v.handle, value: v.value, into: &o) })
                        count += 1
                    }
                }
            } catch {
                return .failure(.server(error))
            }
            let bytes = pdus.reduce(0) { $0 + $1.count }
            guard bearer.hasRoom(for: bytes) else { return .failure(.sendQueueFull(client)) }
            if bearer.sendsWithoutBlocking {
                for p in pdus {
                    do throws(ATTBearerClosed) { try bearer.send(p) } catch { return .failure(.bearer(error)) }
                }
                return .success(([], bearer, count))
            }
            return .success((pdus, bearer, count))
        }
        let (later, bearer, count) = try r.get()
        for p in later {
            do throws(ATTBearerClosed) { try bearer.send(p) } catch { throw .bearer(error) }
        }
        return count
    }

    /// Sends `value` as an indication to one client and returns once it is confirmed (or
    /// fails: not subscribed, bearer gone, confirmation timeout). One indication is
    /// outstanding per client; later ones wait in order.
    public func indicate(_ handle: UInt16, value: [UInt8], to client: ATTServerClientID, store: Bool = true) async throws(GATTServerError) {
        try await enqueueIndication(handle, value: value, to: client, store: store)
    }

    /// ``indicate(_:value:to:store:)``, with `confirmed` called the moment the confirmation
    /// is taken, inside the server, before any later request of that client is handled: a
    /// control point whose procedure ends with this indication is idle for the next request
    /// (the caller's task resumes later). `confirmed` must not call the server.
    public func indicate(_ handle: UInt16, value: [UInt8], to client: ATTServerClientID, store: Bool = true,
                         confirmed: @escaping @Sendable () -> Void) async throws(GATTServerError) {
        try await enqueueIndication(handle, value: value, to: client, store: store, confirmed: confirmed)
    }

    /// ``indicate(_:value:to:store:)``; `given` nil queues the value stored at `handle` now
    /// (a held update released: an indication the application queues later follows it).
    private func enqueueIndication(_ handle: UInt16, value given: [UInt8]?, to client: ATTServerClientID,
                                   store: Bool, confirmed: (@Sendable () -> Void)? = nil) async throws(GATTServerError) {
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, GATTServerError>, Never>) in
            locked { s, fx in
                guard let value = given ?? s.server.table.storedValue(handle) else {
                    fx.append { c.resume(returning: .success(())) }
                    return
                }
                if store { try? s.server.setValue(value, for: handle) }
                guard var cl = s.clients[client] else {
                    fx.append { c.resume(returning: .failure(.server(.unknownClient(client)))) }
                    return
                }
                guard s.server.configuration(of: client, valueHandle: handle).contains(.indicate) else {
                    fx.append { c.resume(returning: .failure(.server(.notSubscribed(client, handle: handle)))) }
                    return
                }
                guard cl.queued.count < Self.indicationQueueLimit else {
                    fx.append { c.resume(returning: .failure(.indicationQueueFull(client))) }
                    return
                }
                cl.queued.append((handle, value, c, confirmed))
                s.clients[client] = cl
                pumpIndications(client, &s, &fx)
            }
        }
        try result.get()
    }

    /// Indicates `value` to every client that enabled indications of `handle`; returns
    /// the clients that confirmed.
    public func indicateAll(_ handle: UInt16, value: [UInt8]) async -> [ATTServerClientID] {
        let targets = state.withLock { s in s.server.subscribers(of: handle).filter { $0.1.contains(.indicate) }.map(\.0) }
        var confirmed: [ATTServerClientID] = []
        await withTaskGroup(of: ATTServerClientID?.self) { group in
            for id in targets {
                group.addTask {
                    do throws(GATTServerError) {
                        try await self.indicate(handle, value: value, to: id)
                        return id
                    } catch {
                        return nil
                    }
                }
            }
            for await id in group { if let id { confirmed.append(id) } }
        }
        return confirmed.sorted()
    }

    // MARK: Internals

    func now() -> UInt64 { monotonicNow() }

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

    /// The PDU one call of the server writes, copied for the bearer's queue.
    private static func pdu(_ body: (inout ATTServerOutput) throws(ATTServerError) -> Void) throws(ATTServerError) -> [UInt8] {
        try ATTServerOutput.withOutput { (o) throws(ATTServerError) in
            try body(&o)
            return o.bytes
        }
    }

    private func emit(_ e: GATTServerEvent, _ s: inout State) {
        if case .dropped = eventSink.yield(e) { s.droppedEvents += 1 }
    }

    private func pumpIndications(_ id: ATTServerClientID, _ s: inout State, _ fx: inout [Effect]) {
        guard var cl = s.clients[id], cl.outstanding == nil, !cl.queued.isEmpty else { return }
        let next = cl.queued.removeFirst()
        var pdu: [UInt8] = []
        let now = now()
        do throws(ATTServerError) {
            pdu = try Self.pdu { (o) throws(ATTServerError) in try s.server.indicate(id, handle: next.handle, value: next.value, now: now, into: &o) }
        } catch {
            s.clients[id] = cl
            fx.append { next.done.resume(returning: .failure(.server(error))) }
            pumpIndications(id, &s, &fx)
            return
        }
        cl.outstanding = next.done
        cl.outstandingConfirmed = next.confirmed
        s.clients[id] = cl
        let bearer = cl.bearer
        if bearer.sendsWithoutBlocking {
            do throws(ATTBearerClosed) {
                try bearer.send(pdu)
            } catch {
                cl.outstanding = nil
                cl.outstandingConfirmed = nil
                s.clients[id] = cl
                s.server.cancelIndication(id)
                fx.append { next.done.resume(returning: .failure(.bearer(error))) }
                pumpIndications(id, &s, &fx)
            }
            return
        }
        fx.append { [weak self] in
            do throws(ATTBearerClosed) {
                try bearer.send(pdu)
            } catch {
                self?.indicationSendFailed(id, error)
            }
        }
    }

    private func indicationSendFailed(_ id: ATTServerClientID, _ error: ATTBearerClosed) {
        locked { s, fx in
            guard var cl = s.clients[id], let c = cl.outstanding else { return }
            cl.outstanding = nil
            cl.outstandingConfirmed = nil
            s.clients[id] = cl
            s.server.cancelIndication(id)
            fx.append { c.resume(returning: .failure(.bearer(error))) }
            pumpIndications(id, &s, &fx)
        }
    }

    private func received(_ id: ATTServerClientID, _ pdu: UnsafeRawBufferPointer) {
        locked { s, fx in
            guard let cl = s.clients[id] else { return }
            s.server.setSecurity(cl.bearer.security, for: id)
            if let shared = cl.bearer.negotiatedMTU, shared > (s.server.mtu(of: id) ?? 0) { s.server.adoptMTU(shared, for: id) }
            let now = now()
            let (events, out) = ATTServerOutput.withOutput { o in
                (s.server.receive(from: id, pdu: pdu, now: now, into: &o), o.isEmpty ? nil : o.bytes)
            }
            if let out {
                // A response that cannot go leaves the client waiting 30 s for nothing:
                // close its bearer instead (the link is down or hopelessly backed up).
                let bearer = cl.bearer
                if bearer.sendsWithoutBlocking {
                    do throws(ATTBearerClosed) { try bearer.send(out) } catch { fx.append { bearer.close() } }
                } else {
                    fx.append {
                        do throws(ATTBearerClosed) { try bearer.send(out) } catch { bearer.close() }
                    }
                }
            }
            handle(events, &s, &fx)
            if bondedClients != nil { keepBondedState(id, &s, &fx) }
        }
    }

    private func handle(_ events: [ATTServerEvent], _ s: inout State, _ fx: inout [Effect]) {
        for e in events {
            switch e {
            case .mtuChanged(let id, let mtu):
                guard let cl = s.clients[id] else { continue }
                cl.bearer.mtuNegotiated(mtu)
                emit(.mtuChanged(cl.info, mtu: mtu), &s)
            case .wrote(let id, let handle, let value, let withResponse):
                if let info = s.clients[id]?.info { emit(.wrote(info, handle: handle, value: value, withResponse: withResponse), &s) }
            case .subscriptionChanged(let id, let valueHandle, let config):
                if let info = s.clients[id]?.info { emit(.subscriptionChanged(info, valueHandle: valueHandle, config), &s) }
            case .indicationConfirmed(let id, let handle):
                guard var cl = s.clients[id] else { continue }
                if let c = cl.outstanding {
                    cl.outstandingConfirmed?()
                    fx.append { c.resume(returning: .success(())) }
                }
                cl.outstanding = nil
                cl.outstandingConfirmed = nil
                s.clients[id] = cl
                emit(.indicationConfirmed(cl.info, handle: handle), &s)
                pumpIndications(id, &s, &fx)
            case .indicationTimedOut(let id, let handle):
                guard let cl = s.clients[id] else { continue }
                emit(.indicationTimedOut(cl.info, handle: handle), &s)
                // Core Vol 3 Part F §3.3.3: the bearer is dead; close it (as BlueZ does).
                let bearer = cl.bearer
                fx.append { bearer.close() }
            case .peerFault(let id, let detail):
                if let info = s.clients[id]?.info { emit(.peerFault(info, detail), &s) }
            case .changeAware(let id, let held):
                // The updates held while the client was change-unaware, in handle order, each
                // with the value stored when it goes out (the application may update one
                // before its turn; a value that only a read handler makes has none to send).
                let updates: [(handle: UInt16, indicate: Bool)] = held.compactMap { h in
                    let config = s.server.configuration(of: id, valueHandle: h)
                    if config.contains(.notify) { return (h, false) }
                    if config.contains(.indicate) { return (h, true) }
                    return nil
                }
                guard !updates.isEmpty else { continue }
                fx.append { [weak self] in
                    guard let self else { return }
                    Task {
                        for u in updates {
                            if u.indicate {
                                try? await self.enqueueIndication(u.handle, value: nil, to: id, store: false)
                            } else {
                                await self.notifyStoredWhenReady(u.handle, to: id)
                            }
                        }
                    }
                }
            case .signCounterAdvanced(let id, let counter):
                if let clients = bondedClients, let cl = s.clients[id], let identity = cl.bearer.peerIdentity, let key = cl.signingCSRK {
                    fx.append { clients.notePeerSignCounter(counter, for: identity, key: key) }
                }
            }
        }
    }

    private func closed(_ id: ATTServerClientID, _ reason: ATTBearerClosed) {
        locked { s, fx in
            guard let cl = s.clients.removeValue(forKey: id) else { return }
            s.server.disconnect(id)
            let error = GATTServerError.bearer(reason)
            if let c = cl.outstanding { fx.append { c.resume(returning: .failure(error)) } }
            for q in cl.queued { fx.append { q.done.resume(returning: .failure(error)) } }
            emit(.disconnected(cl.info, reason: reason.message), &s)
        }
    }

    private func rearm(_ s: inout State) {
        s.timer.arm(s.server.nextDeadline) { [weak self] in self?.timerFired() }
    }

    private func timerFired() {
        locked { s, fx in
            s.timer.fired()
            let events = s.server.timerFired(now: now())
            // A timed-out indication fails its caller; the bearer closes (events handle it).
            for e in events {
                if case .indicationTimedOut(let id, _) = e, var cl = s.clients[id], let c = cl.outstanding {
                    cl.outstanding = nil
                    cl.outstandingConfirmed = nil
                    s.clients[id] = cl
                    fx.append { c.resume(returning: .failure(.server(.bearerDead(id)))) }
                }
            }
            handle(events, &s, &fx)
        }
    }
}
