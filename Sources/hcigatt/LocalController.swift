import BluetoothHost
import BluetoothLE
import BluetoothTransport
import BluetoothWire
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Options every command that talks to a controller takes.
enum ControllerOptions {
    static let flags: Set<String> = Set(["bring-down"]).union(SecurityOptions.flags)
    static let options: Set<String> = Set(["transport", "snoop", "command-timeout"]).union(SecurityOptions.options)

    static let help = """
      --transport SPEC       user:hciN (HCI user channel, adapter must be down), raw:hciN
                             (beside the kernel's host), tcp:HOST:PORT (H4 over TCP, e.g. a
                             virtual controller), serial:/dev/ttyX[,BAUD[,rtscts]] (H4 UART).
                             Default: $HCIGATT_TRANSPORT, else the first adapter's user channel.
      --bring-down           take the user channel even if the kernel has the adapter up
                             (brings it down; disconnects what the system stack holds)
      --snoop FILE           write every packet, both directions, to a btsnoop file
                             (opens in Wireshark/tshark; `hcigatt replay FILE` decodes it)
      --command-timeout S    fail an HCI command the controller does not answer (default 5)
    \(SecurityOptions.help)
    """

    /// The library's choice (``BluetoothOptions/chooseController(_:)``): a malformed spec is a
    /// usage error, no adapter a runtime error.
    static func transportSpec(_ transport: String?) throws -> TransportSpec {
        do throws(BluetoothError) { return try BluetoothOptions.chooseController(transport) } catch {
            if error.kind == .invalidRequest { throw UsageError(error.message) }
            // Said with the option's name, which is how a user gives a transport here.
            if let t = error.underlying as? TransportError {
                throw RuntimeError("no --transport given and no local adapter usable: \(t.message)")
            }
            throw RuntimeError("no Bluetooth adapter found. Plug one in, or use --transport tcp:HOST:PORT for a virtual controller")
        }
    }

    static func seconds(_ args: Arguments, _ name: String, default value: Double, range: ClosedRange<Double> = 0.001 ... 86_400) throws -> Duration {
        guard let text = args.option(name) else { return .milliseconds(Int64(value * 1000)) }
        guard let v = Double(text), v.isFinite, range.contains(v) else {
            throw UsageError("--\(name) takes seconds between \(range.lowerBound) and \(Int(range.upperBound)), not '\(text)'")
        }
        return .milliseconds(Int64(v * 1000))
    }
}

/// A btsnoop writer fed from the host's driver thread (the only caller), closed at the end.
final class SnoopSink: @unchecked Sendable {
    let writer: BTSnoopWriter
    private(set) var failure: TransportError?

    init(path: String) throws {
        do { writer = try BTSnoopWriter(path: path) } catch { throw RuntimeError("cannot write snoop file: \(error.message)") }
    }

    func record(_ packet: UnsafeRawBufferPointer, sent: Bool) {
        guard failure == nil else { return }
        do { try writer.append(packet, received: !sent) } catch { failure = error }
    }

    func close() throws {
        do { try writer.close() } catch { failure = failure ?? error }
        if let failure { throw RuntimeError("snoop file \(writer.path): \(failure.message)") }
    }
}

/// The controller options, parsed once (mistakes are usage errors before anything opens):
/// what the library opens the controller with, and the snoop file.
struct ControllerSettings: Sendable {
    var options: BluetoothOptions
    var snoopPath: String?

    init(_ args: Arguments) throws {
        // A transport given is checked now (a typo is a usage error before anything
        // starts); the adapter to default to is looked for when the controller opens.
        let given = args.option("transport")
        if let given { _ = try ControllerOptions.transportSpec(given) }
        options = BluetoothOptions(
            transport: given, bringDown: args.flag("bring-down"),
            bondDirectory: SecurityOptions.bondStore(args).directory, pairingAgent: try SecurityOptions.agent(args),
            commandTimeout: try ControllerOptions.seconds(args, "command-timeout", default: 5, range: 0.05 ... 600),
            security: try SecurityOptions.configuration(args), privacy: args.flag("privacy"),
            allowsRepairing: args.flag("allow-repairing"))
        snoopPath = args.option("snoop")
    }
}

/// An open controller (the library's ``BluetoothOptions/openController()``), with the snoop
/// file if asked for.
struct LocalController: Sendable {
    let host: HCIHost
    let snoop: SnoopSink?
    let transportName: String

    static func open(_ args: Arguments) async throws -> LocalController {
        try await open(ControllerSettings(args))
    }

    static func open(_ settings: ControllerSettings) async throws -> LocalController {
        var options = settings.options
        options.transport = try ControllerOptions.transportSpec(options.transport).description
        let snoop = try settings.snoopPath.map { try SnoopSink(path: $0) }
        if let snoop { options.packetObserver = { packet, sent in snoop.record(packet, sent: sent) } }
        do throws(BluetoothError) {
            let opened = try await options.openController()
            return LocalController(host: opened.host, snoop: snoop, transportName: opened.transportName)
        } catch {
            try? snoop?.close()
            if error.kind == .invalidRequest { throw UsageError(error.message) }
            throw RuntimeError(error.message)
        }
    }

    func close() async throws {
        await host.close()
        try snoop?.close()
    }
}

/// Runs `body` until it finishes or SIGINT/SIGTERM arrives (then its task is cancelled,
/// so scans stop cleanly). Returns true when interrupted.
@discardableResult
func runInterruptible(stopping: (@Sendable () -> Void)? = nil, _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
    let task = Task { try await body() }
    let interrupted = InterruptFlag()
    // `stopping`: the body stops itself the clean way (an Abort that still needs answering).
    let stop = StopSwitch(flag: interrupted) { if let stopping { stopping() } else { task.cancel() } }
    StopSwitch.current.withLock { $0 = stop }
    var sources: [any DispatchSourceSignal] = []
    let signalled = SignalCount()
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        s.setEventHandler {
            // A second Ctrl-C while the first is being handled: out at once. (A closed
            // stdout stops the command too, but is no first Ctrl-C.)
            if signalled.note() {
                Console.err("interrupted again: exiting without cleaning up")
                _exit(130)
            }
            stop.stop()
        }
        s.resume()
        sources.append(s)
    }
    // A stdout closed while waiting (the reader of a pipe went away) stops the same way.
    if Console.stdoutClosed { stop.stop() }
    defer {
        StopSwitch.current.withLock { $0 = nil }
        for s in sources { s.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
    do {
        try await task.value
    } catch is CancellationError where interrupted.isSet {
    }
    return interrupted.isSet
}

/// How a long-running command is told to stop the clean way (unsubscribe, disconnect,
/// summary, exit 0): SIGINT/SIGTERM, or its stdout closing (`| head -2`).
final class StopSwitch: Sendable {
    static let current = Mutex<StopSwitch?>(nil)
    let flag: InterruptFlag
    let cancel: @Sendable () -> Void
    init(flag: InterruptFlag, cancel: @escaping @Sendable () -> Void) {
        self.flag = flag
        self.cancel = cancel
    }
    func stop() {
        flag.set()
        cancel()
    }
    /// Stops the running command, if there is one.
    static func stopCurrent() { current.withLock { $0 }?.stop() }
}

/// Whether a signal came already (the second one exits at once).
final class SignalCount: Sendable {
    private let value = Atomic<Bool>(false)
    /// True when one came before.
    func note() -> Bool { value.exchange(true, ordering: .relaxed) }
}

final class InterruptFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
