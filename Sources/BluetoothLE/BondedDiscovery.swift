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

/// The peer's database over `client`. For a bonded peer on a link encrypted with its bond
/// (a `link` with a stored bond, encrypted and bonded, and `bonds` given), the database kept
/// with its bond is reused when one read of the Database Hash says it is current; else it
/// is discovered and kept with the bond, with its hash. While the link lasts, a Service
/// Changed indication drops what is kept (the next connection discovers). Without a bond,
/// on a link the bond did not encrypt (a signed write's plain link, a bond with no central
/// key: whoever answers at the address could serve any database), or with `reuseCache`
/// false, it is discovered and nothing is read or kept. A kept database without a hash is
/// never trusted: nothing would tell it from a spoofer's. The cache policy of the CLI's
/// commands, the gateway's links and the facade's `Peripheral`.
public func discoverDatabase(_ client: GATTClient, link: LEConnection?, bonds: BondStore?, reuseCache: Bool = true)
    async throws(GATTError) -> DatabaseDiscovery
{
    var store: BondStore?
    var cache: GATTCachedDatabase?
    var unreadable: BondStoreError?
    if reuseCache, let bonds, let link, encryptedWithBond(link) {
        store = bonds
        let identity = link.peerIdentity
        let loaded: Result<GATTCachedDatabase?, BondStoreError> = await runOnOwnThread {
            do throws(BondStoreError) { return .success(try GATTDatabaseCacheFile.load(bonds, identity)) } catch {
                return .failure(error)
            }
        }
        switch loaded {
        case .success(let c): cache = c?.hash == nil ? nil : c
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
        // Kept only with its hash, and only while the bond still encrypts the link.
        let cached = d.cached
        let keep = cached.hash != nil && encryptedWithBond(link)
        let saved: Result<Void, BondStoreError> = await runOnOwnThread {
            do throws(BondStoreError) {
                if keep { try GATTDatabaseCacheFile.save(cached, store, identity) } else { try store.remove(identity, kind: GATTDatabaseCacheFile.kind) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let e) = saved { out.unsavedCache = e }
    }
    // Service Changed later on this link: what is kept no longer holds, and a database
    // without its hash would not be trusted; the next connection discovers and keeps anew.
    let changes = client.databaseChanged
    Task {
        for await _ in changes {
            let _: Void = await runOnOwnThread { try? store.remove(identity, kind: GATTDatabaseCacheFile.kind) }
        }
    }
    return out
}

/// Whether `link` is encrypted with the peer's stored bond: the only link whose database
/// may be read from or kept with the bond (one in clear proves nothing of who answers).
func encryptedWithBond(_ link: LEConnection) -> Bool {
    guard link.security.encrypted, link.security.bonded else { return false }
    return (try? link.storedBond()) != nil
}
