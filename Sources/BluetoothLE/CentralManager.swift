import BluetoothSecurity

/// A device heard while scanning: its address, what it advertises, how loud.
/// (CoreBluetooth hands the same as a `CBPeripheral` plus the advertisement dictionary.)
public struct Advertisement: Sendable, Hashable {
    /// Everything the scanner decoded (raw advertising and scan response data included).
    public var device: DiscoveredDevice

    /// The address to connect to.
    public var address: LEAddress { device.address }
    /// The bonded identity behind a resolvable private address (nil: not resolved).
    public var identity: LEAddress? { device.identity }
    /// The complete or shortened local name.
    public var name: String? { device.name }
    /// Signal strength of the latest report, in dBm.
    public var rssi: Int8? { device.rssi }
    /// The transmit power it advertises (TX Power Level), in dBm.
    public var txPower: Int8? { device.txPower }
    /// The service UUIDs it advertises (complete and incomplete lists).
    public var serviceUUIDs: [BluetoothUUID] { device.serviceUUIDs }
    /// Manufacturer Specific Data: company identifier and payload.
    public var manufacturerData: ManufacturerData? { device.manufacturerData }
    /// Whether a central may connect (ADV_IND, or connectable extended advertising).
    public var isConnectable: Bool { device.eventType.connectable }
}

/// What a scan looks for (every field narrows it; the defaults find everything).
public struct ScanFilter: Sendable, Hashable {
    /// Devices advertising any of these services (empty: any).
    public var services: [BluetoothUUID]
    /// Devices whose name contains this, ignoring case.
    public var name: String?
    /// This device only.
    public var address: BluetoothAddress?
    /// Devices heard at least this loud.
    public var minimumRSSI: Int8?

    /// A filter; with no arguments, every device.
    public init(services: [BluetoothUUID] = [], name: String? = nil, address: BluetoothAddress? = nil, minimumRSSI: Int8? = nil) {
        self.services = services
        self.name = name
        self.address = address
        self.minimumRSSI = minimumRSSI
    }
}

/// The central role (`CBCentralManager`): one controller, scanning and connecting to
/// peripherals. Open one per controller; ``close()`` disconnects everything.
///
/// ```swift
/// let central = try await CentralManager(BluetoothOptions(transport: "tcp:127.0.0.1:9001"))
/// let heard = try await central.find(ScanFilter(services: [BluetoothUUID(0x1809)]))
/// let thermometer = try await central.connect(heard)
/// ```
public final class CentralManager: Sendable {
    /// The host underneath, for what this facade does not cover.
    public let host: HCIHost

    /// Opens the controller (`options.transport`) and initialises it.
    public init(_ options: BluetoothOptions = BluetoothOptions()) async throws(BluetoothError) {
        host = try await options.openHost()
    }

    /// A central on a host that is open already: the same controller can serve a
    /// ``PeripheralManager`` too (``PeripheralManager/init(name:services:appearance:host:bondDirectory:)``).
    /// ``close()`` closes the host for every role on it.
    public init(host: HCIHost) { self.host = host }

    /// This controller's public address.
    public var address: BluetoothAddress { host.info.address }

    /// Advertisements matching `filter`: each device once when first heard, and again when
    /// what it advertises changes (every report with `allowDuplicates`). Scanning stops when
    /// the consuming task stops iterating; one scan at a time.
    public func scan(_ filter: ScanFilter = ScanFilter(), allowDuplicates: Bool = false,
                     active: Bool = true) -> BluetoothStream<Advertisement> {
        let events = host.scan(ScanConfiguration(active: active, reportDuplicates: allowDuplicates, services: filter.services,
                                                 nameSubstring: filter.name, address: filter.address,
                                                 minimumRSSI: filter.minimumRSSI))
        return BluetoothStream(events) { Advertisement(device: $0.device) }
    }

    /// The first device matching `filter`, or `.notFound` after `timeout`. A filter of one
    /// criterion is a ``DeviceTarget`` lookup, as the CLI's: an address (or a bonded
    /// identity behind its private address), a name (the exact name ignoring case first,
    /// else a name containing it), a service; with several criteria, a name containing it.
    public func find(_ filter: ScanFilter, timeout: Duration = .seconds(10)) async throws(BluetoothError) -> Advertisement {
        let target: DeviceTarget
        let alone = filter.minimumRSSI == nil
        if alone, let a = filter.address, filter.services.isEmpty, filter.name == nil {
            target = .untypedAddress(a)
        } else if alone, let n = filter.name, filter.services.isEmpty, filter.address == nil {
            target = .name(n)
        } else if alone, filter.services.count == 1, filter.name == nil, filter.address == nil {
            target = .service(filter.services[0])
        } else {
            // A combination: the general scan with a deadline.
            return try await firstMatch(filter, timeout: timeout)
        }
        let found = try await target.find(on: host, timeout: timeout)
        // An address must be heard here: an advertisement is what this returns.
        guard let d = found.advertisement else { throw BluetoothError(.notFound, "no \(target) found in \(timeout) of scanning") }
        return Advertisement(device: d)
    }

    private func firstMatch(_ filter: ScanFilter, timeout: Duration) async throws(BluetoothError) -> Advertisement {
        let stream = scan(filter)
        let found: Result<Advertisement?, BluetoothError> = await withTaskGroup(of: Result<Advertisement?, BluetoothError>.self) { group in
            group.addTask {
                do throws(BluetoothError) {
                    for try await a in stream { return .success(a) }
                    return .success(nil)
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .success(nil)
            }
            let first = await group.next() ?? .success(nil)
            group.cancelAll()
            return first
        }
        guard let a = try found.get() else { throw BluetoothError(.notFound, "no device matching the filter within \(timeout)") }
        return a
    }

    /// Connects to the device behind `advertisement`.
    public func connect(_ advertisement: Advertisement, timeout: Duration = .seconds(10)) async throws(BluetoothError) -> Peripheral {
        let p = try await connect(to: advertisement.address, timeout: timeout)
        p.advertisedName = advertisement.name
        return p
    }

    /// Connects to `address` (no scan: it must be advertising connectably) and settles the
    /// ATT_MTU. The link is set up as the CLI's (``CentralLink/open(on:to:_:)``): a bonded
    /// device is encrypted with its stored key at once; when that fails (the device forgot
    /// the bond) the link is dropped and this throws `.security`, as CoreBluetooth reports
    /// "peer removed pairing information": remove the bond (`hcigatt unpair`) to pair again.
    public func connect(to address: LEAddress, timeout: Duration = .seconds(10)) async throws(BluetoothError) -> Peripheral {
        let link = try await CentralLink.open(on: host, to: address, ConnectSettings(timeout: timeout))
        let p = Peripheral(link: link.connection, bonds: host.bondStore)
        _ = try? await p.gatt.exchangeMTU()
        return p
    }

    /// Disconnects every peripheral and releases the controller.
    public func close() async { await host.close() }
}

extension Array where Element == GATTService {
    /// The first service with `uuid` (`services[BluetoothUUID(0x1809)]`), as the 8-Ball SDK's
    /// CoreBluetooth lookup does with strings.
    public subscript(uuid: BluetoothUUID) -> GATTService? { first { $0.uuid == uuid } }
}

extension Array where Element == GATTCharacteristic {
    /// The first characteristic with `uuid`.
    public subscript(uuid: BluetoothUUID) -> GATTCharacteristic? { first { $0.uuid == uuid } }
}
