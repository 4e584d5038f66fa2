import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothSecurity
import BluetoothWire
import FakeController
import Glibc
import Testing

/// The application layer's GATT peer (what `gatt`, `read`, `write`, `monitor` and the
/// gateway's links open) against a GATT server of ours on a FakeAir: the database kept with
/// the bond and checked by its Database Hash, and signed writes with the bond's CSRK.
@Suite struct GATTPeerTests {
    static let battery = GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], value: .stored([90])),
    ])
    static let signedService = GATTLocalService(uuid: BluetoothUUID(0xFFF0), characteristics: [
        GATTLocalCharacteristic(uuid: BluetoothUUID(0xFFF1), properties: [.read, .authenticatedSignedWrites], value: .stored([0])),
    ])

    /// Two hosts of ours on one air, each with its bond store; the device serves `services`.
    final class Rig: Sendable {
        let air = FakeAir()
        let centralStore: BondedLinkTests.Store, deviceStore: BondedLinkTests.Store
        let central: HCIHost, device: HCIHost

        /// New hosts; with the stores of an earlier rig, they are the same two devices
        /// (the air's addresses are fixed) restarted.
        init(_ stores: (BondedLinkTests.Store, BondedLinkTests.Store) = (BondedLinkTests.Store(), BondedLinkTests.Store())) async throws {
            (centralStore, deviceStore) = stores
            device = try await HCIHost.open(transport: air.peripheral, options: HostOptions(bondStore: deviceStore.bonds))
            central = try await HCIHost.open(transport: air.central, options: HostOptions(bondStore: centralStore.bonds))
        }

        /// Serves `services` until the returned task is cancelled (the host's incoming links
        /// are one stream: once per host), advertising once.
        func serve(_ services: [GATTLocalService]) async throws -> (GATTServer, Task<Void, Never>) {
            let server = try GATTServer(services: [.genericAccess(deviceName: "peer"), .genericAttribute()] + services,
                                        bondedClients: GATTBondedClients(store: deviceStore.bonds))
            let device = self.device
            let task = Task { _ = await server.serveIncomingLinks(of: device) }
            _ = try await device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
            return (server, task)
        }

        func open(_ settings: PeerSettings = PeerSettings(connect: ConnectSettings(timeout: .seconds(2)))) async throws -> GATTPeer {
            try await GATTPeer.open(.address(air.peripheralLEAddress), via: .host(central), settings: settings)
        }

        func close(_ peer: GATTPeer) async {
            await peer.close()
            #expect(await eventually { !self.air.isConnected })
        }

        func shutDown() async {
            await central.close()
            await device.close()
        }
    }

    @Test func aBondedDevicesDatabaseIsKeptAndReusedWhileItsHashHolds() async throws {
        var rig = try await Rig()
        var (_, serving) = try await rig.serve([Self.battery])

        // Not bonded: discovered, nothing kept.
        let first = try await rig.open()
        #expect(!first.mayReuseCache())
        var d = try await first.discover()
        #expect(d.discovery.source == .discovered)
        #expect(d.discovery.database.characteristic(uuid: BluetoothUUID(0x2A19)) != nil)
        let result = try await CentralLink.pair(#require(first.connection))
        #expect(result.bonded)
        await rig.close(first)

        // Bonded, nothing kept yet: discovered and kept with the bond.
        _ = try? await rig.device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        let second = try await rig.open()
        #expect(second.connection?.security.encrypted == true, "encrypted with the bond")
        #expect(!second.mayReuseCache())
        d = try await second.discover()
        #expect(!d.discovery.source.reusedCache && d.unsavedCache == nil)
        let discoveryTrips = d.roundTrips
        await rig.close(second)

        // The hash holds: the kept database, for one read of the hash.
        _ = try? await rig.device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        let third = try await rig.open()
        #expect(third.mayReuseCache())
        d = try await third.discover()
        #expect(d.discovery.source == .cacheConfirmedByHash)
        #expect(d.roundTrips <= 2 && d.roundTrips < discoveryTrips, "\(d.roundTrips) vs \(discoveryTrips)")
        #expect(d.discovery.database.characteristic(uuid: BluetoothUUID(0x2A19)) != nil)
        // Asked not to: discovered, whatever is kept.
        d = try await third.discover(reuseCache: false)
        #expect(d.discovery.source == .discovered)
        await rig.close(third)

        // Both restarted, the device with another database: the hash says so; discovered
        // again and kept.
        serving.cancel()
        await rig.shutDown()
        rig = try await Rig((rig.centralStore, rig.deviceStore))
        (_, serving) = try await rig.serve([Self.battery, Self.signedService])
        let fourth = try await rig.open()
        d = try await fourth.discover()
        if case .rediscovered = d.discovery.source {} else { Issue.record("\(d.discovery.source)") }
        #expect(d.discovery.database.characteristic(uuid: BluetoothUUID(0xFFF1)) != nil, "nothing stale")
        await rig.close(fourth)
        _ = try? await rig.device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        let fifth = try await rig.open()
        d = try await fifth.discover()
        #expect(d.discovery.source == .cacheConfirmedByHash)
        #expect(d.discovery.database.characteristic(uuid: BluetoothUUID(0xFFF1)) != nil)
        await rig.close(fifth)
        serving.cancel()
        await rig.shutDown()
    }

    @Test func signedWritesCountUpOnAnUnencryptedLinkAndGoPlainOnAnEncryptedOne() async throws {
        let rig = try await Rig()
        let (server, serving) = try await rig.serve([Self.signedService])
        let handle = try #require(server.valueHandle(of: BluetoothUUID(0xFFF1)))

        // No bond: nothing to sign with, nothing sent.
        let unbonded = try await rig.open()
        do {
            _ = try await unbonded.writeSigned(handle: handle, value: [1])
            Issue.record("signed without a key")
        } catch {
            #expect(error.kind == .security)
        }
        _ = try await CentralLink.pair(#require(unbonded.connection))
        // Encrypted now: a plain Write Command (signing is for unencrypted links).
        #expect(try await unbonded.writeSigned(handle: handle, value: [2]) == .plainOnEncryptedLink)
        await rig.close(unbonded)

        // Unencrypted (not encrypted with the bond, as `write --signed` connects): signed,
        // each write with the next counter, and the server takes them.
        let plain = PeerSettings(connect: ConnectSettings(timeout: .seconds(2), encryptWithBond: false))
        for (round, value) in [UInt8(3), 4].enumerated() {
            _ = try? await rig.device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
            let peer = try await rig.open(plain)
            #expect(peer.connection?.security.encrypted == false)
            #expect(try await peer.writeSigned(handle: handle, value: [value]) == .signed(counter: UInt32(round)))
            #expect(try await peer.client.read(handle: handle) == [value], "the server verified and took it")
            await rig.close(peer)
        }
        serving.cancel()
        await rig.shutDown()
    }

    @Test("A SignCounters file that cannot be read: the peer's signed writes are refused, the file kept")
    func unreadableSignCountersRefuseSignedWrites() async throws {
        // On main the counters defaulted: any counter passed, so a sniffed signed write could
        // be replayed, and the file was then overwritten.
        let first = try await Rig()
        var (server, serving) = try await first.serve([Self.signedService])
        let bonded = try await first.open()
        _ = try await CentralLink.pair(#require(bonded.connection))
        await first.close(bonded)
        serving.cancel()
        await first.shutDown()

        let path = first.deviceStore.bonds.path(for: first.air.centralLEAddress, kind: GATTBondedClients.countersKind)
        let text = "version=1\npeer=not-a-number\n"
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        Glibc.close(fd)

        let rig = try await Rig((first.centralStore, first.deviceStore))
        (server, serving) = try await rig.serve([Self.signedService])
        let handle = try #require(server.valueHandle(of: BluetoothUUID(0xFFF1)))
        let peer = try await rig.open(PeerSettings(connect: ConnectSettings(timeout: .seconds(2), encryptWithBond: false)))
        #expect(peer.connection?.security.encrypted == false)
        #expect(try await peer.writeSigned(handle: handle, value: [9]) == .signed(counter: 0))
        #expect(try await peer.client.read(handle: handle) == [0], "the signed write was not taken")
        await rig.close(peer)
        let fd2 = Glibc.open(path, O_RDONLY)
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd2, $0.baseAddress, 256) }
        Glibc.close(fd2)
        #expect(String(decoding: buffer.prefix(max(0, n)), as: UTF8.self) == text, "the file is as it was")
        unlink(path)
        serving.cancel()
        await rig.shutDown()
    }
}
