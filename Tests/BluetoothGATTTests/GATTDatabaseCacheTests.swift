import BluetoothHost
import BluetoothWire
import Testing
@testable import BluetoothGATT

/// The bonded-peer cache of a discovered database (robust caching, Core Vol 3 Part G §2.5.2).
@Suite struct GATTDatabaseCacheTests {
    func hashed(_ hash: [UInt8]) -> TestDatabase {
        var b = FakeDatabaseBuilder()
        _ = b.service(BluetoothUUID(0x1801))
        _ = b.characteristic(GATTAttributeType.databaseHash, .read, value: hash)
        _ = b.service(BluetoothUUID(0x180F))
        _ = b.characteristic(BluetoothUUID(0x2A19), [.read, .notify], value: [99])
        _ = b.cccd()
        let (attributes, expected) = b.build()
        return TestDatabase(attributes: attributes, expected: expected)
    }

    let hashA: [UInt8] = Array(0 ..< 16)
    let hashB: [UInt8] = Array(100 ..< 116)

    @Test("GATT/CL/GAS/BV-02-C: An unchanged Database Hash reuses the cache in one request") func anUnchangedHashReusesTheCacheInOneRequest() async throws {
        let (_, first, db) = makeClient(db: hashed(hashA))
        let d = try await first.discoverAll(reusing: nil)
        #expect(d.source == .discovered && d.database == db.expected)
        #expect(d.cached.hash == hashA.reversed(), "read least significant octet first, kept most significant first")
        let (server, again, _) = makeClient(db: hashed(hashA))
        let r = try await again.discoverAll(reusing: d.cached)
        #expect(r.source == .cacheConfirmedByHash && r.database == db.expected && again.database == db.expected)
        #expect(again.roundTrips == 2 && server.requests(.readByTypeRequest) == 1, "Exchange MTU and one Read By Type")
    }

    @Test("GATT/CL/GAS/BV-02-C (part): A changed Database Hash discovers again") func aChangedHashDiscoversAgain() async throws {
        let (_, first, _) = makeClient(db: hashed(hashA))
        let d = try await first.discoverAll(reusing: nil)
        let (_, again, db) = makeClient(db: hashed(hashB))
        let r = try await again.discoverAll(reusing: d.cached)
        #expect(r.source == .rediscovered(reason: "Database Hash changed"))
        #expect(r.cached.hash == hashB.reversed() && r.database == db.expected)
    }

    @Test func withoutAHashTheCacheIsUsedAsItIs() async throws {
        let (_, first, db) = makeClient()
        let d = try await first.discoverAll(reusing: nil)
        #expect(d.source == .discovered && d.cached.hash == nil)
        let (_, again, _) = makeClient()
        let r = try await again.discoverAll(reusing: d.cached)
        #expect(r.source == .cacheWithoutHash && again.roundTrips == 1 && r.database == db.expected)
        // A cache that had a hash against a server with none: stale.
        let (_, third, _) = makeClient()
        let stale = try await third.discoverAll(reusing: GATTCachedDatabase(database: d.database, hash: hashA))
        #expect(stale.source == .rediscovered(reason: "the server has no Database Hash any more"))
    }

    @Test func databaseOutOfSyncRediscoversBeforeTheCallerHearsOfIt() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        var changes = client.databaseChanged.makeAsyncIterator()
        server.setFault(.errorNext(.databaseOutOfSync))
        let before = server.requests(.readByGroupTypeRequest)
        await #expect(throws: GATTError.self) { _ = try await client.read(handle: 0x0003) }
        #expect(server.requests(.readByGroupTypeRequest) > before, "the services were discovered again")
        let change = await changes.next()
        #expect(change?.range == 0x0001 ... 0xFFFF && change?.database == db.expected)
    }

    @Test func theFileRoundTripsAndACorruptOneIsNamed() throws {
        let db = TestDatabase.make().expected
        let cache = GATTCachedDatabase(database: db, hash: hashA)
        let text = GATTDatabaseCacheFile.render(cache)
        #expect(try GATTDatabaseCacheFile.parse(Array(text.utf8), path: "x") == cache)
        let noHash = GATTCachedDatabase(database: db, hash: nil)
        #expect(try GATTDatabaseCacheFile.parse(Array(GATTDatabaseCacheFile.render(noHash).utf8), path: "x") == noHash)
        for junk in ["version=1\nservice=0001-0005,1800\n", "version=1\ndescriptor=0003,2902\n", "version=1\nhash=00\n",
                     "service=0001-0005,1800,primary\n", "version=1\nservice=0005-0001,1800,primary\n",
                     "version=1\nservice=0001-0005,1800,primary\ncharacteristic=0003,0002,0005,2A00,02\n", "nonsense"] {
            #expect(throws: BondStoreError.self, "\(junk)") { try GATTDatabaseCacheFile.parse(Array(junk.utf8), path: "/x.gatt-cache") }
        }
    }
}
