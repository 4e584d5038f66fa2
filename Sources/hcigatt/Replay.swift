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
        // A capture is one table of devices however often scanning was switched on and off
        // (phones do it all the time): nothing is forgotten for being unheard a while.
        config.deviceTimeout = .seconds(100 * 365 * 86_400)
        let json = args.flag("json")
        let packetsMode = args.flag("packets")
        let start = monotonicNow()

        var packets = 0, events = 0, reports = 0, malformed = 0
        var scanner: Scanner?
        var printer = ScanFormatter(json: json, origin: 0)
        var writer = FieldWriter(format: json ? .json : .text, out: OutputBuffer(capacity: Console.blockSize + 4096))
        var scanEvents: [ScanEvent] = []
        scanEvents.reserveCapacity(16)
        // Every device shown, so one is "new" once per capture (the scanner's table is
        // bounded and may forget it); 8 bytes each.
        var shown = Set<LEAddress>()
        var firstTimestamp: Int64?
        var failure: String?

        func emit(_ events: inout [ScanEvent]) {
            for e in events {
                let d = e.device
                printer.write(d, isNew: shown.insert(d.address).inserted, into: &writer)
            }
            events.removeAll(keepingCapacity: true)
            if writer.out.count >= Console.blockSize { Console.write(&writer.out) }
        }

        do {
            try BTSnoopFile.stream(path: path) { record in
                packets += 1
                let first = firstTimestamp ?? record.timestamp
                firstTimestamp = first
                let now = UInt64(max(0, record.timestamp &- first)) &* 1000
                if packetsMode {
                    printPacket(record, now: now, into: &writer, malformed: &malformed)
                    if writer.out.count >= Console.blockSize { Console.write(&writer.out) }
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
                if scanner == nil { scanner = Scanner(configuration: config, extended: false) }
                // Optional chaining mutates in place: no copy of the device table or the set.
                if let d = scanner?.nextDeadline, d <= now {
                    scanEvents += scanner?.timerFired(now: now) ?? []
                    emit(&scanEvents)
                }
                let before = scanner?.statistics.reports ?? 0
                scanner?.handle(meta, now: now, into: &scanEvents)
                emit(&scanEvents)
                reports += (scanner?.statistics.reports ?? 0) - before
            }
        } catch let e as TransportError {
            failure = e.message
        }
        scanEvents += scanner?.flush() ?? []
        emit(&scanEvents)
        Console.write(&writer.out)
        let elapsed = Double(monotonicNow() &- start) / 1e9
        if args.flag("stats") {
            Console.out(FieldRenderer.jsonObject([
                Field("packets", .uint(UInt64(packets))),
                Field("events", .uint(UInt64(events))),
                Field("advertising_reports", .uint(UInt64(reports))),
                Field("devices", .uint(UInt64(printer.devicesShown))),
                Field("lines", .uint(UInt64(printer.linesFormatted))),
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

    static func printPacket(_ record: BTSnoopRecord, now: UInt64, into w: inout FieldWriter, malformed: inout Int) {
        let received = record.flags.isReceived
        do throws(WireError) {
            let d = try Dissector.h4(record.data)
            if d.error != nil { malformed += 1 }
            if w.format == .json {
                w.beginRecord(type: "h4", title: d.title)
                w.double("time", Double(now) / 1e9)
                if received { w.text("direction", literal: "received") } else { w.text("direction", literal: "sent") }
            } else {
                w.out.utf8(formatSeconds(Double(now) / 1e9))
                if received { w.out.raw(" < ") } else { w.out.raw(" > ") }
                w.out.utf8(d.title)
                w.beginRecord()
            }
            w.fields(d.fields)
            w.endRecord()
        } catch {
            // A malformed packet is one text line in either format, as before.
            malformed += 1
            w.out.utf8("\(formatSeconds(Double(now) / 1e9)) \(received ? "<" : ">") malformed packet: \(error) [\(Hex.string(record.data, separator: " "))]")
            w.out.byte(UInt8(ascii: "\n"))
        }
    }
}
