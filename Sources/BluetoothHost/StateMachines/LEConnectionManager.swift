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
        /// The caller gave up (task cancelled): fail with `.cancelled`, drop a late link.
        var abandoned = false
    }

    enum Phase: Sendable {
        /// Cancelling a create the controller may still hold from an earlier attempt.
        case clearing(deadline: UInt64, cancelAccepted: Bool)
        /// LE (Extended) Create Connection sent; waiting for Connection Complete.
        case creating
        /// LE Create Connection Cancel sent; waiting for Connection Complete 0x02.
        case cancelling(deadline: UInt64)
    }

    struct Attempt: Sendable {
        var request: PendingConnect
        var phase: Phase
    }

    struct Link: Sendable {
        var state: LELinkState
        var disconnecting = false
        var nextSignalingIdentifier: UInt8 = 1
        /// Identifiers of requests the credit-based channels sent, awaiting a response.
        var pendingSignaling: Set<UInt8> = []
    }

    private var waiting: [PendingConnect] = []
    private var attempt: Attempt?
    /// After a cancel that was never confirmed: the controller may still be initiating.
    public private(set) var staleCreate = false
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
    public var isConnecting: Bool { attempt != nil || !waiting.isEmpty }

    /// The earliest deadline of the connection attempt (its timeout, the cancel grace period).
    public var nextDeadline: UInt64? {
        var d: UInt64? = nil
        func consider(_ t: UInt64) { d = min(d ?? t, t) }
        if let a = attempt {
            switch a.phase {
            case .clearing(let deadline, _): consider(min(deadline, a.request.deadline))
            case .creating: consider(a.request.deadline)
            case .cancelling(let deadline): consider(deadline)
            }
        }
        return d
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
        guard var a = attempt, a.request.id == id else { return actions }
        a.request.abandoned = true
        switch a.phase {
        case .creating:
            a.phase = .cancelling(deadline: now &+ cancelGracePeriod)
            attempt = a
            actions.append(.sendCommand(LECreateConnectionCancelCommand(), .createConnectionCancel))
        case .clearing:
            // Nothing of ours was sent yet: finish now; the clearing goes on without it.
            attempt = nil
            staleCreate = true
            actions.append(.connectFailed(id, HostError(.cancelled, "the connection attempt was cancelled")))
            startNext(now: now, into: &actions)
        case .cancelling:
            attempt = a
        }
        return actions
    }

    private mutating func startNext(now: UInt64, into actions: inout [ConnectionAction]) {
        while attempt == nil, !waiting.isEmpty {
            var r = waiting.removeFirst()
            r.deadline = now &+ r.timeout
            if staleCreate {
                staleCreate = false
                attempt = Attempt(request: r, phase: .clearing(deadline: now &+ cancelGracePeriod, cancelAccepted: false))
                actions.append(.sendCommand(LECreateConnectionCancelCommand(), .createConnectionCancel))
            } else {
                attempt = Attempt(request: r, phase: .creating)
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
        if var a = attempt {
            switch a.phase {
            case .creating where a.request.deadline <= now:
                a.phase = .cancelling(deadline: now &+ cancelGracePeriod)
                attempt = a
                actions.append(.sendCommand(LECreateConnectionCancelCommand(), .createConnectionCancel))
            case .cancelling(let deadline) where deadline <= now:
                // The controller never confirmed the cancel: give up without wedging the next one.
                attempt = nil
                staleCreate = true
                actions.append(.connectFailed(a.request.id, failure(for: a.request, detail:
                    " (the controller did not confirm LE Create Connection Cancel)")))
            case .clearing(let deadline, _) where a.request.deadline <= now || deadline <= now:
                if a.request.deadline <= now {
                    attempt = nil
                    staleCreate = true
                    actions.append(.connectFailed(a.request.id, Self.timeoutError(a.request)))
                } else {
                    // No completion for the old create: try ours anyway.
                    a.phase = .creating
                    attempt = a
                    actions.append(.sendCommand(createCommand(a.request), .createConnection))
                }
            case .creating, .cancelling, .clearing:
                break
            }
        }
        startNext(now: now, into: &actions)
        return actions
    }

    private func failure(for r: PendingConnect, detail: String = "") -> HostError {
        r.abandoned ? HostError(.cancelled, "the connection attempt was cancelled") : Self.timeoutError(r, detail: detail)
    }

    // MARK: Command answers

    /// The controller answered a command this manager asked for.
    public mutating func commandAnswered(_ purpose: ConnectionCommandPurpose, _ result: Result<CommandReturn, HostError>,
                                         now: UInt64) -> [ConnectionAction] {
        var actions: [ConnectionAction] = []
        switch purpose {
        case .createConnection:
            guard case .failure(var error) = result, let a = attempt, case .creating = a.phase else { break }
            // Refused (Command Status error) or unanswered: the attempt is over.
            if error.kind == .commandTimeout { staleCreate = true }
            error.message = "cannot connect to \(a.request.peer): " + error.message
            attempt = nil
            actions.append(.connectFailed(a.request.id, error))
            startNext(now: now, into: &actions)
        case .createConnectionCancel:
            guard var a = attempt, case .clearing(let deadline, _) = a.phase else { break }
            if case .success = result {
                // A create was pending; its Connection Complete (0x02) comes next.
                a.phase = .clearing(deadline: deadline, cancelAccepted: true)
                attempt = a
            } else {
                // Nothing was pending (Command Disallowed): go ahead.
                a.phase = .creating
                attempt = a
                actions.append(.sendCommand(createCommand(a.request), .createConnection))
            }
        case .disconnect(let handle):
            guard case .failure(let error) = result, var link = links[handle] else { break }
            if error.kind == .commandFailed(.unknownConnectionIdentifier) {
                // The controller has no such link: it is gone.
                links[handle] = nil
                actions.append(.linkClosed(link.state, reason: .unknownConnectionIdentifier))
            } else {
                link.disconnecting = false
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
            guard e.status == .success else { return [] }
            return update(e.connectionHandle) {
                $0.txPHY = e.txPHY
                $0.rxPHY = e.rxPHY
            }
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
            guard let a = attempt else { return actions }
            switch a.phase {
            case .clearing:
                // The old create's completion: ours goes out now.
                attempt = Attempt(request: a.request, phase: .creating)
                actions.append(.sendCommand(createCommand(a.request), .createConnection))
            case .creating, .cancelling:
                attempt = nil
                actions.append(.connectFailed(a.request.id, HostError(
                    .malformedPacket(WireError(.valueOutOfRange, at: 1, "Connection_Handle above 0x0EFF")),
                    "the controller reported Connection_Handle 0x\(hex(handle, 4)) (above 0x0EFF) for \(a.request.peer); the link is refused")))
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
        guard let a = attempt else {
            // Nobody waits (an attempt given up on): do not keep a link no one owns.
            if status == .success { adoptOrphan(state, into: &actions) }
            return actions
        }
        switch a.phase {
        case .clearing(let deadline, _):
            // The old create's completion: absorb it, then send ours.
            if status == .success { adoptOrphan(state, into: &actions) }
            _ = deadline
            attempt = Attempt(request: a.request, phase: .creating)
            actions.append(.sendCommand(createCommand(a.request), .createConnection))
            return actions
        case .creating, .cancelling:
            attempt = nil
            if status == .success {
                if a.request.abandoned {
                    adoptOrphan(state, into: &actions)
                    actions.append(.connectFailed(a.request.id, failure(for: a.request)))
                } else {
                    // Also when the cancel lost the race: the caller wanted this link.
                    links[handle] = Link(state: state)
                    actions.append(.connected(a.request.id, state))
                    // Learn what the peer supports (data length, PHYs, ...): Core Vol 6 Part B §5.1.4.
                    actions.append(.sendCommand(LEReadRemoteFeaturesCommand(connectionHandle: handle),
                                                .readRemoteFeatures(handle: handle)))
                }
            } else if case .cancelling = a.phase {
                actions.append(.connectFailed(a.request.id, failure(for: a.request)))
            } else if status == .unknownConnectionIdentifier {
                actions.append(.connectFailed(a.request.id, HostError(.cancelled, "the connection attempt to \(a.request.peer) was cancelled")))
            } else {
                actions.append(.connectFailed(a.request.id, HostError(.connectFailed(status),
                                                                       "cannot connect to \(a.request.peer): \(status)")))
            }
        }
        startNext(now: now, into: &actions)
        return actions
    }

    private mutating func adoptOrphan(_ state: LELinkState, into actions: inout [ConnectionAction]) {
        statistics.orphanConnections += 1
        links[state.handle] = Link(state: state, disconnecting: true)
        actions.append(.sendCommand(DisconnectCommand(connectionHandle: state.handle, reason: .remoteUserTerminatedConnection),
                                    .disconnect(handle: state.handle)))
    }

    // MARK: Disconnect

    /// Sends HCI_Disconnect (Core Vol 4 Part E §7.1.6) unless one is already on its way.
    /// The link closes with the Disconnection Complete's reason (usually 0x16, Connection
    /// Terminated By Local Host).
    public mutating func disconnect(_ handle: UInt16, reason: HCIErrorCode = .remoteUserTerminatedConnection) -> [ConnectionAction] {
        guard var link = links[handle], !link.disconnecting else { return [] }
        link.disconnecting = true
        links[handle] = link
        return [.sendCommand(DisconnectCommand(connectionHandle: handle, reason: reason), .disconnect(handle: handle))]
    }

    private mutating func disconnectionComplete(_ e: HCIDisconnectionComplete) -> [ConnectionAction] {
        guard var link = links[e.connectionHandle] else {
            statistics.unknownHandleEvents += 1
            return []
        }
        guard e.status == .success else {
            link.disconnecting = false
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
    public mutating func updateParameters(_ handle: UInt16, _ p: L2CAPConnectionParameters) throws(HostError) -> [ConnectionAction] {
        guard links[handle] != nil else {
            throw HostError(.disconnected(nil), "no link with handle 0x\(hex(handle, 4))")
        }
        guard Self.isAcceptable(p) else {
            throw HostError(.notSupported, "connection parameters outside the spec's limits: interval \(p.intervalMin)...\(p.intervalMax) ×1.25 ms, latency \(p.peripheralLatency), timeout \(p.timeoutMultiplier) ×10 ms")
        }
        return [Self.connectionUpdate(handle, p)]
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
        case .leCreditBasedConnectionResponse(let id, _), .disconnectionResponse(let id, _, _), .commandReject(let id, _):
            // Only an answer to a request the channels sent goes to them.
            guard link.pendingSignaling.remove(id) != nil else {
                statistics.unmatchedSignalingResponses += 1
                return .handled([])
            }
            links[handle] = link
            return .creditChannels(command)
        case .creditBasedConnectionRequest(let id, let r):
            // Enhanced credit-based channels (§4.25) are not offered.
            var refused = L2CAPChannelIDList()
            for _ in r.sourceCIDs { refused.append(.null) }
            return .handled(signaling(handle, .creditBasedConnectionResponse(identifier: id, L2CAPCreditBasedConnectionResponse(
                mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported, destinationCIDs: refused))))
        case .creditBasedReconfigureRequest(let id, _):
            return .handled(signaling(handle, .creditBasedReconfigureResponse(identifier: id, result: .invalidDestinationCID)))
        case .connectionParameterUpdateResponse, .creditBasedConnectionResponse, .creditBasedReconfigureResponse:
            // Answers to requests this host never sends.
            statistics.unmatchedSignalingResponses += 1
            return .handled([])
        case .unknown(_, let id, _):
            statistics.rejectedSignaling += 1
            return .handled(signaling(handle, .commandReject(identifier: id, reason: .commandNotUnderstood)))
        }
    }

    /// A fresh signaling identifier (1...255) for a request the credit-based channels send
    /// (a connection or a disconnection request); its response is routed back to them. nil
    /// when the link is gone.
    public mutating func allocateSignalingIdentifier(handle: UInt16) -> UInt8? {
        guard var link = links[handle] else { return nil }
        let id = link.nextSignalingIdentifier
        link.nextSignalingIdentifier = id == 255 ? 1 : id + 1
        link.pendingSignaling.insert(id)
        links[handle] = link
        return id
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
        if let a = attempt { actions.append(.connectFailed(a.request.id, error)) }
        for w in waiting { actions.append(.connectFailed(w.id, error)) }
        attempt = nil
        waiting.removeAll()
        for handle in links.keys.sorted() {
            if let l = links[handle] { actions.append(.linkClosed(l.state, reason: .connectionTerminatedByLocalHost)) }
        }
        links.removeAll()
        return actions
    }
}
