import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat

/// The health-device commands (`thermometer`, `bloodpressure`, `heartrate`, `keys`,
/// `monitor`): find the device, connect, read what identifies it, set it up, subscribe to
/// its measurements and print each decoded value, reconnecting on request. The following
/// is the library's (``DeviceFollower``); this renders it.
struct HealthMonitor: Sendable {
    var name: String
    var summary: String
    var description: String
    /// Scanned for when no ADDR is given (nil: ADDR required).
    var service: BluetoothUUID?
    /// Extra options this command takes.
    var options: Set<String> = []
    var optionHelp: String = ""
    /// What to do on each connection, from this command's options (a mistake in them is a
    /// usage error, before anything connects).
    var plan: @Sendable (Arguments) throws -> FollowPlan

    var command: Command {
        let monitor = self
        return Command(
            name: name, summary: summary,
            help: """
            Usage: hcigatt \(name) \(service == nil ? "ADDR..." : "[ADDR...]") [--reconnect] [--count N] [--json] [OPTIONS]

            \(description)

            Several ADDRs: every device is followed at once, each on its own link over the
            same controller; lines are tagged with the device's address, --count applies to
            each device, and one device's failure does not stop the others.

            Options:
            \(optionHelp)  --reconnect            connect again (same device) when the link drops
              --count N              stop after N measurements (of each device)
              --json                 one JSON object per measurement, and a "kind":"link" one
                                     per connection (parameters, PHY, data length)
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["reconnect", "json"]),
                                 options: PeerOptions.options.union(["count"]).union(options)),
            run: { args in try await monitor.run(args) })
    }

    /// How the measurements are shown.
    struct Output: Sendable {
        var json: Bool
        /// With several devices, lines name the device.
        var tagged: Bool
        /// Times are seconds since this.
        var start: UInt64
    }

    func run(_ args: Arguments) async throws -> Int32 {
        let targets: [DeviceTarget]
        if args.positional.isEmpty {
            guard let service else { throw UsageError("missing ADDR") }
            targets = [DeviceTarget.service(service)]
        } else {
            targets = try args.positional.map { try DeviceTarget(argument: $0) }
        }
        var limit: Int?
        if let text = args.option("count") {
            guard let n = Int(text), n > 0 else { throw UsageError("--count takes a positive number, not '\(text)'") }
            limit = n
        }
        let plan = try plan(args)
        let settings = try PeerCommandSettings(args)
        let reconnection = Reconnection(args.flag("reconnect") ? .afterLinkLoss : .never)
        let output = Output(json: args.flag("json"), tagged: targets.count > 1, start: monotonicNow())
        // --count applies to each device.
        let counters = targets.map { _ in MeasurementCounter(limit: limit) }
        let failures = Locked<[(String, any Error)]>([])
        let interrupted = try await runInterruptible {
            try await Self.followAll(targets, settings, plan, reconnection, output, counters, failures: failures)
        }
        let printed = counters.reduce(0) { $0 + $1.printed }
        let dropped = counters.reduce(0) { $0 + $1.dropped }
        let malformed = counters.reduce(0) { $0 + $1.malformed }
        Console.err("\(printed) measurement\(printed == 1 ? "" : "s") printed"
                    + (dropped > 0 ? ", \(dropped) dropped (consumer too slow)" : "")
                    + (malformed > 0 ? ", \(malformed) malformed" : ""))
        let failed = failures.withLock { $0 }
        if !failed.isEmpty, !interrupted {
            throw RuntimeError(failed.map { $0.0 + describeGATT($0.1) }.joined(separator: "; "))
        }
        return 0
    }

    /// Every device over one controller (opened once, kept across reconnections): with
    /// several, names are resolved by scanning first (one scan for all), then each device
    /// is followed on its own link. One device's failure is reported and the others go on.
    static func followAll(_ targets: [DeviceTarget], _ settings: PeerCommandSettings, _ plan: FollowPlan,
                          _ reconnection: Reconnection, _ output: Output, _ counters: [MeasurementCounter],
                          failures: Locked<[(String, any Error)]>) async throws {
        let route: PeerRoute
        let controller: LocalController?
        if let adapter = settings.kernelAdapter {
            route = .kernel(adapter: adapter)
            controller = nil
        } else {
            guard let c = settings.controller else { throw RuntimeError("no controller") }
            let opened = try await LocalController.open(c)
            controller = opened
            route = .host(opened.host)
        }
        var resolved = targets
        if targets.count > 1, case .host(let host) = route {
            // All of them on one scan: the scan timeout is for the lot, not each.
            let directory = DeviceDirectory(targets)
            for t in directory.missing { ConnectedPeer.tell(.scanning(t), target: t) }
            do throws(BluetoothError) {
                let found = try await directory.find(on: host, timeout: settings.peer.scanTimeout)
                for (i, f) in found.enumerated() {
                    if targets[i].query != nil { ConnectedPeer.tell(.found(f), target: targets[i]) }
                    resolved[i] = .address(f.address)
                }
            } catch {
                try? await controller?.close()
                throw RuntimeError(error.kind == .notFound ? "\(error.message) (--scan-timeout)" : "scanning failed: \(error.message)")
            }
        }
        let all = Array(zip(resolved, counters))
        await withTaskGroup(of: Void.self) { group in
            for (target, counter) in all {
                group.addTask {
                    let follower = DeviceFollower(target, via: route, settings: settings.peer, plan: plan, reconnection: reconnection)
                    if let f = await show(follower, target, output, counter) {
                        let tag = output.tagged ? target.address.map { "\($0): " } ?? "" : ""
                        if output.tagged { Console.err(tag + describeGATT(f)) }
                        failures.withLock { $0.append((tag, f)) }
                    }
                }
            }
        }
        try? await controller?.close()
    }

    /// Renders one follower's events until the count is reached, the task is cancelled
    /// (Ctrl-C) or the follower ends; stops it (unsubscribed, disconnected) before
    /// returning the failure that ended it, if any.
    static func show(_ follower: DeviceFollower, _ target: DeviceTarget, _ output: Output,
                     _ counter: MeasurementCounter) async -> (any Error)? {
        var failure: (any Error)?
        var narrator = FollowNarrator(target: target, tagged: output.tagged, retrying: .afterLinkLoss("reconnecting..."))
        var connected: GATTPeer?
        do {
            loop: for try await event in follower.events {
                switch event {
                case .value(let c, let v, let device):
                    guard counter.take() else { break loop }
                    printMeasurement(c, v, device: device, tagged: output.tagged, json: output.json, start: output.start,
                                     counter: counter)
                    if counter.done { break loop }
                case .connected(let peer, _):
                    connected = peer
                    for line in narrator.lines(event) { Console.err(line) }
                case .discovered:
                    for line in narrator.lines(event) { Console.err(line) }
                    // After discovery the data length and PHY asked for have settled.
                    if output.json, let peer = connected, let link = peer.connection?.parameters {
                        // The device as its measurement lines name it.
                        Console.out(FieldRenderer.jsonObject([
                            Field("time", .double(Double(monotonicNow() &- output.start) / 1e9)),
                            Field("device", .text(peer.address.address.description)), Field("kind", .text("link")),
                            Field("link", .object(LinkText.jsonFields(link))),
                        ]))
                        Console.flush()
                    }
                default:
                    for line in narrator.lines(event) { Console.err(line) }
                }
            }
        } catch {
            failure = error
        }
        await follower.stop()
        return Task.isCancelled ? nil : failure
    }

    static func printMeasurement(_ c: GATTCharacteristic, _ v: GATTValue, device: LEAddress, tagged: Bool, json: Bool,
                                 start: UInt64, counter: MeasurementCounter) {
        if v.droppedBefore > 0 {
            counter.countDropped(v.droppedBefore)
            Console.err("\(tagged ? "\(device.address): " : "")\(v.droppedBefore) notification\(v.droppedBefore == 1 ? "" : "s") of \(uuidLabel(c.uuid)) dropped: the output could not keep up")
        }
        let t = Double(monotonicNow() &- start) / 1e9
        let decoded: Result<DecodedCharacteristic?, WireError> = v.value.withUnsafeBytes { buf in
            do throws(WireError) { return .success(try CharacteristicDecoder.decode(uuid: c.uuid, value: buf)) } catch { return .failure(error) }
        }
        // Decoded views borrow the value's bytes: describe them while it is alive.
        let (summary, fields, error): (String, [Field], WireError?) = v.value.withUnsafeBytes { buf in
            switch decoded {
            case .success(nil): return (ValueFormat.line(c.uuid, v.value), ValueFormat.fields(c.uuid, v.value), nil)
            case .failure(let e): return ("malformed: \(e) [\(Hex.string(v.value, separator: " "))]", [Field("hex", .bytes(v.value))], e)
            case .success(let d?):
                _ = buf
                return (d.summary, d.fields + [Field("hex", .bytes(v.value))], nil)
            }
        }
        if error != nil { counter.countMalformed() }
        let label = c.name ?? c.uuid.description
        if json {
            var f: [Field] = [Field("time", .double(t)), Field("device", .text(device.address.description)),
                              Field("uuid", .text(c.uuid.description)), Field("characteristic", .text(label)),
                              Field("kind", .text(v.isIndication ? "indication" : "notification"))]
            if let error { f.append(Field("error", .text(error.description))) }
            Console.out(FieldRenderer.jsonObject(f + fields))
        } else {
            Console.out("\(formatSeconds(t).leftPad(8)) s  \(tagged ? "\(device.address)  " : "")\(label): \(summary)")
        }
        Console.flush()
    }
}

/// Counts what was printed, dropped and malformed, across reconnects.
final class MeasurementCounter: Sendable {
    struct State {
        var printed = 0, dropped = 0, malformed = 0
    }
    let limit: Int?
    private let state = Locked(State())

    init(limit: Int?) { self.limit = limit }

    /// Claims one slot to print; false once the count is reached.
    func take() -> Bool {
        state.withLock { s in
            if let limit, s.printed >= limit { return false }
            s.printed += 1
            return true
        }
    }
    var printed: Int { state.withLock { $0.printed } }
    var done: Bool { state.withLock { s in limit.map { s.printed >= $0 } ?? false } }
    var dropped: Int { state.withLock { $0.dropped } }
    var malformed: Int { state.withLock { $0.malformed } }
    func countDropped(_ n: Int) { state.withLock { $0.dropped += n } }
    func countMalformed() { state.withLock { $0.malformed += 1 } }
}

enum HealthMonitors {
    static func characteristic(_ db: GATTDatabase, _ uuid: UInt16) -> GATTCharacteristic? {
        db.characteristic(uuid: BluetoothUUID(uuid))
    }

    static let thermometer = HealthMonitor(
        name: "thermometer", summary: "Health Thermometer: set the interval, print each temperature",
        description: """
        Finds a Health Thermometer (service 1809) when no ADDR is given, connects, reads the
        device name (2A00) and manufacturer (2A29), writes the Measurement Interval (2A21)
        and prints each temperature: Intermediate Temperature (2A1E) notifications if the
        device has them, else Temperature Measurement (2A1C) indications.
        """,
        service: BluetoothUUID(0x1809),
        options: ["interval"],
        optionHelp: "  --interval S           Measurement Interval to write (default 2; 0 = no periodic measurement)\n",
        plan: { args in
            let text = args.option("interval") ?? "2"
            guard let seconds = UInt16(text) else { throw UsageError("--interval takes whole seconds 0...65535, not '\(text)'") }
            return FollowPlan(reads: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A29)], setup: { client, db in
                guard let c = characteristic(db, 0x2A21), c.properties.contains(.write) else { return }
                do {
                    try await client.write(handle: c.valueHandle, value: [UInt8(seconds & 0xFF), UInt8(seconds >> 8)])
                    Console.err("Measurement Interval set to \(seconds) s")
                } catch let e as GATTError where e.attErrorCode == .outOfRange {
                    throw RuntimeError("the thermometer refused a Measurement Interval of \(seconds) s: \(e)")
                }
            }, subscriptions: { db in
                if let c = characteristic(db, 0x2A1E), c.properties.contains(.notify) { return [(c, false)] }
                if let c = characteristic(db, 0x2A1C) { return [(c, true)] }
                return []
            })
        })

    static let bloodPressure = HealthMonitor(
        name: "bloodpressure", summary: "Blood Pressure: print each measurement with units and status",
        description: """
        Finds a Blood Pressure monitor (service 1810) when no ADDR is given, connects, reads
        the Blood Pressure Feature (2A49) and Date Time (2A08) where present, and prints each
        Blood Pressure Measurement (2A35, indications): systolic/diastolic/MAP, pulse, status.
        """,
        service: BluetoothUUID(0x1810),
        plan: { _ in
            FollowPlan(reads: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A49), BluetoothUUID(0x2A08)]) { db in
                var out: [(GATTCharacteristic, indicate: Bool)] = []
                if let c = characteristic(db, 0x2A35) { out.append((c, true)) }
                if let c = characteristic(db, 0x2A36), c.properties.contains(.notify) { out.append((c, false)) }
                return out
            }
        })

    static let heartRate = HealthMonitor(
        name: "heartrate", summary: "Heart Rate: bpm, sensor contact, RR intervals",
        description: "Finds a heart rate sensor (service 180D) when no ADDR is given and prints each Heart Rate Measurement (2A37).",
        service: BluetoothUUID(0x180D),
        plan: { _ in
            FollowPlan(reads: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A38)]) { db in
                characteristic(db, 0x2A37).map { [($0, false)] } ?? []
            }
        })

    static let keys = HealthMonitor(
        name: "keys", summary: "TI SensorTag keys as they change",
        description: "Finds a SensorTag (service FFE0) when no ADDR is given and prints its key state (FFE1) on every change.",
        service: BluetoothUUID(0xFFE0),
        plan: { _ in
            FollowPlan(reads: [BluetoothUUID(0x2A00)]) { db in characteristic(db, 0xFFE1).map { [($0, false)] } ?? [] }
        })

    static let monitor = HealthMonitor(
        name: "monitor", summary: "Subscribe to every known measurement a device has and print it decoded",
        description: """
        Connects to ADDR and subscribes to every measurement characteristic hcigatt can
        decode (temperature, blood pressure, heart rate, battery, glucose, weight, pulse
        oximetry, cycling/running, environmental, SensorTag keys), one line (or JSON
        object) per value.
        """,
        service: nil,
        plan: { _ in .everyMeasurement })

    static let all: [HealthMonitor] = [thermometer, bloodPressure, heartRate, keys, monitor]
}
