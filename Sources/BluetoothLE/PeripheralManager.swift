import BluetoothSecurity
import Synchronization

/// A central connected to the ``PeripheralManager`` (`CBCentral`).
public struct Central: Sendable, Hashable, CustomStringConvertible {
    /// The server's handle on this central (stable while it is connected).
    public var id: ATTServerClientID
    /// Its address as the link describes it ("F0:F1:F2:F3:F4:01 (public)").
    public var peer: String
    /// ``peer``.
    public var description: String { peer }

    init(_ c: GATTServerClient) {
        id = c.id
        peer = c.peer
    }
}

/// What happens on the ``PeripheralManager``, in order.
public enum PeripheralManagerEvent: Sendable {
    case connected(Central)
    case disconnected(Central, reason: String)
    /// A central wrote a characteristic's value (`peripheralManager(_:didReceiveWrite:)`);
    /// it is stored already, and a write with response was answered.
    case wrote(Central, characteristic: BluetoothUUID, value: [UInt8], withResponse: Bool)
    /// A central enabled notifications or indications (`central:didSubscribeTo:`).
    case subscribed(Central, characteristic: BluetoothUUID)
    case unsubscribed(Central, characteristic: BluetoothUUID)
    /// The link's ATT_MTU changed: updates carry up to `mtu - 3` bytes now.
    case mtuChanged(Central, mtu: Int)
}

/// The peripheral role (`CBPeripheralManager`): a local GATT database served to every
/// central that connects, advertising, and updates to subscribed centrals.
///
/// ```swift
/// let manager = try await PeripheralManager(name: "Thermo", services: [service])
/// try await manager.startAdvertising()
/// for await event in manager.events { ... }
/// ```
public final class PeripheralManager: Sendable {
    /// The host underneath.
    public let host: HCIHost
    /// The GATT server (handles, stored values, subscribers).
    public let server: GATTServer
    /// The name in Generic Access and in the advertising data.
    public let name: String
    /// Everything that happens, in order (one consumer; the newest 4096 wait when it falls
    /// behind). Ends when the controller goes away or the manager is closed.
    public let events: AsyncStream<PeripheralManagerEvent>
    private let tasks: [Task<Void, Never>]
    private let primaryServices: [BluetoothUUID]
    private let ownAddress: AdvertisingConfiguration.OwnAddress

    /// Opens the controller and builds the database: Generic Access (with `name`),
    /// Generic Attribute (Service Changed, Database Hash), then `services`.
    public convenience init(name: String, services: [GATTLocalService], appearance: UInt16 = 0,
                            options: BluetoothOptions = BluetoothOptions()) async throws(BluetoothError) {
        let server = try Self.makeServer(name: name, services: services, appearance: appearance, bondDirectory: options.bondDirectory)
        self.init(name: name, server: server, primaryServices: services.filter(\.isPrimary).map(\.uuid),
                  host: try await options.openHost())
    }

    /// The same on a host that is open already (one controller for both roles, with a
    /// ``CentralManager/init(host:)``); `bondDirectory` keeps bonded centrals' subscriptions.
    /// One PeripheralManager per host (it takes the host's incoming connections), and
    /// ``close()`` closes the host for every role on it.
    public convenience init(name: String, services: [GATTLocalService], appearance: UInt16 = 0, host: HCIHost,
                            bondDirectory: String? = nil) throws(BluetoothError) {
        let server = try Self.makeServer(name: name, services: services, appearance: appearance, bondDirectory: bondDirectory)
        self.init(name: name, server: server, primaryServices: services.filter(\.isPrimary).map(\.uuid), host: host)
    }

    private static func makeServer(name: String, services: [GATTLocalService], appearance: UInt16,
                                   bondDirectory: String?) throws(BluetoothError) -> GATTServer {
        do throws(GATTDatabaseError) {
            return try GATTServer(services: [.genericAccess(deviceName: name, appearance: appearance), .genericAttribute()] + services,
                                  bondedClients: bondDirectory.map { GATTBondedClients(store: BondStore(directory: $0)) })
        } catch {
            throw BluetoothError(.invalidRequest, "cannot build the GATT database: \(error)", underlying: error)
        }
    }

    private init(name: String, server: GATTServer, primaryServices: [BluetoothUUID], host: HCIHost) {
        self.host = host
        self.server = server
        self.name = name
        self.primaryServices = primaryServices
        // A controller without a public address advertises from one random static address
        // for the manager's life (a new one each start would make it a new device each time).
        ownAddress = (try? host.advertisingAddress(.automatic).own) ?? .public  // .automatic never throws
        // Bounded like the server's own stream: a program that stops reading loses the
        // oldest events, memory does not grow.
        let (events, sink) = AsyncStream<PeripheralManagerEvent>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        self.events = events
        let layout = server.layout
        // The events end once the controller went away and every central's .disconnected
        // was passed on (the links close after incoming connections end).
        let tracker = ConnectedCentrals()
        tasks = [
            Task {
                _ = await server.serveIncomingLinks(of: host)
                if tracker.state.withLock({ t in t.ended = true; return t.connected.isEmpty }) { sink.finish() }
            },
            Task {
                for await e in server.events {
                    func uuid(_ handle: UInt16) -> BluetoothUUID? { layout.characteristic(containing: handle)?.uuid }
                    switch e {
                    case .connected(let c):
                        tracker.state.withLock { _ = $0.connected.insert(c.id) }
                        sink.yield(.connected(Central(c)))
                    case .disconnected(let c, let reason):
                        sink.yield(.disconnected(Central(c), reason: reason))
                        if tracker.state.withLock({ t in t.connected.remove(c.id); return t.ended && t.connected.isEmpty }) { sink.finish() }
                    case .mtuChanged(let c, let mtu): sink.yield(.mtuChanged(Central(c), mtu: mtu))
                    case .wrote(let c, let handle, let value, let withResponse):
                        // Values only, not descriptors (CCCD writes come as subscriptions).
                        if let ch = layout.characteristic(containing: handle), ch.valueHandle == handle {
                            sink.yield(.wrote(Central(c), characteristic: ch.uuid, value: value, withResponse: withResponse))
                        }
                    case .subscriptionChanged(let c, let handle, let config):
                        guard let u = uuid(handle) else { break }
                        sink.yield(config.isEmpty ? .unsubscribed(Central(c), characteristic: u) : .subscribed(Central(c), characteristic: u))
                    case .indicationConfirmed, .indicationTimedOut, .peerFault, .bondRestored: break
                    }
                }
                sink.finish()
            },
        ]
    }

    /// Starts advertising, connectable: the name and the primary services (or
    /// `serviceUUIDs`), what does not fit 31 bytes in the scan response. Advertising goes
    /// on after each connection until `maximumConnections` centrals are connected.
    public func startAdvertising(serviceUUIDs: [BluetoothUUID]? = nil, maximumConnections: Int = 4,
                                 interval: ClosedRange<Duration> = .milliseconds(100) ... .milliseconds(150)) async throws(BluetoothError) {
        let (adv, scan) = AdvertisingDataBuilder.legacyPayload(name: name, services: serviceUUIDs ?? primaryServices)
        do throws(HostError) {
            _ = try await host.startAdvertising(AdvertisingConfiguration(advertisingData: adv, scanResponseData: scan, interval: interval,
                                                                         ownAddress: ownAddress,
                                                                         maximumConnections: maximumConnections))
        } catch {
            throw BluetoothError(error)
        }
    }

    /// Stops advertising (connected centrals stay connected).
    public func stopAdvertising() async { await host.stopAdvertising() }

    /// The value handle of `characteristic` (the first with that UUID).
    public func handle(of characteristic: BluetoothUUID) throws(BluetoothError) -> UInt16 {
        guard let h = server.valueHandle(of: characteristic) else {
            throw BluetoothError(.notFound, "no characteristic \(characteristic) in the database")
        }
        return h
    }

    /// Sets the stored value (what centrals read next) without telling anyone.
    public func setValue(_ value: [UInt8], for characteristic: BluetoothUUID) throws(BluetoothError) {
        let h = try handle(of: characteristic)
        do throws(ATTServerError) { try server.setValue(value, for: h) } catch {
            throw BluetoothError(.invalidRequest, "\(error)", underlying: error)
        }
    }

    /// Stores `value` and sends it to the centrals subscribed to `characteristic` (or only
    /// to `centrals`): a notification, waiting while a link's queue is full, or for a
    /// characteristic that only indicates, an indication each (all at once), waiting for
    /// the confirmations. Returns the centrals it reached (`updateValue(_:for:onSubscribedCentrals:)`).
    /// A value over 512 bytes is refused (`.invalidRequest`); each central gets at most
    /// ``maximumUpdateValueLength(for:)`` of it.
    @discardableResult
    public func updateValue(_ value: [UInt8], for characteristic: BluetoothUUID,
                            onSubscribedCentrals centrals: [Central]? = nil) async throws(BluetoothError) -> [Central] {
        let h = try handle(of: characteristic)
        guard value.count <= ATT.maximumAttributeValueLength else {
            throw BluetoothError(.invalidRequest, "a value of \(value.count) bytes is over an attribute's 512")
        }
        let subscribers = server.subscribers(of: h).filter { s in centrals?.contains { $0.id == s.0.id } ?? true }
        let notifying = subscribers.filter { $0.1.contains(.notify) }.map(\.0)
        var reached: [Central] = []
        if !notifying.isEmpty {
            let r = await server.notifyWhenReady(h, value: value, to: notifying.map(\.id))
            reached += notifying.filter { c in r.sent.contains(c.id) }.map(Central.init)
        } else {
            do throws(ATTServerError) { try server.setValue(value, for: h) } catch {
                throw BluetoothError(.invalidRequest, "\(error)", underlying: error)
            }
        }
        let indicating = subscribers.filter { $0.1.contains(.indicate) && !$0.1.contains(.notify) }.map(\.0)
        let server = self.server
        reached += await withTaskGroup(of: Central?.self) { group in
            for c in indicating {
                group.addTask {
                    do throws(GATTServerError) {
                        try await server.indicate(h, value: value, to: c.id)
                        return Central(c)
                    } catch {
                        return nil
                    }
                }
            }
            var confirmed: [Central] = []
            for await c in group { if let c { confirmed.append(c) } }
            return confirmed
        }
        return reached
    }

    /// The centrals connected now.
    public var centrals: [Central] { server.clients.map(Central.init) }

    /// The largest update `central` receives whole in one notification: ATT_MTU - 3, at
    /// most 512.
    public func maximumUpdateValueLength(for central: Central) -> Int {
        min((server.mtu(of: central.id) ?? ATT.defaultMTU) - 3, ATT.maximumAttributeValueLength)
    }

    /// Accepts LE credit-based L2CAP channels on `psm` (0x0080-0x00FF;
    /// `CBPeripheralManager.publishL2CAPChannel`); the channels come in the stream.
    public func publishL2CAPChannel(_ psm: UInt16, requiresEncryption: Bool = false,
                                    parameters: L2CAPChannelParameters = .init()) -> AsyncStream<L2CAPChannel> {
        host.listenL2CAP(psm: psm, parameters: parameters, security: requiresEncryption ? .encryption : .none)
    }

    /// Refuses new channels on `psm` again (open ones stay).
    public func unpublishL2CAPChannel(_ psm: UInt16) { host.stopListeningL2CAP(psm: psm) }

    /// Stops advertising, disconnects every central and releases the controller.
    public func close() async {
        await host.stopAdvertising()
        for t in tasks { t.cancel() }
        await host.close()
        if let bonded = server.bondedClients { await bonded.flush() }
    }
}

/// Whether the controller went away, and the centrals whose .disconnected is still due.
final class ConnectedCentrals: Sendable {
    let state = Mutex<(ended: Bool, connected: Set<ATTServerClientID>)>((false, []))
}
