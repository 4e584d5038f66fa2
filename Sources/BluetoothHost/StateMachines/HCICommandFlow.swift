import BluetoothWire

/// What ``HCICommandFlow`` asks its driver to do.
public enum FlowAction: Sendable {
    /// Write this H4 command packet (indicator included) to the transport.
    case send([UInt8])
    /// The command identified by the token is finished.
    case complete(CommandToken, Result<CommandReturn, HostError>)
}

/// HCI command flow control (Core Vol 4 Part E §4.4), sans-I/O.
///
/// - Commands wait in a FIFO queue and are sent while the controller grants credits
///   (Num_HCI_Command_Packets). The host starts with one credit; every Command Complete
///   and Command Status sets the credit count to the value it carries; opcode 0x0000 (NOP)
///   only returns credits.
/// - Several commands can be outstanding at once if their opcodes differ; each is matched
///   to the first Command Complete or Command Status carrying its opcode. A command with
///   the same opcode as an outstanding one waits (answers could not be told apart), and
///   so does everything queued after it, to keep the order callers asked for.
/// - Every sent command has a deadline (default ``defaultTimeout``). When it passes, the
///   command fails with `.commandTimeout`, its slot is freed and the credit count is
///   restored to at least 1 so later commands still flow (some controllers never answer
///   some commands).
/// - A non-success status fails the command with `.commandFailed(status)`. For a command
///   answered by Command Status, success only means "accepted": the completion event that
///   follows is the caller's business.
///
/// Time is an input: `now` is a monotonic clock in nanoseconds.
public struct HCICommandFlow: Sendable {
    struct Queued: Sendable {
        var packet: [UInt8]
        var opcode: HCIOpcode
        var token: CommandToken
        var timeout: UInt64
    }

    struct Outstanding: Sendable {
        var opcode: HCIOpcode
        var token: CommandToken
        var deadline: UInt64
        var timeout: UInt64
    }

    /// Timeout for commands submitted without their own, in nanoseconds.
    public var defaultTimeout: UInt64
    /// Commands the controller currently accepts.
    public private(set) var credits: Int = 1
    private var queue: [Queued] = []
    private var queueHead = 0
    private var outstanding: [Outstanding] = []
    /// When credits are 0 with nothing outstanding, the controller promised a NOP Command
    /// Complete; if none comes by this time we assume one credit so the queue cannot wedge.
    private var stallDeadline: UInt64?

    /// Command Complete/Status events that matched no outstanding command.
    public private(set) var unmatchedAnswers = 0
    /// Commands that got no answer within their timeout.
    public private(set) var timeouts = 0

    /// A flow with one credit (until the controller says otherwise) and `defaultTimeout`
    /// nanoseconds per command.
    public init(defaultTimeout: UInt64 = 5_000_000_000) {
        self.defaultTimeout = defaultTimeout
    }

    /// Number of commands sent and not yet answered.
    public var outstandingCount: Int { outstanding.count }
    /// Number of commands waiting for a credit.
    public var queuedCount: Int { queue.count - queueHead }
    /// True when nothing is queued or outstanding.
    public var isIdle: Bool { outstanding.isEmpty && queuedCount == 0 }

    /// The earliest time ``timerFired(now:)`` has something to do, or nil.
    public var nextDeadline: UInt64? {
        var d = stallDeadline
        for o in outstanding where d == nil || o.deadline < d! { d = o.deadline }
        return d
    }

    /// Queues a command. `packet` is the H4 command packet (0x01, opcode, length, parameters);
    /// `timeout` overrides ``defaultTimeout`` for this command (nanoseconds).
    public mutating func submit(_ packet: [UInt8], opcode: HCIOpcode, token: CommandToken, now: UInt64,
                                timeout: UInt64? = nil) -> [FlowAction] {
        queue.append(Queued(packet: packet, opcode: opcode, token: token, timeout: timeout ?? defaultTimeout))
        var actions: [FlowAction] = []
        pump(now: now, into: &actions)
        return actions
    }

    /// Feeds an event from the controller. Only Command Complete and Command Status matter;
    /// other events return no actions.
    public mutating func handleEvent(_ event: HCIEvent, now: UInt64) -> [FlowAction] {
        var actions: [FlowAction] = []
        switch event {
        case .commandComplete(let cc):
            let status = cc.status ?? .success
            answer(opcode: cc.commandOpcode, credits: cc.numHCICommandPackets, now: now, into: &actions) {
                CommandReturn(opcode: cc.commandOpcode, status: status, returnParameters: Array(cc.returnParameters))
            }
        case .commandStatus(let cs):
            answer(opcode: cs.commandOpcode, credits: cs.numHCICommandPackets, now: now, into: &actions) {
                CommandReturn(opcode: cs.commandOpcode, status: cs.status, returnParameters: [], isCommandStatus: true)
            }
        default:
            return []
        }
        return actions
    }

    private mutating func answer(opcode: HCIOpcode, credits newCredits: UInt8, now: UInt64,
                                 into actions: inout [FlowAction], _ makeReturn: () -> CommandReturn) {
        credits = Int(newCredits)
        if opcode != .nop {
            if let i = outstanding.firstIndex(where: { $0.opcode == opcode }) {
                let o = outstanding.remove(at: i)
                let ret = makeReturn()
                if ret.status == .success {
                    actions.append(.complete(o.token, .success(ret)))
                } else {
                    actions.append(.complete(o.token, .failure(.commandFailed(opcode, ret.status))))
                }
            } else {
                unmatchedAnswers += 1
            }
        }
        pump(now: now, into: &actions)
    }

    /// Fails every command whose deadline has passed and frees its slot.
    public mutating func timerFired(now: UInt64) -> [FlowAction] {
        var actions: [FlowAction] = []
        var i = 0
        var expired = false
        while i < outstanding.count {
            if outstanding[i].deadline <= now {
                let o = outstanding.remove(at: i)
                timeouts += 1
                expired = true
                actions.append(.complete(o.token, .failure(.commandTimeout(o.opcode, after: o.timeout))))
            } else {
                i += 1
            }
        }
        if expired || (stallDeadline.map { $0 <= now } ?? false) {
            // The controller will not return the credit of an unanswered command.
            credits = max(credits, 1)
            stallDeadline = nil
        }
        pump(now: now, into: &actions)
        return actions
    }

    /// Fails every queued and outstanding command with `error` (transport gone, host closed).
    public mutating func failAll(_ error: HostError) -> [FlowAction] {
        var actions: [FlowAction] = []
        for o in outstanding { actions.append(.complete(o.token, .failure(error))) }
        for q in queue[queueHead...] { actions.append(.complete(q.token, .failure(error))) }
        outstanding.removeAll()
        queue.removeAll()
        queueHead = 0
        stallDeadline = nil
        return actions
    }

    /// Removes a command still waiting in the queue (its caller gave up) and completes it
    /// with `error`. A command already sent keeps its slot until answered or timed out
    /// (the controller will answer it anyway); then nothing is returned.
    public mutating func cancel(_ token: CommandToken, error: HostError) -> [FlowAction] {
        if let i = queue[queueHead...].firstIndex(where: { $0.token == token }) {
            queue.remove(at: i)
            return [.complete(token, .failure(error))]
        }
        return []
    }

    private mutating func pump(now: UInt64, into actions: inout [FlowAction]) {
        while credits > 0, queueHead < queue.count {
            let next = queue[queueHead]
            if outstanding.contains(where: { $0.opcode == next.opcode }) { break }
            queueHead += 1
            credits -= 1
            outstanding.append(Outstanding(opcode: next.opcode, token: next.token,
                                           deadline: now &+ next.timeout, timeout: next.timeout))
            actions.append(.send(next.packet))
        }
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 64 {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        if credits == 0, outstanding.isEmpty, queueHead < queue.count {
            if stallDeadline == nil { stallDeadline = now &+ defaultTimeout }
        } else {
            stallDeadline = nil
        }
    }
}
