import BluetoothHost
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `hcigatt scan`: discover advertisers and print them as they appear or change.
enum ScanCommand {
    static var command: Command {
        Command(
            name: "scan",
            summary: "Scan for LE advertisers and print each with its decoded data",
            help: help,
            spec: Arguments.Spec(flags: scanFlags.union(ControllerOptions.flags),
                                 options: scanOptions.union(ControllerOptions.options)),
            run: { args in try await run(args) }
        )
    }

    static let scanFlags: Set<String> = ["passive", "duplicates", "json", "legacy", "extended"]
    static let scanOptions: Set<String> = ["duration", "service", "name", "address", "min-rssi", "phy", "bindkey"]

    static let help = """
    Usage: hcigatt scan [OPTIONS]

    Scans for Bluetooth LE advertisers and prints one line per new device or change of
    its data (name, services, manufacturer data, ...). Stops after --duration or on
    Ctrl-C, then disables scanning and prints a summary on stderr.

    Options:
      --duration S           stop after S seconds (default: until Ctrl-C)
      --passive              passive scan: no scan requests, no scan responses
      --duplicates           print every advertisement, RSSI changes included
                             (otherwise the host filters repeats by address + data)
      --service UUID         only devices advertising this service (repeatable: any of)
      --name SUBSTR          only devices whose name contains SUBSTR (case-insensitive)
      --address ADDR         only this device (AA:BB:CC:DD:EE:FF)
      --min-rssi DBM         only reports at least this strong, e.g. -70
      --phy LIST             PHYs to scan on with extended scanning: 1m, coded or 1m,coded
      --legacy / --extended  force legacy or extended scanning commands (default: extended
                             when the controller supports it)
      --json                 one JSON object per line with every decoded field and the raw
                             advertising data as hex
      --bindkey ADDR=KEY     decrypt the encrypted BTHome readings of ADDR (KEY: 32 hex
                             digits; repeatable)

    Sensor readings that devices broadcast are decoded on the line (`sensor` in JSON):
    BTHome v2 (service data FCD2, plain or encrypted), Ruuvi RAWv2 (manufacturer 0499,
    format 5) and pvvx/ATC1441 thermometers (service data 181A).
    \(ControllerOptions.help)

    Exit codes: 0 ok, 1 runtime error (no adapter, busy, permission, controller not
    answering, transport closed), 2 usage error.
    """

    /// The `--bindkey ADDR=KEY` options (nil when none is given).
    static func bindKeys(_ args: Arguments) throws -> SensorKeys? {
        var keys = SensorKeys()
        for text in args.all("bindkey") {
            switch SensorKeys.parse(text) {
            case .success(let (address, key)): keys.set(key, for: address)
            case .failure(let e): throw UsageError("--bindkey: \(e)")
            }
        }
        return keys.isEmpty ? nil : keys
    }

    static func configuration(_ args: Arguments) throws -> ScanConfiguration {
        var c = ScanConfiguration()
        c.active = !args.flag("passive")
        c.reportDuplicates = args.flag("duplicates")
        for text in args.all("service") {
            guard let u = BluetoothUUID(text) else {
                throw UsageError("--service takes a UUID like 180D or 0000180d-0000-1000-8000-00805f9b34fb, not '\(text)'")
            }
            c.services.append(u)
        }
        if let name = args.option("name") {
            guard !name.isEmpty else { throw UsageError("--name needs a non-empty substring") }
            c.nameSubstring = name
        }
        if let text = args.option("address") {
            guard let a = BluetoothAddress(text) else { throw UsageError("--address takes AA:BB:CC:DD:EE:FF, not '\(text)'") }
            c.address = a
        }
        if let text = args.option("min-rssi") {
            guard let v = Int8(text), v >= -127, v <= 20 else { throw UsageError("--min-rssi takes dBm from -127 to 20, not '\(text)'") }
            c.minimumRSSI = v
        }
        if let text = args.option("phy") {
            var phys: ScanPHYs = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                switch part.lowercased() {
                case "1m": phys.insert(.le1M)
                case "coded": phys.insert(.leCoded)
                default: throw UsageError("--phy takes 1m, coded or 1m,coded, not '\(text)'")
                }
            }
            c.phys = phys
        }
        if args.flag("legacy") && args.flag("extended") { throw UsageError("--legacy and --extended exclude each other") }
        if args.flag("legacy") { c.useExtendedScanning = false }
        if args.flag("extended") { c.useExtendedScanning = true }
        return c
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.isEmpty else { throw UsageError("unexpected argument '\(args.positional[0])'") }
        let config = try configuration(args)
        let duration: Duration? = args.option("duration") == nil ? nil
            : try ControllerOptions.seconds(args, "duration", default: 0)
        if config.phys.contains(.leCoded) && config.useExtendedScanning == false {
            throw UsageError("--phy coded needs extended scanning (drop --legacy)")
        }
        let json = args.flag("json")
        let keys = try bindKeys(args)
        let controller = try await LocalController.open(args)
        let start = monotonicNow()
        let shownCount = Locked(0)
        let live = LiveCounter(enabled: isatty(2) != 0 && !json)
        let drops = DropReporter(command: "scan", baseline: controller.host.statistics)
        var failure: (any Error)?
        var interrupted = false
        do {
            interrupted = try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // Lines are rendered into one buffer, written when the consumer has
                        // caught up with the stream (at once when advertisers come one by
                        // one, in large writes during a burst): no String or write per line.
                        var formatter = ScanFormatter(json: json, origin: start)
                        formatter.sensorKeys = keys
                        var writer = FieldWriter(format: json ? .json : .text, out: OutputBuffer(capacity: Console.blockSize))
                        let stream = controller.host.scan(config)
                        defer {
                            // Also when the stream ends with an error: what was rendered is
                            // printed and counted.
                            Console.write(&writer.out)
                            shownCount.withLock { $0 = formatter.devicesShown }
                        }
                        for try await event in stream {
                            formatter.write(event, into: &writer)
                            guard stream.waiting == 0 || writer.out.count >= Console.blockSize else { continue }
                            Console.write(&writer.out)
                            shownCount.withLock { $0 = formatter.devicesShown }
                            live.update(devices: formatter.devicesShown)
                            // Said as it happens (at most once a second), not only at the end.
                            drops.check(controller.host.statistics)
                        }
                    }
                    if let duration {
                        group.addTask { try await Task.sleep(for: duration) }
                    }
                    // The first task to finish (the timer, or the scan ending) ends the scan.
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            failure = error
        }
        live.clear()
        Console.flush()
        var stats = controller.host.statistics
        do { try await controller.close() } catch { failure = failure ?? error }
        // Read as the transport closed: drops the kernel counted at the very end included.
        stats.droppedByTransport = max(stats.droppedByTransport, controller.host.statistics.droppedByTransport)
        let elapsed = Double(monotonicNow() &- start) / 1e9
        let shown = shownCount.withLock { $0 }
        let seconds = formatSeconds(elapsed)
        let (dropped, lostByKernel) = drops.totals(stats)
        var lost = dropped == 0 ? "" : "; \(dropped) scan event\(dropped == 1 ? "" : "s") dropped: the output did not keep up"
        if lostByKernel > 0 { lost += "; \(lostByKernel) packet\(lostByKernel == 1 ? "" : "s") lost in the kernel's socket buffer" }
        Console.err("scan: \(shown) device\(shown == 1 ? "" : "s") in \(seconds) s (\(stats.reports) advertising reports\(lost)) via \(controller.transportName)\(interrupted ? ", stopped by the user" : "")")
        if json {
            // The same, machine-readable, also on stderr: stdout holds only the device lines.
            Console.err(FieldRenderer.jsonObject([
                Field("event", .text("summary")), Field("devices", .uint(UInt64(shown))),
                Field("advertising_reports", .uint(UInt64(stats.reports))),
                Field("dropped_events", .uint(UInt64(dropped))),
                Field("dropped_by_kernel", .uint(UInt64(lostByKernel))), Field("seconds", .double(elapsed)),
                Field("transport", .text(controller.transportName)), Field("stopped_by_user", .bool(interrupted)),
            ]))
        }
        if let failure {
            throw RuntimeError("scan stopped: \(describe(failure))")
        }
        return 0
    }
}

/// A value behind a mutex that closures can share.
final class Locked<Value>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: sending Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout sending Value) throws -> sending R) rethrows -> sending R { try mutex.withLock(body) }
}

/// Says on stderr when scan events were lost (at most once a second): dropped by the host
/// because the output fell behind where the transport cannot hold a burst back, or lost
/// in a kernel socket that overflowed; and gives the totals for the summary.
final class DropReporter: Sendable {
    let command: String
    let baseline: (events: Int, kernel: Int)
    private let reported = Atomic<Int>(0)
    private let lastSaid = Atomic<UInt64>(0)

    init(command: String, baseline: HostStatistics) {
        self.command = command
        self.baseline = (baseline.droppedScanEvents, baseline.droppedByTransport)
    }

    /// `statistics`: the host's running counters.
    func check(_ statistics: HostStatistics) {
        let (events, kernel) = totals(statistics)
        guard events + kernel > reported.load(ordering: .relaxed) else { return }
        let now = monotonicNow()
        guard now &- lastSaid.load(ordering: .relaxed) >= 1_000_000_000 else { return }
        lastSaid.store(now, ordering: .relaxed)
        reported.store(events + kernel, ordering: .relaxed)
        var parts: [String] = []
        if events > 0 { parts.append("\(events) scan event\(events == 1 ? "" : "s") dropped so far: the output is not keeping up") }
        if kernel > 0 { parts.append("\(kernel) packet\(kernel == 1 ? "" : "s") lost so far in the kernel's socket buffer") }
        Console.err("\(command): " + parts.joined(separator: "; "))
    }

    /// Dropped by the host, and lost in the kernel, since the start.
    func totals(_ statistics: HostStatistics) -> (events: Int, kernel: Int) {
        (max(0, statistics.droppedScanEvents - baseline.events), max(0, statistics.droppedByTransport - baseline.kernel))
    }
}

/// Counts devices on stderr while scanning, when stderr is a terminal.
final class LiveCounter: Sendable {
    let enabled: Bool
    private let lastDraw = Atomic<UInt64>(0)
    init(enabled: Bool) { self.enabled = enabled }

    func update(devices: Int) {
        guard enabled else { return }
        let now = monotonicNow()
        guard now &- lastDraw.load(ordering: .relaxed) > 250_000_000 else { return }
        lastDraw.store(now, ordering: .relaxed)
        Console.flush()
        Console.errRaw("\r\u{1B}[2K\(devices) device\(devices == 1 ? "" : "s") so far... (Ctrl-C to stop)\r")
    }

    func clear() {
        if enabled { Console.errRaw("\r\u{1B}[2K") }
    }
}

func formatSeconds(_ s: Double) -> String {
    let tenths = Int((s * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

func describe(_ error: any Error) -> String {
    switch error {
    case let e as HostError: e.description
    case let e as TransportError: e.message
    case let e as RuntimeError: e.message
    default: "\(error)"
    }
}

