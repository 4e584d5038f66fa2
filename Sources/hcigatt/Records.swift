import BluetoothLE
import BluetoothProfiles
import BluetoothWire
import HCIGATTFormat

/// `hcigatt records`: a sensor's stored records through its Record Access Control Point.
enum RecordsCommand {
    static var command: Command {
        Command(
            name: "records", summary: "Fetch (count, delete) a sensor's stored readings: glucose, pulse oximeter, blood pressure, weight",
            help: """
            Usage: hcigatt records ADDR|NAME [--service glucose|cgm|plx|bp|weight] [SELECTION] [--count | --delete --yes] [--json] [OPTIONS]

            Glucose meters, CGMs and pulse oximeters: subscribes to the service's record
            characteristics and to the Record Access Control Point (2A52), asks for the
            records and prints each as it comes, decoded, then the control point's answer
            (success, no records found, operator not supported...). Ctrl-C sends
            Abort Operation: records still on their way are dropped and counted. A procedure
            with no record or answer for 30 s fails, and any procedure is given up
            (Abort Operation) after --procedure-timeout or once the device has sent more
            values than there are sequence numbers: a device that floods or never answers
            cannot keep it running. Malformed values are counted; the first few are shown.
            Glucose meters want an encrypted, bonded link: it is paired when they ask.

            Blood pressure cuffs (bp) and weight scales have no control point: subscribed to,
            they indicate the readings they kept, oldest first. Each is printed as it comes
            until the device disconnects, sends nothing for --quiet seconds (the first may
            take up to 10 s), or --limit passes. Every reading is asked for; Ctrl-C stops.

            Selection (default --all):
              --all                  every record
              --first, --last        the oldest, the newest record
              --since SEQ            sequence numbers SEQ and up (glucose; cgm: time offsets,
                                     minutes into the session)
              --until SEQ            sequence numbers up to SEQ (glucose, cgm)
              --range A-B            sequence numbers A to B (glucose, cgm)
            Options:
              --service S            glucose (default), cgm (Continuous Glucose Monitoring),
                                     plx (Pulse Oximeter: all records only),
                                     bp (Blood Pressure) or weight (Weight Scale)
              --count                ask for the number of matching records instead
              --delete --yes         delete the selected records (refused without --yes)
              --json                 one JSON object per record, then one for the answer
              --procedure-timeout S  seconds for the whole procedure, however many records
                                     come (default 120); 30 s without a record or answer
                                     (the record profiles' value, or S if shorter) fails it
              --quiet S              bp/weight: seconds without a reading that end it (default 3)
              --limit S              bp/weight: seconds in all (default 120)
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["all", "first", "last", "count", "delete", "yes", "json"]),
                                 options: PeerOptions.options.union(["service", "since", "until", "range", "procedure-timeout", "quiet", "limit"])),
            run: { args in try await run(args) }
        )
    }

    /// What the command line asks, checked before any radio work.
    struct Settings: Equatable {
        var service: RecordService
        var request: RecordRequest
        var json: Bool
        var limits: RACPClient.Limits
        /// How long to collect from a service with no control point.
        var timing = IndicatedReadingsCollector.Timing()

        init(_ args: Arguments) throws {
            let name = args.option("service") ?? "glucose"
            guard let service = RecordService(rawValue: name) else {
                throw UsageError("--service takes glucose, cgm, plx, bp or weight, not '\(name)'")
            }
            self.service = service
            func seconds(_ option: String, _ range: ClosedRange<Double>) throws -> UInt64? {
                guard let text = args.option(option) else { return nil }
                guard let t = Double(text), t > range.lowerBound, t <= range.upperBound else {
                    throw UsageError("--\(option) takes seconds (\(Int(range.lowerBound)) < S <= \(Int(range.upperBound))), not '\(text)'")
                }
                return UInt64(t * 1e9)
            }
            let quiet = try seconds("quiet", 0 ... 600), limit = try seconds("limit", 0 ... 86_400)
            if service.hasControlPoint {
                for (o, v) in [("--quiet", quiet), ("--limit", limit)] where v != nil {
                    throw UsageError("\(o) is for services with no control point (bp, weight); the \(service.name) Service's procedure ends with its answer (--procedure-timeout)")
                }
            } else {
                // --all is what comes anyway.
                let asked = ["first", "last", "count", "delete", "yes"].filter { args.flag($0) }
                    + ["since", "until", "range", "procedure-timeout"].filter { args.option($0) != nil }
                if let first = asked.first {
                    throw UsageError("the \(service.name) Service has no Record Access Control Point: its stored readings all come when subscribed to, so --\(first) cannot be asked")
                }
                if let quiet {
                    timing.quiet = quiet
                    // A quiet period longer than the first wait lengthens that too.
                    timing.firstWait = Swift.max(timing.firstWait, quiet)
                }
                if let limit { timing.limit = limit }
            }
            var chosen: [(String, RecordSelection)] = []
            if args.flag("all") { chosen.append(("--all", .all)) }
            if args.flag("first") { chosen.append(("--first", .first)) }
            if args.flag("last") { chosen.append(("--last", .last)) }
            func sequence(_ option: String) throws -> UInt16? {
                guard let text = args.option(option) else { return nil }
                guard let n = UInt16(text) else { throw UsageError("--\(option) takes a sequence number 0...65535, not '\(text)'") }
                return n
            }
            if let n = try sequence("since") { chosen.append(("--since", .atLeast(n))) }
            if let n = try sequence("until") { chosen.append(("--until", .atMost(n))) }
            if let text = args.option("range") {
                let parts = text.split(separator: "-", omittingEmptySubsequences: false)
                guard parts.count == 2, let a = UInt16(parts[0]), let b = UInt16(parts[1]), a <= b else {
                    throw UsageError("--range takes A-B with sequence numbers A <= B, not '\(text)'")
                }
                chosen.append(("--range", .within(a ... b)))
            }
            guard chosen.count <= 1 else {
                throw UsageError("give one selection, not \(chosen.map(\.0).joined(separator: " and "))")
            }
            let selection = chosen.first?.1 ?? .all
            if !service.hasSequenceNumbers, selection != .all {
                throw UsageError("the Pulse Oximeter Service's control point takes all records only: \(chosen.first?.0 ?? "") cannot be asked")
            }
            switch (args.flag("count"), args.flag("delete")) {
            case (true, true):
                throw UsageError("--count and --delete are two requests: give one")
            case (true, false):
                request = .count(selection)
            case (false, true):
                guard args.flag("yes") else {
                    throw UsageError("--delete removes records from the device for good: add --yes to mean it")
                }
                request = .delete(selection)
            case (false, false):
                if args.flag("yes") { throw UsageError("--yes goes with --delete") }
                request = .report(selection)
            }
            json = args.flag("json")
            limits = RACPClient.Limits()
            if let text = args.option("procedure-timeout") {
                limits = RACPClient.Limits(procedureTimeout: try RecordsCommand.procedureTimeout(text))
            }
        }
    }

    /// `--procedure-timeout`'s seconds (0 < S <= 86400), in `records` and `gateway`.
    static func procedureTimeout(_ text: String) throws -> Duration {
        guard let t = Double(text), t > 0, t <= 86_400 else {
            throw UsageError("--procedure-timeout takes seconds (0 < S <= 86400), not '\(text)'")
        }
        return .milliseconds(Int64(t * 1000))
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.count == 1 else { throw UsageError("expected one device: ADDR or NAME") }
        let target = try DeviceTarget(argument: args.positional[0])
        let settings = try Settings(args)
        let p = try await ConnectedPeer.open(try PeerCommandSettings(args), target: target)
        var failure: (any Error)?
        var status: Int32 = 0
        do {
            let db = try await p.discover().database
            status = settings.service.hasControlPoint ? try await transfer(settings, p, db) : try await collect(settings, p, db)
        } catch {
            failure = error
        }
        await p.close()
        if let failure {
            if let e = failure as? BluetoothError { throw RuntimeError(e.message, cause: e.underlying ?? e) }
            throw RuntimeError(describeGATT(failure))
        }
        return status
    }

    /// A record store's procedure through its control point. Exit 0 for success and no
    /// records found (and an Abort by Ctrl-C), 1 otherwise.
    static func transfer(_ settings: Settings, _ p: ConnectedPeer, _ db: GATTDatabase) async throws -> Int32 {
        let transfer = try await RecordTransfer.start(settings.request, service: settings.service, on: p.client, database: db,
                                                     limits: settings.limits)
        Console.err("asked: \(RecordAccessControlPoint.summary(of: settings.request.controlPoint))")
        let ending = Locked<RACPClient.Summary?>(nil)
        let interrupted = try await runInterruptible(stopping: { transfer.abort() }) {
            for try await event in transfer {
                switch event {
                case .record(let r):
                    Console.out(settings.json ? json(r) : line(r))
                    Console.flush()
                case .malformed(let uuid, let bytes, let error):
                    Console.err("a malformed \(uuidLabel(uuid)) value (\(error)): \(Hex.string(bytes, separator: " "))")
                case .finished(let s):
                    ending.withLock { $0 = s }
                case .collected:
                    break
                }
            }
        }
        guard let summary = ending.withLock({ $0 }) else { throw RuntimeError("the record transfer ended without an answer") }
        if settings.json { Console.out(json(summary)) }
        let (text, ok) = describe(summary, request: settings.request, limits: settings.limits)
        Console.err(text)
        if interrupted, case .aborted = summary.outcome { return 0 }
        return ok ? 0 : 1
    }

    /// A cuff's or a scale's readings: subscribed to, collected until the device goes quiet,
    /// disconnects or the limit passes. Exit 0 however it ended (a device with nothing stored
    /// sends nothing), 1 when values were lost on the way.
    static func collect(_ settings: Settings, _ p: ConnectedPeer, _ db: GATTDatabase) async throws -> Int32 {
        let service = db.services.first { $0.uuid == settings.service.uuid }
        if service?.characteristics.contains(where: { $0.uuid == RecordAccessControlPoint.uuid }) == true {
            Console.err("the \(settings.service.name) Service also has a Record Access Control Point (Blood Pressure Records, 2B36, of BLS 1.1): not asked; its indicated readings are collected")
        }
        if settings.service == .weightScale, db.services.contains(where: { $0.uuid == BluetoothUUID(0x181C) }) {
            Console.err("this scale has the User Data Service (181C): it may keep readings per user and send them only after a user's consent (User Control Point 2A9F), which records does not give")
        }
        let collection = try await ReadingCollection.start(service: settings.service, on: p.client, database: db,
                                                           timing: settings.timing)
        Console.err("subscribed to \(uuidLabel(settings.service.recordCharacteristic)): the stored readings come first")
        let ending = Locked<IndicatedReadingsCollector.Summary?>(nil)
        _ = try await runInterruptible(stopping: { collection.stop() }) {
            for try await event in collection {
                switch event {
                case .record(let r):
                    Console.out(settings.json ? json(r) : line(r))
                    Console.flush()
                case .malformed(let uuid, let bytes, let error):
                    Console.err("a malformed \(uuidLabel(uuid)) value (\(error)): \(Hex.string(bytes, separator: " "))")
                case .collected(let s):
                    ending.withLock { $0 = s }
                case .finished:
                    break
                }
            }
        }
        guard let s = ending.withLock({ $0 }) else { throw RuntimeError("the collection ended without a summary") }
        let n = "\(s.readings) reading\(s.readings == 1 ? "" : "s")"
        var text: String
        switch s.ending {
        case .quiet: text = "\(n); nothing more for \(Duration.nanoseconds(Int64(s.readings == 0 ? settings.timing.firstWait : settings.timing.quiet)).seconds) s"
        case .timeLimit where s.readings == 0: text = "no readings within the \(Duration.nanoseconds(Int64(settings.timing.limit)).seconds) s limit (--limit)"
        case .timeLimit: text = "\(n); still coming at the \(Duration.nanoseconds(Int64(settings.timing.limit)).seconds) s limit (--limit)"
        case .disconnected: text = "\(n); the device disconnected (done sending)"
        case .stopped: text = "\(n); stopped"
        }
        if s.lost > 0 { text += "; \(s.lost) value\(s.lost == 1 ? "" : "s") lost on the way (the output could not keep up)" }
        if s.readings == 0, p.connection?.security.bonded != true {
            text += " (cuffs and scales hand stored readings to a bonded collector: `hcigatt pair` it first)"
        }
        Console.err(text)
        if settings.json {
            var f = [Field("kind", .text("end")), Field("readings", .uint(UInt64(s.readings)))]
            let why: String = switch s.ending {
            case .quiet: "quiet"
            case .timeLimit: "time limit"
            case .disconnected: "disconnected"
            case .stopped: "stopped"
            }
            f.append(Field("ending", .text(why)))
            if s.lost > 0 { f.append(Field("lost", .uint(UInt64(s.lost)))) }
            Console.out(FieldRenderer.jsonObject(f))
        }
        return s.lost > 0 ? 1 : 0
    }

    /// A record in one line: the reading decoded, its context after it.
    static func line(_ r: StoredRecord) -> String {
        var s = summary(r.service.recordCharacteristic, r.measurement)
        if let c = r.context { s += "  | context: " + summary(BluetoothUUID(0x2A34), c) }
        // A CGM record carries only its place in the session: the time comes from the start.
        if r.service == .cgm, let t = r.measurementTime { s += ", \(t)" }
        return s
    }

    private static func summary(_ uuid: BluetoothUUID, _ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { raw in
            (try? CharacteristicDecoder.decode(uuid: uuid, value: raw)).flatMap { $0?.summary } ?? Hex.string(bytes, separator: " ")
        }
    }

    private static func fields(_ uuid: BluetoothUUID, _ bytes: [UInt8]) -> [Field] {
        bytes.withUnsafeBytes { raw in
            var f = [Field("hex", .bytes(bytes))]
            if let d = (try? CharacteristicDecoder.decode(uuid: uuid, value: raw)) ?? nil { f += d.fields }
            return f
        }
    }

    /// A record as one JSON object: its sequence number and time first, then each part.
    static func json(_ r: StoredRecord) -> String {
        var f = [Field("kind", .text("record")), Field("service", .text(r.service.rawValue))]
        if let n = r.sequenceNumber { f.append(Field(r.service == .cgm ? "time_offset_minutes" : "sequence_number", .uint(UInt64(n)))) }
        if let t = r.measurementTime { f.append(Field("time", .text(t.description))) }
        f.append(Field("measurement", .object([Field("hex", .bytes(r.measurement))] + r.measurementFields)))
        if let c = r.context { f.append(Field("context", .object(fields(BluetoothUUID(0x2A34), c)))) }
        return FieldRenderer.jsonObject(f)
    }

    static func json(_ s: RACPClient.Summary) -> String {
        var f = [Field("kind", .text("response")), Field("records", .uint(UInt64(s.records)))]
        switch s.outcome {
        case .answered(let code): f.append(Field("response", .named(UInt64(code.rawValue), code.name)))
        case .count(let n): f.append(Field("number_of_records", .uint(UInt64(n))))
        case .aborted(let confirmed, let answer):
            f.append(Field("response", .text("aborted")))
            f.append(Field("abort_confirmed", .bool(confirmed)))
            if let answer { f.append(Field("abort_response", .named(UInt64(answer.rawValue), answer.name))) }
        case .timedOut: f.append(Field("response", .text("timed out")))
        case .exceeded(let limit):
            f.append(Field("response", .text("given up")))
            switch limit {
            case .procedureTimeout(let ns): f.append(Field("procedure_timeout_s", .text(RACPClient.Limit.seconds(ns))))
            case .values(let n): f.append(Field("max_values", .uint(UInt64(n))))
            }
        }
        if s.malformed > 0 { f.append(Field("malformed", .uint(UInt64(s.malformed)))) }
        if s.droppedAfterAbort > 0 { f.append(Field("dropped_after_abort", .uint(UInt64(s.droppedAfterAbort)))) }
        if s.duplicates > 0 { f.append(Field("duplicates_dropped", .uint(UInt64(s.duplicates)))) }
        if s.outOfOrder > 0 { f.append(Field("out_of_order", .uint(UInt64(s.outOfOrder)))) }
        if s.strayAnswers > 0 { f.append(Field("stray_answers", .uint(UInt64(s.strayAnswers)))) }
        if s.unexpectedRecords > 0 { f.append(Field("unexpected_records", .uint(UInt64(s.unexpectedRecords)))) }
        if s.lost > 0 { f.append(Field("lost", .uint(UInt64(s.lost)))) }
        return FieldRenderer.jsonObject(f)
    }

    /// The ending for people, and whether it is a success (no records found is one).
    static func describe(_ s: RACPClient.Summary, request: RecordRequest, limits: RACPClient.Limits = RACPClient.Limits()) -> (String, Bool) {
        let n = "\(s.records) record\(s.records == 1 ? "" : "s")"
        var text: String
        var ok = true
        switch s.outcome {
        case .answered(let code):
            switch (request, code) {
            case (.delete, .success): text = "deleted"
            case (_, .success): text = "\(n); response: success"
            case (_, .noRecordsFound): text = "\(n); response: no records found"
            default:
                text = "\(n); the device answered: \(code.name) (RACP response code \(code.rawValue))"
                ok = false
            }
        case .count(let c):
            text = "number of stored records: \(c)"
        case .aborted(let confirmed, let answer):
            text = "\(n); aborted" + (confirmed ? "" : answer.map { " (the device answered the Abort: \($0.name))" } ?? " (the device did not answer the Abort)")
            ok = false
        case .timedOut:
            text = "\(n); the device sent neither a record nor an answer for \(RACPClient.Limit.seconds(limits.recordTimeout)) s: the procedure failed"
            ok = false
        case .exceeded(.procedureTimeout(let ns)):
            text = "\(n); the procedure did not finish within \(RACPClient.Limit.seconds(ns)) s (--procedure-timeout): given up"
            ok = false
        case .exceeded(.values(let cap)):
            text = "\(n); the device sent more than \(cap) values in one procedure: given up"
            ok = false
        }
        if s.malformed > 0 {
            text += "; \(s.malformed) malformed value\(s.malformed == 1 ? "" : "s")"
            if s.malformed > limits.keptMalformed { text += " (the first \(limits.keptMalformed) shown)" }
        }
        if s.unexpectedRecords > 0 { text += "; \(s.unexpectedRecords) record\(s.unexpectedRecords == 1 ? "" : "s") not asked for dropped" }
        if s.strayAnswers > 0 { text += "; \(s.strayAnswers) answer\(s.strayAnswers == 1 ? "" : "s") to another procedure ignored" }
        if s.droppedAfterAbort > 0 { text += "; \(s.droppedAfterAbort) record\(s.droppedAfterAbort == 1 ? "" : "s") after the Abort dropped" }
        if s.duplicates > 0 { text += "; \(s.duplicates) repeated record\(s.duplicates == 1 ? "" : "s") dropped" }
        if s.outOfOrder > 0 { text += "; \(s.outOfOrder) out of sequence-number order" }
        if s.lost > 0 {
            text += "; \(s.lost) value\(s.lost == 1 ? "" : "s") lost on the way (the output could not keep up)"
            ok = false
        }
        return (text, ok)
    }
}

extension Duration {
    /// Seconds as people read them ("30", "2.5").
    var seconds: String {
        formatSeconds(Double(components.seconds) + Double(components.attoseconds) / 1e18)
    }
}
