import BluetoothHost
import BluetoothTransport
import BluetoothWire

/// One client of an ``ATTServer``: one ATT bearer (an LE link's fixed ATT channel).
public struct ATTServerClientID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Clients in the order they were attached.
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "client \(rawValue)" }
}

/// Client Characteristic Configuration bits. Core Vol 3 Part G §3.3.3.3.
public struct GATTClientConfiguration: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Notifications enabled.
    public static let notify = GATTClientConfiguration(rawValue: 0x0001)
    /// Indications enabled.
    public static let indicate = GATTClientConfiguration(rawValue: 0x0002)
    public var description: String {
        switch (contains(.notify), contains(.indicate)) {
        case (true, true): "notify+indicate"
        case (true, false): "notify"
        case (false, true): "indicate"
        case (false, false): "off"
        }
    }
}

/// Client Supported Features bits. Core Vol 3 Part G §7.2.
public struct GATTClientFeatures: OptionSet, Sendable, Hashable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Robust Caching: Database Out Of Sync until the client is change-aware again.
    public static let robustCaching = GATTClientFeatures(rawValue: 0x01)
    /// Enhanced ATT bearers (EATT).
    public static let enhancedATTBearer = GATTClientFeatures(rawValue: 0x02)
    /// ATT_MULTIPLE_HANDLE_VALUE_NTF.
    public static let multipleHandleValueNotifications = GATTClientFeatures(rawValue: 0x04)
    static let defined: GATTClientFeatures = [.robustCaching, .enhancedATTBearer, .multipleHandleValueNotifications]
}

/// What happened on the server, for the application.
public enum ATTServerEvent: Sendable, Equatable {
    /// Exchange MTU set the client's ATT_MTU.
    case mtuChanged(ATTServerClientID, mtu: Int)
    /// A characteristic value or descriptor was written (and stored, for stored values).
    case wrote(ATTServerClientID, handle: UInt16, value: [UInt8], withResponse: Bool)
    /// The client changed a CCCD; `valueHandle` is the characteristic value's handle.
    case subscriptionChanged(ATTServerClientID, valueHandle: UInt16, GATTClientConfiguration)
    /// The client confirmed the indication of `handle`.
    case indicationConfirmed(ATTServerClientID, handle: UInt16)
    /// No confirmation within the timeout: the bearer is dead and must be closed
    /// (Core Vol 3 Part F §3.3.3); the server sends nothing more to this client.
    case indicationTimedOut(ATTServerClientID, handle: UInt16)
    /// The client sent something malformed or unexpected that was dropped (no response is due).
    case peerFault(ATTServerClientID, String)
    /// A Signed Write Command verified: its SignCounter is the last one seen (keep it with
    /// the bond, so a replay after a restart is refused too).
    case signCounterAdvanced(ATTServerClientID, UInt32)
    /// The client is change-aware again; `held`: the value handles whose updates were held
    /// meanwhile, to send their current values now (in handle order).
    case changeAware(ATTServerClientID, held: [UInt16])
}

/// How a bonded client signs its Signed Write Commands (Core Vol 3 Part H §2.4.5): the
/// CSRK it distributed, the last SignCounter accepted, and the bond's strength (a verified
/// signature stands for it in permission checks).
public struct ATTSigningKey: Sendable, Hashable {
    /// Most significant octet first.
    public var csrk: [UInt8]
    /// The last SignCounter accepted (nil: none yet): the next must be larger.
    public var lastCounter: UInt32?
    /// The bond's security, which a verified signature stands for.
    public var security: LinkSecurity

    /// A key as the bond gives it.
    public init(csrk: [UInt8], lastCounter: UInt32?, security: LinkSecurity) {
        self.csrk = csrk
        self.lastCounter = lastCounter
        self.security = security
    }
}

/// Why the server could not send a notification or indication.
public enum ATTServerError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownClient(ATTServerClientID)
    /// An indication timed out on this client; its bearer is dead.
    case bearerDead(ATTServerClientID)
    case invalidHandle(UInt16)
    /// The client has not enabled notifications (or indications) for this characteristic.
    case notSubscribed(ATTServerClientID, handle: UInt16)
    /// One indication is already waiting for its confirmation (Core Vol 3 Part F §3.4.7.2).
    case indicationPending(ATTServerClientID, handle: UInt16)
    /// The client did not say it supports this (Client Supported Features).
    case notSupportedByClient(ATTServerClientID, String)
    /// The client is change-unaware (the database changed since it last looked, Core Vol 3
    /// Part G §2.5.2.1): nothing but Service Changed goes to it; the update is held and
    /// reported by ``ATTServerEvent/changeAware(_:held:)`` once it is aware again.
    case changeUnaware(ATTServerClientID, handle: UInt16)
    /// The client's link lacks the security reading the value needs (`code`: Insufficient
    /// Authentication, Encryption or Encryption Key Size): its value does not go out in
    /// clear, whatever the client subscribed to on an earlier, encrypted link.
    case insufficientSecurity(ATTServerClientID, handle: UInt16, ATTErrorCode)

    public var description: String {
        switch self {
        case .unknownClient(let c): "no such client (\(c))"
        case .bearerDead(let c): "the ATT bearer of \(c) is dead (an indication was never confirmed)"
        case .invalidHandle(let h): "no attribute at handle 0x\(hex(h, 4))"
        case .notSubscribed(let c, let h): "\(c) has not subscribed to handle 0x\(hex(h, 4))"
        case .indicationPending(let c, let h): "\(c) has not confirmed the indication of 0x\(hex(h, 4)) yet"
        case .notSupportedByClient(let c, let what): "\(c) does not support \(what)"
        case .insufficientSecurity(let c, let h, let code): "\(c) may not receive handle 0x\(hex(h, 4)): \(code)"
        case .changeUnaware(let c, let h): "\(c) is change-unaware: the update of 0x\(hex(h, 4)) waits until it is aware again"
        }
    }
}

/// A PDU the server has for a client, written into the caller's buffer (nothing is
/// allocated): what ``ATTServer`` returns to send instead of sending it. One output holds
/// one PDU; each call that writes replaces what was there, and one that has nothing to send
/// leaves it empty.
public struct ATTServerOutput {
    /// The largest PDU the server writes (ATT_MTU's maximum, Core Vol 3 Part F §3.2.9).
    public static let capacity = 517
    private let buffer: UnsafeMutableRawBufferPointer
    /// Bytes of the PDU (0: nothing to send).
    public private(set) var count = 0

    /// An output writing into `buffer`, which must hold ``capacity`` bytes and outlive it.
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= Self.capacity, "an ATTServerOutput needs \(Self.capacity) bytes")
        self.buffer = buffer
    }

    /// Runs `body` with an empty output on a stack buffer.
    public static func withOutput<R, E: Error>(_ body: (inout ATTServerOutput) throws(E) -> R) throws(E) -> R {
        var result: Result<R, E>?
        withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { buffer in
            var out = ATTServerOutput(buffer)
            do throws(E) { result = .success(try body(&out)) } catch { result = .failure(error) }
        }
        // withUnsafeTemporaryAllocation ran the body.
        return try result.unsafelyUnwrapped.get()
    }

    /// True when there is nothing to send.
    public var isEmpty: Bool { count == 0 }
    /// The PDU, valid until the output is written again or its buffer goes.
    public var pdu: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0 ..< count]) }
    /// A copy of the PDU.
    public var bytes: [UInt8] { Array(pdu) }
    /// Forgets the PDU (sent).
    public mutating func removeAll() { count = 0 }

    /// Writes a PDU of at most `capacity` bytes in place of the last one.
    @inline(__always)
    mutating func write(capacity: Int, _ body: (inout ByteWriter) throws(WireError) -> Void) {
        var w = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< min(max(capacity, 1), buffer.count)]))
        do throws(WireError) {
            try body(&w)
        } catch {
            // Every builder checks `remaining` first; a PDU cut short is still well formed.
        }
        count = w.written.count
    }
}

/// The server side of the Attribute Protocol with a GATT database, sans-I/O.
/// Core Vol 3 Part F §3.4 (every request, command, notification and indication) and Part G
/// (§4 procedures, §7 Generic Attribute service and robust caching).
///
/// One database, many clients: each client (ATT bearer) has its own ATT_MTU, CCCDs,
/// prepare queue, outstanding indication, Client Supported Features and change-awareness.
/// What the server has to send (a response, a notification, an indication) is written into
/// the caller's ``ATTServerOutput`` and sent by the caller: answering a read of a stored
/// value allocates nothing.
///
/// Errors follow the specification and the stacks PTS trusts (BlueZ, Zephyr): Invalid
/// Handle for handle 0, a missing handle and start > end; Attribute Not Found for empty
/// ranges; Read/Write Not Permitted first, then Insufficient Authentication, Insufficient
/// Encryption, Encryption Key Size; Invalid PDU for a malformed request; Request Not
/// Supported for an unknown request; commands with errors and unknown commands are dropped.
///
/// Time is an input: `now` is a monotonic clock in nanoseconds.
/// A bonded client's configuration on this server, kept across its connections
/// (``ATTServer/bondedState(of:)``, ``ATTServer/restore(_:_:)``).
public struct ATTBondedClientState: Sendable, Hashable {
    /// The Database Hash of the database the handles below belong to (most significant first).
    public var databaseHash: [UInt8]
    /// CCCD handle → its bits (notify 0x0001, indicate 0x0002).
    public var configurations: [UInt16: UInt16]
    /// The bits of Service Changed's CCCD: kept when the database changes, which the other
    /// CCCDs are not.
    public var serviceChanged: UInt16
    /// The Client Supported Features it wrote.
    public var features: GATTClientFeatures
    /// Whether it knew of the database as it is (Robust Caching).
    public var changeAware: Bool

    /// A state as kept beside the bond.
    public init(databaseHash: [UInt8], configurations: [UInt16: UInt16], serviceChanged: UInt16,
                features: GATTClientFeatures, changeAware: Bool) {
        self.databaseHash = databaseHash
        self.configurations = configurations
        self.serviceChanged = serviceChanged
        self.features = features
        self.changeAware = changeAware
    }
}

/// The ATT server state machine (Core Vol 3 Part F, Part G §4 server side), sans-I/O: fed
/// every client's PDUs with the time, it answers each request exactly once within the
/// client's ATT_MTU (handing the bytes to a closure, no allocation for a static read),
/// checks permissions against the client's link security, keeps CCCDs, prepared writes and
/// the one outstanding indication per client, and reports what happened as
/// ATTServerEvents. GATTServer runs it for bearers.
public struct ATTServer: Sendable {
    /// Limits and timeouts of a server.
    public struct Options: Sendable {
        /// The largest ATT_MTU this server accepts (offered in Exchange MTU): 23...517.
        public var maximumMTU: UInt16
        /// Prepared writes queued per client before Prepare Queue Full (BlueZ: 30, Bumble: 64).
        public var prepareQueueLimit: Int
        /// How long an indication may wait for its confirmation (Core: 30 s).
        public var confirmationTimeout: Duration
        /// Smallest encryption key (octets) that satisfies an encryption requirement.
        public var minimumKeySize: Int

        /// The defaults: ATT_MTU up to 517, 32 prepared writes, 30 s for a confirmation, 16-byte keys.
        public init(maximumMTU: UInt16 = 517, prepareQueueLimit: Int = 32, confirmationTimeout: Duration = .seconds(30),
                    minimumKeySize: Int = 16) {
            self.maximumMTU = min(max(maximumMTU, UInt16(ATT.defaultMTU)), 517)
            self.prepareQueueLimit = max(1, prepareQueueLimit)
            self.confirmationTimeout = confirmationTimeout
            self.minimumKeySize = min(max(7, minimumKeySize), 16)
        }
    }

    struct PreparedWrite: Sendable {
        var handle: UInt16
        var offset: Int
        var value: [UInt8]
    }

    struct ClientState: Sendable {
        var security: LinkSecurity
        var mtu = ATT.defaultMTU
        var mtuExchanged = false
        /// CCCD handle → bits.
        var cccd: [UInt16: UInt16] = [:]
        var prepared: [PreparedWrite] = []
        var pendingIndication: (handle: UInt16, deadline: UInt64)?
        var dead = false
        var features = GATTClientFeatures()
        var changeAware = true
        var outOfSyncSent = false
        var signing: ATTSigningKey?
        /// Values updated while the client was change-unaware: not sent (Core Vol 3 Part G
        /// §2.5.2.1), handed over once it is change-aware again.
        var held: Set<UInt16> = []
    }

    /// The options it was made with.
    public let options: Options
    /// The attribute table (values change with writes and ``setValue(_:for:)``).
    public internal(set) var table: GATTAttributeTable
    var clientStates: [ATTServerClientID: ClientState] = [:]
    let confirmationTimeoutNanoseconds: UInt64
    /// Requests answered with an Error Response.
    public private(set) var errorResponses = 0
    /// PDUs dropped as malformed or unexpected.
    public private(set) var peerFaults = 0

    /// A server for `table`, with no client yet.
    public init(table: GATTAttributeTable, options: Options = .init()) {
        self.table = table
        self.options = options
        confirmationTimeoutNanoseconds = options.confirmationTimeout.nanoseconds
    }

    // MARK: Clients

    /// A client's bearer opened (a link came up).
    public mutating func connect(_ client: ATTServerClientID, security: LinkSecurity = .unencrypted) {
        clientStates[client] = ClientState(security: security)
    }

    /// The bearer closed: the client's prepared writes are dropped, nothing is written.
    public mutating func disconnect(_ client: ATTServerClientID) {
        clientStates[client] = nil
    }

    /// The key that verifies `client`'s Signed Write Commands (nil: they are dropped).
    public mutating func setSigningKey(_ key: ATTSigningKey?, for client: ATTServerClientID) {
        clientStates[client]?.signing = key
    }

    /// The link's security changed (encryption, key refresh).
    public mutating func setSecurity(_ security: LinkSecurity, for client: ATTServerClientID) {
        clientStates[client]?.security = security
    }

    /// Takes an ATT_MTU the other side of the bearer settled (our client's Exchange MTU):
    /// one ATT_MTU per bearer, and it never shrinks.
    public mutating func adoptMTU(_ mtu: Int, for client: ATTServerClientID) {
        guard var s = clientStates[client] else { return }
        s.mtu = max(s.mtu, min(mtu, Int(options.maximumMTU)))
        clientStates[client] = s
    }

    /// Forgets the outstanding indication of `client` (its PDU never left: the bearer refused it).
    public mutating func cancelIndication(_ client: ATTServerClientID) {
        clientStates[client]?.pendingIndication = nil
    }

    /// The attached clients.
    public var clients: [ATTServerClientID] { clientStates.keys.sorted() }
    /// The ATT_MTU of `client` (nil: not attached).
    public func mtu(of client: ATTServerClientID) -> Int? { clientStates[client]?.mtu }
    /// The Client Supported Features `client` wrote.
    public func features(of client: ATTServerClientID) -> GATTClientFeatures? { clientStates[client]?.features }
    /// Whether `client` is change-aware (Robust Caching).
    public func isChangeAware(_ client: ATTServerClientID) -> Bool? { clientStates[client]?.changeAware }
    /// Whether an indication to `client` waits for its confirmation.
    public func hasPendingIndication(_ client: ATTServerClientID) -> Bool { clientStates[client]?.pendingIndication != nil }

    /// What `client` enabled in the CCCD of the characteristic whose value is at `valueHandle`.
    public func configuration(of client: ATTServerClientID, valueHandle: UInt16) -> GATTClientConfiguration {
        guard let cccd = cccdHandle(ofValue: valueHandle), let bits = clientStates[client]?.cccd[cccd] else { return [] }
        return GATTClientConfiguration(rawValue: bits)
    }

    /// Clients that enabled notifications or indications of `valueHandle`, in client order.
    public func subscribers(of valueHandle: UInt16) -> [(ATTServerClientID, GATTClientConfiguration)] {
        guard let cccd = cccdHandle(ofValue: valueHandle) else { return [] }
        return clientStates.compactMap { id, s in
            guard let bits = s.cccd[cccd], bits & 3 != 0 else { return nil }
            return (id, GATTClientConfiguration(rawValue: bits))
        }.sorted { $0.0 < $1.0 }
    }

    func cccdHandle(ofValue valueHandle: UInt16) -> UInt16? {
        guard let i = table.index(of: valueHandle), case .value(_, _, let cccd) = table[i].role, cccd != 0 else { return nil }
        return cccd
    }

    // MARK: Values

    /// Sets the stored value of a characteristic or descriptor (what clients read next).
    public mutating func setValue(_ value: [UInt8], for handle: UInt16) throws(ATTServerError) {
        guard let i = table.index(of: handle), table[i].read == nil else { throw .invalidHandle(handle) }
        switch table[i].role {
        case .value, .descriptor: break
        default: throw .invalidHandle(handle)
        }
        table.setStoredValue(Array(value.prefix(ATT.maximumAttributeValueLength)), at: i)
    }

    /// Replaces the database (services added or removed). Every client becomes
    /// change-unaware (Core Vol 3 Part G §2.5.2.1) and loses its CCCDs except Service
    /// Changed's; returns the clients that asked for Service Changed indications, which
    /// the caller then sends with ``serviceChangedIndication(to:range:now:into:)``.
    public mutating func replaceTable(_ new: GATTAttributeTable) -> [ATTServerClientID] {
        let oldSC = table.serviceChangedHandle.flatMap { cccdHandle(ofValue: $0) }
        table = new
        let newSC = new.serviceChangedHandle.flatMap { cccdHandle(ofValue: $0) }
        var indicate: [ATTServerClientID] = []
        for id in clientStates.keys.sorted() {
            guard var s = clientStates[id] else { continue }
            let scBits = oldSC.flatMap { s.cccd[$0] } ?? 0
            s.cccd = [:]
            if let newSC, scBits != 0 { s.cccd[newSC] = scBits }
            s.prepared = []
            s.changeAware = false
            s.outOfSyncSent = false
            s.held = []  // handles of the old table
            clientStates[id] = s
            if newSC != nil, scBits & GATTClientConfiguration.indicate.rawValue != 0 { indicate.append(id) }
        }
        return indicate
    }

    // MARK: Bonded clients

    /// What `client` configured that outlives the connection when it is bonded: its CCCDs
    /// (Core Vol 3 Part G §3.3.3.3), Client Supported Features and change-awareness
    /// (§2.5.2.1), with the Database Hash they belong to.
    public func bondedState(of client: ATTServerClientID) -> ATTBondedClientState? {
        guard let s = clientStates[client] else { return nil }
        let sc = table.serviceChangedHandle.flatMap { cccdHandle(ofValue: $0) }
        return ATTBondedClientState(databaseHash: table.hash, configurations: s.cccd.filter { $0.value != 0 },
                                    serviceChanged: sc.flatMap { s.cccd[$0] } ?? 0, features: s.features,
                                    changeAware: s.changeAware)
    }

    /// A bonded client came back (its link encrypted with the bond): its CCCDs, features and
    /// change-awareness return. When the database changed since (another hash), only the
    /// Service Changed configuration survives and the client is change-unaware. Returns true
    /// when a Service Changed indication is due (§7.1: the client is change-unaware and
    /// asked for them). What the client wrote on this connection already wins.
    public mutating func restore(_ client: ATTServerClientID, _ state: ATTBondedClientState) -> Bool {
        guard var s = clientStates[client] else { return false }
        let sc = table.serviceChangedHandle.flatMap { cccdHandle(ofValue: $0) }
        var restored: [UInt16: UInt16] = [:]
        let sameDatabase = state.databaseHash == table.hash
        if sameDatabase {
            for (handle, bits) in state.configurations {
                guard let i = table.index(of: handle), case .cccd = table[i].role else { continue }
                restored[handle] = bits & 3
            }
        }
        if let sc, state.serviceChanged != 0 { restored[sc] = state.serviceChanged & 3 }
        s.cccd = restored.merging(s.cccd) { $1 }
        s.features.formUnion(state.features)
        s.changeAware = sameDatabase && state.changeAware
        s.outOfSyncSent = false
        clientStates[client] = s
        return !s.changeAware && sc != nil && (s.cccd[sc ?? 0] ?? 0) & GATTClientConfiguration.indicate.rawValue != 0
    }

    // MARK: Notifications and indications

    /// Sends ATT_HANDLE_VALUE_NTF of `value` (truncated to ATT_MTU−3, Core Vol 3 Part F
    /// §3.4.7.1) to a client that enabled notifications. Returns true when it was truncated.
    @discardableResult
    public mutating func notify(_ client: ATTServerClientID, handle: UInt16, value: UnsafeRawBufferPointer,
                                into send: inout ATTServerOutput) throws(ATTServerError) -> Bool {
        try valueUpdate(client, handle: handle, value: value, confirmationDeadline: nil, into: &send)
    }

    /// Sends ATT_HANDLE_VALUE_IND of `value` (truncated to ATT_MTU−3) to a client that
    /// enabled indications; one may be outstanding per client (`.indicationPending`).
    @discardableResult
    public mutating func indicate(_ client: ATTServerClientID, handle: UInt16, value: UnsafeRawBufferPointer, now: UInt64,
                                  into send: inout ATTServerOutput) throws(ATTServerError) -> Bool {
        try valueUpdate(client, handle: handle, value: value, confirmationDeadline: now &+ confirmationTimeoutNanoseconds, into: &send)
    }

    /// ``notify(_:handle:value:into:)`` for a value in an array.
    @discardableResult
    public mutating func notify(_ client: ATTServerClientID, handle: UInt16, value: [UInt8],
                                into send: inout ATTServerOutput) throws(ATTServerError) -> Bool {
        try Self.withBytes(value) { (b) throws(ATTServerError) in try notify(client, handle: handle, value: b, into: &send) }
    }

    /// ``indicate(_:handle:value:now:into:)`` for a value in an array.
    @discardableResult
    public mutating func indicate(_ client: ATTServerClientID, handle: UInt16, value: [UInt8], now: UInt64,
                                  into send: inout ATTServerOutput) throws(ATTServerError) -> Bool {
        try Self.withBytes(value) { (b) throws(ATTServerError) in try indicate(client, handle: handle, value: b, now: now, into: &send) }
    }

    /// `Array.withUnsafeBytes` for a body with typed throws.
    private static func withBytes<R>(_ value: [UInt8], _ body: (UnsafeRawBufferPointer) throws(ATTServerError) -> R) throws(ATTServerError) -> R {
        var result: Result<R, ATTServerError>!
        value.withUnsafeBytes { b in
            do throws(ATTServerError) { result = .success(try body(b)) } catch { result = .failure(error) }
        }
        return try result.get()
    }

    /// Indicates Service Changed with the affected handle range (Core Vol 3 Part G §7.1).
    public mutating func serviceChangedIndication(to client: ATTServerClientID, range: ClosedRange<UInt16> = 0x0001 ... 0xFFFF,
                                                  now: UInt64, into send: inout ATTServerOutput) throws(ATTServerError) {
        send.removeAll()
        guard let handle = table.serviceChangedHandle else { throw .invalidHandle(0) }
        let v: [UInt8] = [UInt8(range.lowerBound & 0xFF), UInt8(range.lowerBound >> 8),
                          UInt8(range.upperBound & 0xFF), UInt8(range.upperBound >> 8)]
        try indicate(client, handle: handle, value: v, now: now, into: &send)
    }

    /// ATT_MULTIPLE_HANDLE_VALUE_NTF (Core Vol 3 Part F §3.4.7.4) for clients that set the
    /// Multiple Handle Value Notifications feature; values that do not fit ATT_MTU are left
    /// out (returned count tells how many went).
    public mutating func notifyMultiple(_ client: ATTServerClientID, _ values: [(handle: UInt16, value: [UInt8])],
                                        into send: inout ATTServerOutput) throws(ATTServerError) -> Int {
        send.removeAll()
        guard let s = clientStates[client] else { throw .unknownClient(client) }
        guard !s.dead else { throw .bearerDead(client) }
        guard s.features.contains(.multipleHandleValueNotifications) else {
            throw .notSupportedByClient(client, "Multiple Handle Value Notifications")
        }
        for v in values {
            guard cccdHandle(ofValue: v.handle) != nil else { throw .invalidHandle(v.handle) }
            guard configuration(of: client, valueHandle: v.handle).contains(.notify) else {
                throw .notSubscribed(client, handle: v.handle)
            }
            if let code = valueSecurityError(v.handle, s.security) { throw .insufficientSecurity(client, handle: v.handle, code) }
        }
        if !s.changeAware, canBecomeAware(s), let first = values.first {
            clientStates[client]?.held.formUnion(values.map(\.handle))
            throw .changeUnaware(client, handle: first.handle)
        }
        var sent = 0
        emit(&send, capacity: s.mtu) { (w) throws(WireError) in
            try w.u8(ATTOpcode.multipleHandleValueNotification.rawValue)
            for v in values {
                guard w.remaining >= 4 + v.value.count else { break }
                try w.u16(v.handle)
                try w.u16(UInt16(v.value.count))
                try w.bytes(v.value)
                sent += 1
            }
        }
        // Not even the first value fits: nothing to send (the caller notifies it alone).
        if sent == 0 { send.removeAll() }
        return sent
    }

    private mutating func valueUpdate(_ client: ATTServerClientID, handle: UInt16, value: UnsafeRawBufferPointer,
                                      confirmationDeadline: UInt64?,
                                      into send: inout ATTServerOutput) throws(ATTServerError) -> Bool {
        send.removeAll()
        // An indication waits for its confirmation until the deadline; a notification has none.
        let indication = confirmationDeadline != nil
        guard var s = clientStates[client] else { throw .unknownClient(client) }
        guard !s.dead else { throw .bearerDead(client) }
        guard let cccd = cccdHandle(ofValue: handle) else { throw .invalidHandle(handle) }
        let bit = indication ? GATTClientConfiguration.indicate.rawValue : GATTClientConfiguration.notify.rawValue
        guard (s.cccd[cccd] ?? 0) & bit != 0 else { throw .notSubscribed(client, handle: handle) }
        if let code = valueSecurityError(handle, s.security) { throw .insufficientSecurity(client, handle: handle, code) }
        if !s.changeAware && handle != table.serviceChangedHandle && canBecomeAware(s) {
            s.held.insert(handle)
            clientStates[client] = s
            throw .changeUnaware(client, handle: handle)
        }
        if let confirmationDeadline {
            if let p = s.pendingIndication { throw .indicationPending(client, handle: p.handle) }
            s.pendingIndication = (handle, confirmationDeadline)
            clientStates[client] = s
        }
        let room = s.mtu - 3
        let n = min(value.count, room)
        emit(&send, capacity: 3 + n) { (w) throws(WireError) in
            try w.u8(indication ? ATTOpcode.handleValueIndication.rawValue : ATTOpcode.handleValueNotification.rawValue)
            try w.u16(handle)
            try w.bytes(UnsafeRawBufferPointer(rebasing: value[0 ..< n]))
        }
        return n < value.count
    }

    // MARK: Time

    /// The earliest indication confirmation deadline, or nil.
    public var nextDeadline: UInt64? {
        clientStates.values.compactMap { $0.dead ? nil : $0.pendingIndication?.deadline }.min()
    }

    /// Indications whose confirmation did not come in time kill their client's bearer.
    public mutating func timerFired(now: UInt64) -> [ATTServerEvent] {
        var events: [ATTServerEvent] = []
        for id in clientStates.keys.sorted() {
            guard var s = clientStates[id], !s.dead, let p = s.pendingIndication, p.deadline <= now else { continue }
            s.dead = true
            s.pendingIndication = nil
            clientStates[id] = s
            events.append(.indicationTimedOut(id, handle: p.handle))
        }
        return events
    }

    // MARK: Receiving

    /// True for PDUs a server handles (``ATTOpcode/isClientToServer``).
    @inlinable
    public static func isServerBound(_ opcode: UInt8) -> Bool { ATTOpcode(rawValue: opcode).isClientToServer }

    /// One PDU from `client` (opcode first). The response, if one is due, is in `respond`
    /// when this returns (empty otherwise).
    public mutating func receive(from client: ATTServerClientID, pdu bytes: UnsafeRawBufferPointer, now: UInt64,
                                 into respond: inout ATTServerOutput) -> [ATTServerEvent] {
        respond.removeAll()
        // The client's state is looked up and copied once per PDU (a copy retains and
        // releases its collections) and handed to the procedure that needs it.
        guard let s = clientStates[client], !s.dead else { return [] }
        let events = dispatch(from: client, s, pdu: bytes, now: now, into: &respond)
        // A request (robust caching), a Database Hash read or Service Changed's confirmation
        // made it change-aware: what was held goes now.
        if !s.changeAware, clientStates[client]?.changeAware == true { return events + becameChangeAware(client) }
        return events
    }

    private mutating func dispatch(from client: ATTServerClientID, _ state: ClientState, pdu bytes: UnsafeRawBufferPointer, now: UInt64,
                                   into respond: inout ATTServerOutput) -> [ATTServerEvent] {
        var s = state
        guard let first = bytes.first else { return fault(client, "empty ATT PDU") }
        let opcode = ATTOpcode(rawValue: first)
        // Requests want an answer; commands, confirmations and client-bound PDUs never get one.
        let isRequest = !opcode.isCommand && opcode != .handleValueConfirmation && Self.isServerBound(first)
        if bytes.count > s.mtu && opcode != .exchangeMTURequest {
            if isRequest { return error(opcode, 0, .invalidPDU, &respond) }
            return fault(client, "\(opcode) of \(bytes.count) bytes exceeds ATT_MTU \(s.mtu); dropped")
        }
        let pdu: ATTPDU
        do throws(WireError) {
            pdu = try ATTPDU(parsing: bytes)
        } catch {
            if isRequest, opcode.name != nil { return self.error(opcode, 0, .invalidPDU, &respond) }
            if isRequest { return self.error(opcode, 0, .requestNotSupported, &respond) }
            return fault(client, "malformed \(opcode) dropped: \(error)")
        }

        // Robust caching (Core Vol 3 Part G §2.5.2.1): a change-unaware client that enabled
        // it gets Database Out Of Sync once; its next request makes it change-aware.
        if s.features.contains(.robustCaching), !s.changeAware {
            if opcode.isCommand { return fault(client, "\(opcode) from a change-unaware client ignored") }
            if isRequest, opcode != .exchangeMTURequest, !Self.readsDatabaseHash(pdu) {
                if s.outOfSyncSent {
                    s.changeAware = true
                    clientStates[client] = s
                } else {
                    s.outOfSyncSent = true
                    clientStates[client] = s
                    return error(opcode, 0, .databaseOutOfSync, &respond)
                }
            }
        }

        switch pdu {
        case .exchangeMTURequest(let r):
            return exchangeMTU(client, r.clientRxMTU, &respond)
        case .findInformationRequest(let r):
            return findInformation(client, r.startHandle, r.endHandle, &respond)
        case .findByTypeValueRequest(let r):
            return findByTypeValue(client, r, &respond)
        case .readByTypeRequest(let r):
            return readByType(client, r.startHandle, r.endHandle, r.attributeType, &respond)
        case .readByGroupTypeRequest(let r):
            return readByGroupType(client, r.startHandle, r.endHandle, r.attributeGroupType, &respond)
        case .readRequest(let r):
            return read(client, s, opcode, r.handle, offset: 0, &respond)
        case .readBlobRequest(let r):
            return read(client, s, opcode, r.handle, offset: Int(r.offset), &respond)
        case .readMultipleRequest(let r):
            return readMultiple(client, opcode, r.handles, variable: false, &respond)
        case .readMultipleVariableRequest(let r):
            return readMultiple(client, opcode, r.handles, variable: true, &respond)
        case .writeRequest(let r):
            return write(client, r.handle, r.value, withResponse: true, &respond)
        case .writeCommand(let c):
            return write(client, c.handle, c.value, withResponse: false, &respond)
        case .signedWriteCommand(let c):
            return signedWrite(client, c, signed: UnsafeRawBufferPointer(rebasing: bytes[0 ..< bytes.count - ATT.signatureLength]))
        case .prepareWriteRequest(let r):
            return prepareWrite(client, r.handle, Int(r.offset), r.partValue, &respond)
        case .executeWriteRequest(let r):
            return executeWrite(client, r.flags, &respond)
        case .handleValueConfirmation:
            return confirmation(client)
        case .unknown(let op, _):
            if op.isCommand { return fault(client, "unknown command \(op) ignored") }
            return error(op, 0, .requestNotSupported, &respond)
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .readMultipleVariableResponse, .writeResponse,
             .prepareWriteResponse, .executeWriteResponse, .handleValueNotification,
             .handleValueIndication, .multipleHandleValueNotification:
            return fault(client, "\(opcode) is for the client side; the server ignored it")
        }
    }

    static func readsDatabaseHash(_ pdu: ATTPDU) -> Bool {
        if case .readByTypeRequest(let r) = pdu { return r.attributeType == GATTServerUUID.databaseHash }
        return false
    }

    // MARK: Response helpers

    /// Writes a PDU of at most `capacity` bytes into `respond`.
    @inline(__always)
    func emit(_ respond: inout ATTServerOutput, capacity: Int,
              _ body: (inout ByteWriter) throws(WireError) -> Void) {
        respond.write(capacity: capacity, body)
    }

    mutating func error(_ request: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode,
                        _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        errorResponses += 1
        emit(&respond, capacity: 5) { (w) throws(WireError) in
            try ATTErrorResponse(requestOpcode: request, handle: handle, error: code).encode(into: &w)
        }
        return []
    }

    mutating func fault(_ client: ATTServerClientID, _ detail: String) -> [ATTServerEvent] {
        peerFaults += 1
        return [.peerFault(client, detail)]
    }

    /// Permission checks in the order PTS expects: Read/Write Not Permitted, then
    /// Insufficient Authentication, Insufficient Encryption, Encryption Key Size.
    func check(_ permissions: GATTPermissions, write: Bool, _ security: LinkSecurity) -> ATTErrorCode? {
        if write {
            guard permissions.contains(.writeable) else { return .writeNotPermitted }
        } else {
            guard permissions.contains(.readable) else { return .readNotPermitted }
        }
        return checkSecurity(permissions, write: write, security)
    }

    /// The security part of ``check(_:write:_:)`` alone.
    func checkSecurity(_ permissions: GATTPermissions, write: Bool, _ security: LinkSecurity) -> ATTErrorCode? {
        let needAuthentication = permissions.contains(write ? .writeAuthenticationRequired : .readAuthenticationRequired)
        let needEncryption = needAuthentication || permissions.contains(write ? .writeEncryptionRequired : .readEncryptionRequired)
        if needAuthentication && !(security.encrypted && security.authenticated) { return .insufficientAuthentication }
        if needEncryption && !security.encrypted { return .insufficientEncryption }
        if needEncryption && security.keySize < options.minimumKeySize { return .encryptionKeySizeTooShort }
        return nil
    }

    /// Whether a change-unaware client has a way back (Core Vol 3 Part G §2.5.2.1): Service
    /// Changed indications enabled, or robust caching. One with neither would never hear
    /// anything again if its updates were held; it gets them as before.
    func canBecomeAware(_ s: ClientState) -> Bool {
        if s.features.contains(.robustCaching) { return true }
        guard let sc = table.serviceChangedHandle.flatMap({ cccdHandle(ofValue: $0) }) else { return false }
        return (s.cccd[sc] ?? 0) & GATTClientConfiguration.indicate.rawValue != 0
    }

    /// The client just became change-aware: the updates held meanwhile, as an event.
    mutating func becameChangeAware(_ client: ATTServerClientID) -> [ATTServerEvent] {
        guard let held = clientStates[client]?.held, !held.isEmpty else { return [] }
        clientStates[client]?.held = []
        return [.changeAware(client, held: held.sorted())]
    }

    /// What reading the value at `valueHandle` needs of the link, checked where its value
    /// leaves otherwise (notifications, indications) and where a client subscribes to them:
    /// a value a plain link may not read is not sent to it either (as Zephyr and BlueZ).
    func valueSecurityError(_ valueHandle: UInt16, _ security: LinkSecurity) -> ATTErrorCode? {
        guard let i = table.index(of: valueHandle) else { return nil }
        return checkSecurity(table.attributes[i].permissions, write: false, security)
    }

    /// Handle range checks shared by the Find and Read By (Group) Type requests (Core Vol 3
    /// Part F §3.4.3.1): 0 or start > end is Invalid Handle.
    static func validRange(_ start: UInt16, _ end: UInt16) -> Bool { start != 0 && start <= end }

    /// Indices of the attributes in `start...end`.
    func indices(_ start: UInt16, _ end: UInt16) -> Range<Int> {
        let last = min(Int(end), table.attributes.count)
        let first = Int(start) - 1
        return first < last ? first ..< last : 0 ..< 0
    }
}
