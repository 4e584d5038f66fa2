// BluetoothLE: the roles a CoreBluetooth developer knows, on hcigatt's raw-HCI host.
//
//   CentralManager    (CBCentralManager)    scan, connect
//   Peripheral        (CBPeripheral)        a connected device: discover, read, write,
//                                           notifications, L2CAP channels
//   PeripheralManager (CBPeripheralManager) a local GATT database, advertising, requests,
//                                           updates to subscribed centrals, L2CAP servers
//   Central           (CBCentral)           a central connected to the PeripheralManager
//
// Everything is async/await; streams are AsyncSequences that end with a typed
// ``BluetoothError``; times are `Duration`. The layers below stay importable on their own
// (BluetoothWire, BluetoothHost, BluetoothGATT, BluetoothProfiles) and their types appear
// here unchanged: UUIDs, addresses, GATT services and characteristics, L2CAP channels.
@_exported import BluetoothGATT
@_exported import BluetoothHost
@_exported import BluetoothProfiles
@_exported import BluetoothWire
import BluetoothSecurity
import BluetoothTransport

/// Where the controller is and how the host treats it; shared by both managers.
public struct BluetoothOptions: Sendable {
    /// `user:hciN` (HCI user channel; the adapter must be down), `raw:hciN`,
    /// `tcp:HOST:PORT` (H4 over TCP, e.g. a virtual controller), `serial:/dev/ttyX[,BAUD]`.
    /// nil: `$HCIGATT_TRANSPORT`, else the first adapter's user channel.
    public var transport: String?
    /// Take the user channel even if the kernel has the adapter up (brings it down).
    public var bringDown: Bool
    /// Where bonds are kept (nil: none are stored; pairing still works for the link).
    public var bondDirectory: String?
    /// Who answers passkeys and number comparisons (default: Just Works only).
    public var pairingAgent: PairingAgent
    /// How long to wait for the controller to answer a command.
    public var commandTimeout: Duration

    /// The defaults: `$HCIGATT_TRANSPORT` or the first adapter, nothing stored, Just Works.
    public init(transport: String? = nil, bringDown: Bool = false, bondDirectory: String? = nil,
                pairingAgent: PairingAgent = .justWorks, commandTimeout: Duration = .seconds(5)) {
        self.transport = transport
        self.bringDown = bringDown
        self.bondDirectory = bondDirectory
        self.pairingAgent = pairingAgent
        self.commandTimeout = commandTimeout
    }

    /// Which controller: `transport` (else `$HCIGATT_TRANSPORT`) parsed, else the user channel
    /// of the first adapter that is down (else the first adapter). The one choice for the CLI,
    /// the gateway and the managers. `.invalidRequest` for a malformed spec, `.unavailable`
    /// when no adapter is there.
    public static func chooseController(_ transport: String?) throws(BluetoothError) -> TransportSpec {
        if let text = transport ?? Environment.value("HCIGATT_TRANSPORT") {
            do throws(TransportError) { return try TransportSpec(parsing: text) } catch { throw BluetoothError(error) }
        }
        let adapters: [AdapterInfo]
        do throws(TransportError) { adapters = try listAdapters() } catch {
            throw BluetoothError(.unavailable, "no transport given and no local adapter usable: \(error.message)", underlying: error)
        }
        guard let chosen = adapters.first(where: { !$0.isUp }) ?? adapters.first else {
            throw BluetoothError(.unavailable, "no Bluetooth adapter found. Plug one in, or use a transport tcp:HOST:PORT for a virtual controller")
        }
        do throws(TransportError) { return try TransportSpec(parsing: "user:\(chosen.name)") } catch {
            throw BluetoothError(.unavailable, error.message, underlying: error)
        }
    }

    /// Opens the transport and initialises the controller.
    func openHost() async throws(BluetoothError) -> HCIHost {
        let spec = try Self.chooseController(transport)
        var topts = TransportOptions()
        topts.bringDown = bringDown
        let t: any HCITransport
        do { t = try openTransport(spec, options: topts) } catch {
            throw BluetoothError(.unavailable, error.message, underlying: error)
        }
        do {
            return try await HCIHost.open(transport: t, options: HostOptions(
                commandTimeout: commandTimeout, pairingAgent: pairingAgent,
                bondStore: bondDirectory.map { BondStore(directory: $0) }))
        } catch {
            throw BluetoothError(error)
        }
    }
}

import Glibc

enum Environment {
    static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
