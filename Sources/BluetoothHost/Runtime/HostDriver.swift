import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

/// Counters of one host.
public struct HostStatistics: Sendable, Equatable {
    public var packetsIn = 0
    public var packetsOut = 0
    public var bytesIn = 0
    public var bytesOut = 0
    public var events = 0
    /// Advertising reports handled by the scanner (each report of a multi-report event).
    public var reports = 0
    /// Extended advertising data dropped (truncated by the controller, over 1650 bytes, or
    /// too many unfinished at once).
    public var droppedFragments = 0
    /// Scan events dropped because the consumer did not keep up (stream buffer full).
    public var droppedScanEvents = 0
    /// Packets from the controller that could not be parsed (skipped, not fatal).
    public var malformedPackets = 0
    /// What was wrong with the last malformed packet.
    public var lastMalformed: String?
    public var commandsSent = 0
    public var commandTimeouts = 0
    /// Command Complete/Status events that matched no command we sent.
    public var unmatchedCommandAnswers = 0
    /// Devices the current scan remembers.
    public var devices = 0
    /// HCI ACL Data packets received / sent.
    public var aclPacketsIn = 0
    public var aclPacketsOut = 0
    /// Incoming ACL fragments that did not reassemble (see ``L2CAPReassemblyError``).
    public var l2capErrors = 0
    public var lastL2CAPError: String?
    /// L2CAP frames for a handle or channel we do not serve.
    public var unroutedFrames = 0
    /// ATT PDUs dropped because the bearer had not started and its buffer was full.
    public var droppedATT = 0
    /// Links currently up.
    public var links = 0
    public var connection = ConnectionStatistics()
    public init() {}
}

typealias CommandResult = Result<CommandReturn, HostError>

/// Requests from the API to the driver thread.
enum DriverRequest: @unchecked Sendable {
    case initialize(CheckedContinuation<Result<ControllerInfo, HostError>, Never>)
    case command(packet: [UInt8], opcode: HCIOpcode, token: CommandToken, timeout: UInt64?,
                 CheckedContinuation<CommandResult, Never>)
    case cancelCommand(CommandToken)
    case startScan(id: UInt64, ScanConfiguration, AsyncThrowingStream<ScanEvent, any Error>.Continuation)
    /// id nil: whatever scan runs (stopScan()); otherwise only that scan (stream ended).
    case stopScan(id: UInt64?, CheckedContinuation<Result<Void, HostError>, Never>?)
    case close(CheckedContinuation<Void, Never>?)
    case connect(ConnectRequestID, LEAddress, LEConnectParameters, timeout: UInt64,
                 CheckedContinuation<Result<LEConnection, HostError>, Never>)
    case cancelConnect(ConnectRequestID)
    case disconnect(LEConnection, HCIErrorCode, CheckedContinuation<Void, Never>)
    case startATT(LEConnection, ATTRole, @Sendable (UnsafeRawBufferPointer) -> Void, @Sendable (HCIErrorCode?, String) -> Void)
    case startAdvertising(AdvertisingConfiguration, CheckedContinuation<Result<AdvertisingSetInfo, HostError>, Never>)
    case stopAdvertising(UInt8?, CheckedContinuation<Void, Never>)
    case sendACL(LEConnection, [UInt8])
    case updateParameters(LEConnection, L2CAPConnectionParameters, CheckedContinuation<Result<LELinkState, HostError>, Never>)
}

/// Owns the transport and the state machines; runs on its own thread: a poll(2) loop on
/// the transport descriptor and a wake pipe that the API signals after queueing a request.
/// The poll timeout is the nearest state machine deadline.
final class HostDriver: @unchecked Sendable {
    struct Mailbox {
        var requests: [DriverRequest] = []
        /// Set once the driver has stopped: requests are refused with `terminalError`.
        var stopped = false
        var terminalError: HostError?
        var statistics = HostStatistics()
    }

    let mailbox = Mutex(Mailbox())
    /// Wake pipe: the driver polls `wakeFD`, the API writes `wakeWriteFD`.
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let nextTokenValue = Atomic<UInt64>(1)

    // Driver-thread state (touched only by the driver thread after start()).
    private let transport: any HCITransport
    private let transportName: String
    private let observer: (@Sendable (UnsafeRawBufferPointer, Bool) -> Void)?
    private var flow: HCICommandFlow
    private var initializer: ControllerInitializer?
    private var initContinuation: CheckedContinuation<Result<ControllerInfo, HostError>, Never>?
    private var info: ControllerInfo?

    private enum Waiter {
        case caller(CheckedContinuation<CommandResult, Never>)
        case initStep
        case scanEnable(id: UInt64)
        case scanDisable(continuation: CheckedContinuation<Result<Void, HostError>, Never>?)
        case connection(ConnectionCommandPurpose)
        case advertising(AdvertisingCommandPurpose)
    }
    private var waiters: [CommandToken: Waiter] = [:]

    private struct ActiveScan {
        var id: UInt64
        var scanner: Scanner
        var continuation: AsyncThrowingStream<ScanEvent, any Error>.Continuation
        /// Enable commands still unanswered; reports are delivered meanwhile.
        var enabling: Int
    }
    private var scan: ActiveScan?
    /// Disable commands in flight (close waits for them).
    private var disabling = 0
    private var closeContinuations: [CheckedContinuation<Void, Never>] = []
    private var closing = false
    private var running = true
    private var stats = HostStatistics()
    private var reading = false
    /// Packets accepted for the transport and not yet fully written, in order (the first
    /// may be partly written, up to `pendingOffset`). The driver never waits for the
    /// transport: it writes what the descriptor takes and polls for POLLOUT for the rest.
    /// Bounded by the controller's command and ACL credits, which hold everything else in
    /// the state machines.
    private var pending: [[UInt8]] = []
    private var pendingHead = 0
    private var pendingOffset = 0
    /// When the transport last stopped taking bytes with some pending; after
    /// `writeStallTimeout` of that the transport is declared dead.
    private var stalledSince: UInt64?
    static let writeStallTimeout: UInt64 = 5_000_000_000
    private var hasPending: Bool { pendingHead < pending.count }

    // Connections (driver thread).
    private var connections = LEConnectionManager()
    private var aclFlow: ACLFlowControl?
    /// L2CAP: reassembly and routing by channel; the fixed channels are registered below.
    private var l2cap: L2CAPChannels = {
        var c = L2CAPChannels()
        c.register(.att, to: .att)
        c.register(.leSignaling, to: .leSignaling)
        c.register(.smp, to: .smp)
        return c
    }()
    private var connectWaiters: [ConnectRequestID: CheckedContinuation<Result<LEConnection, HostError>, Never>] = [:]

    /// One consumer of a link's ATT channel (client or server side).
    private struct ATTConsumer {
        var received: @Sendable (UnsafeRawBufferPointer) -> Void
        var closed: @Sendable (HCIErrorCode?, String) -> Void
    }

    private struct LinkRecord {
        var connection: LEConnection
        /// ATT PDUs go by direction (``ATTOpcode/isClientToServer``): requests, commands and
        /// confirmations to the server side, the rest to the client side. With no server
        /// attached the client side gets everything (it refuses requests itself).
        var attClient: ATTConsumer?
        var attServer: ATTConsumer?
        var buffered: [[UInt8]] = []
        var disconnectWaiters: [CheckedContinuation<Void, Never>] = []
        var updateWaiters: [CheckedContinuation<Result<LELinkState, HostError>, Never>] = []
    }
    private var links: [UInt16: LinkRecord] = [:]
    /// Incoming links (we are peripheral), for ``HCIHost/incomingConnections``.
    let incoming: AsyncStream<LEConnection>.Continuation
    let incomingStream: AsyncStream<LEConnection>
    private var advertiser = Advertiser()
    /// Starts in progress, by advertising set.
    private var advertisingStarts: [UInt8: CheckedContinuation<Result<AdvertisingSetInfo, HostError>, Never>] = [:]
    /// Stops in progress: the sets each still waits for.
    private var advertisingStops: [(sets: Set<UInt8>, continuation: CheckedContinuation<Void, Never>)] = []
    /// Disconnect commands sent by close, not yet answered.
    private var closingDisconnects = 0

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
        self.flow = HCICommandFlow(defaultTimeout: options.commandTimeout.nanoseconds)
        (incomingStream, incoming) = AsyncStream<LEConnection>.makeStream()
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
        if let refused { Self.refuse(request, refused) }
        return refused
    }

    private static func refuse(_ request: DriverRequest, _ error: HostError) {
        switch request {
        case .initialize(let c): c.resume(returning: .failure(error))
        case .command(_, _, _, _, let c): c.resume(returning: .failure(error))
        case .cancelCommand: break
        case .startScan(_, _, let c): c.finish(throwing: error)
        case .stopScan(_, let c): c?.resume(returning: .success(()))
        case .close(let c): c?.resume()
        case .connect(_, _, _, _, let c): c.resume(returning: .failure(error))
        case .cancelConnect, .sendACL: break
        case .disconnect(let conn, _, let c):
            conn.markClosed(nil, HostError.disconnectMessage(nil))
            c.resume()
        case .updateParameters(_, _, let c):
            c.resume(returning: .failure(error))
        case .startATT(let conn, _, _, let closed):
            conn.markClosed(nil, HostError.disconnectMessage(nil))
            let why = conn.closeInfo
            closed(why.reason, why.message)
        case .startAdvertising(_, let c): c.resume(returning: .failure(error))
        case .stopAdvertising(_, let c): c.resume()
        }
    }

    var statistics: HostStatistics { mailbox.withLock { $0.statistics } }

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

    private func run() {
        var fds = [pollfd(fd: transport.fileDescriptor, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        while running {
            let timeout = pollTimeout(now: Sys.now())
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
            if running, fds[0].revents & ~Int16(POLLOUT) != 0 {
                readTransport()
            }
            if running { fireTimers(now: Sys.now()) }
            publishStatistics()
        }
        finishThread()
    }

    private func deliver(_ events: [ScanEvent]) {
        guard !events.isEmpty, let continuation = scan?.continuation else { return }
        for e in events {
            if case .dropped = continuation.yield(e) { stats.droppedScanEvents += 1 }
        }
    }

    private func pollTimeout(now: UInt64) -> Int32 {
        let stall = stalledSince.map { $0 &+ Self.writeStallTimeout }
        let deadlines = [flow.nextDeadline, scan?.scanner.nextDeadline, connections.nextDeadline, stall].compactMap { $0 }
        guard let deadline = deadlines.min() else { return -1 }
        if deadline <= now { return 0 }
        let ms = (deadline - now + 999_999) / 1_000_000
        return ms > UInt64(Int32.max) ? Int32.max : Int32(ms)
    }

    private func fireTimers(now: UInt64) {
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
        if let d = scan?.scanner.nextDeadline, d <= now,
           let events = scan?.scanner.timerFired(now: now) {  // in place: no copy of the device table
            deliver(events)
        }
        if let d = connections.nextDeadline, d <= now {
            execute(connections.timerFired(now: now))
        }
    }

    private func publishStatistics() {
        if let s = scan {
            let st = s.scanner.statistics
            stats.reports = st.reports
            stats.droppedFragments = st.droppedTruncated + st.droppedOverflow + st.droppedInterrupted
            stats.devices = s.scanner.deviceCount
        }
        stats.unmatchedCommandAnswers = flow.unmatchedAnswers
        stats.connection = connections.statistics
        stats.links = links.count
        let snapshot = stats
        mailbox.withLock { $0.statistics = snapshot }
    }

    // MARK: Requests

    private func processRequests() {
        let requests = mailbox.withLock { m in
            let r = m.requests
            m.requests.removeAll(keepingCapacity: true)
            return r
        }
        for request in requests {
            guard running else { Self.refuse(request, .hostClosed); continue }
            handle(request)
        }
    }

    private func handle(_ request: DriverRequest) {
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
        case .startScan(let id, let config, let continuation):
            startScan(id: id, config, continuation)
        case .stopScan(let id, let c):
            guard let s = scan, id == nil || id == s.id else {
                c?.resume(returning: .success(()))
                return
            }
            stopScan(continuation: c)
        case .close(let c):
            if let c { closeContinuations.append(c) }
            beginClose()
        case .connect(let id, let peer, let parameters, let timeout, let c):
            guard !closing, info != nil else {
                c.resume(returning: .failure(.hostClosed))
                return
            }
            connectWaiters[id] = c
            execute(connections.connect(id, to: peer, parameters: parameters, timeout: timeout, now: Sys.now()))
        case .cancelConnect(let id):
            execute(connections.cancelConnect(id, now: Sys.now()))
        case .disconnect(let conn, let reason, let c):
            guard links[conn.handle]?.connection === conn else {
                c.resume()
                return
            }
            links[conn.handle]?.disconnectWaiters.append(c)
            execute(connections.disconnect(conn.handle, reason: reason))
        case .startATT(let conn, let role, let received, let closed):
            guard var record = links[conn.handle], record.connection === conn else {
                let why = conn.closeInfo
                closed(why.reason, why.message)
                return
            }
            let consumer = ATTConsumer(received: received, closed: closed)
            switch role {
            case .client: record.attClient = consumer
            case .server: record.attServer = consumer
            }
            // Hand over what waited for this side (for the client: everything, unless a server is there).
            var mine: [[UInt8]] = []
            var rest: [[UInt8]] = []
            for pdu in record.buffered {
                let toServer = pdu.first.map { ATTOpcode(rawValue: $0).isClientToServer } ?? false
                if role == .server ? toServer : (!toServer || record.attServer == nil) { mine.append(pdu) } else { rest.append(pdu) }
            }
            record.buffered = rest
            links[conn.handle] = record
            for pdu in mine { pdu.withUnsafeBytes { received($0) } }
        case .startAdvertising(let config, let c):
            guard !closing, info != nil else {
                c.resume(returning: .failure(.hostClosed))
                return
            }
            guard advertisingStarts[config.advertisingSet] == nil else {
                c.resume(returning: .failure(HostError(.busy, "advertising set \(config.advertisingSet) is already being started")))
                return
            }
            do throws(HostError) {
                let actions = try advertiser.start(config)
                advertisingStarts[config.advertisingSet] = c
                execute(actions)
            } catch {
                c.resume(returning: .failure(error))
            }
        case .stopAdvertising(let set, let c):
            let pending = advertiser.pendingSets(set)
            guard !pending.isEmpty else {
                c.resume()
                return
            }
            advertisingStops.append((Set(pending), c))
            execute(advertiser.stop(set))
        case .updateParameters(let conn, let parameters, let c):
            guard links[conn.handle]?.connection === conn else {
                c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
                return
            }
            do throws(HostError) {
                let actions = try connections.updateParameters(conn.handle, parameters)
                links[conn.handle]?.updateWaiters.append(c)
                execute(actions)
            } catch {
                c.resume(returning: .failure(error))
            }
        case .sendACL(let conn, let frame):
            guard links[conn.handle]?.connection === conn else {
                conn.queuedBytes.wrappingSubtract(frame.count, ordering: .relaxed)
                return
            }
            sendFrame(frame, handle: conn.handle, accounted: true)
        }
    }

    private func submit(_ packet: [UInt8], opcode: HCIOpcode, token: CommandToken, timeout: UInt64?) {
        execute(flow.submit(packet, opcode: opcode, token: token, now: Sys.now(), timeout: timeout))
    }

    private func submit(_ command: any HCICommandEncodable, waiter: Waiter) -> HostError? {
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

    private func perform(_ action: ControllerInitializer.Action) {
        switch action {
        case .send(let command):
            let token = nextToken()
            waiters[token] = .initStep
            submit(command.packet, opcode: command.opcode, token: token, timeout: command.timeout)
        case .finished(let info):
            self.info = info
            aclFlow = ACLFlowControl(bufferLength: info.aclBufferLength, bufferCount: info.aclBufferCount,
                                     maximumQueuedBytesPerLink: 2 * LEConnection.maximumQueuedBytes)
            connections.useExtendedCreate = LEConnectionManager.supportsExtendedCreate(info)
            advertiser = Advertiser(capabilities: AdvertisingCapabilities(info))
            initializer = nil
            initContinuation?.resume(returning: .success(info))
            initContinuation = nil
        case .failed(let error):
            initializer = nil
            initContinuation?.resume(returning: .failure(error))
            initContinuation = nil
        }
    }

    // MARK: Scanning

    private func startScan(id: UInt64, _ config: ScanConfiguration,
                           _ continuation: AsyncThrowingStream<ScanEvent, any Error>.Continuation) {
        if scan != nil {
            continuation.finish(throwing: HostError(.notSupported, "a scan is already running on this host; stop it before starting another"))
            return
        }
        guard !closing, let info else {
            continuation.finish(throwing: HostError.hostClosed)
            return
        }
        let extended = config.useExtendedScanning ?? info.supportsExtendedScanning
        let scanner = Scanner(configuration: config, extended: extended)
        let commands = scanner.enableCommands()
        scan = ActiveScan(id: id, scanner: scanner, continuation: continuation, enabling: commands.count)
        for command in commands {
            if let error = submit(command, waiter: .scanEnable(id: id)) {
                scan = nil
                continuation.finish(throwing: error)
                return
            }
        }
    }

    private func stopScan(continuation: CheckedContinuation<Result<Void, HostError>, Never>?) {
        guard let s = scan else {
            continuation?.resume(returning: .success(()))
            return
        }
        scan = nil
        s.continuation.finish()
        var first = true
        for command in s.scanner.disableCommands() {
            disabling += 1
            if let error = submit(command, waiter: .scanDisable(continuation: first ? continuation : nil)) {
                disabling -= 1
                if first { continuation?.resume(returning: .failure(error)) }
            }
            first = false
        }
    }

    private func scanEnableAnswered(id: UInt64, _ result: CommandResult) {
        guard let s = scan, s.id == id else { return }
        switch result {
        case .success:
            scan?.enabling -= 1
        case .failure(var error):
            error.message = "cannot start scanning: " + error.message
            scan = nil
            s.continuation.finish(throwing: error)
            // Make sure the controller is not left half-enabled.
            for command in s.scanner.disableCommands() {
                disabling += 1
                if submit(command, waiter: .scanDisable(continuation: nil)) != nil { disabling -= 1 }
            }
        }
    }

    // MARK: Close

    private func beginClose() {
        if !closing {
            closing = true
            if let initContinuation {
                initContinuation.resume(returning: .failure(.hostClosed))
                self.initContinuation = nil
                initializer = nil
            }
            if scan != nil { stopScan(continuation: nil) }
            if advertiser.isActive {
                // Leave the controller quiet: no advertising once the host is gone.
                disabling += 1
                if submit(advertiser.quietCommand(), waiter: .scanDisable(continuation: nil)) != nil {
                    disabling -= 1
                }
                execute(advertiser.closeAll(.hostClosed))
                for w in advertisingStops { w.continuation.resume() }
                advertisingStops = []
            }
            // Fail connects still waiting; take the links down (their closes follow).
            for action in connections.closeAll(.hostClosed) {
                if case .connectFailed(let id, let e) = action { connectWaiters.removeValue(forKey: id)?.resume(returning: .failure(e)) }
            }
            for (handle, record) in links.sorted(by: { $0.key < $1.key }) {
                closingDisconnects += 1
                if submit(DisconnectCommand(connectionHandle: handle, reason: .remoteUserTerminatedConnection),
                          waiter: .connection(.disconnect(handle: handle))) != nil {
                    closingDisconnects -= 1
                }
                closeLink(record.connection, reason: nil)
            }
        }
        maybeFinishClose()
    }

    private func maybeFinishClose() {
        guard closing, disabling == 0, closingDisconnects == 0, running else { return }
        terminate(.hostClosed)
    }

    /// Stops everything: fails pending commands, ends the scan stream with `error`,
    /// closes the transport and lets the thread exit.
    private func terminate(_ error: HostError) {
        guard running else { return }
        running = false
        mailbox.withLock { m in
            m.stopped = true
            m.terminalError = closing ? HostError.hostClosed : error
        }
        if let initContinuation {
            initContinuation.resume(returning: .failure(error))
            self.initContinuation = nil
        }
        if let s = scan {
            scan = nil
            s.continuation.finish(throwing: error)
        }
        for action in connections.closeAll(error) {
            if case .connectFailed(let id, let e) = action { connectWaiters.removeValue(forKey: id)?.resume(returning: .failure(e)) }
        }
        for c in connectWaiters.values { c.resume(returning: .failure(error)) }
        connectWaiters.removeAll()
        execute(advertiser.closeAll(error))
        for w in advertisingStops { w.continuation.resume() }
        advertisingStops = []
        incoming.finish()
        for record in links.values { closeLink(record.connection, reason: nil, message: "disconnected: \(error.message)") }
        let actions = flow.failAll(error)
        pending.removeAll()
        pendingHead = 0
        pendingOffset = 0
        stalledSince = nil
        execute(actions)
        transport.close()
    }

    private func finishThread() {
        publishStatistics()
        // Requests that raced with the stop.
        let late = mailbox.withLock { m in
            let r = m.requests
            m.requests.removeAll()
            return r
        }
        let error = mailbox.withLock { $0.terminalError } ?? .hostClosed
        for r in late {
            if case .close(let c) = r { c?.resume() } else { Self.refuse(r, error) }
        }
        Sys.close(wakeFD)
        Sys.close(wakeWriteFD)
        for c in closeContinuations { c.resume() }
        closeContinuations.removeAll()
    }

    // MARK: Flow actions

    private func execute(_ actions: [FlowAction]) {
        for action in actions {
            switch action {
            case .send(let packet):
                write(packet)
            case .complete(let token, let result):
                complete(token, result)
            }
        }
    }

    private func complete(_ token: CommandToken, _ result: CommandResult) {
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
            execute(advertiser.commandAnswered(purpose, result))
        case .connection(let purpose):
            if closing, case .disconnect = purpose {
                if closingDisconnects > 0 { closingDisconnects -= 1 }
                maybeFinishClose()
                return
            }
            execute(connections.commandAnswered(purpose, result, now: Sys.now()))
        }
    }

    // MARK: Connections

    private func execute(_ actions: [ConnectionAction]) {
        for action in actions {
            switch action {
            case .sendCommand(let command, let purpose):
                if let error = submit(command, waiter: .connection(purpose)) {
                    execute(connections.commandAnswered(purpose, .failure(error), now: Sys.now()))
                }
            case .sendL2CAP(let handle, let frame):
                sendFrame(frame, handle: handle, accounted: false)
            case .connected(let id, let state):
                let conn = openLink(state)
                if let c = connectWaiters.removeValue(forKey: id) {
                    c.resume(returning: .success(conn))
                } else {
                    // The caller is gone (cannot happen: the manager disconnects abandoned links).
                    execute(connections.disconnect(state.handle))
                }
            case .connectFailed(let id, let error):
                connectWaiters.removeValue(forKey: id)?.resume(returning: .failure(error))
            case .linkOpened(let state):
                let conn = openLink(state)
                incoming.yield(conn)
                execute(advertiser.peripheralLinkOpened(handle: state.handle))
            case .linkUpdated(let state):
                links[state.handle]?.connection.update(state)
            case .linkClosed(let state, let reason):
                if let record = links[state.handle] {
                    closeLink(record.connection, reason: reason)
                } else {
                    // A link the manager adopted to disconnect it (never handed out).
                    aclFlowRemove(state.handle)
                }
            case .disconnectFailed(let handle, _):
                if let waiters = links[handle]?.disconnectWaiters {
                    links[handle]?.disconnectWaiters = []
                    for c in waiters { c.resume() }
                }
            case .parametersUpdated(let handle, let result):
                if let waiters = links[handle]?.updateWaiters {
                    links[handle]?.updateWaiters = []
                    for c in waiters { c.resume(returning: result) }
                }
            }
        }
    }

    private func execute(_ actions: [AdvertisingAction]) {
        for action in actions {
            switch action {
            case .send(let command, let purpose):
                if let error = submit(command, waiter: .advertising(purpose)) {
                    execute(advertiser.commandAnswered(purpose, .failure(error)))
                }
            case .started(let set, let result):
                advertisingStarts.removeValue(forKey: set)?.resume(returning: result)
            case .stopped(let set):
                var waiting: [(sets: Set<UInt8>, continuation: CheckedContinuation<Void, Never>)] = []
                for var w in advertisingStops {
                    w.sets.remove(set)
                    if w.sets.isEmpty { w.continuation.resume() } else { waiting.append(w) }
                }
                advertisingStops = waiting
            }
        }
    }

    private func openLink(_ state: LELinkState) -> LEConnection {
        let conn = LEConnection(driver: self, link: state)
        links[state.handle] = LinkRecord(connection: conn)
        aclFlow?.addLink(state.handle)
        l2cap.resetLink(state.handle)
        return conn
    }

    private func aclFlowRemove(_ handle: UInt16) {
        l2cap.resetLink(handle)
        if let packets = aclFlow?.removeLink(handle) { writeACL(packets) }
    }

    /// The link is down: fail everything pending on it with the reason.
    private func closeLink(_ conn: LEConnection, reason: HCIErrorCode?, message: String? = nil) {
        guard let record = links[conn.handle], record.connection === conn else { return }
        links[conn.handle] = nil
        let text = message ?? HostError.disconnectMessage(reason)
        conn.markClosed(reason, text)
        conn.queuedBytes.store(0, ordering: .relaxed)
        aclFlowRemove(conn.handle)
        record.attClient?.closed(reason, text)
        record.attServer?.closed(reason, text)
        if record.connection.role == .peripheral { execute(advertiser.peripheralLinkClosed(handle: conn.handle)) }
        for c in record.disconnectWaiters { c.resume() }
        for c in record.updateWaiters { c.resume(returning: .failure(HostError(.disconnected(reason), text))) }
    }

    private func sendFrame(_ frame: [UInt8], handle: UInt16, accounted: Bool) {
        guard aclFlow != nil else { return }
        do throws(ACLFlowError) {
            if let packets = try aclFlow?.enqueue(frame, handle: handle, accounted: accounted) { writeACL(packets) }
        } catch {
            stats.unroutedFrames += 1
            if accounted { links[handle]?.connection.queuedBytes.wrappingSubtract(frame.count, ordering: .relaxed) }
        }
    }

    private func writeACL(_ packets: [OutgoingACLPacket]) {
        for p in packets {
            stats.aclPacketsOut += 1
            write(p.packet)
            if p.accountedBytes > 0 {
                links[p.handle]?.connection.queuedBytes.wrappingSubtract(p.accountedBytes, ordering: .relaxed)
            }
        }
    }

    /// A complete L2CAP frame of a registered channel. Must not touch `l2cap`.
    private func dispatchFrame(_ handle: UInt16, _ consumer: L2CAPChannelConsumer, _ payload: UnsafeRawBufferPointer) {
        guard let record = links[handle] else {
            stats.unroutedFrames += 1
            return
        }
        switch consumer {
        case .att:
            let toServer = payload.first.map { ATTOpcode(rawValue: $0).isClientToServer } ?? false
            if let consumer = toServer ? (record.attServer ?? record.attClient) : record.attClient {
                consumer.received(payload)  // a view: the receiver copies what it keeps
            } else if record.buffered.count < LEConnection.bufferedATTLimit {
                links[handle]?.buffered.append(Array(payload))
            } else {
                stats.droppedATT += 1
            }
        case .leSignaling:
            execute(connections.receivedSignaling(handle: handle, payload: payload))
        case .smp:
            execute(connections.receivedSMP(handle: handle, payload: payload))
        }
    }

    private func receivedACL(_ body: UnsafeRawBufferPointer) {
        stats.aclPacketsIn += 1
        let packet: ACLPacket
        do throws(WireError) {
            packet = try ACLPacket(parsing: body)
        } catch {
            stats.malformedPackets += 1
            stats.lastMalformed = "malformed HCI ACL packet: \(error)"
            return
        }
        let unroutedBefore = l2cap.unroutedFrames
        let failures = l2cap.receive(handle: packet.header.handle, boundary: packet.header.packetBoundary,
                                     fragment: packet.payload) { h, consumer, payload in
            self.dispatchFrame(h, consumer, payload)
        }
        stats.unroutedFrames += l2cap.unroutedFrames - unroutedBefore
        for f in failures {
            stats.l2capErrors += 1
            stats.lastL2CAPError = f.description
        }
    }

    private func write(_ packet: [UInt8]) {
        guard running else { return }
        stats.packetsOut += 1
        stats.bytesOut += packet.count
        if packet.first == 0x01 { stats.commandsSent += 1 }
        packet.withUnsafeBytes { observer?($0, true) }
        // In order: behind what waits, and never from inside a read (flushed after it).
        if reading || hasPending {
            pending.append(packet)
            return
        }
        let taken: Result<Int, TransportError> = packet.withUnsafeBytes { buffer in
            do throws(TransportError) { return .success(try transport.writeAvailable(buffer)) } catch { return .failure(error) }
        }
        switch taken {
        case .success(let n) where n >= packet.count:
            return
        case .success(let n):
            pending.append(packet)
            pendingOffset = n
            stalledSince = Sys.now()
        case .failure(let e):
            terminate(HostError.from(e, transport: transportName))
        }
    }

    /// Writes what waits, as far as the transport takes it now.
    private func flushPending() {
        while running, pendingHead < pending.count {
            let offset = pendingOffset
            let taken: Result<Int, TransportError> = pending[pendingHead].withUnsafeBytes { buffer in
                do throws(TransportError) {
                    return .success(try transport.writeAvailable(UnsafeRawBufferPointer(rebasing: buffer[offset...])))
                } catch {
                    return .failure(error)
                }
            }
            switch taken {
            case .failure(let e):
                terminate(HostError.from(e, transport: transportName))
                return
            case .success(let n):
                if n > 0 { stalledSince = nil }
                pendingOffset += n
                guard pendingOffset >= pending[pendingHead].count else {
                    if stalledSince == nil { stalledSince = Sys.now() }
                    // A transport that never quite catches up must not keep what it took.
                    if pendingHead >= 32 {
                        pending.removeFirst(pendingHead)
                        pendingHead = 0
                    }
                    return
                }
                pendingHead += 1
                pendingOffset = 0
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingHead = 0
        stalledSince = nil
    }

    // MARK: Reading

    private func readTransport() {
        reading = true
        let result: Result<Bool, TransportError>
        do throws(TransportError) {
            result = .success(try transport.readAvailable { packet in self.received(packet) })
        } catch {
            result = .failure(error)
        }
        reading = false
        switch result {
        case .success(true):
            flushPending()
        case .success(false):
            terminate(HostError.transportClosed(transportName))
        case .failure(let error):
            terminate(HostError.from(error, transport: transportName))
        }
    }

    private func received(_ packet: UnsafeRawBufferPointer) {
        guard running else { return }
        stats.packetsIn += 1
        stats.bytesIn += packet.count
        observer?(packet, false)
        if packet.count >= 1, packet[0] == H4PacketType.acl.rawValue {
            receivedACL(UnsafeRawBufferPointer(rebasing: packet[1...]))
            return
        }
        guard packet.count >= 1, packet[0] == H4PacketType.event.rawValue else { return }
        stats.events += 1
        let body = UnsafeRawBufferPointer(rebasing: packet[1...])
        let event: HCIEvent
        do throws(WireError) {
            event = try HCIEvent(parsing: body)
        } catch {
            stats.malformedPackets += 1
            stats.lastMalformed = "malformed HCI event 0x\(hex(body.first ?? 0, 2)): \(error)"
            return
        }
        switch event {
        case .commandComplete, .commandStatus:
            execute(flow.handleEvent(event, now: Sys.now()))
        case .leMeta(let meta):
            switch meta {
            case .advertisingReport, .extendedAdvertisingReport, .directedAdvertisingReport, .scanTimeout:
                // Mutate in place through the optional: copying the scanner would copy its table.
                guard let events = scan?.scanner.handle(meta, now: Sys.now()) else { return }
                deliver(events)
            case .advertisingSetTerminated(let e):
                execute(advertiser.advertisingSetTerminated(e))
            default:
                execute(connections.handle(meta, now: Sys.now()))
            }
        case .disconnectionComplete:
            execute(connections.handle(event, now: Sys.now()))
        case .numberOfCompletedPackets(let n):
            if let packets = aclFlow?.handle(n) { writeACL(packets) }
        default:
            break
        }
    }
}
