import BluetoothHost
import BluetoothSecurity
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
            Usage: hcigatt replay FILE [--packets] [--json] [--stats] [--bond-dir DIR] [scan filters]

            Reads a btsnoop file (H4 datalink 1002, as written by `--snoop` or btmon/Android)
            and prints what a live `hcigatt scan` printed from the same packets. Active or
            passive scanning is taken from the recorded scan parameters (--passive forces it).

            Options:
              --packets              print every packet (direction, time, decoded layers)
              --json                 JSON Lines instead of text
              --stats                finish with one JSON line of counts and throughput
              --bond-dir DIR         bonds whose IRKs resolve private addresses to identities
                                     in the scan results, as the live scan shows them (default
                                     $HCIGATT_BOND_DIR, else /var/lib/hcigatt/bonds; not read
                                     with --packets)
              --duplicates, --service UUID, --name SUBSTR, --address ADDR, --min-rssi DBM,
              --passive              the scan filters, as for `hcigatt scan`
            """,
            spec: Arguments.Spec(flags: ["packets", "json", "stats", "passive", "duplicates"],
                                 options: ["service", "name", "address", "min-rssi", "bond-dir"]),
            run: { args in try run(args) }
        )
    }

    static func run(_ args: Arguments) throws -> Int32 {
        guard let path = args.positional.first else { throw UsageError("missing FILE") }
        guard args.positional.count == 1 else { throw UsageError("unexpected argument '\(args.positional[1])'") }
        let config = try ScanCommand.configuration(args)
        let packets = args.flag("packets")
        // The bonds' IRKs, for the scan results. A directory named on the command line must
        // open (a typo would silently resolve nothing); the default one may be absent.
        var keys: [AddressResolver.Entry] = []
        if !packets {
            let store = SecurityOptions.bondStore(args)
            if args.option("bond-dir") != nil, let reason = BondStore.unreadable(store.directory) {
                throw UsageError("--bond-dir \(store.directory): \(reason)")
            }
            keys = store.resolvingEntries()
        }
        let start = monotonicNow()
        // Scan results are formatted on a second thread (packets are written as read; the
        // replay's own buffer then holds nothing).
        var replay = CaptureReplay(configuration: config, json: args.flag("json"), packets: packets,
                                   forcePassive: args.flag("passive"),
                                   bufferCapacity: packets ? Console.blockSize + 4096 : 64,
                                   resolving: keys, defersLines: !packets)
        let formatting = packets ? nil : ScanLineThread(formatter: replay.lineFormatter(), format: replay.writer.format)
        var batch: [ScanLine] = []
        var failure: String?
        Console.batch = true
        formatting?.start()
        do {
            try BTSnoopFile.stream(path: path) { record in
                replay.record(record)
                // Checked after each batch or block written: the reader went away (`| head`)?
                if let formatting {
                    guard replay.pendingLineCount >= ScanLineThread.batchSize else { return }
                    replay.takeLines(&batch)
                    formatting.submit(&batch)
                } else {
                    guard replay.writer.out.count >= Console.blockSize else { return }
                    Console.write(&replay.writer.out)
                }
                if Console.stdoutClosed { throw StoppedEarly() }
            }
        } catch let e as TransportError {
            // A file that cannot be opened or is not a capture: the error alone, no stats.
            if replay.packets == 0 { formatting?.finish(); throw RuntimeError(e.message) }
            failure = e.message
        } catch is StoppedEarly {
            formatting?.finish()
            return 0
        } catch {
            formatting?.finish()
            throw error
        }
        replay.finish()
        if let formatting {
            replay.takeLines(&batch)
            formatting.submit(&batch)
            formatting.finish()
        }
        Console.write(&replay.writer.out)
        // The reader went away during the last lines: no statistics or warnings after them.
        if Console.stdoutClosed { return 0 }
        let elapsed = Double(monotonicNow() &- start) / 1e9
        if args.flag("stats") {
            Console.out(FieldRenderer.jsonObject([
                Field("packets", .uint(UInt64(replay.packets))),
                Field("events", .uint(UInt64(replay.events))),
                Field("advertising_reports", .uint(UInt64(replay.reports))),
                Field("devices", .uint(UInt64(replay.devices))),
                Field("lines", .uint(UInt64(replay.lines))),
                Field("malformed", .uint(UInt64(replay.malformed))),
                Field("seconds", .double(elapsed)),
                Field("reports_per_second", .double(elapsed > 0 ? (Double(replay.reports) / elapsed).rounded() : 0)),
            ]))
        }
        Console.flush()
        if let failure { throw RuntimeError(failure) }
        let malformed = replay.malformed
        if malformed > 0 { Console.err("hcigatt replay: \(malformed) malformed packet\(malformed == 1 ? "" : "s") skipped") }
        return 0
    }
}

/// Ends the replay loop when stdout is closed.
private struct StoppedEarly: Error {}
