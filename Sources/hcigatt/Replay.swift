import BluetoothHost
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat

/// `hcigatt replay FILE`: decode a btsnoop capture offline.
///
/// By default the recorded advertising reports go through the same scanner as a live
/// `hcigatt scan` (same filters, same duplicate handling), so the output is what the live
/// scan printed. `--packets` dumps every packet instead, decoded down to ATT/SMP.
enum ReplayCommand {
    static var command: Command {
        Command(
            name: "replay", summary: "Decode a btsnoop capture offline (scan results, or every packet)",
            help: """
            Usage: hcigatt replay FILE [--packets] [--json] [--stats] [scan filters]

            Reads a btsnoop file (H4 datalink 1002, as written by `--snoop` or btmon/Android)
            and prints what a live `hcigatt scan` printed from the same packets. Active or
            passive scanning is taken from the recorded scan parameters (--passive forces it).

            Options:
              --packets              print every packet (direction, time, decoded layers)
              --json                 JSON Lines instead of text
              --stats                finish with one JSON line of counts and throughput
              --duplicates, --service UUID, --name SUBSTR, --address ADDR, --min-rssi DBM,
              --passive              the scan filters, as for `hcigatt scan`
            """,
            spec: Arguments.Spec(flags: ["packets", "json", "stats", "passive", "duplicates"],
                                 options: ["service", "name", "address", "min-rssi"]),
            run: { args in try run(args) }
        )
    }

    static func run(_ args: Arguments) throws -> Int32 {
        guard let path = args.positional.first else { throw UsageError("missing FILE") }
        guard args.positional.count == 1 else { throw UsageError("unexpected argument '\(args.positional[1])'") }
        var config = try ScanCommand.configuration(args)
        let file: BTSnoopFile
        do { file = try BTSnoopFile(path: path) } catch { throw RuntimeError(error.message) }
        let json = args.flag("json")
        let packetsMode = args.flag("packets")
        let start = monotonicNow()

        var packets = 0, events = 0, reports = 0, malformed = 0
        var scanner: Scanner?
        var printer: ScanFormatter?
        var firstTimestamp: Int64?
        var failure: String?

        do {
            try file.forEachRecord { record in
                packets += 1
                let first = firstTimestamp ?? record.timestamp
                firstTimestamp = first
                let now = UInt64(max(0, record.timestamp &- first)) &* 1000
                if packetsMode {
                    printPacket(record, now: now, json: json, malformed: &malformed)
                    return
                }
                guard let type = record.data.first.map(H4PacketType.init(rawValue:)) else { malformed += 1; return }
                let packet = UnsafeRawBufferPointer(rebasing: record.data.dropFirst())
                if !record.flags.isReceived {
                    // The recorded scan parameters say whether the scan was active.
                    if type == .command, !args.flag("passive"), let active = scanIsActive(packet) { config.active = active }
                    return
                }
                guard type == .event else { return }
                events += 1
                let event: HCIEvent
                do throws(WireError) { event = try HCIEvent(parsing: packet) } catch { malformed += 1; return }
                guard case .leMeta(let meta) = event else { return }
                switch meta {
                case .advertisingReport, .extendedAdvertisingReport: break
                default: return
                }
                if scanner == nil {
                    scanner = Scanner(configuration: config, extended: false)
                    printer = ScanFormatter(json: json, origin: 0)
                }
                // Optional chaining mutates in place: no copy of the device table or the set.
                if let d = scanner?.nextDeadline, d <= now {
                    for e in scanner?.timerFired(now: now) ?? [] { emit(e, &printer) }
                }
                let before = scanner?.statistics.reports ?? 0
                for e in scanner?.handle(meta, now: now) ?? [] { emit(e, &printer) }
                reports += (scanner?.statistics.reports ?? 0) - before
            }
        } catch let e as TransportError {
            failure = e.message
        }
        for e in scanner?.flush() ?? [] { emit(e, &printer) }
        let elapsed = Double(monotonicNow() &- start) / 1e9
        if args.flag("stats") {
            Console.out(FieldRenderer.jsonObject([
                Field("packets", .uint(UInt64(packets))),
                Field("events", .uint(UInt64(events))),
                Field("advertising_reports", .uint(UInt64(reports))),
                Field("devices", .uint(UInt64(printer?.devicesShown ?? 0))),
                Field("lines", .uint(UInt64(printer?.linesFormatted ?? 0))),
                Field("malformed", .uint(UInt64(malformed))),
                Field("seconds", .double(elapsed)),
                Field("reports_per_second", .double(elapsed > 0 ? (Double(reports) / elapsed).rounded() : 0)),
            ]))
        }
        Console.flush()
        if let failure { throw RuntimeError(failure) }
        if malformed > 0 { Console.err("hcigatt replay: \(malformed) malformed packet\(malformed == 1 ? "" : "s") skipped") }
        return 0
    }

    static func emit(_ event: ScanEvent, _ printer: inout ScanFormatter?) {
        if let line = printer?.format(event) { Console.out(line) }
    }

    /// For LE Set (Extended) Scan Parameters: whether scanning is active.
    static func scanIsActive(_ packet: UnsafeRawBufferPointer) -> Bool? {
        do throws(WireError) {
            switch try HCICommand(parsing: packet) {
            case .leSetScanParameters(let c): return c.scanType == .active
            case .leSetExtendedScanParameters(let c): return (c.le1M ?? c.leCoded)?.scanType == .active
            default: return nil
            }
        } catch {
            return nil
        }
    }

    static func printPacket(_ record: BTSnoopRecord, now: UInt64, json: Bool, malformed: inout Int) {
        let direction = record.flags.isReceived ? "<" : ">"
        let time = formatSeconds(Double(now) / 1e9)
        do throws(WireError) {
            let d = try Dissector.h4(record.data)
            if d.error != nil { malformed += 1 }
            if json {
                let fields = [Field("time", .double(Double(now) / 1e9)),
                              Field("direction", .text(record.flags.isReceived ? "received" : "sent"))] + d.fields
                Console.out(FieldRenderer.json(type: "h4", title: d.title, fields: fields))
            } else {
                Console.out(FieldRenderer.text(title: "\(time) \(direction) \(d.title)", fields: d.fields))
            }
        } catch {
            malformed += 1
            Console.out("\(time) \(direction) malformed packet: \(error) [\(Hex.string(record.data, separator: " "))]")
        }
    }
}
