import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothSecurity
import BluetoothWire
import FakeController
import Glibc
import Synchronization
import Testing

/// Pairing and bonds between two hosts of ours on a FakeAir, each with its own SMP and bond
/// store: the application layer's pair, the reconnection encrypted with the bond, and the
/// device that forgot it (BLESA).
@Suite struct BondedLinkTests {
    final class Store: @unchecked Sendable {
        let dir: String
        let bonds: BondStore
        init() {
            var template = Array("/tmp/hcigatt-bondedlink-XXXXXX".utf8CString)
            dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
            bonds = BondStore(directory: dir)
        }
        deinit {
            for b in (try? bonds.all()) ?? [] { _ = try? bonds.remove(b.identity) }
            rmdir(dir)
        }
    }

    @Test func aBondMadeByPairingEncryptsTheNextLinkAndAForgottenBondStopsIt() async throws {
        let air = FakeAir()
        let centralStore = Store(), deviceStore = Store()
        let device = try await HCIHost.open(transport: air.peripheral, options: HostOptions(bondStore: deviceStore.bonds))
        let central = try await HCIHost.open(transport: air.central, options: HostOptions(bondStore: centralStore.bonds))
        let advertise = AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06])
        let settings = ConnectSettings(timeout: .seconds(2))

        // First link: no bond, nothing encrypted; pairing bonds both sides.
        _ = try await device.startAdvertising(advertise)
        let first = try await CentralLink.open(on: central, to: air.peripheralLEAddress, settings)
        #expect(first.bondSecurity == nil && !first.connection.security.encrypted)
        let result = try await CentralLink.pair(first.connection)
        #expect(result.bonded && result.secureConnections && result.method == .justWorks)
        #expect(first.connection.security.encrypted && first.connection.security.bonded)
        #expect(try centralStore.bonds.bond(for: air.peripheralLEAddress) != nil)
        #expect(await eventually { (try? deviceStore.bonds.bond(for: air.centralLEAddress)) != nil }, "the device filed its bond")
        await first.connection.disconnect()
        #expect(await eventually { !air.isConnected })

        // Second link: encrypted with the bond at once, no pairing.
        _ = try? await device.startAdvertising(advertise)
        let second = try await CentralLink.open(on: central, to: air.peripheralLEAddress, settings)
        let bonded = try #require(second.bondSecurity)
        #expect(bonded.encrypted && bonded.bonded && bonded.secureConnections && bonded.keySize == 16)
        await second.connection.disconnect()
        #expect(await eventually { !air.isConnected })

        // The device forgets the bond: our key is refused, the link dropped, .security.
        _ = try deviceStore.bonds.remove(air.centralLEAddress)
        _ = try? await device.startAdvertising(advertise)
        do {
            let third = try await CentralLink.open(on: central, to: air.peripheralLEAddress, settings)
            Issue.record("opened with \(third.connection.security)")
        } catch {
            #expect(error.kind == .security, "\(error)")
        }
        #expect(await eventually { !air.isConnected }, "the link is dropped, not used in clear")
        #expect(try centralStore.bonds.bond(for: air.peripheralLEAddress) != nil, "our bond stays until the user removes it")
        await central.close()
        await device.close()
    }

    @Test("BLESA: a protected read whose bond's key is refused fails; nothing pairs behind the user's back")
    func aRefusedBondIsNotPairedOverOnAProtectedRead() async throws {
        let air = FakeAir()
        let centralStore = Store(), deviceStore = Store()
        let device = try await HCIHost.open(transport: air.peripheral, options: HostOptions(bondStore: deviceStore.bonds))
        let secret = BluetoothUUID(0x2A19)
        let server = try GATTServer(services: [
            GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
                GATTLocalCharacteristic(uuid: secret, properties: [.read], permissions: [.readable, .readEncryptionRequired], value: .stored([42])),
            ]),
        ])
        let serving = Task { await server.serveIncomingLinks(of: device) }
        let central = try await HCIHost.open(transport: air.central, options: HostOptions(bondStore: centralStore.bonds))
        let advertise = AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06])
        // Bond once, then the device forgets.
        _ = try await device.startAdvertising(advertise)
        let first = try await CentralLink.open(on: central, to: air.peripheralLEAddress, ConnectSettings(timeout: .seconds(2)))
        _ = try await CentralLink.pair(first.connection)
        await first.connection.disconnect()
        #expect(await eventually { !air.isConnected })
        _ = try deviceStore.bonds.remove(air.centralLEAddress)

        // A link not encrypted at connect (as for signed writes); the protected read asks
        // for encryption, the bond's key is refused: the read fails, no Pairing Request goes.
        _ = try? await device.startAdvertising(advertise)
        let said = Mutex<[String]>([])
        let peer = try await GATTPeer.open(.address(air.peripheralLEAddress), via: .host(central),
                                           settings: PeerSettings(connect: ConnectSettings(timeout: .seconds(2), encryptWithBond: false)),
                                           progress: { p in if case .security(let e) = p { said.withLock { $0.append("\(e)") } } })
        let handle = try #require(server.valueHandle(of: secret))
        let smpBefore = air.central.acl.filter { aclParts($0).2.count > 4 && aclParts($0).2[2] == 6 }.count
        do {
            let v = try await peer.client.read(handle: handle)
            Issue.record("read \(v) without the bond")
        } catch {
            #expect(error.attErrorCode == .insufficientEncryption, "the server's refusal stands: \(error)")
        }
        #expect(said.withLock { $0.contains { $0.contains("refused the stored bond's key") } }, "\(said.withLock { $0 })")
        let smpAfter = air.central.acl.filter { aclParts($0).2.count > 4 && aclParts($0).2[2] == 6 }.count
        #expect(smpAfter == smpBefore, "no SMP sent: nothing paired")
        #expect(try centralStore.bonds.bond(for: air.peripheralLEAddress)?.peerLTK != nil, "our bond is as it was")
        await peer.close()
        serving.cancel()
        await central.close()
        await device.close()
    }

    /// Writes `text` as the bond file of `identity` in `store`.
    func corrupt(_ store: BondStore, _ identity: LEAddress, _ text: String = "version=1\nidentity=F0:F1:F2:F3:F4:01/public\nltk=zz\n") {
        let fd = open(store.path(for: identity), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = text.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    @Test("A bond that cannot be read stops the connection before anything is sent, naming the file")
    func anUnreadableBondIsNeverAPlainLink() async throws {
        // On main the bond was read with try?: a corrupt file meant no encryption and no
        // error, and read, write and the followers went on in clear.
        let air = FakeAir()
        let centralStore = Store()
        let central = try await HCIHost.open(transport: air.central, options: HostOptions(bondStore: centralStore.bonds))
        let device = try await HCIHost.open(transport: air.peripheral, options: HostOptions())
        _ = try await device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        corrupt(centralStore.bonds, air.peripheralLEAddress)
        let path = centralStore.bonds.path(for: air.peripheralLEAddress)
        for encrypt in [true, false] {  // false: a signed write's link
            let before = air.central.commands.count
            do {
                let link = try await CentralLink.open(on: central, to: air.peripheralLEAddress, ConnectSettings(timeout: .seconds(2), encryptWithBond: encrypt))
                Issue.record("opened with \(link.connection.security)")
            } catch {
                #expect(error.kind == .security && error.message.contains(path), "\(error)")
            }
            let sent = air.central.commands.dropFirst(before)
            #expect(!sent.contains(.leCreateConnection) && !sent.contains(.leExtendedCreateConnection), "nothing sent: \(sent)")
            #expect(!air.isConnected)
        }
        unlink(path)
        await central.close()
        await device.close()
    }

    @Test("Pairing over a bond that cannot be read fails before any SMP is sent")
    func noPairingOverAnUnreadableBond() async throws {
        let air = FakeAir()
        let centralStore = Store(), deviceStore = Store()
        let device = try await HCIHost.open(transport: air.peripheral, options: HostOptions(bondStore: deviceStore.bonds))
        let central = try await HCIHost.open(transport: air.central, options: HostOptions(bondStore: centralStore.bonds))
        _ = try await device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        let link = try await CentralLink.open(on: central, to: air.peripheralLEAddress, ConnectSettings(timeout: .seconds(2)))
        // The file goes bad while the link is up (another process, a disk error).
        corrupt(centralStore.bonds, air.peripheralLEAddress)
        let smp = { air.central.acl.filter { aclParts($0).2.count > 4 && aclParts($0).2[2] == 6 }.count }
        let before = smp()
        do {
            let r = try await CentralLink.pair(link.connection)
            Issue.record("paired: \(r)")
        } catch {
            #expect(error.message.contains(centralStore.bonds.path(for: air.peripheralLEAddress)), "\(error)")
        }
        #expect(smp() == before, "no Pairing Request sent")
        unlink(centralStore.bonds.path(for: air.peripheralLEAddress))
        await link.connection.disconnect()
        await central.close()
        await device.close()
    }

    @Test("A kept database without a Database Hash is never trusted for a bonded device")
    func aCacheWithoutAHashIsNotUsed() async throws {
        // What a spoofer's link in clear could leave behind: a database with no hash (here
        // with no services at all). The encrypted session with the real device discovers.
        let air = FakeAir()
        let centralStore = Store(), deviceStore = Store()
        let device = try await HCIHost.open(transport: air.peripheral, options: HostOptions(bondStore: deviceStore.bonds))
        let server = try GATTServer(services: [
            GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read], permissions: [.readable], value: .stored([42])),
            ]),
        ])
        let serving = Task { await server.serveIncomingLinks(of: device) }
        let central = try await HCIHost.open(transport: air.central, options: HostOptions(bondStore: centralStore.bonds))
        let advertise = AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06])
        _ = try await device.startAdvertising(advertise)
        let first = try await CentralLink.open(on: central, to: air.peripheralLEAddress, ConnectSettings(timeout: .seconds(2)))
        _ = try await CentralLink.pair(first.connection)
        await first.connection.disconnect()
        #expect(await eventually { !air.isConnected })
        try GATTDatabaseCacheFile.save(GATTCachedDatabase(database: GATTDatabase(), hash: nil), centralStore.bonds, air.peripheralLEAddress)

        _ = try? await device.startAdvertising(advertise)
        let peer = try await GATTPeer.open(.address(air.peripheralLEAddress), via: .host(central),
                                           settings: PeerSettings(connect: ConnectSettings(timeout: .seconds(2))))
        #expect(peer.connection?.security.encrypted == true)
        let d = try await peer.discover()
        #expect(d.discovery.source == .discovered, "\(d.discovery.source)")
        #expect(d.discovery.database.characteristic(uuid: BluetoothUUID(0x2A19)) != nil)
        let kept = try GATTDatabaseCacheFile.load(centralStore.bonds, air.peripheralLEAddress)
        if d.discovery.database.characteristic(uuid: BluetoothUUID(0x2B2A)) != nil {
            #expect(kept?.hash != nil && kept?.database == d.discovery.database, "kept anew, with its hash")
        } else {
            #expect(kept == nil, "a server without a hash: nothing kept that would not be trusted")
        }
        await peer.close()
        _ = try? centralStore.bonds.remove(air.peripheralLEAddress, kind: GATTDatabaseCacheFile.kind)
        serving.cancel()
        await central.close()
        await device.close()
    }
}
