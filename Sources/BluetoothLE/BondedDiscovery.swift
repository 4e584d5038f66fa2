import BluetoothSecurity
import BluetoothTransport

/// What ``discoverDatabase(_:link:bonds:reuseCache:)`` did, for a program to tell.
public struct DatabaseDiscovery: Sendable {
    /// The database, where it came from, and what is kept for next time.
    public var discovery: GATTDiscovery
    /// ATT round trips it took (a confirmed cache: the MTU exchange and one hash read).
    public var roundTrips: Int
    /// The kept database could not be read (named with its file): discovered instead, and
    /// the file replaced.
    public var unreadableCache: BondStoreError?
    /// The database could not be kept with the bond (the next connection discovers again).
    public var unsavedCache: BondStoreError?
}

/// The peer's database over `client`. For a bonded peer (a `link` with a stored bond and
/// `bonds` given), the database kept with its bond is reused when one read of the Database
/// Hash says it is current (or, on a server without a hash, until Service Changed says
/// otherwise); else it is discovered and kept with the bond. While the link lasts, a Service
/// Changed indication updates what is kept (a failed rediscovery drops it). Without a bond
/// (or with `reuseCache` false) it is discovered and nothing is kept: the hash is only worth
/// its round trip when the database is. The cache policy of the CLI's commands, the
/// gateway's links and the facade's `Peripheral`.
public func discoverDatabase(_ client: GATTClient, link: LEConnection?, bonds: BondStore?, reuseCache: Bool = true)
    async throws(GATTError) -> DatabaseDiscovery
{
    var store: BondStore?
    var cache: GATTCachedDatabase?
    var unreadable: BondStoreError?
    if reuseCache, let bonds, let link, (try? link.storedBond()) != nil {
        store = bonds
        let identity = link.peerIdentity
        let loaded: Result<GATTCachedDatabase?, BondStoreError> = await runOnOwnThread {
            do throws(BondStoreError) { return .success(try GATTDatabaseCacheFile.load(bonds, identity)) } catch {
                return .failure(error)
            }
        }
        switch loaded {
        case .success(let c): cache = c
        case .failure(let e): unreadable = e
        }
    }
    let before = client.roundTrips
    let d = store != nil ? try await client.discoverAll(reusing: cache)
        : GATTDiscovery(cached: GATTCachedDatabase(database: try await client.discoverAll(), hash: nil), source: .discovered)
    var out = DatabaseDiscovery(discovery: d, roundTrips: client.roundTrips - before, unreadableCache: unreadable)
    guard let store, let link else { return out }
    let identity = link.peerIdentity
    if !d.source.reusedCache {
        let cached = d.cached
        let saved: Result<Void, BondStoreError> = await runOnOwnThread {
            do throws(BondStoreError) { try GATTDatabaseCacheFile.save(cached, store, identity); return .success(()) } catch {
                return .failure(error)
            }
        }
        if case .failure(let e) = saved { out.unsavedCache = e }
    }
    // Service Changed later on this link: what is kept follows (without a hash, so the next
    // connection checks the server's).
    let changes = client.databaseChanged
    Task {
        for await change in changes {
            let _: Void = await runOnOwnThread {
                if let db = change.database {
                    try? GATTDatabaseCacheFile.save(GATTCachedDatabase(database: db, hash: nil), store, identity)
                } else {
                    try? store.remove(identity, kind: GATTDatabaseCacheFile.kind)
                }
            }
        }
    }
    return out
}
