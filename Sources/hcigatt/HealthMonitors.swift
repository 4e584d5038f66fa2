import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat

/// The health-device scenarios (`thermometer`, `bloodpressure`, `heartrate`, `keys`,
/// `monitor`): find the device, connect, read what identifies it, set it up, subscribe to
/// its measurements and print each decoded value, reconnecting on request.
struct Scenario: Sendable {
    var name: String
    var summary: String
    var description: String
    /// Scanned for when no ADDR is given (nil: ADDR required).
    var service: BluetoothUUID?
    /// Read once after connecting, where present.
    var reads: [BluetoothUUID]
    /// Extra options this scenario takes.
    var options: Set<String> = []
    var optionHelp: String = ""
    /// Checks its options before connecting (usage errors come first).
    var validate: @Sendable (Arguments) throws -> Void = { _ in }
    /// After the reads, before subscribing (e.g. write the measurement interval).
    var setup: @Sendable (PeerSession, GATTDatabase, Arguments) async throws -> Void = { _, _, _ in }
    /// What to subscribe to: characteristics and whether to ask for indications.
    var subscriptions: @Sendable (GATTDatabase) -> [(GATTCharacteristic, Bool)]

    var command: Command {
        let scenario = self
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
              --json                 one JSON object per measurement
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["reconnect", "json"]),
                                 options: PeerOptions.options.union(["count"]).union(options)),
            run: { args in try await scenario.run(args) })
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
        try validate(args)
        let json = args.flag("json")
        // --count applies to each device.
        let counters = targets.map { _ in MeasurementCounter(limit: limit) }
        let start = monotonicNow()
        let failures = Locked<[(String, any Error)]>([])
        let interrupted: Bool
        if targets.count == 1 {
            let target = targets[0], counter = counters[0]
            interrupted = try await runInterruptible {
                if let f = try await self.follow(args, target, shared: nil, tagged: false, json: json, start: start, counter: counter) {
                    failures.withLock { $0.append(("", f)) }
                }
            }
        } else {
            interrupted = try await runInterruptible {
                try await self.followAll(args, targets, json: json, start: start, counters: counters, failures: failures)
            }
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

    /// Several devices at once over one controller: names are resolved by scanning first
    /// (one scan at a time), then each device is followed on its own link. One device's
    /// failure is reported and the others go on.
    func followAll(_ args: Arguments, _ targets: [DeviceTarget], json: Bool, start: UInt64, counters: [MeasurementCounter],
                   failures: Locked<[(String, any Error)]>) async throws {
        let kernel = args.option("transport")?.hasPrefix("l2cap:") ?? false
        let shared: Session? = kernel ? nil : try await Session.open(args)
        var resolved = targets
        if let shared {
            let scanTimeout = try ControllerOptions.seconds(args, "scan-timeout", default: 5, range: 0.1 ... 600)
            do {
                for (i, t) in targets.enumerated() {
                    resolved[i] = DeviceTarget.address(try await PeerSession.resolve(t, host: shared.host, timeout: scanTimeout))
                }
            } catch {
                try? await shared.close()
                throw error
            }
        }
        let all = zip(resolved, counters)
        await withTaskGroup(of: Void.self) { group in
            for (target, counter) in all {
                group.addTask {
                    do {
                        if let f = try await self.follow(args, target, shared: shared, tagged: true, json: json,
                                                         start: start, counter: counter) {
                            let tag = target.address.map { "\($0): " } ?? ""
                            Console.err(tag + describeGATT(f))
                            failures.withLock { $0.append((tag, f)) }
                        }
                    } catch {
                        failures.withLock { $0.append(("", error)) }
                    }
                }
            }
        }
        try? await shared?.close()
    }

    /// Follows one device until the count is reached, the task is cancelled, or the link
    /// is lost without --reconnect; returns the failure that ended it, if any.
    func follow(_ args: Arguments, _ first: DeviceTarget, shared: Session?, tagged: Bool, json: Bool, start: UInt64,
                counter: MeasurementCounter, handler: MeasurementHandler? = nil) async throws -> (any Error)? {
        var target = first
        let lastPeer = Locked<LEAddress?>(nil)
        // The library's policy: the gateway (a handler) retries every ending with the
        // back-off, --reconnect a lost link, else the first ending is the end.
        var policy = Reconnection(handler != nil ? .always : args.flag("reconnect") ? .afterLinkLoss : .never)
        while true {
            var failure: (any Error)?
            let before = counter.printed
            do {
                try await session(args, target: target, shared: shared, tagged: tagged, json: json, start: start,
                                  counter: counter, lastPeer: lastPeer, handler: handler)
            } catch is CancellationError {
                return nil
            } catch {
                failure = error
            }
            if Task.isCancelled || counter.done { return nil }
            let peer = lastPeer.withLock { $0 }
            let linkLoss = failure.map(Self.isLinkLoss) ?? false
            guard let pause = policy.next(failure: failure, linkLoss: linkLoss, delivered: counter.printed > before) else {
                return failure
            }
            if policy.mode == .always {
                Console.err("\(peer.map { "\($0.address): " } ?? "")\(describeGATT(failure ?? RuntimeError("link closed"))); trying again in \(pause.components.seconds) s")
            } else {
                Console.err("\(peer.map { "\($0): " } ?? "")link lost: \(describeGATT(failure ?? RuntimeError("closed"))); reconnecting...")
            }
            if let peer { target = .address(peer) }
            try await Task.sleep(for: pause)
        }
    }

    /// Typed: the library says whether the peer went away (never the wording of a message).
    static func isLinkLoss(_ error: any Error) -> Bool {
        let cause = (error as? RuntimeError)?.cause ?? error
        if let g = cause as? GATTError { return g.isLinkLoss }
        if let h = cause as? HostError { return h.isLinkLoss }
        return false
    }

    /// One connection: setup, subscribe, print until the link drops, the count is reached
    /// or the task is cancelled (Ctrl-C); unsubscribes before disconnecting.
    func session(_ args: Arguments, target: DeviceTarget, shared: Session?, tagged: Bool, json: Bool, start: UInt64,
                 counter: MeasurementCounter, lastPeer: Locked<LEAddress?>, handler: MeasurementHandler? = nil) async throws {
        try await withPeer(args, target, shared: shared) { p in
            lastPeer.withLock { $0 = p.peer }
            // With several devices, stderr lines and text output name the device.
            let tag = tagged ? "\(p.peer.address): " : ""
            let db = try await p.discover(args).database
            var name: String?
            for uuid in reads {
                guard let c = db.characteristic(uuid: uuid), c.properties.contains(.read) else { continue }
                let value = try await p.client.read(handle: c.valueHandle)
                let text = value.withUnsafeBytes { buf in
                    (try? CharacteristicDecoder.decode(uuid: uuid, value: buf))??.summary
                } ?? ValueFormat.line(uuid, value)
                Console.err("\(tag)\(c.name ?? uuid.description): \(text)")
                if uuid.uuid16 == 0x2A00 { name = text }
            }
            try await setup(p, db, args)
            let wanted = subscriptions(db)
            guard !wanted.isEmpty else { throw RuntimeError("the device has none of the characteristics \(name) subscribes to") }
            var streams: [(GATTCharacteristic, AsyncThrowingStream<GATTValue, Error>)] = []
            for (c, indicate) in wanted {
                streams.append((c, try await p.client.subscribe(characteristic: c, indicate: indicate)))
                Console.err("\(tag)subscribed to \(uuidLabel(c.uuid)) (\(indicate ? "indications" : "notifications"))")
            }
            let all = streams
            let deviceName = name
            var streamError: (any Error)?
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (c, stream) in all {
                        group.addTask {
                            for try await v in stream {
                                if counter.take() == false { return }
                                if let handler {
                                    handler(c, v, p.peer, deviceName)
                                } else {
                                    Self.printMeasurement(c, v, device: p.peer, tagged: tagged, json: json, start: start,
                                                          counter: counter)
                                }
                                if counter.done { return }
                            }
                            throw GATTError.bearerClosed(p.client.failure.flatMap {
                                if case .bearerClosed(let r) = $0 { return r }
                                return nil
                            } ?? ATTBearerClosed(message: "the subscription to \(uuidLabel(c.uuid)) ended"))
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                streamError = error
            }
            // Clear the CCCDs unless the link is gone (nothing to tell the device then).
            if !(streamError.map(Self.isLinkLoss) ?? false) {
                for (c, _) in all { try? await p.client.unsubscribe(characteristic: c) }
            }
            if let streamError, !(streamError is CancellationError) { throw streamError }
        }
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

/// Takes each measurement instead of printing it (the gateway): the characteristic, the
/// value, the device and the device's name when it has one.
typealias MeasurementHandler = @Sendable (GATTCharacteristic, GATTValue, LEAddress, String?) -> Void

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

enum Scenarios {
    static func characteristic(_ db: GATTDatabase, _ uuid: UInt16) -> GATTCharacteristic? {
        db.characteristic(uuid: BluetoothUUID(uuid))
    }

    static let thermometer = Scenario(
        name: "thermometer", summary: "Health Thermometer: set the interval, print each temperature",
        description: """
        Finds a Health Thermometer (service 1809) when no ADDR is given, connects, reads the
        device name (2A00) and manufacturer (2A29), writes the Measurement Interval (2A21)
        and prints each temperature: Intermediate Temperature (2A1E) notifications if the
        device has them, else Temperature Measurement (2A1C) indications.
        """,
        service: BluetoothUUID(0x1809), reads: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A29)],
        options: ["interval"],
        optionHelp: "  --interval S           Measurement Interval to write (default 2; 0 = no periodic measurement)\n",
        validate: { args in
            if let text = args.option("interval"), UInt16(text) == nil {
                throw UsageError("--interval takes whole seconds 0...65535, not '\(text)'")
            }
        },
        setup: { p, db, args in
            guard let c = characteristic(db, 0x2A21), c.properties.contains(.write) else { return }
            let seconds = UInt16(args.option("interval") ?? "2") ?? 2
            do {
                try await p.client.write(handle: c.valueHandle, value: [UInt8(seconds & 0xFF), UInt8(seconds >> 8)])
                Console.err("Measurement Interval set to \(seconds) s")
            } catch let e as GATTError where e.attErrorCode == .outOfRange {
                throw RuntimeError("the thermometer refused a Measurement Interval of \(seconds) s: \(e)")
            }
        },
        subscriptions: { db in
            if let c = characteristic(db, 0x2A1E), c.properties.contains(.notify) { return [(c, false)] }
            if let c = characteristic(db, 0x2A1C) { return [(c, true)] }
            return []
        })

    static let bloodPressure = Scenario(
        name: "bloodpressure", summary: "Blood Pressure: print each measurement with units and status",
        description: """
        Finds a Blood Pressure monitor (service 1810) when no ADDR is given, connects, reads
        the Blood Pressure Feature (2A49) and Date Time (2A08) where present, and prints each
        Blood Pressure Measurement (2A35, indications): systolic/diastolic/MAP, pulse, status.
        """,
        service: BluetoothUUID(0x1810), reads: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A49), BluetoothUUID(0x2A08)],
        subscriptions: { db in
            var out: [(GATTCharacteristic, Bool)] = []
            if let c = characteristic(db, 0x2A35) { out.append((c, true)) }
            if let c = characteristic(db, 0x2A36), c.properties.contains(.notify) { out.append((c, false)) }
            return out
        })

    static let heartRate = Scenario(
        name: "heartrate", summary: "Heart Rate: bpm, sensor contact, RR intervals",
        description: "Finds a heart rate sensor (service 180D) when no ADDR is given and prints each Heart Rate Measurement (2A37).",
        service: BluetoothUUID(0x180D), reads: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A38)],
        subscriptions: { db in characteristic(db, 0x2A37).map { [($0, false)] } ?? [] })

    static let keys = Scenario(
        name: "keys", summary: "TI SensorTag keys as they change",
        description: "Finds a SensorTag (service FFE0) when no ADDR is given and prints its key state (FFE1) on every change.",
        service: BluetoothUUID(0xFFE0), reads: [BluetoothUUID(0x2A00)],
        subscriptions: { db in characteristic(db, 0xFFE1).map { [($0, false)] } ?? [] })

    /// Measurement characteristics `monitor` subscribes to when the device has them.
    static let measurementUUIDs: [UInt16] = [0x2A1C, 0x2A1E, 0x2A21, 0x2A35, 0x2A36, 0x2A37, 0x2A19, 0x2A18, 0x2A9D,
                                             0x2A5E, 0x2A5F, 0x2A5B, 0x2A53, 0x2A6E, 0x2A6F, 0x2A6D, 0xFFE1]

    static let monitor = Scenario(
        name: "monitor", summary: "Subscribe to every known measurement a device has and print it decoded",
        description: """
        Connects to ADDR and subscribes to every measurement characteristic hcigatt can
        decode (temperature, blood pressure, heart rate, battery, glucose, weight, pulse
        oximetry, cycling/running, environmental, SensorTag keys), one line (or JSON
        object) per value.
        """,
        service: nil, reads: [BluetoothUUID(0x2A00)],
        subscriptions: { db in
            measurementUUIDs.compactMap { u in
                guard let c = characteristic(db, u) else { return nil }
                if c.properties.contains(.notify) { return (c, false) }
                if c.properties.contains(.indicate) { return (c, true) }
                return nil
            }
        })

    static let all: [Scenario] = [thermometer, bloodPressure, heartRate, keys, monitor]
}
