// The proxy's active connections: a slot per device a client connects to, held for that
// client; GATT by handle (with remote caching the client keeps the database and writes
// the CCCDs itself); pairing, bonds, the cache. The link setup, bonds and GATT are the
// library's (CentralLink, GATTClient); this maps them onto the API's messages.
import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothWire
import Synchronization

/// One slot: a device a client connects to.
final class ProxyLink: Sendable {
    let address: UInt64
    let owner: APIClientID
    let peer: LEAddress

    enum Phase {
        case connecting
        case connected(LEConnection, GATTClient)
        /// Going down: no requests taken, the response comes when it is down.
        case closing
    }

    struct State {
        var phase: Phase = .connecting
        /// Value handles whose notifications go to the client (its NotifyRequest).
        var notifying: Set<UInt16> = []
        var task: Task<Void, Never>?
    }

    let state = Mutex(State())

    init(address: UInt64, owner: APIClientID, peer: LEAddress) {
        self.address = address
        self.owner = owner
        self.peer = peer
    }

    var connected: (LEConnection, GATTClient)? {
        state.withLock { s in if case .connected(let c, let g) = s.phase { return (c, g) } else { return nil } }
    }
}

extension BluetoothProxy {
    /// The slots in use: what connections-free reports.
    func slotReport() -> APIResponse {
        let (used, limit) = state.withLock { ($0.links.keys.sorted(), $0.slots) }
        return .connectionsFree(free: UInt32(max(0, limit - used.count)), limit: UInt32(limit), allocated: used)
    }

    func broadcastSlots() {
        let watchers = state.withLock { $0.slotWatchers }
        guard !watchers.isEmpty else { return }
        server.broadcast(slotReport(), to: { watchers.contains($0) })
    }

    static func leAddress(_ address: UInt64, type: UInt8) -> LEAddress {
        // Bit 0 tells public from random; resolved types 2/3 connect with their kind.
        LEAddress(BluetoothAddress(rawValue: address), type: type & 1 == 0 ? .public : .random)
    }

    func deviceRequest(_ address: UInt64, _ kind: BluetoothDeviceRequestKind, addressType: UInt8?, from id: APIClientID) async {
        switch kind {
        case .connectWithCache, .connectWithoutCache:
            guard let addressType else {
                server.send(.deviceConnection(address: address, connected: false, mtu: 0, error: 0), to: id)
                return
            }
            connect(address, type: addressType, cached: kind == .connectWithCache, for: id)
        case .connectV1, .unknown:
            // The first connect is gone from the protocol: refused, as ESPHome does.
            server.send(.deviceConnection(address: address, connected: false, mtu: 0, error: 0), to: id)
        case .disconnect:
            // Only the client that holds the link drops it; to another it is not connected.
            guard let link = state.withLock({ $0.links[address] }), link.owner == id else {
                server.send(.deviceConnection(address: address, connected: false, mtu: 0, error: 0), to: id)
                server.send(slotReport(), to: id)
                return
            }
            await drop(link)
        case .pair:
            guard let link = state.withLock({ $0.links[address] }), link.owner == id, let (conn, _) = link.connected else {
                server.send(.pairing(address: address, paired: false, error: -1), to: id)
                return
            }
            if conn.security.encrypted, conn.security.bonded {
                server.send(.pairing(address: address, paired: true, error: 0), to: id)
                return
            }
            do throws(BluetoothError) {
                _ = try await CentralLink.pair(conn)
                log(.link(address: BluetoothAddress(rawValue: address), event: "paired"))
                server.send(.pairing(address: address, paired: true, error: 0), to: id)
            } catch {
                log(.link(address: BluetoothAddress(rawValue: address), event: "pairing failed: \(error.message)"))
                server.send(.pairing(address: address, paired: false, error: Self.pairingError(error)), to: id)
            }
        case .unpair:
            let identity = state.withLock { $0.links[address] }?.connected?.0.peerIdentity
                ?? Self.leAddress(address, type: addressType ?? 0)
            var ok = true
            if let store = host.bondStore {
                do throws(BondStoreError) {
                    _ = try store.remove(identity)
                    if identity.type == .public, addressType == nil {
                        // Without a type both are tried: the bond is under one of them.
                        _ = try store.remove(LEAddress(identity.address, type: .random))
                    }
                } catch {
                    ok = false
                }
            }
            server.send(.unpairing(address: address, success: ok, error: ok ? 0 : -1), to: id)
        case .clearCache:
            var ok = true
            if let store = host.bondStore {
                let identity = state.withLock { $0.links[address] }?.connected?.0.peerIdentity
                    ?? Self.leAddress(address, type: addressType ?? 0)
                do throws(BondStoreError) { try store.remove(identity, kind: "gatt-cache") } catch { ok = false }
            }
            server.send(.cacheCleared(address: address, success: ok, error: ok ? 0 : -1), to: id)
        }
    }

    static func pairingError(_ e: BluetoothError) -> Int32 {
        if case .disconnected = e.kind { return -1 }
        return 0x89  // "Auth fail" in the client's table
    }

    /// Takes a slot for `address` and connects; the response follows when it is up (or not).
    func connect(_ address: UInt64, type: UInt8, cached: Bool, for id: APIClientID) {
        enum Admission { case taken(ProxyLink), full, already(ProxyLink) }
        let peer = Self.leAddress(address, type: type)
        let admission: Admission? = state.withLock { s in
            guard s.clients.contains(id) else { return nil }
            if let l = s.links[address] { return .already(l) }
            guard s.links.count < s.slots else { return .full }
            let l = ProxyLink(address: address, owner: id, peer: peer)
            s.links[address] = l
            return .taken(l)
        }
        guard let admission else { return }  // the client went meanwhile
        switch admission {
        case .full:
            server.send(.deviceConnection(address: address, connected: false, mtu: 0, error: 0), to: id)
            return
        case .already(let l):
            // Another client's device is not lent out; ours: connected is said again,
            // connecting goes on (the answer is on its way).
            // Going down (a disconnect that took too long for the client): this connect is
            // answered now, not by the old link's end.
            let closing = l.state.withLock { s in if case .closing = s.phase { return true } else { return false } }
            guard l.owner == id, !closing else {
                server.send(.deviceConnection(address: address, connected: false, mtu: 0, error: 0), to: id)
                return
            }
            if let (_, gatt) = l.connected { server.send(.deviceConnection(address: address, connected: true, mtu: UInt32(gatt.mtu), error: 0), to: id) }
            return
        case .taken(let link):
            broadcastSlots()
            log(.link(address: peer.address, event: "connecting for \(id)"))
            let task = Task { await self.runLink(link, cached: cached) }
            link.state.withLock { $0.task = task }
        }
    }

    /// Connects, reports, holds the link until it goes down, reports that, frees the slot.
    func runLink(_ link: ProxyLink, cached: Bool) async {
        let address = link.address
        var code: Int32 = 0
        var connection: LEConnection?
        do throws(BluetoothError) {
            let opened = try await CentralLink.open(on: host, to: link.peer, ConnectSettings(timeout: .seconds(20), longestDataLength: true))
            let conn = opened.connection
            connection = conn
            let gatt = GATTClient(bearer: HostATTBearer(connection: conn), options: GATTClient.Options(
                unsubscribedValues: { [weak self, weak link] v in
                    guard let self, let link, link.state.withLock({ $0.notifying.contains(v.handle) }) else { return }
                    self.server.send(.notification(address: address, handle: v.handle, data: v.value), to: link.owner)
                }))
            var gone = false
            do throws(GATTError) {
                _ = try await gatt.exchangeMTU()
                // Without a cache the client asks for the services next: they are found now,
                // before it is told the link is up (as ESPHome does).
                if !cached { _ = try await gatt.discoverAll() }
            } catch {
                gone = !conn.isConnected
                if gone { throw BluetoothError(.disconnected, "the link went down while setting up: \(error)") }
            }
            let cancelled = link.state.withLock { s -> Bool in
                if case .closing = s.phase { return true }
                s.phase = .connected(conn, gatt)
                return false
            }
            if cancelled { await conn.disconnect() } else {
                server.send(.deviceConnection(address: address, connected: true, mtu: UInt32(gatt.mtu), error: 0), to: link.owner)
                log(.link(address: link.peer.address, event: "connected (MTU \(gatt.mtu))"))
            }
            let reason = await conn.closed()
            gatt.close()
            code = Int32(reason?.rawValue ?? 0)
        } catch {
            code = Self.connectError(error)
            if let connection { await connection.disconnect() }
            log(.link(address: link.peer.address, event: "not connected: \(error.message)"))
            if Self.isControllerFull(error) { learnControllerLimit() }
        }
        state.withLock { s in if s.links[address] === link { s.links[address] = nil } }
        // A link the client asked to drop is reported without an error: it was asked for.
        let asked = link.state.withLock { s in if case .closing = s.phase { return true } else { return false } }
        server.send(.deviceConnection(address: address, connected: false, mtu: 0, error: asked && code == 0x16 ? 0 : code), to: link.owner)
        log(.link(address: link.peer.address, event: "disconnected"))
        broadcastSlots()
    }

    /// The controller refused another link: it holds no more than it has now.
    static func isControllerFull(_ e: BluetoothError) -> Bool {
        guard let h = e.underlying as? HostError else { return false }
        switch h.kind {
        case .commandFailed(let c), .connectFailed(let c):
            return c == .connectionLimitExceeded || c == .memoryCapacityExceeded
        default: return false
        }
    }

    /// Lowers the slots to what the controller took (never below one): the limit HA sees is
    /// the real one, learnt the first time the controller says so.
    func learnControllerLimit() {
        let (before, now) = state.withLock { s -> (Int, Int) in
            // Every link but the refused one (still in the table), set up or on the way.
            let held = s.links.count - 1
            let before = s.slots
            s.slots = max(1, min(s.slots, held))
            return (before, s.slots)
        }
        guard now < before else { return }
        log(.slots(now, "the controller takes no more links: \(now) slot\(now == 1 ? "" : "s") from now on"))
        broadcastSlots()
    }

    static func connectError(_ e: BluetoothError) -> Int32 {
        if let h = e.underlying as? HostError, case .disconnected(let reason) = h.kind, let reason { return Int32(reason.rawValue) }
        return 0x3E  // "Connection failed to establish"
    }

    /// Drops the link (or the attempt) of a slot.
    func drop(_ link: ProxyLink) async {
        let (conn, task): (LEConnection?, Task<Void, Never>?) = link.state.withLock { s in
            let c: LEConnection?
            if case .connected(let conn, _) = s.phase { c = conn } else { c = nil }
            s.phase = .closing
            return (c, s.task)
        }
        if let conn { await conn.disconnect() } else { task?.cancel() }
    }

    /// A client went away: its links go too (nobody would hear of them).
    func dropLinks(of id: APIClientID) async {
        let owned = state.withLock { $0.links.values.filter { $0.owner == id } }
        for l in owned { await drop(l) }
    }

    // MARK: GATT

    func gatt(_ address: UInt64, _ handle: UInt16, from id: APIClientID) -> GATTClient? {
        guard let link = state.withLock({ $0.links[address] }), link.owner == id, let (_, g) = link.connected else {
            server.send(.gattError(address: address, handle: handle, error: -1), to: id)
            return nil
        }
        return g
    }

    static func gattError(_ e: GATTError) -> Int32 {
        if let code = e.attErrorCode { return Int32(code.rawValue) }
        return 0x85  // the client's "Error"
    }

    func gattRequest(_ r: APIRequest, from id: APIClientID) async {
        switch r {
        case .read(let address, let handle), .readDescriptor(let address, let handle):
            guard let g = gatt(address, handle, from: id) else { return }
            do throws(GATTError) {
                let v = try await g.read(handle: handle)
                server.send(.read(address: address, handle: handle, data: v), to: id)
            } catch {
                server.send(.gattError(address: address, handle: handle, error: Self.gattError(error)), to: id)
            }
        case .write(let address, let handle, let data, let withResponse):
            guard let g = gatt(address, handle, from: id) else { return }
            do throws(GATTError) {
                if withResponse {
                    try await g.write(handle: handle, value: data)
                    server.send(.wrote(address: address, handle: handle), to: id)
                } else {
                    try await g.writeWithoutResponse(handle: handle, value: data)
                }
            } catch {
                server.send(.gattError(address: address, handle: handle, error: Self.gattError(error)), to: id)
            }
        case .writeDescriptor(let address, let handle, let data):
            guard let g = gatt(address, handle, from: id) else { return }
            do throws(GATTError) {
                try await g.write(handle: handle, value: data)
                server.send(.wrote(address: address, handle: handle), to: id)
            } catch {
                server.send(.gattError(address: address, handle: handle, error: Self.gattError(error)), to: id)
            }
        case .notify(let address, let handle, let enable):
            guard gatt(address, handle, from: id) != nil, let link = state.withLock({ $0.links[address] }) else { return }
            // Delivery only: the client writes the CCCD itself (remote caching).
            link.state.withLock { s in if enable { s.notifying.insert(handle) } else { s.notifying.remove(handle) } }
            if enable { server.send(.notifying(address: address, handle: handle), to: id) }
        case .getServices(let address):
            guard let g = gatt(address, 0, from: id) else { return }
            let db: GATTDatabase
            do throws(GATTError) {
                if let known = g.database { db = known } else { db = try await g.discoverAll() }
            } catch {
                server.send(.gattError(address: address, handle: 0, error: Self.gattError(error)), to: id)
                return
            }
            for batch in Self.serviceBatches(db) { server.send(.services(address: address, batch), to: id) }
            server.send(.servicesDone(address: address), to: id)
        case .setConnectionParams(let address, let minInterval, let maxInterval, let latency, let timeout):
            guard let link = state.withLock({ $0.links[address] }), link.owner == id, let (conn, _) = link.connected else {
                server.send(.connectionParams(address: address, error: -1), to: id)
                return
            }
            do throws(HostError) {
                _ = try await conn.updateParameters(L2CAPConnectionParameters(intervalMin: minInterval, intervalMax: maxInterval,
                                                                              peripheralLatency: latency, timeoutMultiplier: timeout))
                server.send(.connectionParams(address: address, error: 0), to: id)
            } catch {
                server.send(.connectionParams(address: address, error: 0x87), to: id)  // "Illegal parameter"
            }
        default:
            break
        }
    }

    /// The database in messages of at most about 1.3 kB (ESPHome's batches; a service
    /// larger than that goes alone).
    static func serviceBatches(_ db: GATTDatabase) -> [[APIGATTService]] {
        let services = db.services.map { s in
            APIGATTService(uuid: APIUUID(high: s.uuid.high, low: s.uuid.low), handle: s.startHandle, characteristics: s.characteristics.map { c in
                APIGATTService.Characteristic(uuid: APIUUID(high: c.uuid.high, low: c.uuid.low), handle: c.valueHandle, properties: c.properties.rawValue,
                                              descriptors: c.descriptors.map { .init(uuid: APIUUID(high: $0.uuid.high, low: $0.uuid.low), handle: $0.handle) })
            })
        }
        var batches: [[APIGATTService]] = []
        var current: [APIGATTService] = []
        var size = 0
        for s in services {
            var w = ProtoWriter()
            s.write(&w, short: false)
            let n = w.bytes.count + 4
            if !current.isEmpty, size + n > 1360 {
                batches.append(current)
                current = []
                size = 0
            }
            current.append(s)
            size += n
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }
}
