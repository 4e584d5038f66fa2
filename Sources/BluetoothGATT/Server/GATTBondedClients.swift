import BluetoothHost
import BluetoothTransport
import BluetoothWire
import Synchronization

/// What bonded clients configured on a GATT server: their CCCDs, Client Supported Features
/// and change-awareness, kept beside their bonds (`F0F1F2F3F401-public.gatt-server` in the
/// bond directory). A bonded client that comes back gets its notifications without
/// subscribing again (Core Vol 3 Part G §3.3.3.3), and one that missed a change of the
/// database gets Service Changed (§7.1). The SignCounters of Signed Write Commands with a
/// bonded peer are kept the same way (`….sign-counters`), for both directions.
///
/// Everything is read once, when made; updates are written off the caller's thread (the
/// host's driver thread must not wait for fsync), the newest state of each client last.
public final class GATTBondedClients: Sendable {
    /// The companion-file kind of the bonded state (CCCDs, features, change-awareness).
    public static let fileKind = "gatt-server"

    /// The companion-file kind of the SignCounters.
    public static let countersKind = "sign-counters"

    /// The SignCounters of Signed Write Commands with one peer (Core Vol 3 Part H §2.4.5):
    /// the last one its signatures carried, the last one ours did.
    public struct SignCounters: Sendable, Hashable {
        /// The last SignCounter the peer's signatures carried.
        public var peer: UInt32?
        /// The last SignCounter our signatures carried.
        public var local: UInt32?
        /// The CSRKs the counters go with: a new bond's keys start over from nothing.
        public var peerKey: UInt128?
        /// The CSRK our counter goes with.
        public var localKey: UInt128?
        /// Counters as given.
        public init(peer: UInt32? = nil, local: UInt32? = nil, peerKey: UInt128? = nil, localKey: UInt128? = nil) {
            self.peer = peer
            self.local = local
            self.peerKey = peerKey
            self.localKey = localKey
        }

        /// The last counter seen from the peer's `key`.
        public func lastPeer(for key: UInt128) -> UInt32? { peerKey == key ? peer : nil }
    }

    struct PendingKey: Hashable {
        var identity: LEAddress
        var kind: String
    }

    struct State {
        var clients: [LEAddress: ATTBondedClientState] = [:]
        var counters: [LEAddress: SignCounters] = [:]
        /// Peers whose counters file could not be read: no signature of theirs is taken and
        /// the file is never overwritten (default counters would accept a replay).
        var unreadableCounters: Set<LEAddress> = []
        var pending: [PendingKey: String] = [:]
        var writing = false
        var flushWaiters: [CheckedContinuation<Void, Never>] = []
        var failures: [BondStoreError] = []
    }

    /// The bond store the files sit in.
    public let store: BondStore
    private let state: Mutex<State>
    /// Files that could not be read when loading: named, left as they are, not used.
    public let loadFailures: [BondStoreError]

    /// Reads every bonded client's state from `store` (unreadable files in ``loadFailures``).
    public init(store: BondStore) {
        self.store = store
        var s = State()
        var failures: [BondStoreError] = []
        for identity in store.identities(kind: Self.fileKind) {
            do throws(BondStoreError) {
                guard let bytes = try store.read(identity, kind: Self.fileKind) else { continue }
                s.clients[identity] = try Self.parse(bytes, path: store.path(for: identity, kind: Self.fileKind))
            } catch {
                failures.append(error)
            }
        }
        for identity in store.identities(kind: Self.countersKind) {
            do throws(BondStoreError) {
                guard let bytes = try store.read(identity, kind: Self.countersKind) else { continue }
                s.counters[identity] = try Self.parseCounters(bytes, path: store.path(for: identity, kind: Self.countersKind))
            } catch {
                failures.append(error)
                s.unreadableCounters.insert(identity)
            }
        }
        state = Mutex(s)
        loadFailures = failures
    }

    /// Whether the peer's SignCounters could not be read: its signed writes are refused
    /// (a replay could not be told) and the file is left as it is.
    /// Read again while flagged: a new bond removes the file (its CSRKs start over), and a
    /// server that runs on takes the new bond's signatures without a restart.
    public func countersUnreadable(for identity: LEAddress) -> Bool {
        guard state.withLock({ $0.unreadableCounters.contains(identity) }) else { return false }
        let counters: SignCounters?
        do throws(BondStoreError) {
            guard let bytes = try store.read(identity, kind: Self.countersKind) else {
                state.withLock { $0.unreadableCounters.remove(identity); $0.counters[identity] = nil }
                return false
            }
            counters = try Self.parseCounters(bytes, path: store.path(for: identity, kind: Self.countersKind))
        } catch {
            counters = nil
        }
        guard let counters else { return true }
        state.withLock { $0.unreadableCounters.remove(identity); $0.counters[identity] = counters }
        return false
    }

    /// The SignCounters kept for a peer.
    public func signCounters(for identity: LEAddress) -> SignCounters {
        state.withLock { $0.counters[identity] ?? SignCounters() }
    }

    /// The peer's signature with `counter` verified: later ones must carry a larger one.
    public func notePeerSignCounter(_ counter: UInt32, for identity: LEAddress, key: UInt128) {
        guard !countersUnreadable(for: identity) else { return }
        schedule { s in
            guard !s.unreadableCounters.contains(identity) else { return nil }
            var c = s.counters[identity] ?? SignCounters()
            if c.peerKey != key { c.peerKey = key; c.peer = nil }
            guard c.peer.map({ counter > $0 }) ?? true else { return nil }
            c.peer = counter
            s.counters[identity] = c
            return (PendingKey(identity: identity, kind: Self.countersKind), Self.render(c))
        }
    }

    /// The SignCounter for our next signature to this peer (one more than the last used,
    /// which is kept); nil once 2³²−1 were used (pair again for a new CSRK), or when the
    /// counters could not be read.
    public func takeLocalSignCounter(for identity: LEAddress, key: UInt128) -> UInt32? {
        guard !countersUnreadable(for: identity) else { return nil }
        var taken: UInt32?
        schedule { s in
            guard !s.unreadableCounters.contains(identity) else { return nil }
            var c = s.counters[identity] ?? SignCounters()
            if c.localKey != key { c.localKey = key; c.local = nil }
            let next: UInt32
            if let last = c.local {
                guard last < .max else { return nil }
                next = last + 1
            } else {
                next = 0
            }
            c.local = next
            taken = next
            s.counters[identity] = c
            return (PendingKey(identity: identity, kind: Self.countersKind), Self.render(c))
        }
        return taken
    }

    /// Runs `change` under the lock; what it returns is written in the background.
    private func schedule(_ change: (inout State) -> (PendingKey, String)?) {
        let start: Bool = state.withLock { s in
            guard let (key, text) = change(&s) else { return false }
            s.pending[key] = text
            if s.writing { return false }
            s.writing = true
            return true
        }
        if start { Task { await runOnOwnThread { self.drain() } } }
    }

    /// The kept state of the client with this identity.
    public func state(for identity: LEAddress) -> ATTBondedClientState? {
        state.withLock { $0.clients[identity] }
    }

    /// Records a client's state; written to disk in the background.
    public func update(_ client: ATTBondedClientState, for identity: LEAddress) {
        schedule { s in
            guard s.clients[identity] != client else { return nil }
            s.clients[identity] = client
            return (PendingKey(identity: identity, kind: Self.fileKind), Self.render(client))
        }
    }

    /// Writes that failed (the state stays in memory; the next update tries again).
    public var writeFailures: [BondStoreError] { state.withLock { $0.failures } }

    /// Returns once every update made before the call is on disk.
    public func flush() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s in
                if !s.writing { return true }
                s.flushWaiters.append(c)
                return false
            }
            if done { c.resume() }
        }
    }

    private func drain() {
        while true {
            let next: (PendingKey, String)? = state.withLock { s in
                guard let (key, text) = s.pending.first else {
                    s.writing = false
                    let waiters = s.flushWaiters
                    s.flushWaiters = []
                    for w in waiters { w.resume() }
                    return nil
                }
                s.pending[key] = nil
                return (key, text)
            }
            guard let (key, text) = next else { return }
            do throws(BondStoreError) {
                try store.write(text, for: key.identity, kind: key.kind)
            } catch {
                state.withLock { $0.failures.append(error) }
            }
        }
    }

    // MARK: The file

    static func render(_ c: ATTBondedClientState) -> String {
        let cccd = c.configurations.keys.sorted().map { "\(hex($0, 4)):\(hex(c.configurations[$0] ?? 0, 4))" }
        return ["# hcigatt: what a bonded client configured on our GATT server", "version=1",
                "database_hash=\(c.databaseHash.map { hex($0, 2) }.joined())",
                "cccd=\(cccd.joined(separator: ","))", "service_changed=\(hex(c.serviceChanged, 4))",
                "features=\(hex(c.features.rawValue, 2))", "change_aware=\(c.changeAware ? 1 : 0)"]
            .joined(separator: "\n") + "\n"
    }

    static func render(_ c: SignCounters) -> String {
        var lines = ["# hcigatt: SignCounters of Signed Write Commands with a bonded peer", "version=1"]
        func k(_ v: UInt128) -> String {
            let t = String(v, radix: 16)
            return String(repeating: "0", count: 32 - t.utf8.count) + t
        }
        if let p = c.peer { lines.append("peer=\(p)") }
        if let v = c.peerKey { lines.append("peer_key=\(k(v))") }
        if let l = c.local { lines.append("local=\(l)") }
        if let v = c.localKey { lines.append("local_key=\(k(v))") }
        return lines.joined(separator: "\n") + "\n"
    }

    static func parseCounters(_ bytes: [UInt8], path: String) throws(BondStoreError) -> SignCounters {
        var c = SignCounters()
        var version: Substring?
        for (i, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n").enumerated() where !line.hasPrefix("#") {
            guard let eq = line.firstIndex(of: "=") else { throw BondStoreError(path: path, message: "line \(i + 1): expected key=value") }
            let key = line[..<eq], value = line[line.index(after: eq)...]
            switch key {
            case "version": version = value
            case "peer", "local":
                guard let n = UInt32(value) else { throw BondStoreError(path: path, message: "\(key)=\(value) is not a 32-bit counter") }
                if key == "peer" { c.peer = n } else { c.local = n }
            case "peer_key", "local_key":
                guard value.utf8.count == 32, let v = UInt128(value, radix: 16) else { throw BondStoreError(path: path, message: "\(key) is not 32 hex digits") }
                if key == "peer_key" { c.peerKey = v } else { c.localKey = v }
            default: continue
            }
        }
        guard version == "1" else { throw BondStoreError(path: path, message: "no version=1") }
        return c
    }

    static func parse(_ bytes: [UInt8], path: String) throws(BondStoreError) -> ATTBondedClientState {
        var fields: [Substring: Substring] = [:]
        let text = String(decoding: bytes, as: UTF8.self)
        for (i, line) in text.split(separator: "\n").enumerated() where !line.hasPrefix("#") {
            guard let eq = line.firstIndex(of: "=") else { throw BondStoreError(path: path, message: "line \(i + 1): expected key=value") }
            fields[line[..<eq]] = line[line.index(after: eq)...]
        }
        func need(_ k: Substring) throws(BondStoreError) -> Substring {
            guard let v = fields[k] else { throw BondStoreError(path: path, message: "no \(k)=") }
            return v
        }
        guard try need("version") == "1" else { throw BondStoreError(path: path, message: "unknown version \(fields["version"] ?? "")") }
        let hashText = Array(try need("database_hash").utf8)
        guard hashText.count == 32, let hash = Self.bytes(hashText) else {
            throw BondStoreError(path: path, message: "database_hash is not 32 hex digits")
        }
        var configurations: [UInt16: UInt16] = [:]
        for item in try need("cccd").split(separator: ",") {
            let parts = item.split(separator: ":")
            guard parts.count == 2, let h = UInt16(parts[0], radix: 16), h != 0, let bits = UInt16(parts[1], radix: 16) else {
                throw BondStoreError(path: path, message: "cccd entry '\(item)' is not HANDLE:BITS in hex")
            }
            configurations[h] = bits
        }
        guard let sc = UInt16(try need("service_changed"), radix: 16) else { throw BondStoreError(path: path, message: "service_changed is not hex") }
        guard let features = UInt8(try need("features"), radix: 16) else { throw BondStoreError(path: path, message: "features is not hex") }
        let aware = try need("change_aware")
        guard aware == "0" || aware == "1" else { throw BondStoreError(path: path, message: "change_aware is not 0 or 1") }
        return ATTBondedClientState(databaseHash: hash, configurations: configurations, serviceChanged: sc,
                                    features: GATTClientFeatures(rawValue: features), changeAware: aware == "1")
    }

    static func bytes(_ hexDigits: [UInt8]) -> [UInt8]? { Hex.pairs(hexDigits) }
}
