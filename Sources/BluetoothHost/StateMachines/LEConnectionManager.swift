import BluetoothWire

/// LE connections as central, sans-I/O: connection creation with timeout and cancel,
/// disconnection, link parameter bookkeeping, and the host's side of the LE signaling
/// (CID 5) and SMP (CID 6) fixed channels.
///
/// Create connection (Core Vol 4 Part E §7.8.12 / §7.8.66, §7.8.13):
///
///     idle ──connect──▶ creating ──Connection Complete──▶ idle (connected / failed)
///                          │ deadline
///                          ▼
///                      cancelling ──Connection Complete 0x02──▶ idle (connectTimeout)
///                          │ grace period, no completion
///                          ▼
///                      idle, controller may still hold the create ("stale")
///     stale + connect ──▶ clearing (Create Connection Cancel first) ──▶ creating
///
/// The controller takes one create at a time; further requests wait in order (their
/// deadlines run while they wait). A completion that arrives while no one waits for it
/// (after a give-up) is disconnected again.
///
/// Time is an input (`now`, nanoseconds).
public struct LEConnectionManager: Sendable {
    /// How long to wait for the Connection Complete after LE Create Connection Cancel.
    public var cancelGracePeriod: UInt64
    /// Use HCI_LE_Extended_Create_Connection (the controller has it).
    public var useExtendedCreate: Bool

    struct PendingConnect: Sendable {
        var id: ConnectRequestID
        var peer: LEAddress
        var parameters: LEConnectParameters
        /// Set when the attempt reaches the controller: time spent waiting behind another
        /// device's attempt does not count, so one absent device cannot fail the rest.
        var deadline: UInt64 = .max
        var timeout: UInt64
    }

    /// Why a create is being cancelled.
    enum CancelReason: Sendable {
        /// Its timeout passed: the caller gets `.connectTimeout`.
        case timedOut
        /// The caller gave up (task cancelled): it gets `.cancelled`, and a late link is dropped.
        case abandoned
    }

    /// The controller's create connection, one at a time; each case holds its attempt.
    enum Create: Sendable {
        /// No create of ours in the controller.
        case idle
        /// A cancel the controller never confirmed: it may still be initiating, so the next
        /// attempt clears it first.
        case stale
        /// Cancelling a create the controller may still hold from an earlier attempt,
        /// before sending this request's.
        case clearing(PendingConnect, deadline: UInt64, cancelAccepted: Bool)
        /// LE (Extended) Create Connection sent; waiting for Connection Complete.
        case creating(PendingConnect)
        /// LE Create Connection Cancel sent; waiting for Connection Complete 0x02.
        case cancelling(PendingConnect, deadline: UInt64, CancelReason)

        /// The request being tried, if any.
        var request: PendingConnect? {
            switch self {
            case .idle, .stale: nil
            case .clearing(let r, _, _), .creating(let r), .cancelling(let r, _, _): r
            }
        }
    }

    struct Link: Sendable {
        enum Phase: Sendable {
            case up
            /// HCI_Disconnect sent (or about to be); Disconnection Complete ends the link.
            case disconnecting
        }

        var state: LELinkState
        var phase: Phase = .up
        var nextSignalingIdentifier: UInt8 = 1
        /// Identifiers of requests the credit-based channels sent, awaiting a response.
        var pendingSignaling: Set<UInt8> = []
        /// Our Connection Parameter Update Request (we are peripheral), until the update.
        var parameterRequest: ParameterRequest?
        /// Our LE Set PHY, until LE PHY Update Complete: the time it is given up.
        var phyRequestDeadline: UInt64?
    }

    /// A peripheral's L2CAP Connection Parameter Update Request (Core Vol 3 Part A §4.20),
    /// from sent to the link's update; `deadline` bounds the whole (the signaling RTX).
    enum ParameterRequest: Sendable {
        case sent(identifier: UInt8, deadline: UInt64)
        /// The central accepted; its LE Connection Update Complete ends it.
        case accepted(deadline: UInt64)

        var deadline: UInt64 {
            switch self {
            case .sent(_, let d), .accepted(let d): d
            }
        }
    }

    /// How long a peripheral's parameter request may take, answer and update together
    /// (Core Vol 3 Part A §6.2.1: the RTX ends at 60 s at most; 30 s as for ATT and SMP).
    public static let parameterRequestTimeout: UInt64 = 30_000_000_000
    /// How long a PHY update may take: the LL procedure's response timeout (40 s, Core Vol 6
    /// Part B §5.2) plus the instant; a controller that never reports it is given up on.
    public static let phyUpdateTimeout: UInt64 = 45_000_000_000

    private var waiting: [PendingConnect] = []
    private var create = Create.idle
    /// After a cancel that was never confirmed: the controller may still be initiating.
    public var staleCreate: Bool { if case .stale = create { true } else { false } }
    private var links: [UInt16: Link] = [:]
    /// Counters (refused requests, orphan connections, unknown handles...).
    public private(set) var statistics = ConnectionStatistics()

    /// A manager; `useExtendedCreate` when the controller has LE Extended Create Connection,
    /// `cancelGracePeriod` nanoseconds to wait for a cancelled create to be confirmed.
    public init(useExtendedCreate: Bool = false, cancelGracePeriod: UInt64 = 2_000_000_000) {
        self.useExtendedCreate = useExtendedCreate
        self.cancelGracePeriod = cancelGracePeriod
    }

    /// Supported_Commands octet 37 bit 7: HCI_LE_Extended_Create_Connection [v1].
    /// Connection_Handle range (Core Vol 4 Part E §5.4.2).
    public static let maximumConnectionHandle: UInt16 = 0x0EFF

    /// Whether the controller has HCI_LE_Extended_Create_Connection [v1].
    public static func supportsExtendedCreate(_ info: ControllerInfo) -> Bool {
        info.supportsCommand(octet: 37, bit: 7)
    }

    /// The state of link `handle` (nil: not connected).
    public func link(_ handle: UInt16) -> LELinkState? { links[handle]?.state }
    /// The links up now, in handle order.
    public var linkHandles: [UInt16] { links.keys.sorted() }
    /// True while a create is in progress or requests wait.
    public var isConnecting: Bool { create.request != nil || !waiting.isEmpty }

    /// The earliest deadline of the connection attempt (its timeout, the cancel grace period).
    public var nextDeadline: UInt64? {
        let connecting: UInt64? = switch create {
        case .idle, .stale: nil
        case .clearing(let r, let deadline, _): min(deadline, r.deadline)
        case .creating(let r): r.deadline
        case .cancelling(_, let deadline, _): deadline
        }
        let requests = links.values.compactMap(\.parameterRequest?.deadline).min()
        let phy = links.values.compactMap(\.phyRequestDeadline).min()
        return [connecting, requests, phy].compactMap { $0 }.min()
    }

    // MARK: Connect

    /// Requests a connection to `peer`, failing with `.connectTimeout` after `timeout` ns of
    /// trying (counted from when its create reaches the controller; one runs at a time).
    public mutating func connect(_ id: ConnectRequestID, to peer: LEAddress, parameters: LEConnectParameters = .default,
                                 timeout: UInt64, now: UInt64) -> [ConnectionAction] {
        waiting.append(PendingConnect(id: id, peer: peer, parameters: parameters, timeout: timeout))
        var actions: [ConnectionAction] = []
        startNext(now: now, into: &actions)
        return actions
    }

    /// The caller gave up on a request: a waiting one fails at once with `.cancelled`; the
    /// one in progress is cancelled in the controller first.
    public mutating func cancelConnect(_ id: ConnectRequestID, now: UInt64) -> [ConnectionAction] {
        var actions: [ConnectionAction] = []
        if let i = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: i)
            actions.append(.connectFailed(id, HostError(.cancelled, "the connection attempt was cancelled")))
            return actions
        }
        guard let r = create.request, r.id == id else { return actions }
        switch create {
        case .creating:
            create = .cancelling(r, deadline: now &+ cancelGracePeriod, .abandoned)
            actions.append(.sendCommand(LECreateConnectionCancelCommand(), .createConnectionCancel))
        case .clearing:
            // Nothing of ours was sent yet: finish now; the clearing goes on without it.
            create = .stale
            actions.append(.connectFailed(id, HostError(.cancelled, "the connection attempt was cancelled")))
            startNext(now: now, into: &actions)
        case .cancelling(_, let deadline, _):
            // Cancelling for its timeout already: the caller now gets `.cancelled`.
            create = .cancelling(r, deadline: deadline, .abandoned)
        case .idle, .stale:
            break
        }
        return actions
    }

    private mutating func startNext(now: UInt64, into actions: inout [ConnectionAction]) {
        while create.request == nil, !waiting.isEmpty {
            var r = waiting.removeFirst()
            r.deadline = now &+ r.timeout
            if case .stale = create {
                create = .clearing(r, deadline: now &+ cancelGracePeriod, cancelAccepted: false)
                actions.append(.sendCommand(LECreateConnectionCancelCommand(), .createConnectionCancel))
            } else {
                create = .creating(r)
                actions.append(.sendCommand(createCommand(r), .createConnection))
            }
        }
    }

    private func createCommand(_ r: PendingConnect) -> any HCICommandEncodable {
        let p = r.parameters
        if useExtendedCreate {
            return LEExtendedCreateConnectionCommand(
                ownAddressType: p.ownAddressType, peerAddressType: r.peer.type, peerAddress: r.peer.address,
                le1M: LEExtendedCreateConnectionPHYParameters(scanInterval: p.scanInterval, scanWindow: p.scanWindow,
                                                              connection: p.range))
        }
        return LECreateConnectionCommand(scanInterval: p.scanInterval, scanWindow: p.scanWindow,
                                         peerAddressType: r.peer.type, peerAddress: r.peer.address,
                                         ownAddressType: p.ownAddressType, connection: p.range)
    }

    static func timeoutError(_ r: PendingConnect, detail: String = "") -> HostError {
        HostError(.connectTimeout, "no connection to \(r.peer) within \(formatDuration(r.timeout))\(detail)")
    }

    // MARK: Timers

    /// Deadlines that passed by `now`: timed-out connects and requests fail, stale cancels clear.
    public mutating func timerFired(now: UInt64) -> [ConnectionAction] {
        var actions: [ConnectionAction] = []
        for handle in links.keys.sorted() {
            guard let r = links[handle]?.parameterRequest, r.deadline <= now else { continue }
            links[handle]?.parameterRequest = nil
            actions.append(.parametersUpdated(handle: handle, .failure(HostError(.commandTimeout,
                "the connection parameter update did not happen within \(Self.parameterRequestTimeout / 1_000_000_000) s (the central did not answer or update)"))))
        }
        for handle in links.keys.sorted() {
            guard let deadline = links[handle]?.phyRequestDeadline, deadline <= now else { continue }
            links[handle]?.phyRequestDeadline = nil
            actions.append(.phyUpdated(handle: handle, .failure(HostError(.commandTimeout,
                "the controller did not report the PHY update within \(Self.phyUpdateTimeout / 1_000_000_000) s"))))
        }
        switch create {
        case .creating(let r) where r.deadline <= now:
            create = .cancelling(r, deadline: now &+ cancelGracePeriod, .timedOut)
            actions.append(.sendCommand(LECreateConnectionCancelCommand(), .createConnectionCancel))
        case .cancelling(let r, let deadline, let reason) where deadline <= now:
            // The controller never confirmed the cancel: give up without wedging the next one.
            create = .stale
            actions.append(.connectFailed(r.id, Self.failure(r, reason, detail:
                " (the controller did not confirm LE Create Connection Cancel)")))
        case .clearing(let r, _, _) where r.deadline <= now:
            create = .stale
            actions.append(.connectFailed(r.id, Self.timeoutError(r)))
        case .clearing(let r, let deadline, _) where deadline <= now:
            // No completion for the old create: try ours anyway.
            create = .creating(r)
            actions.append(.sendCommand(createCommand(r), .createConnection))
        case .idle, .stale, .creating, .cancelling, .clearing:
            break
        }
        startNext(now: now, into: &actions)
        return actions
    }

    private static func failure(_ r: PendingConnect, _ reason: CancelReason, detail: String = "") -> HostError {
        switch reason {
        case .abandoned: HostError(.cancelled, "the connection attempt was cancelled")
        case .timedOut: timeoutError(r, detail: detail)
        }
    }

    // MARK: Command answers

    /// The controller answered a command this manager asked for.
    public mutating func commandAnswered(_ purpose: ConnectionCommandPurpose, _ result: Result<CommandReturn, HostError>,
                                         now: UInt64) -> [ConnectionAction] {
        var actions: [ConnectionAction] = []
        switch purpose {
        case .createConnection:
            guard case .failure(var error) = result, case .creating(let r) = create else { break }
            // Refused (Command Status error) or unanswered (the controller may hold it): the
            // attempt is over.
            create = error.kind == .commandTimeout ? .stale : .idle
            error.message = "cannot connect to \(r.peer): " + error.message
            actions.append(.connectFailed(r.id, error))
            startNext(now: now, into: &actions)
        case .createConnectionCancel:
            guard case .clearing(let r, let deadline, _) = create else { break }
            if case .success = result {
                // A create was pending; its Connection Complete (0x02) comes next.
                create = .clearing(r, deadline: deadline, cancelAccepted: true)
            } else {
                // Nothing was pending (Command Disallowed): go ahead.
                create = .creating(r)
                actions.append(.sendCommand(createCommand(r), .createConnection))
            }
        case .disconnect(let handle):
            guard case .failure(let error) = result, var link = links[handle] else { break }
            if error.kind == .commandFailed(.unknownConnectionIdentifier) {
                // The controller has no such link: it is gone.
                links[handle] = nil
                actions.append(.linkClosed(link.state, reason: .unknownConnectionIdentifier))
            } else {
                link.phase = .up
                links[handle] = link
                actions.append(.disconnectFailed(handle: handle, error))
            }
        case .connectionUpdate(let handle):
            // Refused at once (Command Status error): no completion event will follow.
            guard case .failure(var error) = result, links[handle] != nil else { break }
            error.message = "LE Connection Update refused: " + error.message
            actions.append(.parametersUpdated(handle: handle, .failure(error)))
        case .remoteParameterReply, .readRemoteFeatures:
            // Failures leave the link as it was; the completion events carry the results.
            break
        case .setPHY(let handle):
            // Refused at once (Command Status error): no LE PHY Update Complete follows.
            guard case .failure(var error) = result, links[handle]?.phyRequestDeadline != nil else { break }
            links[handle]?.phyRequestDeadline = nil
            error.message = "LE Set PHY refused: " + error.message
            actions.append(.phyUpdated(handle: handle, .failure(error)))
        case .setDataLength(let handle):
            guard let state = links[handle]?.state else { break }
            switch result {
            case .success:
                actions.append(.dataLengthSet(handle: handle, .success(state)))
            case .failure(var error):
                error.message = "LE Set Data Length refused: " + error.message
                actions.append(.dataLengthSet(handle: handle, .failure(error)))
            }
        }
        return actions
    }

    // MARK: Events

    /// Feeds Disconnection Complete and the LE connection subevents; others are ignored.
    public mutating func handle(_ event: HCIEvent, now: UInt64) -> [ConnectionAction] {
        switch event {
        case .disconnectionComplete(let e):
            return disconnectionComplete(e)
        case .leMeta(let meta):
            return handle(meta, now: now)
        default:
            return []
        }
    }

    /// An LE Meta event: connection complete, updates, data length, PHY, remote features...
    public mutating func handle(_ meta: LEMetaEvent, now: UInt64) -> [ConnectionAction] {
        switch meta {
        case .connectionComplete(let e):
            return connectionComplete(status: e.status, handle: e.connectionHandle, role: e.role, peer: e.peerAddress,
                                      interval: e.connectionInterval, latency: e.peripheralLatency,
                                      timeout: e.supervisionTimeout, now: now)
        case .enhancedConnectionComplete(let e):
            return connectionComplete(status: e.status, handle: e.connectionHandle, role: e.role, peer: e.peerAddress,
                                      interval: e.connectionInterval, latency: e.peripheralLatency,
                                      timeout: e.supervisionTimeout, now: now)
        case .connectionUpdateComplete(let e):
            guard links[e.connectionHandle] != nil else {
                statistics.unknownHandleEvents += 1
                return []
            }
            links[e.connectionHandle]?.parameterRequest = nil
            guard e.status == .success else {
                return [.parametersUpdated(handle: e.connectionHandle, .failure(HostError(
                    .commandFailed(e.status), "the connection update failed: \(e.status)")))]
            }
            var actions = update(e.connectionHandle) {
                $0.interval = e.connectionInterval
                $0.latency = e.peripheralLatency
                $0.supervisionTimeout = e.supervisionTimeout
            }
            if let state = links[e.connectionHandle]?.state {
                actions.append(.parametersUpdated(handle: e.connectionHandle, .success(state)))
            }
            return actions
        case .dataLengthChange(let e):
            return update(e.connectionHandle) {
                $0.maxTxOctets = e.maxTxOctets
                $0.maxRxOctets = e.maxRxOctets
                $0.maxTxTime = e.maxTxTime
                $0.maxRxTime = e.maxRxTime
            }
        case .phyUpdateComplete(let e):
            // Ours when we asked (also when nothing changed); else the peer's or the controller's.
            let asked = links[e.connectionHandle]?.phyRequestDeadline != nil
            links[e.connectionHandle]?.phyRequestDeadline = nil
            guard e.status == .success else {
                return asked ? [.phyUpdated(handle: e.connectionHandle, .failure(HostError(.commandFailed(e.status),
                    "the PHY update failed: \(e.status)")))] : []
            }
            var actions = update(e.connectionHandle) {
                $0.txPHY = e.txPHY
                $0.rxPHY = e.rxPHY
            }
            if asked, let state = links[e.connectionHandle]?.state {
                actions.append(.phyUpdated(handle: e.connectionHandle, .success(state)))
            }
            return actions
        case .remoteConnectionParameterRequest(let e):
            return remoteParameterRequest(e)
        case .readRemoteFeaturesComplete(let e):
            guard e.status == .success else { return [] }
            return update(e.connectionHandle) { $0.remoteFeatures = e.leFeatures }
        case .advertisingReport, .longTermKeyRequest, .directedAdvertisingReport,
             .extendedAdvertisingReport, .scanTimeout, .advertisingSetTerminated, .channelSelectionAlgorithm, .unknown:
            return []
        }
    }

    private mutating func update(_ handle: UInt16, _ body: (inout LELinkState) -> Void) -> [ConnectionAction] {
        guard var link = links[handle] else {
            statistics.unknownHandleEvents += 1
            return []
        }
        body(&link.state)
        links[handle] = link
        return [.linkUpdated(link.state)]
    }

    private mutating func connectionComplete(status: HCIErrorCode, handle: UInt16, role: LEConnectionRole, peer: LEAddress,
                                             interval: UInt16, latency: UInt16, timeout: UInt16,
                                             now: UInt64) -> [ConnectionAction] {
        var actions: [ConnectionAction] = []
                if role == .peripheral {
            // Not the answer to a create of ours (Core Vol 4 Part E §7.7.65.1): a central
            // connected to our advertising, or advertising ended (e.g. directed advertising
            // timeout). Connect attempts are not touched.
            guard status == .success else { return actions }
            guard handle <= Self.maximumConnectionHandle else {
                statistics.invalidConnectionHandles += 1
                return actions
            }
        }
        if status == .success, links[handle] != nil {
            // A controller repeating itself: the link we have stays as it is.
            statistics.unknownHandleEvents += 1
            return actions
        }
        if status == .success && handle > Self.maximumConnectionHandle {
            // Core Vol 4 Part E §7.7.65.1: 0x0000-0x0EFF. A controller that reports more is
            // broken; the handle cannot be used (nor disconnected), so the link is refused.
            statistics.invalidConnectionHandles += 1
            switch create {
            case .idle, .stale:
                break
            case .clearing(let r, _, _):
                // The old create's completion: ours goes out now.
                create = .creating(r)
                actions.append(.sendCommand(createCommand(r), .createConnection))
            case .creating(let r), .cancelling(let r, _, _):
                create = .idle
                actions.append(.connectFailed(r.id, HostError(
                    .malformedPacket(WireError(.valueOutOfRange, at: 1, "Connection_Handle above 0x0EFF")),
                    "the controller reported Connection_Handle 0x\(hex(handle, 4)) (above 0x0EFF) for \(r.peer); the link is refused")))
                startNext(now: now, into: &actions)
            }
            return actions
        }
        let state = LELinkState(handle: handle, role: role, peer: peer, interval: interval, latency: latency,
                                supervisionTimeout: timeout)
        if status == .success && role == .peripheral {
            links[handle] = Link(state: state)
            actions.append(.linkOpened(state))
            return actions
        }
        switch create {
        case .idle, .stale:
            // Nobody waits (an attempt given up on): do not keep a link no one owns.
            if status == .success { adoptOrphan(state, into: &actions) }
            return actions
        case .clearing(let r, _, _):
            // The old create's completion: absorb it, then send ours.
            if status == .success { adoptOrphan(state, into: &actions) }
            create = .creating(r)
            actions.append(.sendCommand(createCommand(r), .createConnection))
            return actions
        case .cancelling(let r, _, .abandoned) where status == .success:
            create = .idle
            adoptOrphan(state, into: &actions)
            actions.append(.connectFailed(r.id, Self.failure(r, .abandoned)))
        case .creating(let r) where status == .success, .cancelling(let r, _, .timedOut) where status == .success:
            // Also when the cancel for its timeout lost the race: the caller wanted this link.
            create = .idle
            links[handle] = Link(state: state)
            actions.append(.connected(r.id, state))
            // Learn what the peer supports (data length, PHYs, ...): Core Vol 6 Part B §5.1.4.
            actions.append(.sendCommand(LEReadRemoteFeaturesCommand(connectionHandle: handle),
                                        .readRemoteFeatures(handle: handle)))
        case .cancelling(let r, _, let reason):
            create = .idle
            actions.append(.connectFailed(r.id, Self.failure(r, reason)))
        case .creating(let r):
            create = .idle
            if status == .unknownConnectionIdentifier {
                actions.append(.connectFailed(r.id, HostError(.cancelled, "the connection attempt to \(r.peer) was cancelled")))
            } else {
                actions.append(.connectFailed(r.id, HostError(.connectFailed(status), "cannot connect to \(r.peer): \(status)")))
            }
        }
        startNext(now: now, into: &actions)
        return actions
    }

    private mutating func adoptOrphan(_ state: LELinkState, into actions: inout [ConnectionAction]) {
        statistics.orphanConnections += 1
        links[state.handle] = Link(state: state, phase: .disconnecting)
        actions.append(.sendCommand(DisconnectCommand(connectionHandle: state.handle, reason: .remoteUserTerminatedConnection),
                                    .disconnect(handle: state.handle)))
    }

    // MARK: Disconnect

    /// Sends HCI_Disconnect (Core Vol 4 Part E §7.1.6) unless one is already on its way.
    /// The link closes with the Disconnection Complete's reason (usually 0x16, Connection
    /// Terminated By Local Host).
    public mutating func disconnect(_ handle: UInt16, reason: HCIErrorCode = .remoteUserTerminatedConnection) -> [ConnectionAction] {
        guard var link = links[handle], case .up = link.phase else { return [] }
        link.phase = .disconnecting
        links[handle] = link
        return [.sendCommand(DisconnectCommand(connectionHandle: handle, reason: reason), .disconnect(handle: handle))]
    }

    private mutating func disconnectionComplete(_ e: HCIDisconnectionComplete) -> [ConnectionAction] {
        guard var link = links[e.connectionHandle] else {
            statistics.unknownHandleEvents += 1
            return []
        }
        guard e.status == .success else {
            link.phase = .up
            links[e.connectionHandle] = link
            return [.disconnectFailed(handle: e.connectionHandle, .commandFailed(.disconnect, e.status))]
        }
        links[e.connectionHandle] = nil
        return [.linkClosed(link.state, reason: e.reason)]
    }

    // MARK: Connection parameters

    /// The peer's parameters are acceptable when within the ranges of Core Vol 3 Part A
    /// §4.20 and the supervision timeout exceeds (1 + latency) × max interval × 2
    /// (Core Vol 6 Part B §4.5.2): in units, timeout × 10 ms > (1 + latency) × max × 2.5 ms.
    /// Asks the controller to change a link's parameters (LE Connection Update, Core Vol 4
    /// Part E §7.8.18); the result arrives as LE Connection Update Complete (`.linkUpdated`).
    /// Throws for values outside the spec's limits or an unknown link.
    public mutating func updateParameters(_ handle: UInt16, _ p: L2CAPConnectionParameters,
                                          now: UInt64) throws(HostError) -> [ConnectionAction] {
        guard var link = links[handle] else {
            throw HostError(.disconnected(nil), "no link with handle 0x\(hex(handle, 4))")
        }
        guard Self.isAcceptable(p) else {
            throw HostError(.notSupported, "connection parameters outside the spec's limits: interval \(p.intervalMin)...\(p.intervalMax) ×1.25 ms, latency \(p.peripheralLatency), timeout \(p.timeoutMultiplier) ×10 ms")
        }
        guard link.state.role == .peripheral else { return [Self.connectionUpdate(handle, p)] }
        // A peripheral asks the central over L2CAP, which every central takes (Core Vol 3
        // Part A §4.20); the LL procedure needs both controllers to have it.
        guard link.parameterRequest == nil else {
            throw HostError(.busy, "a connection parameter update is already asked for on this link")
        }
        let id = Self.nextIdentifier(&link)
        link.parameterRequest = .sent(identifier: id, deadline: now &+ Self.parameterRequestTimeout)
        links[handle] = link
        return signaling(handle, .connectionParameterUpdateRequest(identifier: id, p))
    }

    /// Asks for the PHYs of a link (LE Set PHY, Core Vol 4 Part E §7.8.49): `tx` and `rx` are
    /// the PHYs we take; the controller and the peer settle it and LE PHY Update Complete
    /// ends the request (`.phyUpdated`, with the PHYs in use, changed or not).
    public mutating func setPHY(_ handle: UInt16, tx: LEPHYSet, rx: LEPHYSet, options: LECodedPHYOptions = .noPreference,
                                now: UInt64) throws(HostError) -> [ConnectionAction] {
        guard var link = links[handle], link.phase == .up else {
            throw HostError(.disconnected(nil), "no link with handle 0x\(hex(handle, 4))")
        }
        guard link.phyRequestDeadline == nil else { throw HostError(.busy, "a PHY update is already asked for on this link") }
        guard !tx.isEmpty, !rx.isEmpty else { throw HostError(.invalidParameters, "give at least one PHY each way") }
        link.phyRequestDeadline = now &+ Self.phyUpdateTimeout
        links[handle] = link
        return [.sendCommand(LESetPHYCommand(connectionHandle: handle, txPHYs: tx, rxPHYs: rx, phyOptions: options),
                             .setPHY(handle: handle))]
    }

    /// Asks for longer (or shorter) link layer payloads on a link (LE Set Data Length, Core
    /// Vol 4 Part E §7.8.33): 27...251 octets, 328...17040 µs. The controller runs the Data
    /// Length Update; the sizes in force come with LE Data Length Change, only when they change.
    public mutating func setDataLength(_ handle: UInt16, txOctets: UInt16, txTime: UInt16) throws(HostError) -> [ConnectionAction] {
        guard let link = links[handle], link.phase == .up else {
            throw HostError(.disconnected(nil), "no link with handle 0x\(hex(handle, 4))")
        }
        guard (27 ... 251).contains(txOctets), (328 ... 17040).contains(txTime) else {
            throw HostError(.invalidParameters, "data length outside the spec's limits: \(txOctets) octets (27-251), \(txTime) µs (328-17040)")
        }
        return [.sendCommand(LESetDataLengthCommand(connectionHandle: handle, txOctets: txOctets, txTime: txTime),
                             .setDataLength(handle: handle))]
    }

    /// The central's answer to our parameter request (a response, or a Command Reject).
    private mutating func parameterRequestAnswered(_ handle: UInt16, accepted: Bool?, _ why: String) -> [ConnectionAction] {
        guard case .sent(_, let deadline)? = links[handle]?.parameterRequest else { return [] }
        if accepted == true {
            links[handle]?.parameterRequest = .accepted(deadline: deadline)
            return []
        }
        links[handle]?.parameterRequest = nil
        return [.parametersUpdated(handle: handle, .failure(HostError(.l2capRefused(accepted == nil ? 0xFFFF : 1), why)))]
    }

    private static func connectionUpdate(_ handle: UInt16, _ p: L2CAPConnectionParameters) -> ConnectionAction {
        let range = LEConnectionParameterRange(intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                               maxLatency: p.peripheralLatency, supervisionTimeout: p.timeoutMultiplier)
        return .sendCommand(LEConnectionUpdateCommand(connectionHandle: handle, connection: range),
                            .connectionUpdate(handle: handle))
    }

    /// Whether a peer's connection parameter request is within the spec's ranges and what we accept.
    public static func isAcceptable(_ p: L2CAPConnectionParameters) -> Bool {
        guard p.isWithinSpecRanges else { return false }
        return UInt32(p.timeoutMultiplier) * 4 > (1 + UInt32(p.peripheralLatency)) * UInt32(p.intervalMax)
    }

    private mutating func remoteParameterRequest(_ e: LERemoteConnectionParameterRequest) -> [ConnectionAction] {
        guard links[e.connectionHandle] != nil else {
            statistics.unknownHandleEvents += 1
            return []
        }
        let p = L2CAPConnectionParameters(intervalMin: e.intervalMin, intervalMax: e.intervalMax,
                                          peripheralLatency: e.maxLatency, timeoutMultiplier: e.timeout)
        let purpose = ConnectionCommandPurpose.remoteParameterReply(handle: e.connectionHandle)
        if Self.isAcceptable(p) {
            statistics.parameterRequestsAccepted += 1
            let range = LEConnectionParameterRange(intervalMin: e.intervalMin, intervalMax: e.intervalMax,
                                                   maxLatency: e.maxLatency, supervisionTimeout: e.timeout)
            return [.sendCommand(LERemoteConnectionParameterRequestReplyCommand(connectionHandle: e.connectionHandle,
                                                                                connection: range), purpose)]
        }
        statistics.parameterRequestsRejected += 1
        return [.sendCommand(LERemoteConnectionParameterRequestNegativeReplyCommand(
            connectionHandle: e.connectionHandle, reason: .unacceptableConnectionParameters), purpose)]
    }

    // MARK: L2CAP fixed channels

    /// Where a frame of the LE signaling channel goes.
    public enum SignalingRoute {
        /// Answered here (parameter update, refusals, Command Reject): do these.
        case handled([ConnectionAction])
        /// A command of the LE credit-based channels (a request of the peer's, a credit
        /// indication, or a response to one of their requests): for ``L2CAPCreditChannels``.
        /// (Parsed from the frame: valid while it is.)
        case creditChannels(L2CAPSignalingCommand)
    }

    /// One frame from the LE signaling channel (CID 5), Core Vol 3 Part A §4: the one
    /// signaling machine of a link. It owns the identifiers (``allocateSignalingIdentifier(handle:)``)
    /// and which requests await a response, answers what is its own, and routes the
    /// credit-based channels' commands to their machine.
    public mutating func receivedSignaling(handle: UInt16, payload: UnsafeRawBufferPointer) -> SignalingRoute {
        guard var link = links[handle] else {
            statistics.unknownHandleEvents += 1
            return .handled([])
        }
        // A command longer than our signaling MTU is rejected whole, saying our MTU
        // (Core Vol 3 Part A §4.1); a reject is never answered.
        if payload.count > Self.signalingMTU {
            guard payload.count >= 2, payload[0] != L2CAPSignalingCode.commandReject.rawValue, payload[1] != 0 else { return .handled([]) }
            statistics.rejectedSignaling += 1
            return .handled(signaling(handle, .commandReject(identifier: payload[1], reason: .signalingMTUExceeded(actualMTU: UInt16(Self.signalingMTU)))))
        }
        let command: L2CAPSignalingCommand
        do throws(WireError) {
            command = try L2CAPSignalingCommand(parsing: payload)
        } catch {
            statistics.malformedSignaling += 1
            // Answer a malformed request (never a reject) so the peer does not wait.
            guard payload.count >= 2, payload[0] != L2CAPSignalingCode.commandReject.rawValue, payload[1] != 0 else { return .handled([]) }
            statistics.rejectedSignaling += 1
            return .handled(signaling(handle, .commandReject(identifier: payload[1], reason: .commandNotUnderstood)))
        }
        switch command {
        case .connectionParameterUpdateRequest(let id, let p):
            guard link.state.role == .central else {
                // Only a peripheral may ask (Core Vol 3 Part A §4.20).
                statistics.rejectedSignaling += 1
                return .handled(signaling(handle, .commandReject(identifier: id, reason: .commandNotUnderstood)))
            }
            if Self.isAcceptable(p) {
                statistics.parameterRequestsAccepted += 1
                return .handled(signaling(handle, .connectionParameterUpdateResponse(identifier: id, result: .accepted))
                    + [Self.connectionUpdate(handle, p)])
            }
            statistics.parameterRequestsRejected += 1
            return .handled(signaling(handle, .connectionParameterUpdateResponse(identifier: id, result: .rejected)))
        case .leCreditBasedConnectionRequest, .flowControlCreditIndication, .disconnectionRequest:
            // LE credit-based channels: their machine answers (a Disconnection Request names
            // one of its channels, or it rejects the CIDs).
            return .creditChannels(command)
        case .connectionParameterUpdateResponse(let id, let result):
            guard case .sent(id, _)? = link.parameterRequest else {
                statistics.unmatchedSignalingResponses += 1
                return .handled([])
            }
            return .handled(parameterRequestAnswered(handle, accepted: result == .accepted,
                                                     "the central rejected the connection parameters (Connection Parameter Update Response: rejected)"))
        case .commandReject(let id, _) where { if case .sent(id, _)? = link.parameterRequest { true } else { false } }():
            return .handled(parameterRequestAnswered(handle, accepted: nil,
                                                     "the central does not take Connection Parameter Update Request (Command Reject)"))
        case .leCreditBasedConnectionResponse(let id, _), .disconnectionResponse(let id, _, _), .commandReject(let id, _):
            // Only an answer to a request the channels sent goes to them.
            guard link.pendingSignaling.remove(id) != nil else {
                statistics.unmatchedSignalingResponses += 1
                return .handled([])
            }
            links[handle] = link
            return .creditChannels(command)
        case .creditBasedConnectionRequest(let id, _), .creditBasedReconfigureRequest(let id, _):
            // Enhanced credit-based channels (§4.25) are not offered: their commands are not
            // understood here (L2CAP/LE/REJ/BI-02-C; the kernel without enable_ecred does so too).
            statistics.rejectedSignaling += 1
            return .handled(signaling(handle, .commandReject(identifier: id, reason: .commandNotUnderstood)))
        case .creditBasedConnectionResponse, .creditBasedReconfigureResponse:
            // Answers to requests this host never sends.
            statistics.unmatchedSignalingResponses += 1
            return .handled([])
        case .unknown(_, let id, _):
            statistics.rejectedSignaling += 1
            return .handled(signaling(handle, .commandReject(identifier: id, reason: .commandNotUnderstood)))
        }
    }

    /// The link's next identifier (1...255) that no request still waiting for its response
    /// holds, so a response (or a Command Reject) names one request only.
    private static func nextIdentifier(_ link: inout Link) -> UInt8 {
        var id = link.nextSignalingIdentifier
        for _ in 0 ..< 255 {
            let ours: Bool = if case .sent(id, _)? = link.parameterRequest { true } else { false }
            if !ours && !link.pendingSignaling.contains(id) { break }
            id = id == 255 ? 1 : id + 1
        }
        link.nextSignalingIdentifier = id == 255 ? 1 : id + 1
        return id
    }

    /// Our MTUsig on the LE signaling channel: the minimum, 23 octets (Core Vol 3 Part A §4).
    public static let signalingMTU = 23

    /// A fresh signaling identifier (1...255) for a command the credit-based channels send:
    /// a connection or a disconnection request, whose response is routed back to them; or,
    /// not `awaitingResponse`, a credit indication, which nothing answers. nil when the link
    /// is gone.
    public mutating func allocateSignalingIdentifier(handle: UInt16, awaitingResponse: Bool = true) -> UInt8? {
        guard var link = links[handle] else { return nil }
        let id = Self.nextIdentifier(&link)
        if awaitingResponse { link.pendingSignaling.insert(id) }
        links[handle] = link
        return id
    }

    /// A request the channels sent will not be answered any more (its deadline passed): its
    /// identifier is free again, so 255 unanswered requests cannot exhaust the link's.
    public mutating func releaseSignalingIdentifier(handle: UInt16, _ identifier: UInt8) {
        links[handle]?.pendingSignaling.remove(identifier)
    }

    private func signaling(_ handle: UInt16, _ command: L2CAPSignalingCommand) -> [ConnectionAction] {
        frame(handle, L2CAPFrame(channelID: .leSignaling, payload: command))
    }

    private func frame(_ handle: UInt16, _ f: some WireEncodable) -> [ConnectionAction] {
        do throws(WireError) {
            return [.sendL2CAP(handle: handle, frame: try f.encoded())]
        } catch {
            preconditionFailure("cannot encode our own L2CAP frame: \(error)")
        }
    }

    /// One frame from the SMP channel (CID 6), Core Vol 3 Part H §3. Until pairing exists,
    /// a Pairing Request gets Pairing Failed "Pairing Not Supported"; the rest is ignored.
    public mutating func receivedSMP(handle: UInt16, payload: UnsafeRawBufferPointer) -> [ConnectionAction] {
        guard links[handle] != nil else {
            statistics.unknownHandleEvents += 1
            return []
        }
        guard payload.first == SMPCode.pairingRequest.rawValue else {
            statistics.smpIgnored += 1
            return []
        }
        statistics.pairingRequestsRefused += 1
        return frame(handle, L2CAPFrame(channelID: .smp, payload: SMPPDU.pairingFailed(reason: .pairingNotSupported)))
    }

    /// Forgets every link and request (host closing). Returns the failures to report.
    public mutating func closeAll(_ error: HostError) -> [ConnectionAction] {
        var actions: [ConnectionAction] = []
        if let r = create.request { actions.append(.connectFailed(r.id, error)) }
        for w in waiting { actions.append(.connectFailed(w.id, error)) }
        // A create in the controller is the closing host's to forget.
        create = .idle
        waiting.removeAll()
        for handle in links.keys.sorted() {
            if let l = links[handle] { actions.append(.linkClosed(l.state, reason: .connectionTerminatedByLocalHost)) }
        }
        links.removeAll()
        return actions
    }
}
