import BluetoothSecurity

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
    /// Everything that happens, in order (one consumer).
    public let events: AsyncStream<PeripheralManagerEvent>
    private let tasks: [Task<Void, Never>]
    private let primaryServices: [BluetoothUUID]

    /// Opens the controller and builds the database: Generic Access (with `name`),
    /// Generic Attribute (Service Changed, Database Hash), then `services`.
    public init(name: String, services: [GATTLocalService], appearance: UInt16 = 0,
                options: BluetoothOptions = BluetoothOptions()) async throws(BluetoothError) {
        let server: GATTServer
        do throws(GATTDatabaseError) {
            server = try GATTServer(services: [.genericAccess(deviceName: name, appearance: appearance), .genericAttribute()] + services,
                                    bondedClients: options.bondDirectory.map { GATTBondedClients(store: BondStore(directory: $0)) })
        } catch {
            throw BluetoothError(.invalidRequest, "cannot build the GATT database: \(error)")
        }
        let host = try await options.openHost()
        self.host = host
        self.server = server
        self.name = name
        primaryServices = services.filter(\.isPrimary).map(\.uuid)
        let (events, sink) = AsyncStream<PeripheralManagerEvent>.makeStream()
        self.events = events
        let layout = server.layout
        tasks = [
            Task {
                for await link in host.incomingConnections { server.attach(link) }
            },
            Task {
                for await e in server.events {
                    func uuid(_ handle: UInt16) -> BluetoothUUID? { layout.characteristic(containing: handle)?.uuid }
                    switch e {
                    case .connected(let c): sink.yield(.connected(Central(c)))
                    case .disconnected(let c, let reason): sink.yield(.disconnected(Central(c), reason: reason))
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
                                                                         ownAddress: host.info.address == .zero ? .randomStatic(Self.randomStatic()) : .public,
                                                                         maximumConnections: maximumConnections))
        } catch {
            throw BluetoothError(error)
        }
    }

    private static func randomStatic() -> BluetoothAddress {
        var g = SystemRandomNumberGenerator()
        return BluetoothAddress.randomStatic(using: &g)
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
            throw BluetoothError(.invalidRequest, "\(error)")
        }
    }

    /// Stores `value` and sends it to the centrals subscribed to `characteristic` (or only
    /// to `centrals`): a notification, waiting while a link's queue is full, or for a
    /// characteristic that only indicates, an indication each, waiting for the confirmation.
    /// Returns the centrals it reached (`updateValue(_:for:onSubscribedCentrals:)`).
    @discardableResult
    public func updateValue(_ value: [UInt8], for characteristic: BluetoothUUID,
                            onSubscribedCentrals centrals: [Central]? = nil) async throws(BluetoothError) -> [Central] {
        let h = try handle(of: characteristic)
        let subscribers = server.subscribers(of: h).filter { s in centrals?.contains { $0.id == s.0.id } ?? true }
        let notifying = subscribers.filter { $0.1.contains(.notify) }.map(\.0)
        var reached: [Central] = []
        if !notifying.isEmpty {
            let r = await server.notifyWhenReady(h, value: value, to: notifying.map(\.id))
            reached += notifying.filter { c in r.sent.contains(c.id) }.map(Central.init)
        } else {
            try? server.setValue(value, for: h)
        }
        for (c, config) in subscribers where config.contains(.indicate) && !config.contains(.notify) {
            do throws(GATTServerError) {
                try await server.indicate(h, value: value, to: c.id)
                reached.append(Central(c))
            } catch {}
        }
        return reached
    }

    /// The centrals connected now.
    public var centrals: [Central] { server.clients.map(Central.init) }

    /// The largest update `central` can receive in one notification (ATT_MTU - 3).
    public func maximumUpdateValueLength(for central: Central) -> Int { (server.mtu(of: central.id) ?? ATT.defaultMTU) - 3 }

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
