import BluetoothTransport

// The application layer's GATT peer: find the device, connect (encrypting with its bond),
// and speak ATT to it, over our own host or the kernel's L2CAP socket. The CLI's commands,
// the gateway's links and the follower open peers only here.

/// Which host keeps the link.
public enum PeerRoute: Sendable {
    /// Ours: the link on this controller (scanning, bonds, connection parameters).
    case host(HCIHost)
    /// The kernel's: it keeps the link on adapter hciN and we speak ATT on its L2CAP socket
    /// (CID 4); the kernel raises security through its own SMP.
    case kernel(adapter: UInt16)
}

/// How a peer is found, connected and spoken to.
public struct PeerSettings: Sendable {
    /// How long to scan for a device named by name, service or untyped address.
    public var scanTimeout: Duration
    /// How the link is set up (timeout, bond encryption, connection parameters).
    public var connect: ConnectSettings
    /// The ATT transaction timeout (30 s, the spec's: Core Vol 3 Part F §3.3.3).
    public var attTimeout: Duration
    /// Reuse the database kept with a bond after one read of its Database Hash (else
    /// discover it all every time).
    public var reuseCache: Bool

    /// The defaults: 5 s of scanning, ``ConnectSettings``' defaults, 30 s, the cache reused.
    public init(scanTimeout: Duration = .seconds(5), connect: ConnectSettings = ConnectSettings(),
                attTimeout: Duration = .seconds(30), reuseCache: Bool = true) {
        self.scanTimeout = scanTimeout
        self.connect = connect
        self.attTimeout = attTimeout
        self.reuseCache = reuseCache
    }
}

/// What opening a peer is doing, for a program to tell its user as it goes.
public enum PeerProgress: Sendable {
    /// Scanning for the device (a name, a service, an untyped address).
    case scanning(DeviceTarget)
    /// The scan found it.
    case found(FoundDevice)
    /// Connecting to it; `route` names the kernel's adapter when the kernel connects.
    case connecting(LEAddress, kernelAdapter: UInt16?)
    /// Our link is up and set up (bond encryption, parameters).
    case connected(CentralLink)
    /// A request was refused for security and the client raises it (see
    /// ``GATTClient/Options/securityObserver``).
    case security(GATTSecurityEvent)
}

/// A connected GATT peer: the client, the address, and the link when it is ours.
public struct GATTPeer: Sendable {
    /// The GATT client on the link.
    public let client: GATTClient
    /// The address connected to.
    public let address: LEAddress
    /// Our link with what setting it up did (nil: the kernel keeps the link).
    public let link: CentralLink?
    /// The kernel's L2CAP ATT socket, when the kernel keeps the link.
    public let kernelBearer: KernelATTBearer?
    let bonds: BondStore?

    /// Our link (nil over the kernel).
    public var connection: LEConnection? { link?.connection }

    /// Finds `target` (``DeviceTarget/find(on:timeout:)``) and connects on `route`: on our
    /// host through ``CentralLink/open(on:to:_:)`` (a bonded device encrypted with its key,
    /// or the link dropped); on the kernel's, a typed or untyped address only (an untyped one
    /// is taken as public: the kernel cannot scan for us). `.notFound` when the scan finds
    /// nothing, `.invalidRequest` for what the route cannot do.
    public static func open(_ target: DeviceTarget, via route: PeerRoute, settings: PeerSettings = PeerSettings(),
                            progress: @escaping @Sendable (PeerProgress) -> Void = { _ in })
        async throws(BluetoothError) -> GATTPeer
    {
        let options = GATTClient.Options(requestTimeout: settings.attTimeout, securityObserver: { progress(.security($0)) })
        switch route {
        case .kernel(let adapter):
            if settings.connect.parameters != nil {
                throw BluetoothError(.invalidRequest, "connection parameters need our own host: over l2cap:hci\(adapter) the kernel owns the link")
            }
            let peer: LEAddress
            switch target {
            case .address(let a): peer = a
            case .untypedAddress(let a): peer = LEAddress(a, type: .public)
            case .name, .service:
                throw BluetoothError(.invalidRequest, "over l2cap:hci\(adapter) give the device's address (AA:BB:CC:DD:EE:FF[/random]); finding it by name needs an HCI transport")
            }
            progress(.connecting(peer, kernelAdapter: adapter))
            var kopts = KernelATTBearerOptions()
            kopts.connectTimeout = settings.connect.timeout
            let bearer: KernelATTBearer
            do throws(TransportError) { bearer = try KernelATTBearer(adapter: adapter, peer: peer, options: kopts) } catch {
                throw BluetoothError(error)
            }
            return GATTPeer(client: GATTClient(bearer: bearer, options: options), address: peer, link: nil,
                            kernelBearer: bearer, bonds: nil)
        case .host(let host):
            let peer: LEAddress
            if case .address(let a) = target {
                peer = a
            } else {
                progress(.scanning(target))
                let found = try await target.find(on: host, timeout: settings.scanTimeout)
                progress(.found(found))
                peer = found.address
            }
            progress(.connecting(peer, kernelAdapter: nil))
            let link = try await CentralLink.open(on: host, to: peer, settings.connect)
            progress(.connected(link))
            return GATTPeer(client: GATTClient(bearer: HostATTBearer(connection: link.connection), options: options),
                            address: peer, link: link, kernelBearer: nil, bonds: host.bondStore)
        }
    }

    /// The peer's database (``discoverDatabase(_:link:bonds:reuseCache:)``): a bonded
    /// device's kept one when its Database Hash says it is current, else discovered.
    public func discover(reuseCache: Bool = true) async throws(GATTError) -> DatabaseDiscovery {
        try await discoverDatabase(client, link: connection, bonds: bonds, reuseCache: reuseCache)
    }

    /// Whether the database may come from the bond's cache (a bonded link with a database
    /// kept, the cache asked for; the Database Hash still decides): a program says
    /// "discovering..." otherwise.
    public func mayReuseCache(_ reuseCache: Bool = true) -> Bool {
        guard reuseCache, let bonds, let connection, encryptedWithBond(connection) else { return false }
        return (try? bonds.contains(connection.peerIdentity, kind: GATTDatabaseCacheFile.kind)) ?? false
    }

    /// How ``writeSigned(handle:value:)`` sent the value.
    public enum SignedWrite: Sendable, Equatable {
        /// The link is encrypted: a plain Write Command carries it (signing is for
        /// unencrypted links, Core Vol 3 Part G §4.9.2).
        case plainOnEncryptedLink
        /// Signed with our CSRK and this SignCounter.
        case signed(counter: UInt32)
    }

    /// Signed Write Without Response (Core Vol 3 Part G §4.9.2; Part H §2.4.5) with the
    /// CSRK we gave the device when bonding and the bond's next SignCounter, which is on
    /// disk before the write goes: a counter is never used twice, even after a crash. One
    /// signed write at a time per bond store (each reads the counters from disk).
    public func writeSigned(handle: UInt16, value: [UInt8]) async throws(BluetoothError) -> SignedWrite {
        guard let link = connection else {
            throw BluetoothError(.invalidRequest, "signed writes need a link of our own host (not the kernel's L2CAP socket)")
        }
        if link.security.encrypted {
            do throws(GATTError) { try await client.writeWithoutResponse(handle: handle, value: value) } catch { throw BluetoothError(error) }
            return .plainOnEncryptedLink
        }
        let bond: Bond?
        do throws(HostError) { bond = try link.storedBond() } catch { throw BluetoothError(error) }
        guard let bond, let csrk = bond.localCSRK, let bonds else {
            throw BluetoothError(.security, "no signature key for \(link.peerIdentity): pair first, and the device must take our CSRK")
        }
        let counters = GATTBondedClients(store: bonds)
        // A counters file that cannot be read would start again at 0 and be overwritten:
        // counters used twice, which the device refuses as replays.
        let file = bonds.path(for: link.peerIdentity, kind: GATTBondedClients.countersKind)
        if let failure = counters.loadFailures.first(where: { $0.path == file }) {
            throw BluetoothError(.security, "the SignCounters cannot be read, nothing sent: \(failure)")
        }
        guard let counter = counters.takeLocalSignCounter(for: link.peerIdentity, key: csrk) else {
            throw BluetoothError(.security, "every SignCounter of this bond is used: pair again")
        }
        await counters.flush()
        if let failure = counters.writeFailures.first {
            throw BluetoothError(.security, "the SignCounter could not be kept, nothing sent: \(failure)")
        }
        let key = (0 ..< 16).map { UInt8(truncatingIfNeeded: csrk >> (8 * (15 - UInt128($0)))) }
        do throws(GATTError) {
            try await client.writeSigned(handle: handle, value: value, csrk: key, signCounter: counter)
        } catch {
            throw BluetoothError(error)
        }
        return .signed(counter: counter)
    }

    /// Closes the client and disconnects our link.
    public func close() async {
        client.close()
        await connection?.disconnect()
    }
}
