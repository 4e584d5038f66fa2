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
    /// What this host asks for and accepts when pairing (IO capability, MITM, SC, key size,
    /// bonding).
    public var security: SMPConfiguration
    /// Privacy: this host's identity resolving key (kept in the bond directory, made on first
    /// use) goes to the peers it bonds with, so they can resolve the private addresses it
    /// advertises from. Needs `bondDirectory`.
    public var privacy: Bool
    /// Sees every packet both ways (`true`: sent), on the host's driver thread (a btsnoop
    /// writer); it must not block.
    public var packetObserver: (@Sendable (UnsafeRawBufferPointer, Bool) -> Void)?
    /// A bonded peer may pair again without MITM protection (``HostOptions/allowsRepairing``).
    public var allowsRepairing: Bool

    /// The defaults: `$HCIGATT_TRANSPORT` or the first adapter, nothing stored, Just Works,
    /// re-pairing over a bond refused without MITM.
    public init(transport: String? = nil, bringDown: Bool = false, bondDirectory: String? = nil,
                pairingAgent: PairingAgent = .justWorks, commandTimeout: Duration = .seconds(5),
                security: SMPConfiguration = SMPConfiguration(), privacy: Bool = false,
                packetObserver: (@Sendable (UnsafeRawBufferPointer, Bool) -> Void)? = nil, allowsRepairing: Bool = false) {
        self.allowsRepairing = allowsRepairing
        self.transport = transport
        self.bringDown = bringDown
        self.bondDirectory = bondDirectory
        self.pairingAgent = pairingAgent
        self.commandTimeout = commandTimeout
        self.security = security
        self.privacy = privacy
        self.packetObserver = packetObserver
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

    /// A controller opened by ``openController()``: the host, and the transport's name for
    /// messages ("tcp:127.0.0.1:1234").
    public struct OpenedController: Sendable {
        /// The host, running.
        public let host: HCIHost
        /// The transport's name.
        public let transportName: String
    }

    /// Chooses the controller (``chooseController(_:)``), opens its transport and
    /// initialises it: the one way the CLI, the gateway and the managers open one.
    /// `.invalidRequest` for a malformed spec or privacy without a bond directory,
    /// `.unavailable` for no adapter or one that cannot be opened, and the host's kind
    /// (a timeout, a refusal) when initialisation fails, said with the transport's name.
    public func openController() async throws(BluetoothError) -> OpenedController {
        let spec = try Self.chooseController(transport)
        let store = bondDirectory.map { BondStore(directory: $0) }
        var irk: UInt128?
        if privacy {
            guard let store else { throw BluetoothError(.invalidRequest, "privacy needs a bond directory (its identity key is kept there)") }
            do throws(BondStoreError) { irk = try store.localIdentityResolvingKey() } catch {
                throw BluetoothError(.unavailable, "privacy: \(error)")
            }
        }
        var topts = TransportOptions()
        topts.bringDown = bringDown
        let t: any HCITransport
        do { t = try openTransport(spec, options: topts) } catch {
            throw BluetoothError(.unavailable, error.message, underlying: error)
        }
        let name = t.description
        do {
            let host = try await HCIHost.open(transport: t, options: HostOptions(
                commandTimeout: commandTimeout, packetObserver: packetObserver, security: security,
                pairingAgent: pairingAgent, bondStore: store, identityResolvingKey: irk, allowsRepairing: allowsRepairing))
            return OpenedController(host: host, transportName: name)
        } catch {
            throw BluetoothError("\(name): controller initialisation failed: \(error)", underlying: error)
        }
    }

    /// Opens the controller for a manager.
    func openHost() async throws(BluetoothError) -> HCIHost { try await openController().host }
}

import Glibc

enum Environment {
    static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
