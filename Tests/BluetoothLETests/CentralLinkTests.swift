import BluetoothHost
import BluetoothLE
import BluetoothSecurity
import BluetoothWire
import FakeController
import Glibc
import Synchronization
import Testing

/// The application layer's central link (CentralLink, and CentralManager on it) against a
/// fake controller: connect, encrypt with the stored bond, ask for parameters. These are
/// the policies the CLI, the gateway and the facade share.
@Suite struct CentralLinkTests {
    /// A bond store in a fresh directory with a bond for `peerA` (authenticated, SC).
    final class Bonds: @unchecked Sendable {
        let dir: String
        let store: BondStore
        init(bonded: Bool = true) throws {
            var template = Array("/tmp/hcigatt-centrallink-XXXXXX".utf8CString)
            dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
            store = BondStore(directory: dir)
            if bonded {
                try store.save(Bond(identity: peerA, result: SMPPairingResult(
                    method: .passkeyEntry(localDisplays: false, peerDisplays: true), secureConnections: true, authenticated: true,
                    keySize: 16, bonded: true, peerLTK: SMPLongTermKey(key: 0x1234)), created: 0))
            }
        }
        deinit {
            _ = try? store.remove(peerA)
            rmdir(dir)
        }
    }

    /// A controller that connects to peerA at once, answers LE Enable Encryption with
    /// Encryption Change `status` (enabled when success), and Disconnect with its completion.
    func controller(encryption status: HCIErrorCode, model: FakeControllerModel = FakeControllerModel()) -> FakeControllerTransport {
        var model = model
        model.statusOpcodes.insert(.leEnableEncryption)
        return FakeControllerTransport(model: model, onCommand: { opcode, fake in
            switch opcode {
            case .leCreateConnection, .leExtendedCreateConnection:
                fake.injectEvent(connectionCompleteEvent(handle: 0x40))
            case .leEnableEncryption:
                fake.injectEvent([0x08, 4, status.rawValue, 0x40, 0x00, status == .success ? 1 : 0])
            case .disconnect:
                fake.injectEvent(disconnectionCompleteEvent(handle: 0x40, reason: .connectionTerminatedByLocalHost))
            default: break
            }
        })
    }

    @Test("BLESA: a bonded device that refuses our key is dropped, not used unencrypted")
    func aBondedDeviceThatRefusesTheKeyIsDropped() async throws {
        let bonds = try Bonds()
        let fake = controller(encryption: .pINOrKeyMissing)
        let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: bonds.store))
        do {
            let link = try await CentralLink.open(on: host, to: peerA, ConnectSettings(timeout: .seconds(2)))
            Issue.record("opened, security \(link.connection.security)")
        } catch {
            #expect(error.kind == .security, "\(error)")
            #expect(error.message.contains("refused the stored bond's key") && error.message.contains("remove the bond"))
        }
        #expect(fake.commands.contains(.leEnableEncryption))
        #expect(await eventually { fake.commands.contains(.disconnect) }, "the link is dropped")
        #expect(try bonds.store.bond(for: peerA) != nil, "the bond stays: removing it is the user's call")
        await host.close()
    }

    @Test func theFacadeTakesTheSameRoad() async throws {
        let bonds = try Bonds()
        let fake = controller(encryption: .pINOrKeyMissing)
        let manager = CentralManager(host: try await HCIHost.open(transport: fake, options: HostOptions(bondStore: bonds.store)))
        await #expect(throws: BluetoothError.self) { _ = try await manager.connect(to: peerA, timeout: .seconds(2)) }
        #expect(await eventually { fake.commands.contains(.disconnect) })
        await manager.close()
    }

    @Test func aBondedDeviceThatTakesTheKeyGetsTheBondsSecurity() async throws {
        let bonds = try Bonds()
        let fake = controller(encryption: .success)
        let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: bonds.store))
        let link = try await CentralLink.open(on: host, to: peerA, ConnectSettings(timeout: .seconds(2)))
        let expected = LinkSecurity(encrypted: true, keySize: 16, authenticated: true, secureConnections: true, bonded: true)
        #expect(link.bondSecurity == expected && link.connection.security == expected)
        // LE Enable Encryption carried the bond's LTK (0x1234, least significant octet first).
        let command = try #require(fake.commandPackets.first { opcodeOf($0) == .leEnableEncryption })
        #expect(command.count == 32 && command[16] == 0x34 && command[17] == 0x12 && command[18 ..< 32].allSatisfy { $0 == 0 })
        #expect(!fake.commands.contains(.disconnect))
        await host.close()
    }

    @Test func withoutABondOrWhenToldNotToNothingIsEncrypted() async throws {
        for (bonded, encrypt) in [(false, true), (true, false)] {
            let bonds = try Bonds(bonded: bonded)
            let fake = controller(encryption: .success)
            let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: bonds.store))
            let link = try await CentralLink.open(on: host, to: peerA, ConnectSettings(timeout: .seconds(2), encryptWithBond: encrypt))
            #expect(link.bondSecurity == nil && !link.connection.security.encrypted)
            #expect(!fake.commands.contains(.leEnableEncryption), "bonded \(bonded), encrypt \(encrypt)")
            await host.close()
        }
    }

    @Test func aRefusedParameterUpdateDropsTheLink() async throws {
        var model = FakeControllerModel()
        model.failing[.leConnectionUpdate] = .unsupportedFeatureOrParameterValue
        let fake = controller(encryption: .success, model: model)
        let host = try await HCIHost.open(transport: fake)
        do {
            _ = try await CentralLink.open(on: host, to: peerA, ConnectSettings(timeout: .seconds(2),
                                                                                parameters: ConnectionParameterWish(interval: 6 ... 12)))
            Issue.record("opened")
        } catch {
            #expect(error.message.contains("connection update refused"), "\(error)")
        }
        #expect(fake.commands.contains(.leConnectionUpdate))
        #expect(await eventually { fake.commands.contains(.disconnect) })
        await host.close()
    }

    @Test func aDeviceThatNeverConnectsTimesOutWithWhy() async throws {
        var model = FakeControllerModel()
        model.statusOpcodes.insert(.leEnableEncryption)
        let fake = FakeControllerTransport(model: model, onCommand: { opcode, fake in
            if opcode == .leCreateConnectionCancel { fake.injectEvent(connectionCompleteEvent(status: .unknownConnectionIdentifier, handle: 0)) }
        })
        let host = try await HCIHost.open(transport: fake)
        do {
            _ = try await CentralLink.open(on: host, to: peerA, ConnectSettings(timeout: .milliseconds(200)))
            Issue.record("connected")
        } catch {
            #expect(error.kind == .timeout && error.message.contains("cannot connect to \(peerA)"), "\(error)")
        }
        await host.close()
    }
}
