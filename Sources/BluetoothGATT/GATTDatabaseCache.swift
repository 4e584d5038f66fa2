import BluetoothHost
import BluetoothWire

/// A peer's database as discovered, with the Database Hash it had then (nil when the
/// server has no Database Hash characteristic).
public struct GATTCachedDatabase: Sendable, Hashable {
    /// The services, characteristics and descriptors with their handles.
    public var database: GATTDatabase
    /// Most significant octet first, as ``GATTClient/readDatabaseHash()`` gives it.
    public var hash: [UInt8]?

    /// A cache entry as given.
    public init(database: GATTDatabase, hash: [UInt8]?) {
        self.database = database
        self.hash = hash
    }
}

/// How ``GATTClient/discoverAll(reusing:)`` came by the database.
public enum GATTDiscoverySource: Sendable, Equatable, CustomStringConvertible {
    /// Discovered, nothing was cached.
    case discovered
    /// The cache, confirmed by one read of an unchanged Database Hash.
    case cacheConfirmedByHash
    /// The cache as it was: the server has no Database Hash, so only Service Changed can
    /// tell it is stale.
    case cacheWithoutHash
    /// Discovered again: the cache was stale (`reason`).
    case rediscovered(reason: String)

    /// The database came from the cache (no discovery was needed).
    public var reusedCache: Bool { self == .cacheConfirmedByHash || self == .cacheWithoutHash }

    public var description: String {
        switch self {
        case .discovered: "discovered"
        case .cacheConfirmedByHash: "cached (Database Hash unchanged)"
        case .cacheWithoutHash: "cached (no Database Hash on the server; kept until Service Changed)"
        case .rediscovered(let reason): "discovered again (\(reason))"
        }
    }
}

/// The result of a discovery that may reuse a cache.
public struct GATTDiscovery: Sendable, Equatable {
    /// What to keep for next time (with the hash read now).
    public var cached: GATTCachedDatabase
    /// Where it came from.
    public var source: GATTDiscoverySource
    /// The database.
    public var database: GATTDatabase { cached.database }

    /// A result as given.
    public init(cached: GATTCachedDatabase, source: GATTDiscoverySource) {
        self.cached = cached
        self.source = source
    }
}

extension GATTClient {
    /// Reads the server's Database Hash (Core Vol 3 Part G §7.3) with one Read Using
    /// Characteristic UUID; nil when the server has none. Reading it also makes this
    /// client change-aware on a server with robust caching (§2.5.2.1).
    public func readDatabaseHash() async throws(GATTError) -> [UInt8]? {
        try await exchangeMTU()
        // One Read By Type: a server has one hash (no paging on to the end of the range).
        guard let values = try await readByTypePage(from: 0x0001, to: 0xFFFF, type: GATTAttributeType.databaseHash),
              let v = values.first, v.value.count == 16 else { return nil }
        // On the air least significant octet first.
        return v.value.reversed()
    }

    /// Discovery with the robust caching BlueZ has (Core Vol 3 Part G §2.5.2): given the
    /// database cached for this (bonded) peer, one read of the Database Hash decides: the
    /// same hash reuses the cache with no discovery; another hash discovers again. A
    /// server without the hash keeps the cache until it indicates Service Changed (which
    /// this client then handles, ``databaseChanged``). Without a cache: a full
    /// ``discoverAll()`` and a read of the hash to keep with it.
    public func discoverAll(reusing cache: GATTCachedDatabase?) async throws(GATTError) -> GATTDiscovery {
        try await exchangeMTU()
        if let cache {
            let hash: [UInt8]?
            if cache.hash != nil || cache.database.characteristic(uuid: GATTAttributeType.databaseHash) != nil {
                hash = try await readDatabaseHash()
            } else {
                hash = nil
            }
            let reason: String
            switch (cache.hash, hash) {
            case (let old?, let new?) where old == new:
                adopt(cache.database)
                return GATTDiscovery(cached: cache, source: .cacheConfirmedByHash)
            case (nil, nil):
                adopt(cache.database)
                return GATTDiscovery(cached: cache, source: .cacheWithoutHash)
            case (_?, _?): reason = "Database Hash changed"
            case (nil, _?): reason = "the server has a Database Hash now"
            case (_?, nil): reason = "the server has no Database Hash any more"
            }
            let db = try await discoverAll()
            return GATTDiscovery(cached: GATTCachedDatabase(database: db, hash: hash), source: .rediscovered(reason: reason))
        }
        let db = try await discoverAll()
        let hash = db.characteristic(uuid: GATTAttributeType.databaseHash) != nil ? try await readDatabaseHash() : nil
        return GATTDiscovery(cached: GATTCachedDatabase(database: db, hash: hash), source: .discovered)
    }

    /// A cached database becomes this client's: Service Changed indications are handled
    /// (the bonded server kept the CCCD; nothing is written).
    func adopt(_ db: GATTDatabase) {
        let sc = db.service(uuid: BluetoothUUID(0x1801))?.characteristics.first { $0.uuid == GATTAttributeType.serviceChanged }
        locked { s, _ in
            s.database = db
            s.earlyIndications.prune(to: db)
            if options.handleServiceChanged, let sc, sc.properties.contains(.indicate) { s.serviceChangedHandle = sc.valueHandle }
        }
    }
}

/// A bonded peer's discovered database on disk, beside its bond (`….gatt-cache`).
public enum GATTDatabaseCacheFile {
    /// The companion-file kind in the BondStore.
    public static let kind = "gatt-cache"

    /// The cached database of `identity`; nil when there is none. A file that cannot be
    /// parsed is an error naming it (the caller discovers again and replaces it).
    public static func load(_ store: BondStore, _ identity: LEAddress) throws(BondStoreError) -> GATTCachedDatabase? {
        guard let bytes = try store.read(identity, kind: kind) else { return nil }
        return try parse(bytes, path: store.path(for: identity, kind: kind))
    }

    /// Keeps `cache` beside the bond of `identity` (written atomically).
    public static func save(_ cache: GATTCachedDatabase, _ store: BondStore, _ identity: LEAddress) throws(BondStoreError) {
        try store.write(render(cache), for: identity, kind: kind)
    }

    static func render(_ c: GATTCachedDatabase) -> String {
        var lines = ["# hcigatt: a bonded peer's GATT database as discovered", "version=1",
                     "hash=\(c.hash.map { $0.map { hex($0, 2) }.joined() } ?? "none")"]
        for s in c.database.services {
            lines.append("service=\(hex(s.startHandle, 4))-\(hex(s.endHandle, 4)),\(s.uuid),\(s.isPrimary ? "primary" : "secondary")")
            for i in s.includedServices {
                lines.append("include=\(hex(i.declarationHandle, 4)),\(hex(i.startHandle, 4))-\(hex(i.endHandle, 4)),\(i.uuid)")
            }
            for ch in s.characteristics {
                lines.append("characteristic=\(hex(ch.declarationHandle, 4)),\(hex(ch.valueHandle, 4)),\(hex(ch.endHandle, 4)),\(ch.uuid),\(hex(ch.properties.rawValue, 2))")
                for d in ch.descriptors { lines.append("descriptor=\(hex(d.handle, 4)),\(d.uuid)") }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func parse(_ bytes: [UInt8], path: String) throws(BondStoreError) -> GATTCachedDatabase {
        func fail(_ line: Int, _ why: String) -> BondStoreError { BondStoreError(path: path, message: "line \(line): \(why)") }
        func handle(_ t: Substring, _ n: Int) throws(BondStoreError) -> UInt16 {
            guard t.utf8.count == 4, let h = UInt16(t, radix: 16), h != 0 else { throw fail(n, "'\(t)' is not a handle (4 hex digits)") }
            return h
        }
        func range(_ t: Substring, _ n: Int) throws(BondStoreError) -> (UInt16, UInt16) {
            let p = t.split(separator: "-")
            guard p.count == 2 else { throw fail(n, "'\(t)' is not START-END") }
            let a = try handle(p[0], n), b = try handle(p[1], n)
            guard a <= b else { throw fail(n, "range \(t) ends before it starts") }
            return (a, b)
        }
        func uuid(_ t: Substring, _ n: Int) throws(BondStoreError) -> BluetoothUUID {
            guard let u = BluetoothUUID(String(t)) else { throw fail(n, "'\(t)' is not a UUID") }
            return u
        }
        var version: Substring?
        var hash: [UInt8]?
        var services: [GATTService] = []
        for (i, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n").enumerated() where !line.hasPrefix("#") {
            let n = i + 1
            guard let eq = line.firstIndex(of: "=") else { throw fail(n, "expected key=value") }
            let key = line[..<eq], value = line[line.index(after: eq)...]
            let f = value.split(separator: ",", omittingEmptySubsequences: false)
            switch key {
            case "version": version = value
            case "hash":
                if value != "none" {
                    guard value.utf8.count == 32, let h = GATTBondedClients.bytes(Array(value.utf8)) else { throw fail(n, "hash is not 32 hex digits") }
                    hash = h
                }
            case "service":
                guard f.count == 3, f[2] == "primary" || f[2] == "secondary" else { throw fail(n, "service=START-END,UUID,primary|secondary") }
                let (a, b) = try range(f[0], n)
                services.append(GATTService(startHandle: a, endHandle: b, uuid: try uuid(f[1], n), isPrimary: f[2] == "primary"))
            case "include":
                guard f.count == 3, !services.isEmpty else { throw fail(n, "include=HANDLE,START-END,UUID inside a service") }
                let (a, b) = try range(f[1], n)
                services[services.count - 1].includedServices.append(
                    GATTIncludedService(declarationHandle: try handle(f[0], n), startHandle: a, endHandle: b, uuid: try uuid(f[2], n)))
            case "characteristic":
                guard f.count == 5, !services.isEmpty, let props = UInt8(f[4], radix: 16) else {
                    throw fail(n, "characteristic=DECLARATION,VALUE,END,UUID,PROPERTIES inside a service")
                }
                let decl = try handle(f[0], n), valueHandle = try handle(f[1], n), end = try handle(f[2], n)
                guard decl < valueHandle, valueHandle <= end else { throw fail(n, "characteristic handles out of order") }
                services[services.count - 1].characteristics.append(
                    GATTCharacteristic(declarationHandle: decl, valueHandle: valueHandle, endHandle: end, uuid: try uuid(f[3], n),
                                       properties: GATTCharacteristicProperties(rawValue: props)))
            case "descriptor":
                guard f.count == 2, let last = services.indices.last, !services[last].characteristics.isEmpty else {
                    throw fail(n, "descriptor=HANDLE,UUID after a characteristic")
                }
                let c = services[last].characteristics.count - 1
                services[last].characteristics[c].descriptors.append(GATTDescriptor(handle: try handle(f[0], n), uuid: try uuid(f[1], n)))
            default:
                continue  // a newer version's field
            }
        }
        guard version == "1" else { throw BondStoreError(path: path, message: "no version=1") }
        return GATTCachedDatabase(database: GATTDatabase(services: services), hash: hash)
    }
}
