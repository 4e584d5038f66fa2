import BluetoothSecurity
import Synchronization

/// How a value is written (`CBCharacteristicWriteType`).
public enum WriteType: Sendable, Hashable {
    /// Write Request: the peer confirms (or refuses with an ATT error).
    case withResponse
    /// Write Command: no answer; returns once the PDU is queued (waits for room first).
    case withoutResponse
}

/// A connected peripheral (`CBPeripheral`): GATT discovery, reads, writes, notifications
/// and L2CAP channels over one LE link. Discovered services and characteristics are
/// remembered, so asking twice costs nothing.
public final class Peripheral: Sendable, CustomStringConvertible {
    /// The link (connection parameters, security, pairing).
    public let link: LEConnection
    /// The GATT client on the link, for procedures this facade does not cover.
    public let gatt: GATTClient

    private struct State {
        var advertisedName: String?
        var services: [GATTService]?
        var characteristics: [UInt16: [GATTCharacteristic]] = [:]
        var databaseSource: GATTDiscoverySource?
    }
    private let state = Mutex(State())
    /// Where the bond's GATT cache is kept (the host's bond store).
    private let bonds: BondStore?

    init(link: LEConnection, bonds: BondStore?) {
        self.link = link
        self.bonds = bonds
        gatt = GATTClient(bearer: HostATTBearer(connection: link))
    }

    /// The address connected to.
    public var address: LEAddress { link.address }
    /// Who the peer is: its bonded identity when its address resolved to one, else the address.
    public var identifier: LEAddress { link.peerIdentity }
    /// The name it advertised (nil when connected by address).
    public internal(set) var advertisedName: String? {
        get { state.withLock { $0.advertisedName } }
        set { state.withLock { $0.advertisedName = newValue } }
    }
    /// Whether the link is still up.
    public var isConnected: Bool { link.isConnected }
    /// The most a write without response can carry: ATT_MTU - 3, at most 512 (an
    /// attribute value's limit).
    public var maximumWriteValueLength: Int { min(gatt.mtu - 3, ATT.maximumAttributeValueLength) }
    /// The address, and the advertised name when known.
    public var description: String { "\(address)\(advertisedName.map { " \"\($0)\"" } ?? "")" }

    // MARK: Discovery

    /// The whole database, as the CLI's commands get it (``discoverDatabase(_:link:bonds:reuseCache:)``):
    /// for a bonded peripheral the one kept with its bond when one read of the Database Hash
    /// says it is current, else discovered (and kept with the bond). What it finds answers
    /// the ``discoverServices(_:)`` and ``discoverCharacteristics(_:for:)`` that follow.
    public func discoverDatabase(reuseCache: Bool = true) async throws(BluetoothError) -> DatabaseDiscovery {
        let r: DatabaseDiscovery
        do throws(GATTError) { r = try await BluetoothLE.discoverDatabase(gatt, link: link, bonds: bonds, reuseCache: reuseCache) } catch {
            throw BluetoothError(error)
        }
        let db = r.discovery.database
        state.withLock { s in
            s.services = db.services.filter(\.isPrimary)
            for service in db.services { s.characteristics[service.startHandle] = service.characteristics }
            s.databaseSource = r.discovery.source
        }
        return r
    }

    /// Where the database came from when it was discovered whole (a bonded peripheral's
    /// first discovery, or ``discoverDatabase(reuseCache:)``); nil while discovery is lazy.
    public var databaseSource: GATTDiscoverySource? { state.withLock { $0.databaseSource } }

    /// The primary services (only those in `uuids` when given). A bonded peripheral's are
    /// its whole database at once (``discoverDatabase(reuseCache:)``: from the bond's cache
    /// when it is current); any other's are discovered as asked for.
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) async throws(BluetoothError) -> [GATTService] {
        var all = state.withLock { $0.services }
        if all == nil, bonds != nil, (try? link.storedBond()) != nil {
            all = try await discoverDatabase().discovery.database.services.filter(\.isPrimary)
        } else if all == nil {
            do throws(GATTError) { all = try await gatt.discoverPrimaryServices() } catch { throw BluetoothError(error) }
            state.withLock { $0.services = all }
        }
        let services = all ?? []
        guard let uuids else { return services }
        return services.filter { uuids.contains($0.uuid) }
    }

    /// The characteristics of `service` (only those in `uuids` when given), with their descriptors.
    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, for service: GATTService) async throws(BluetoothError)
        -> [GATTCharacteristic]
    {
        var chars = state.withLock { $0.characteristics[service.startHandle] }
        if chars == nil {
            do throws(GATTError) {
                var found = try await gatt.discoverCharacteristics(of: service)
                for i in found.indices { found[i].descriptors = try await gatt.discoverDescriptors(of: found[i]) }
                chars = found
            } catch {
                throw BluetoothError(error)
            }
            state.withLock { $0.characteristics[service.startHandle] = chars }
        }
        let all = chars ?? []
        guard let uuids else { return all }
        return all.filter { uuids.contains($0.uuid) }
    }

    /// The characteristic `uuid` of the first service `service` (discovering both as needed);
    /// `.notFound` when the peripheral lacks either.
    public func characteristic(_ uuid: BluetoothUUID, in service: BluetoothUUID) async throws(BluetoothError) -> GATTCharacteristic {
        guard let s = try await discoverServices([service]).first else {
            throw BluetoothError(.notFound, "\(self) has no service \(service)")
        }
        guard let c = try await discoverCharacteristics([uuid], for: s).first else {
            throw BluetoothError(.notFound, "\(self)'s service \(service) has no characteristic \(uuid)")
        }
        return c
    }

    // MARK: Values

    /// Reads the value (long values whole).
    public func readValue(for characteristic: GATTCharacteristic) async throws(BluetoothError) -> [UInt8] {
        do throws(GATTError) { return try await gatt.read(handle: characteristic.valueHandle) } catch { throw BluetoothError(error) }
    }

    /// Reads a descriptor's value.
    public func readValue(for descriptor: GATTDescriptor) async throws(BluetoothError) -> [UInt8] {
        do throws(GATTError) { return try await gatt.read(handle: descriptor.handle) } catch { throw BluetoothError(error) }
    }

    /// Writes the value: with response (long values in prepared writes) or without
    /// (at most ``maximumWriteValueLength`` bytes; waits while the link's queue is full).
    public func writeValue(_ value: [UInt8], for characteristic: GATTCharacteristic,
                           type: WriteType = .withResponse) async throws(BluetoothError) {
        if type == .withoutResponse, !characteristic.properties.contains(.writeWithoutResponse) {
            throw BluetoothError(.invalidRequest, "\(characteristic.uuid) takes no write without response (its properties: \(characteristic.properties))")
        }
        if type == .withoutResponse, value.count > maximumWriteValueLength {
            throw BluetoothError(.invalidRequest, "\(value.count) bytes do not fit one write without response (at most \(maximumWriteValueLength) here)")
        }
        do throws(GATTError) {
            switch type {
            case .withResponse:
                try await gatt.write(handle: characteristic.valueHandle, value: value)
            case .withoutResponse:
                await gatt.bearer.waitForRoom(for: 3 + value.count)
                try await gatt.writeWithoutResponse(handle: characteristic.valueHandle, value: value)
            }
        } catch {
            throw BluetoothError(error)
        }
    }

    /// Subscribes (writes the CCCD: notifications, or indications when the characteristic
    /// only indicates) and returns the values as they come. Notifications wait in a
    /// bounded buffer (the oldest are dropped when the program falls behind); an
    /// indication is confirmed once the program has taken it, which holds the peer back.
    /// Releasing the stream (or cancelling the task iterating it) unsubscribes; it ends
    /// with `.disconnected` when the link goes down.
    public func notifications(for characteristic: GATTCharacteristic) async throws(BluetoothError) -> BluetoothStream<[UInt8]> {
        let indicate = !characteristic.properties.contains(.notify) && characteristic.properties.contains(.indicate)
        let values: AsyncThrowingStream<GATTValue, any Error>
        do throws(GATTError) { values = try await gatt.subscribe(characteristic: characteristic, indicate: indicate) } catch {
            throw BluetoothError(error)
        }
        return BluetoothStream(values) { $0.value }
    }

    // MARK: Stored records

    /// Asks the device's record store (its Record Access Control Point) for records: a
    /// ``RecordTransfer`` whose events are the records decoded, in the order they come, then
    /// how the procedure ended. The database is discovered first when it is not yet.
    public func records(_ request: RecordRequest = .report(.all), service: RecordService = .glucose) async throws(BluetoothError)
        -> RecordTransfer
    {
        let db = try await discoverDatabase().discovery.database
        return try await RecordTransfer.start(request, service: service, on: gatt, database: db)
    }

    /// Collects the readings a device with no control point keeps (a blood pressure cuff, a
    /// weight scale: ``RecordService/bloodPressure``, ``RecordService/weightScale``): they are
    /// indicated once subscribed; the collection ends when the device disconnects, goes
    /// quiet or at the time limit (``IndicatedReadingsCollector/Timing``).
    public func storedReadings(service: RecordService, timing: IndicatedReadingsCollector.Timing = .init()) async throws(BluetoothError)
        -> ReadingCollection
    {
        let db = try await discoverDatabase().discovery.database
        return try await ReadingCollection.start(service: service, on: gatt, database: db, timing: timing)
    }

    // MARK: Link

    /// Opens an LE credit-based L2CAP channel to `psm` (`CBPeripheral.openL2CAPChannel`).
    public func openL2CAPChannel(_ psm: UInt16, parameters: L2CAPChannelParameters = .init()) async throws(BluetoothError) -> L2CAPChannel {
        do throws(HostError) { return try await link.openL2CAPChannel(psm: psm, parameters: parameters) } catch {
            throw BluetoothError(error)
        }
    }

    /// Pairs (and bonds, when the manager has a bond directory), as `hcigatt pair` does
    /// (``CentralLink/pair(_:)``: the link is held a moment for the peer to file the keys).
    /// Reads and writes that the peer refuses for security pair on their own; this is for
    /// doing it up front.
    public func pair() async throws(BluetoothError) {
        _ = try await CentralLink.pair(link)
    }

    /// Ends the link.
    public func disconnect() async {
        gatt.close()
        await link.disconnect()
    }
}
