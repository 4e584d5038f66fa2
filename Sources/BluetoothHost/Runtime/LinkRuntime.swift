import BluetoothWire

/// The links' part of the driver: the connection manager, each open link's record (its
/// ``LEConnection``, the ATT consumers and the PDUs waiting for them, who waits for it to
/// disconnect or update), the callers waiting for a connection, and disconnects held until
/// a link's data has left. It answers its callers itself; the driver routes requests,
/// controller events, frames and time to it and sends what the manager asks.
struct LinkRuntime {
    typealias Connect = CheckedContinuation<Result<LEConnection, HostError>, Never>
    typealias Update = CheckedContinuation<Result<LELinkState, HostError>, Never>

    /// One consumer of a link's ATT channel (client or server side).
    struct ATTConsumer {
        var received: @Sendable (UnsafeRawBufferPointer) -> Void
        var closed: @Sendable (HCIErrorCode?, String) -> Void
    }

    struct Record {
        var connection: LEConnection
        /// ATT PDUs go by direction (``ATTOpcode/isClientToServer``): requests, commands and
        /// confirmations to the server side, the rest to the client side. With no server
        /// attached the client side gets everything (it refuses requests itself).
        var attClient: ATTConsumer?
        var attServer: ATTConsumer?
        var buffered: [[UInt8]] = []
        var disconnectWaiters: [CheckedContinuation<Void, Never>] = []
        var updateWaiters: [Update] = []
        var phyWaiters: [Update] = []
        var dataLengthWaiters: [Update] = []
    }

    /// The sans-I/O machine; changed in place (`links.manager.…`).
    var manager = LEConnectionManager()
    private(set) var records: [UInt16: Record] = [:]
    private var connects: [ConnectRequestID: Connect] = [:]
    /// Disconnects waiting for the link's queued ACL data to leave (reason, deadline).
    private var deferred: [UInt16: (reason: HCIErrorCode, deadline: UInt64)] = [:]

    /// How long a disconnect waits for the link's data: the last keys of a pairing, a final write.
    static let disconnectHold: UInt64 = 2_000_000_000

    var count: Int { records.count }
    var isEmpty: Bool { records.isEmpty }
    /// Nobody waits for a connection.
    var awaitsNoConnection: Bool { connects.isEmpty }
    var hasDeferredDisconnects: Bool { !deferred.isEmpty }
    var nextDeadline: UInt64? {
        [manager.nextDeadline, deferred.values.map(\.deadline).min()].compactMap { $0 }.min()
    }

    /// The open link's connection on `handle`.
    func connection(_ handle: UInt16) -> LEConnection? { records[handle]?.connection }

    /// True while `conn` is the open link on its handle (not a closed one whose handle the
    /// controller gave to a newer link).
    func isCurrent(_ conn: LEConnection) -> Bool { records[conn.handle]?.connection === conn }

    /// Open links in handle order.
    var connections: [LEConnection] { records.keys.sorted().compactMap { records[$0]?.connection } }

    // MARK: Connecting

    mutating func connect(_ id: ConnectRequestID, to peer: LEAddress, parameters: LEConnectParameters, timeout: UInt64,
                          now: UInt64, _ c: Connect) -> [ConnectionAction] {
        connects[id] = c
        return manager.connect(id, to: peer, parameters: parameters, timeout: timeout, now: now)
    }

    /// Connect `id` finished; false when nobody waits for it any more.
    mutating func connected(_ id: ConnectRequestID, _ result: Result<LEConnection, HostError>) -> Bool {
        guard let c = connects.removeValue(forKey: id) else { return false }
        c.resume(returning: result)
        return true
    }

    /// The host stops: every connect still waiting fails with `error`, and the manager
    /// forgets its links (the driver closes each one itself).
    mutating func closeAll(_ error: HostError) {
        for action in manager.closeAll(error) {
            if case .connectFailed(let id, let e) = action { _ = connected(id, .failure(e)) }
        }
        for c in connects.values { c.resume(returning: .failure(error)) }
        connects = [:]
    }

    // MARK: Links

    mutating func opened(_ conn: LEConnection) {
        records[conn.handle] = Record(connection: conn)
    }

    /// `conn` closed: its record, to answer everyone on it (nil: not the current link).
    mutating func closed(_ conn: LEConnection) -> Record? {
        guard isCurrent(conn) else { return nil }
        deferred[conn.handle] = nil
        return records.removeValue(forKey: conn.handle)
    }

    mutating func waitForDisconnect(_ conn: LEConnection, _ c: CheckedContinuation<Void, Never>) {
        records[conn.handle]?.disconnectWaiters.append(c)
    }

    mutating func waitForUpdate(_ handle: UInt16, _ c: Update) {
        records[handle]?.updateWaiters.append(c)
    }

    /// The Disconnect failed: who waited for it goes on (the link stays).
    mutating func disconnectFailed(_ handle: UInt16) -> [CheckedContinuation<Void, Never>] {
        defer { records[handle]?.disconnectWaiters = [] }
        return records[handle]?.disconnectWaiters ?? []
    }

    enum Procedure { case phy, dataLength }

    mutating func wait(for procedure: Procedure, _ handle: UInt16, _ c: Update) {
        switch procedure {
        case .phy: records[handle]?.phyWaiters.append(c)
        case .dataLength: records[handle]?.dataLengthWaiters.append(c)
        }
    }

    /// The PHY or data length request ended: who waited for it.
    mutating func ended(_ procedure: Procedure, _ handle: UInt16) -> [Update] {
        switch procedure {
        case .phy:
            defer { records[handle]?.phyWaiters = [] }
            return records[handle]?.phyWaiters ?? []
        case .dataLength:
            defer { records[handle]?.dataLengthWaiters = [] }
            return records[handle]?.dataLengthWaiters ?? []
        }
    }

    /// The parameters update ended: who waited for it.
    mutating func parametersUpdated(_ handle: UInt16) -> [Update] {
        defer { records[handle]?.updateWaiters = [] }
        return records[handle]?.updateWaiters ?? []
    }

    /// Holds a disconnect until the link's data left, for at most ``disconnectHold``.
    mutating func deferDisconnect(_ handle: UInt16, reason: HCIErrorCode, now: UInt64) {
        deferred[handle] = (reason, now &+ Self.disconnectHold)
    }

    /// The held disconnects to send now: the link's data left (`queued` is 0) or its time is up.
    mutating func disconnectsDue(now: UInt64, queued: (UInt16) -> Int) -> [(handle: UInt16, reason: HCIErrorCode)] {
        var due: [(handle: UInt16, reason: HCIErrorCode)] = []
        for (handle, d) in deferred.sorted(by: { $0.key < $1.key }) where queued(handle) == 0 || d.deadline <= now {
            deferred[handle] = nil
            due.append((handle, d.reason))
        }
        return due
    }

    // MARK: ATT

    /// A consumer takes one side of the link's ATT channel; the PDUs that waited for that
    /// side, to hand it (for the client: everything, unless a server is there). False when
    /// `conn` is not the current link.
    mutating func attach(_ conn: LEConnection, _ role: ATTRole, _ consumer: ATTConsumer) -> [[UInt8]]? {
        guard var record = records[conn.handle], record.connection === conn else { return nil }
        switch role {
        case .client: record.attClient = consumer
        case .server: record.attServer = consumer
        }
        var mine: [[UInt8]] = []
        var rest: [[UInt8]] = []
        for pdu in record.buffered {
            let toServer = pdu.first.map { ATTOpcode(rawValue: $0).isClientToServer } ?? false
            if role == .server ? toServer : (!toServer || record.attServer == nil) { mine.append(pdu) } else { rest.append(pdu) }
        }
        record.buffered = rest
        records[conn.handle] = record
        return mine
    }

    /// Where an ATT PDU on `handle` goes.
    enum ATTRoute {
        case consumer(ATTConsumer)
        /// Kept until a consumer attaches.
        case buffered
        /// Over ``LEConnection/bufferedATTLimit`` waiting: dropped.
        case dropped
        case noLink
    }

    /// Routes a PDU by its direction; one nobody takes yet is copied and kept.
    mutating func routeATT(_ handle: UInt16, _ payload: UnsafeRawBufferPointer) -> ATTRoute {
        guard let record = records[handle] else { return .noLink }
        let toServer = payload.first.map { ATTOpcode(rawValue: $0).isClientToServer } ?? false
        if let consumer = toServer ? (record.attServer ?? record.attClient) : record.attClient { return .consumer(consumer) }
        guard record.buffered.count < LEConnection.bufferedATTLimit else { return .dropped }
        records[handle]?.buffered.append(Array(payload))
        return .buffered
    }
}
