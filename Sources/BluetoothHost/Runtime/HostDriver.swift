import BluetoothSecurity
import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

/// Counters of one host.
public struct HostStatistics: Sendable, Equatable {
    /// H4 packets received from the controller.
    public var packetsIn = 0
    /// H4 packets written to the controller.
    public var packetsOut = 0
    /// Bytes received from the controller.
    public var bytesIn = 0
    /// Bytes written to the controller.
    public var bytesOut = 0
    /// HCI events received.
    public var events = 0
    /// Advertising reports handled by the scanner (each report of a multi-report event).
    public var reports = 0
    /// Extended advertising data dropped (truncated by the controller, over 1650 bytes, or
    /// too many unfinished at once).
    public var droppedFragments = 0
    /// Scan events dropped because the consumer did not keep up (stream buffer full).
    public var droppedScanEvents = 0
    /// Packets the transport lost before the host read them: a kernel socket's receive
    /// buffer overflowed (``HCITransport/receiveDrops``; 0 where it cannot be known).
    public var droppedByTransport = 0
    /// Packets from the controller that could not be parsed (skipped, not fatal).
    public var malformedPackets = 0
    /// What was wrong with the last malformed packet.
    public var lastMalformed: String?
    /// HCI commands sent.
    public var commandsSent = 0
    /// Commands that got no answer in time.
    public var commandTimeouts = 0
    /// Command Complete/Status events that matched no command we sent.
    public var unmatchedCommandAnswers = 0
    /// Devices the current scan remembers.
    public var devices = 0
    /// HCI ACL Data packets received / sent.
    public var aclPacketsIn = 0
    /// HCI ACL Data packets sent.
    public var aclPacketsOut = 0
    /// Incoming ACL fragments that did not reassemble (see ``L2CAPReassemblyError``).
    public var l2capErrors = 0
    /// What was wrong with the last fragment that did not reassemble.
    public var lastL2CAPError: String?
    /// L2CAP frames for a handle or channel we do not serve.
    public var unroutedFrames = 0
    /// ATT PDUs dropped because the bearer had not started and its buffer was full.
    public var droppedATT = 0
    /// Links currently up.
    public var links = 0
    /// The connection manager's counters.
    public var connection = ConnectionStatistics()
    /// All zero.
    public init() {}
}

typealias CommandResult = Result<CommandReturn, HostError>

/// Owns the transport and the state machines; runs on its own thread: a poll(2) loop on
/// the transport descriptor and a wake pipe that the API signals after queueing a request.
/// The poll timeout is the nearest state machine deadline.
final class HostDriver: @unchecked Sendable {
    struct Mailbox {
        var requests: [DriverRequest] = []
        /// Why the driver stopped (nil while it runs): requests are refused with it.
        var terminalError: HostError?
        var stopped: Bool { terminalError != nil }
        var statistics = HostStatistics()
        /// Tasks waiting in ``HCIHost/terminated()``, by a number of their own (to leave when cancelled).
        var terminationWaiters: [UInt64: CheckedContinuation<HostError?, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    let mailbox = Mutex(Mailbox())
    /// Wake pipe: the driver polls `wakeFD`, the API writes `wakeWriteFD`.
    let wakeFD: Int32
    let wakeWriteFD: Int32
    let nextTokenValue = Atomic<UInt64>(1)

    // Driver-thread state (touched only by the driver thread after start()).
    let transport: any HCITransport
    let transportName: String
    let observer: (@Sendable (UnsafeRawBufferPointer, Bool) -> Void)?
    var flow: HCICommandFlow
    var initializer: ControllerInitializer?
    var initContinuation: CheckedContinuation<Result<ControllerInfo, HostError>, Never>?
    var info: ControllerInfo?

    enum Waiter {
        case caller(CheckedContinuation<CommandResult, Never>)
        case initStep
        case scanEnable(id: UInt64)
        case scanDisable(continuation: CheckedContinuation<Result<Void, HostError>, Never>?)
        case connection(ConnectionCommandPurpose)
        case advertising(AdvertisingCommandPurpose)
        /// LE Enable Encryption or an LTK reply for the link.
        case security(handle: UInt16)
    }
    var waiters: [CommandToken: Waiter] = [:]

    var scanning = ScanRuntime()
    /// What the transport's reader is doing.
    enum Reader {
        /// Waiting in poll(2) for the descriptor.
        case waiting
        /// In ``readTransport()``: packets are being dispatched (sends wait for its end).
        case reading
        /// Paused because the scan's consumer is behind (back-pressure): the descriptor is
        /// left out of poll(2) and the data waits in it.
        case paused
    }
    var reader = Reader.waiting
    var readingPaused: Bool { if case .paused = reader { true } else { false } }
    /// When ``HostStatistics/droppedByTransport`` was last read from the transport.
    var lastDropCheck: UInt64 = 0
    /// Disable commands in flight (close waits for them).
    var disabling = 0
    var closeContinuations: [CheckedContinuation<Void, Never>] = []
    /// The driver's life, one phase at a time.
    enum Lifecycle {
        /// Taking requests and running the machines.
        case running
        /// ``beginClose()`` quieted the controller and took the links down; it stops once
        /// the disables and these `disconnects` (Disconnect commands) are answered.
        case closing(disconnects: Int)
        /// The transport is closed; the thread ends.
        case stopped
    }
    var lifecycle = Lifecycle.running
    var running: Bool { if case .stopped = lifecycle { false } else { true } }
    var closing: Bool { if case .closing = lifecycle { true } else { false } }
    var stats = HostStatistics()
    /// Packets accepted for the transport and not yet fully written, in order (the first
    /// may be partly written, up to `pendingOffset`). The driver never waits for the
    /// transport: it writes what the descriptor takes and polls for POLLOUT for the rest.
    /// Bounded by the controller's command and ACL credits, which hold everything else in
    /// the state machines.
    var pending: [[UInt8]] = []
    var pendingHead = 0
    var pendingOffset = 0
    /// When the transport last stopped taking bytes with some pending; after
    /// `writeStallTimeout` of that the transport is declared dead.
    var stalledSince: UInt64?
    static let writeStallTimeout: UInt64 = 5_000_000_000
    var hasPending: Bool { pendingHead < pending.count }

    // Links (driver thread).
    var links = LinkRuntime()
    var aclFlow: ACLFlowControl?
    /// L2CAP: reassembly and routing by channel; the fixed channels are registered below.
    var l2cap: L2CAPChannels = {
        var c = L2CAPChannels()
        c.register(.att, to: .att)
        c.register(.leSignaling, to: .leSignaling)
        c.register(.smp, to: .smp)
        return c
    }()
    /// Pairing, encryption with bonds, repeated attempts and bonded IRKs (HostDriver+Security.swift).
    var security: SecurityRuntime
    /// LE credit-based channels (HostDriver+L2CAP.swift).
    var creditChannels: CreditChannelRuntime
    /// Tokens of SDUs sent (any thread: a cancelled send names its own).
    let channelTokens = Atomic<UInt64>(1 << 40)
    let pairingConfiguration: SMPConfiguration?
    let pairingAgent: PairingAgent
    let bondStore: BondStore?
    let allowsRepairing: Bool
    /// This host's IRK, distributed when bonding (privacy).
    let localIdentityResolvingKey: UInt128?
    /// The identities the security runtime resolves, for any thread (``HCIHost/findDevice(_:timeout:)``).
    let resolvableIdentities: Mutex<Set<BluetoothAddress>>
    let pairingEvents: AsyncStream<PairingEvent>.Continuation
    let pairingEventStream: AsyncStream<PairingEvent>
    /// Incoming links (we are peripheral), for ``HCIHost/incomingConnections``.
    let incoming: AsyncStream<LEConnection>.Continuation
    let incomingStream: AsyncStream<LEConnection>
    var advertising = AdvertisingRuntime()

    init(transport: any HCITransport, options: HostOptions) throws(HostError) {
        switch Sys.wakePipe() {
        case .success(let (r, w)):
            wakeFD = r
            wakeWriteFD = w
        case .failure(let e): throw HostError(.notSupported, "cannot create the host driver's wake pipe: \(e)")
        }
        self.transport = transport
        self.transportName = transport.description
        self.observer = options.packetObserver
        self.pairingConfiguration = options.security
        self.creditChannels = CreditChannelRuntime(minimumKeySize: Int(options.security?.minimumKeySize ?? 16))
        self.pairingAgent = options.pairingAgent
        self.bondStore = options.bondStore
        self.allowsRepairing = options.allowsRepairing
        self.localIdentityResolvingKey = options.identityResolvingKey
        let entries = options.bondStore?.resolvingEntries() ?? []
        self.security = SecurityRuntime(resolving: entries)
        self.resolvableIdentities = Mutex(Set(entries.map(\.identity.address)))
        self.flow = HCICommandFlow(defaultTimeout: options.commandTimeout.nanoseconds)
        (incomingStream, incoming) = AsyncStream<LEConnection>.makeStream()
        (pairingEventStream, pairingEvents) = AsyncStream<PairingEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    func nextToken() -> CommandToken {
        CommandToken(rawValue: nextTokenValue.wrappingAdd(1, ordering: .relaxed).oldValue)
    }

    // MARK: API side (any thread)

    /// Queues a request and wakes the driver. Returns false (and does nothing) once the
    /// driver has stopped; `terminalError` says why.
    @discardableResult
    func post(_ request: DriverRequest) -> HostError? {
        let refused: HostError? = mailbox.withLock { m in
            if m.stopped { return m.terminalError ?? .hostClosed }
            m.requests.append(request)
            Sys.signal(wakePipe: wakeWriteFD)
            return nil
        }
        if let refused { request.refuse(refused) }
        return refused
    }

    var statistics: HostStatistics { mailbox.withLock { $0.statistics } }

    /// Wakes the driver to look at its state again (any thread; nothing once it stopped).
    func wake() {
        mailbox.withLock { m in
            if !m.stopped { Sys.signal(wakePipe: wakeWriteFD) }
        }
    }

    // MARK: Thread

    func start() -> HostError? {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let r = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let driver = Unmanaged<HostDriver>.fromOpaque(raw).takeRetainedValue()
            driver.run()
            return nil
        }, context)
        guard r == 0 else {
            Unmanaged<HostDriver>.fromOpaque(context).release()
            Sys.close(wakeFD)
            Sys.close(wakeWriteFD)
            return HostError(.notSupported, "cannot start the host driver thread: \(Errno(rawValue: r))")
        }
        pthread_detach(thread)
        return nil
    }

    func run() {
        var fds = [pollfd(fd: transport.fileDescriptor, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        while running {
            let timeout = pollTimeout(now: Sys.now())
            reader = shouldPauseReading() ? .paused : .waiting
            // Paused (never with bytes to write): the descriptor is left out, so a hangup
            // does not wake every poll; the data waits in it.
            fds[0].fd = readingPaused ? -1 : transport.fileDescriptor
            fds[0].events = Int16(POLLIN) | (hasPending ? Int16(POLLOUT) : 0)
            fds[0].revents = 0
            fds[1].revents = 0
            switch Sys.poll(&fds, timeoutMilliseconds: timeout) {
            case .success: break
            case .failure(let e):
                terminate(HostError(.transport(TransportError(.io, "poll failed: \(e)", errno: e.rawValue)),
                                    "host driver: poll failed: \(e)"))
                continue
            }
            if fds[1].revents != 0 {
                Sys.drain(wakePipe: wakeFD)
                processRequests()
            }
            if running, hasPending, fds[0].revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0 {
                flushPending()
            }
            if running, !readingPaused, fds[0].revents & ~Int16(POLLOUT) != 0 {
                readTransport()
            }
            if running { fireTimers(now: Sys.now()) }
            publishStatistics()
        }
        finishThread()
    }

    func deliver(_ events: [ScanEvent]) {
        stats.droppedScanEvents += scanning.deliver(events) { security.resolve($0) }
    }

    func pollTimeout(now: UInt64) -> Int32 {
        let stall = stalledSince.map { $0 &+ Self.writeStallTimeout }
        let deadlines = [flow.nextDeadline, scanning.nextDeadline, links.nextDeadline, stall,
                         security.nextDeadline, creditChannels.machine.nextDeadline].compactMap { $0 }
        guard let deadline = deadlines.min() else { return -1 }
        if deadline <= now { return 0 }
        let ms = (deadline - now + 999_999) / 1_000_000
        return ms > UInt64(Int32.max) ? Int32.max : Int32(ms)
    }

    func fireTimers(now: UInt64) {
        if let since = stalledSince, now &- since >= Self.writeStallTimeout {
            terminate(HostError(.transport(TransportError(.io, "\(transportName): could not write for \(Self.writeStallTimeout / 1_000_000_000) s: the controller is not taking packets")),
                                "\(transportName): could not write for \(Self.writeStallTimeout / 1_000_000_000) s: the controller (or the other side of the connection) is not taking packets"))
            return
        }
        if let d = flow.nextDeadline, d <= now {
            let actions = flow.timerFired(now: now)
            stats.commandTimeouts = flow.timeouts
            execute(actions)
        }
        deliver(scanning.timerFired(now: now))
        if let d = links.manager.nextDeadline, d <= now {
            execute(links.manager.timerFired(now: now))
        }
        if let d = security.nextDeadline, d <= now { pairingTimersFired(now: now) }
        if let d = creditChannels.machine.nextDeadline, d <= now { execute(creditChannels.machine.timerFired(now: now)) }
        flushDeferredDisconnects(now: now)
    }

    func publishStatistics() {
        scanning.count(into: &stats)
        stats.unmatchedCommandAnswers = flow.unmatchedAnswers
        stats.connection = links.manager.statistics
        stats.links = links.count
        // A syscall: at most every 100 ms.
        let now = Sys.now()
        if now &- lastDropCheck >= 100_000_000 {
            lastDropCheck = now
            if let drops = transport.receiveDrops { stats.droppedByTransport = drops }
        }
        let snapshot = stats
        mailbox.withLock { $0.statistics = snapshot }
    }

    // MARK: Requests

    func processRequests() {
        let requests = mailbox.withLock { m in
            let r = m.requests
            m.requests.removeAll(keepingCapacity: true)
            return r
        }
        for request in requests {
            guard running else { request.refuse(.hostClosed); continue }
            handle(request)
        }
    }

    func handle(_ request: DriverRequest) {
        switch request {
        case .initialize(let c):
            var machine = ControllerInitializer()
            initContinuation = c
            let action = machine.start()
            initializer = machine
            perform(action)
        case .command(let packet, let opcode, let token, let timeout, let c):
            waiters[token] = .caller(c)
            submit(packet, opcode: opcode, token: token, timeout: timeout)
        case .cancelCommand(let token):
            execute(flow.cancel(token, error: HostError(.cancelled, "the command was cancelled before it was sent")))
        case .close(let c):
            if let c { closeContinuations.append(c) }
            beginClose()
        case .scan(let r): handle(r)
        case .link(let r): handle(r)
        case .security(let r): handle(r)
        case .channel(let r): handle(r)
        case .advertising(let r): handle(r)
        }
    }

    func submit(_ packet: [UInt8], opcode: HCIOpcode, token: CommandToken, timeout: UInt64?) {
        execute(flow.submit(packet, opcode: opcode, token: token, now: Sys.now(), timeout: timeout))
    }

    func submit(_ command: any HCICommandEncodable, waiter: Waiter) -> HostError? {
        let packet: [UInt8]
        do throws(WireError) {
            packet = try command.encodedH4()
        } catch {
            return HostError(.malformedPacket(error), "cannot encode \(type(of: command).opcode): \(error)")
        }
        let token = nextToken()
        waiters[token] = waiter
        submit(packet, opcode: type(of: command).opcode, token: token, timeout: nil)
        return nil
    }

    // MARK: Init

    func perform(_ action: ControllerInitializer.Action) {
        switch action {
        case .send(let command):
            let token = nextToken()
            waiters[token] = .initStep
            submit(command.packet, opcode: command.opcode, token: token, timeout: command.timeout)
        case .finished(let info):
            self.info = info
            aclFlow = ACLFlowControl(bufferLength: info.aclBufferLength, bufferCount: info.aclBufferCount,
                                     maximumQueuedBytesPerLink: 2 * LEConnection.maximumQueuedBytes)
            links.manager.useExtendedCreate = LEConnectionManager.supportsExtendedCreate(info)
            advertising.controllerReady(info)
            initializer = nil
            initContinuation?.resume(returning: .success(info))
            initContinuation = nil
        case .failed(let error):
            initializer = nil
            initContinuation?.resume(returning: .failure(error))
            initContinuation = nil
        }
    }

    // MARK: Flow actions

    func execute(_ actions: [FlowAction]) {
        for action in actions {
            switch action {
            case .send(let packet):
                write(packet)
            case .complete(let token, let result):
                complete(token, result)
            }
        }
    }

    func complete(_ token: CommandToken, _ result: CommandResult) {
        guard let waiter = waiters.removeValue(forKey: token) else { return }
        switch waiter {
        case .caller(let c):
            c.resume(returning: result)
        case .initStep:
            guard var machine = initializer else { return }
            let action = machine.handle(result)
            initializer = machine
            perform(action)
        case .scanEnable(let id):
            scanEnableAnswered(id: id, result)
        case .scanDisable(let c):
            disabling -= 1
            switch result {
            case .success: c?.resume(returning: .success(()))
            case .failure(let e): c?.resume(returning: .failure(e))
            }
            maybeFinishClose()
        case .advertising(let purpose):
            send(advertising.answered(purpose, result))
        case .security(let handle):
            securityCommandAnswered(handle, result)
        case .connection(let purpose):
            if closing, case .disconnect = purpose {
                countClosingDisconnects(-1)
                maybeFinishClose()
                return
            }
            execute(links.manager.commandAnswered(purpose, result, now: Sys.now()))
        }
    }

}
