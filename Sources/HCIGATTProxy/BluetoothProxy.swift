// The Home Assistant Bluetooth proxy: the API server's clients on one side, the controller
// (through the host) on the other. Scanning never stops (not while connecting either);
// every report goes to the clients that subscribed, in ESPHome's batches.
import BluetoothHost
import BluetoothLE
import BluetoothTransport
import BluetoothWire
import Synchronization

/// What the proxy is asked to be.
public struct ProxySettings: Sendable {
    /// Where to listen: an IPv4 or IPv6 address ("::": every address, IPv4 too).
    public var address: String
    /// The TCP port (6053 is ESPHome's; 0: any free one).
    public var port: UInt16
    /// The node name (HA's device name) and the friendly name it shows.
    public var name: String
    /// The name HA shows in its UI.
    public var friendlyName: String
    /// The proxy's identity ("AA:BB:CC:DD:EE:FF", HA's unique id).
    public var identity: String
    /// The Noise key; nil: plaintext.
    public var psk: [UInt8]?
    /// Where a key HA sets is written (nil: a set-key request is refused).
    public var keyFile: String?
    /// Scan without scan requests (no scan responses; nothing sent on the air).
    public var passive: Bool
    /// hcigatt's version, for the client.
    public var version: String
    /// Connection slots: links held for clients at once.
    public var slots: Int
    /// Announce `_esphomelib._tcp` over mDNS (Home Assistant discovers the proxy).
    public var mdns = true

    /// Settings; the rest defaulted: all addresses, port 6053, active scanning, 5 slots, mDNS.
    public init(address: String = "::", port: UInt16 = 6053, name: String, friendlyName: String? = nil, identity: String,
                psk: [UInt8]?, keyFile: String? = nil, passive: Bool = false, slots: Int = 5, version: String) {
        self.slots = slots
        self.address = address
        self.port = port
        self.name = name
        self.friendlyName = friendlyName ?? name
        self.identity = identity
        self.psk = psk
        self.keyFile = keyFile
        self.passive = passive
        self.version = version
    }
}

/// What the proxy tells its operator, a line at a time.
public enum ProxyLog: Sendable, Equatable {
    case listening(address: String, port: UInt16, encrypted: Bool)
    case clientConnected(APIClientID, peer: String)
    case clientReady(APIClientID, info: String, api: String)
    case clientClosed(APIClientID, reason: String)
    case scanning(active: Bool)
    case keyChanged(cleared: Bool)
    case keyRefused(String)
    /// What happened to a device's link.
    case link(address: BluetoothAddress, event: String)
    /// The mDNS announcement: running, or why not.
    case mdns(String)
    /// The slots changed (the controller's own limit learnt).
    case slots(Int, String)
}

/// A request queue's key: one client's requests about one device (0: the radio's own).
struct QueueKey: Hashable {
    var client: APIClientID
    var address: UInt64
}

/// The proxy: ``run()`` serves Home Assistant on the host given until cancelled.
public final class BluetoothProxy: Sendable {
    /// What it was made with.
    public let settings: ProxySettings
    let server: APIServer
    let host: HCIHost
    let log: @Sendable (ProxyLog) -> Void

    struct State {
        /// Active scanning now (the client may switch).
        var active: Bool
        /// The running scan's task, to restart it in another mode.
        var scan: Task<Void, any Error>?
        /// Connections-free subscribers.
        var slotWatchers: Set<APIClientID> = []
        var names: [APIClientID: String] = [:]
        /// The clients connected now: a request of one that has gone takes no slot.
        var clients: Set<APIClientID> = []
        /// One queue per client and device: a device's requests run in the order they
        /// came (a write without response never overtakes a write), devices side by side.
        var queues: [QueueKey: AsyncStream<APIRequest>.Continuation] = [:]
        /// The slots: a link (or an attempt) per device address.
        var links: [UInt64: ProxyLink] = [:]
        var slots: Int
    }

    let state: Mutex<State>

    /// The features the proxy has: scanning, connections with the client's own cache,
    /// pairing, cache clearing, raw advertisements, scanner state and mode, parameters.
    static let features: BluetoothProxyFeatures = [.passiveScan, .activeConnections, .remoteCaching, .pairing, .cacheClearing,
                                                          .rawAdvertisements, .stateAndMode, .connectionParams]

    /// A proxy on `host` (open, initialised) listening as `settings` say.
    public init(host: HCIHost, settings: ProxySettings, log: @escaping @Sendable (ProxyLog) -> Void) throws(APIServerError) {
        self.host = host
        self.settings = settings
        self.log = log
        let info = APIServerInfo(name: settings.name, friendlyName: settings.friendlyName, macAddress: settings.identity,
                                 bluetoothAddress: host.info.address.description, version: settings.version,
                                 features: Self.features)
        server = try APIServer(address: settings.address, port: settings.port, info: info, psk: settings.psk)
        state = Mutex(State(active: !settings.passive, slots: settings.slots))
    }

    /// Runs until cancelled (then says goodbye to the clients) or until the controller
    /// cannot go on (thrown).
    public func run() async throws {
        log(.listening(address: settings.address, port: server.port, encrypted: settings.psk != nil))
        var mdns: MDNSServer?
        if settings.mdns {
            do throws(APIServerError) {
                mdns = try MDNSServer(service: mdnsService)
                log(.mdns("announcing \(settings.name)._esphomelib._tcp.local"))
            } catch {
                // Home Assistant can still be given the address by hand.
                log(.mdns("not announced (\(error)); add the proxy in Home Assistant by its address"))
            }
        }
        let failure: (any Error)? = await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask { await self.serve(); return nil }
            group.addTask {
                do { try await self.scanUntilCancelled() } catch { return error }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await server.stop()
        await mdns?.stop()
        // The links go with the proxy (a library caller may keep the host).
        let links = state.withLock { Array($0.links.values) }
        for l in links { await drop(l) }
        let stopped = state.withLock { s -> Task<Void, any Error>? in
            let t = s.scan
            s.scan = nil
            return t
        }
        stopped?.cancel()
        _ = try? await stopped?.value
        if let failure { throw failure }
    }

    /// What mDNS says: the TXT keys Home Assistant reads (its unique id from `mac`, whether
    /// a key is needed from `api_encryption`).
    var mdnsService: MDNSService {
        var txt = ["friendly_name=\(settings.friendlyName)", "version=\(APIServerInfo.esphomeVersion)",
                   "mac=\(settings.identity.lowercased().filter { $0 != ":" })", "platform=Linux", "board=hcigatt", "network=ethernet",
                   "project_name=\(APIServerInfo.projectName)", "project_version=\(settings.version)"]
        if settings.psk != nil { txt.append("api_encryption=\(NoiseResponder.protocolName)") }
        return MDNSService(instance: settings.name, hostName: settings.name, port: server.port, txt: txt)
    }

    /// The scan, restarted when the mode changes; throws when it fails.
    func scanUntilCancelled() async throws {
        while !Task.isCancelled {
            let active = state.withLock { $0.active }
            let task = Task { try await scan(active: active) }
            state.withLock { $0.scan = task }
            log(.scanning(active: active))
            broadcastScannerState()
            do {
                try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
            } catch is CancellationError {
                // A mode change (or the end): the loop decides.
            }
            if Task.isCancelled { return }
        }
    }

    func scan(active: Bool) async throws {
        let config = ScanConfiguration(active: active, reportDuplicates: true, deviceTimeout: .seconds(300),
                                       scanResponseWait: active ? .milliseconds(300) : .zero)
        let events = host.scan(config)
        for try await e in events {
            let d = e.device
            var data = d.advertisingData
            data += d.scanResponseData
            server.advertise(APIRawAdvertisement(address: d.address.address.rawValue, rssi: d.rssi ?? -127,
                                                 addressType: d.address.type == .public ? 0 : 1, data: data))
        }
        try Task.checkCancellation()
        throw BluetoothError(.unavailable, "the scan ended: the controller stopped reporting")
    }

    func broadcastScannerState() {
        let active = state.withLock { $0.active }
        server.broadcast(.scannerState(.running, active: active, configuredActive: !settings.passive))
    }

    /// The clients' events.
    func serve() async {
        for await e in server.events {
            switch e {
            case .connected(let id, let peer):
                state.withLock { _ = $0.clients.insert(id) }
                log(.clientConnected(id, peer: peer))
            case .ready(let id, let client):
                state.withLock { $0.names[id] = client.info }
                log(.clientReady(id, info: client.info, api: "\(client.apiMajor).\(client.apiMinor)"))
            case .closed(let id, let reason):
                // Gone before anything else of it runs: a connect still queued takes no slot.
                let queues = state.withLock { s -> [AsyncStream<APIRequest>.Continuation] in
                    s.slotWatchers.remove(id)
                    s.names[id] = nil
                    s.clients.remove(id)
                    let mine = s.queues.filter { $0.key.client == id }
                    for k in mine.keys { s.queues[k] = nil }
                    return Array(mine.values)
                }
                for q in queues { q.finish() }
                log(.clientClosed(id, reason: reason?.description ?? "connection lost"))
                // Its links go: nobody would hear of them, and the slots are for others.
                Task { await self.dropLinks(of: id) }
            case .request(let id, let r):
                enqueue(r, from: id)
            }
        }
    }

    /// Hands `r` to its queue (made on first use, with a task that runs it in order); each
    /// request is counted against the server's backlog until it is done, so a client that
    /// floods requests is read no faster than its devices answer.
    func enqueue(_ r: APIRequest, from id: APIClientID) {
        let key = QueueKey(client: id, address: r.address ?? 0)
        let (queue, fresh): (AsyncStream<APIRequest>.Continuation?, AsyncStream<APIRequest>?) = state.withLock { s in
            guard s.clients.contains(id) else { return (nil, nil) }
            if let q = s.queues[key] { return (q, nil) }
            let (stream, q) = AsyncStream<APIRequest>.makeStream()
            s.queues[key] = q
            return (q, stream)
        }
        guard let queue else {
            server.requestDone()
            return
        }
        if let fresh {
            Task {
                for await request in fresh {
                    await self.handle(request, from: id)
                    self.server.requestDone()
                }
            }
        }
        if case .terminated = queue.yield(r) { server.requestDone() }
    }

    func handle(_ r: APIRequest, from id: APIClientID) async {
        switch r {
        case .subscribeAdvertisements:
            let active = state.withLock { $0.active }
            server.send(.scannerState(.running, active: active, configuredActive: !settings.passive), to: id)
        case .unsubscribeAdvertisements:
            break
        case .subscribeConnectionsFree:
            state.withLock { _ = $0.slotWatchers.insert(id) }
            server.send(slotReport(), to: id)
        case .setScannerMode(let active):
            let restart = state.withLock { s -> Task<Void, any Error>? in
                guard s.active != active else { return nil }
                s.active = active
                return s.scan
            }
            if let restart { restart.cancel() } else { server.send(.scannerState(.running, active: active, configuredActive: !settings.passive), to: id) }
        case .device(let address, let kind, let type):
            await deviceRequest(address, kind, addressType: type, from: id)
        case .getServices, .read, .readDescriptor, .notify, .write, .writeDescriptor, .setConnectionParams:
            await gattRequest(r, from: id)
        case .setNoiseKey(let key):
            setKey(key, from: id)
        }
    }

    /// HA's set-key request (only over an encrypted session: the session refused others).
    func setKey(_ key: [UInt8]?, from id: APIClientID) {
        guard let key else {
            // Clearing would leave a proxy that starts with a new key (or none) HA does not
            // know: refused; --insecure-plaintext is the way to run without.
            log(.keyRefused("Home Assistant asked to clear the key: kept (run with --insecure-plaintext to go without)"))
            server.send(.noiseKeySet(success: false), to: id)
            return
        }
        guard let file = settings.keyFile else {
            log(.keyRefused("a key was pushed, but the key was given on the command line: not changed"))
            server.send(.noiseKeySet(success: false), to: id)
            return
        }
        do throws(ProxyStateError) {
            try ProxyState(directory: "").replaceKey(key, at: file)
        } catch {
            log(.keyRefused("\(error)"))
            server.send(.noiseKeySet(success: false), to: id)
            return
        }
        server.setKey(key)
        log(.keyChanged(cleared: false))
        server.send(.noiseKeySet(success: true), to: id)
    }
}
