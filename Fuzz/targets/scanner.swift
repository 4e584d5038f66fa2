// Fuzz target: the scanner and the scan line formatter driven by a crowd of hostile
// advertisers. The input is a series of reports (address, type, event type, data, RSSI, time
// step) fed as LE Advertising Report events to a Scanner with a small table (eviction and
// sweeps happen all the time), with the timer fired between them. Invariants: nothing traps;
// the table stays within its bound; every event's device was just reported by that address
// (or is a device held for its scan response, shown new as the full table evicts it);
// each line renders, JSON valid UTF-8 without raw controls; the JSON line's directly written
// AD structures are the writer's bytes.
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard size >= 1 else { return 0 }
    let flags = input[0]
    let config = ScanConfiguration(active: flags & 1 != 0, reportDuplicates: flags & 2 != 0,
                                   deviceTimeout: .nanoseconds(Int64(flags >> 2) * 1000 + 1),
                                   maximumDevices: 8, scanResponseWait: .nanoseconds(500))
    var scanner = Scanner(configuration: config, extended: false)
    var json = ScanFormatter(json: true, origin: 0)
    var text = ScanFormatter(json: false, origin: 0)
    var now: UInt64 = 0
    var offset = 1
    func check(_ events: [ScanEvent]) {
        for e in events {
            for format in [FieldWriter.Format.json, .text] {
                var w = FieldWriter(format: format, out: OutputBuffer(capacity: 256))
                if format == .json { json.write(e, into: &w) } else { text.write(e, into: &w) }
                if format == .json, let problem = w.out.withBytes({ OutputBuffer.jsonOutputViolation($0, lines: false) }) {
                    preconditionFailure(problem)
                }
            }
            // The directly written structures against the writer's.
            let d = e.device
            d.advertisingData.withUnsafeBytes { ad in
                var direct = OutputBuffer(capacity: 256)
                guard json.writeStructures(",\"ad\":[", ad, into: &direct) else { return }
                var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 256))
                w.out.raw("{\"x\":0")
                w.beginRecordContinuing()
                ScanFormatter.structures("ad", ad, into: &w)
                w.endRecord()
                let viaWriter = w.out.withBytes { Array($0.dropFirst(6).dropLast(2)) }
                precondition(direct.withBytes { Array($0) } == viaWriter, "direct AD structures differ from the writer's")
            }
        }
    }
    while offset + 4 <= size {
        let addressByte = input[offset], kind = input[offset + 1], step = input[offset + 2]
        let length = min(Int(input[offset + 3]), 31, size - offset - 4)
        let ad = Array(input[(offset + 4) ..< (offset + 4 + length)])
        offset += 4 + length
        // A few dozen addresses, public and random, so devices repeat and the table fills.
        var report: [UInt8] = [0x02, 0x01, kind & 0x07, (kind >> 3) & 1]
        report += [addressByte & 0x3F, 0x11, 0x22, 0x33, 0x44, 0xC0]
        report += [UInt8(ad.count)] + ad + [UInt8(truncatingIfNeeded: Int(step) - 128)]
        let packet = [0x3E, UInt8(report.count)] + report
        now &+= UInt64(step) * 100
        if let d = scanner.nextDeadline, d <= now { check(scanner.timerFired(now: now)) }
        // The event is a view into the packet: handled while the bytes are alive.
        let events: [ScanEvent] = packet.withUnsafeBytes { bytes in
            guard case .leMeta(let meta)? = try? HCIEvent(parsing: bytes) else { return [] }
            return scanner.handle(meta, now: now)
        }
        precondition(scanner.deviceCount <= 8, "the device table outgrew its bound")
        let fed = UInt64(0xC0_4433_2211) << 8 | UInt64(addressByte & 0x3F)
        for e in events where e.device.address.address.rawValue != fed {
            // Only a device held for its scan response, shown as a full table evicts it.
            guard case .discovered = e, config.active else { preconditionFailure("an event for another address than the report's") }
        }
        check(events)
    }
    check(scanner.flush())
    return 0
}
