import BluetoothWire

/// Scanning's part of the driver: the one running ``Scanner`` and the stream its events go
/// to. It ends its stream itself and hands the driver the commands to send; the driver
/// routes requests, command answers, reports and time to it.
struct ScanRuntime {
    typealias Events = AsyncThrowingStream<ScanEvent, any Error>.Continuation

    struct Active {
        var id: UInt64
        var scanner: Scanner
        var continuation: Events
        /// Events in the stream not yet taken by the consumer.
        var backlog: ScanBacklog
        /// Enable commands still unanswered; reports are delivered meanwhile.
        var enabling: Int
    }

    /// The running scan. Its scanner is changed in place (`active?.scanner.…`): a copy would
    /// copy its device table.
    private(set) var active: Active?

    /// Events in the running scan's stream not yet taken (nil: no scan).
    var backlog: ScanBacklog? { active?.backlog }

    /// When the scanner wants time (a held report, an age-out).
    var nextDeadline: UInt64? { active?.scanner.nextDeadline }

    /// Starts scan `id`; its enable commands go out. One scan at a time: another one's
    /// stream ends at once with why.
    mutating func start(id: UInt64, _ config: ScanConfiguration, extended: Bool, _ continuation: Events,
                        backlog: ScanBacklog) -> [any HCICommandEncodable] {
        guard active == nil else {
            continuation.finish(throwing: HostError(.notSupported, "a scan is already running on this host; stop it before starting another"))
            return []
        }
        let scanner = Scanner(configuration: config, extended: extended)
        let commands = scanner.enableCommands()
        active = Active(id: id, scanner: scanner, continuation: continuation, backlog: backlog, enabling: commands.count)
        return commands
    }

    /// Whether scan `id` (nil: any) is the one running.
    func isRunning(_ id: UInt64?) -> Bool {
        guard let a = active else { return false }
        return id == nil || id == a.id
    }

    /// The scan stops: its stream ends (with `error`, or without one); the disable commands.
    mutating func stop(_ error: HostError? = nil) -> [any HCICommandEncodable] {
        guard let a = active else { return [] }
        active = nil
        if let error { a.continuation.finish(throwing: error) } else { a.continuation.finish() }
        return a.scanner.disableCommands()
    }

    /// An enable command of scan `id` was answered. A refusal ends the scan with why, and
    /// its disables go out (the controller must not stay half-enabled).
    mutating func enableAnswered(id: UInt64, _ result: CommandResult) -> [any HCICommandEncodable] {
        guard let a = active, a.id == id else { return [] }
        switch result {
        case .success:
            active?.enabling -= 1
            return []
        case .failure(var error):
            error.message = "cannot start scanning: " + error.message
            return stop(error)
        }
    }

    /// An advertising report (or Scan Timeout) event: what the scanner makes of it.
    mutating func handle(_ meta: LEMetaEvent, now: UInt64) -> [ScanEvent] {
        active?.scanner.handle(meta, now: now) ?? []
    }

    /// Time passed: held reports released, devices aged out.
    mutating func timerFired(now: UInt64) -> [ScanEvent] {
        guard let d = nextDeadline, d <= now else { return [] }
        return active?.scanner.timerFired(now: now) ?? []
    }

    /// Puts events into the stream, each device under its identity where `identity` knows
    /// it; returns how many the stream dropped (its consumer is behind).
    func deliver(_ events: [ScanEvent], identity: (LEAddress) -> LEAddress?) -> Int {
        guard !events.isEmpty, let a = active else { return 0 }
        var dropped = 0
        for var e in events {
            if let id = identity(e.device.address) {
                switch e {
                case .discovered(var d): d.identity = id; e = .discovered(d)
                case .updated(var d): d.identity = id; e = .updated(d)
                }
            }
            switch a.continuation.yield(e) {
            case .enqueued: a.backlog.added()
            case .dropped: dropped += 1
            case .terminated: break
            @unknown default: break
            }
        }
        return dropped
    }

    /// The scanner's counters into the host's (nothing without a scan).
    func count(into stats: inout HostStatistics) {
        guard let st = active?.scanner.statistics, let devices = active?.scanner.deviceCount else { return }
        stats.reports = st.reports
        stats.droppedFragments = st.droppedTruncated + st.droppedOverflow + st.droppedInterrupted
        stats.devices = devices
    }
}
