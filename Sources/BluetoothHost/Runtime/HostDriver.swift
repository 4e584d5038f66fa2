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
    private var outbox: [[UInt8]] = []

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
            if running, fds[0].revents != 0 {
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
        let deadlines = [flow.nextDeadline, scan?.scanner.nextDeadline].compactMap { $0 }
        guard let deadline = deadlines.min() else { return -1 }
        if deadline <= now { return 0 }
        let ms = (deadline - now + 999_999) / 1_000_000
        return ms > UInt64(Int32.max) ? Int32.max : Int32(ms)
    }

    private func fireTimers(now: UInt64) {
        if let d = flow.nextDeadline, d <= now {
            let actions = flow.timerFired(now: now)
            stats.commandTimeouts = flow.timeouts
            execute(actions)
        }
        if let d = scan?.scanner.nextDeadline, d <= now,
           let events = scan?.scanner.timerFired(now: now) {  // in place: no copy of the device table
            deliver(events)
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
        }
        maybeFinishClose()
    }

    private func maybeFinishClose() {
        guard closing, disabling == 0, running else { return }
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
        let actions = flow.failAll(error)
        outbox.removeAll()
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
        }
    }

    private func write(_ packet: [UInt8]) {
        guard running else { return }
        if reading {
            outbox.append(packet)
            return
        }
        stats.packetsOut += 1
        stats.bytesOut += packet.count
        if packet.first == 0x01 { stats.commandsSent += 1 }
        let failure: TransportError? = packet.withUnsafeBytes { buffer in
            observer?(buffer, true)
            do throws(TransportError) {
                try transport.write(buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { terminate(HostError.from(failure, transport: transportName)) }
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
            let pending = outbox
            outbox.removeAll(keepingCapacity: true)
            for p in pending { write(p) }
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
            // Mutate in place through the optional: copying the scanner would copy its table.
            guard let events = scan?.scanner.handle(meta, now: Sys.now()) else { return }
            deliver(events)
        default:
            break
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating; negative durations count as 0.
    var nanoseconds: UInt64 {
        let c = components
        guard c.seconds >= 0 else { return 0 }
        let (s, overflow) = UInt64(c.seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max }
        return s &+ UInt64(max(0, c.attoseconds / 1_000_000_000))
    }
}
