// Fuzz target: the collector's RACP procedure (RACPClient) driven by a hostile sensor. The
// input picks a request, then is a script: records with sequence numbers (or none), control
// point values of any bytes, malformed values, the Write Response, an Abort, time passing.
// Checked on every step: records delivered are counted exactly, none after the Abort or the
// end, no repeats of a sequence number; malformed values handed on at most the kept few;
// the procedure ends at most once, its summary kept; the deadline only ever moves within
// the timeout of the latest step and never past the overall deadline; past the cap on
// values it has ended.
// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothProfiles

/// A failed check names itself (precondition's message is gone in -O builds).
func check(_ ok: Bool, _ what: @autoclosure () -> String = "check") {
    if !ok { fatalError(what()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    guard let pick = input.popFirst() else { return 0 }
    let requests: [RecordAccessControlPoint.Owned] = [
        .reportAllRecords, .reportFirstRecord, .reportLastRecord, .reportNumberOfAllRecords,
        .deleteAllRecords, .records(sequenceNumberAtLeast: 5), .records(sequenceNumbersIn: 2 ... 9),
    ]
    let timeout: UInt64 = 30_000, overall: UInt64 = 120_000, cap = 40, kept = 3
    var m = RACPClient(limits: RACPClient.Limits(recordTimeout: timeout, procedureTimeout: overall, maxValues: cap, keptMalformed: kept))
    var now: UInt64 = 0
    guard m.start(requests[Int(pick) % requests.count], now: now) != nil else { fatalError("start") }
    var delivered = 0, seen = Set<UInt16>(), aborted = false, values = 0, malformed = 0
    var ended: RACPClient.Summary?
    while let step = input.popFirst() {
        now += UInt64(step >> 4) * 1000
        var end: RACPClient.Summary?
        switch step & 7 {
        case 0, 1:
            guard let a = input.popFirst(), let b = input.popFirst() else { return 0 }
            let n: UInt16? = step & 1 == 0 ? UInt16(a) | UInt16(b) << 8 : nil
            values += 1
            if m.record(sequenceNumber: n, now: now) == .deliver {
                check(ended == nil && !aborted, "a record delivered after the Abort or the end")
                if let n { check(seen.insert(n).inserted, "sequence number \(n) delivered twice") }
                delivered += 1
            }
        case 2:
            guard let n = input.popFirst() else { return 0 }
            let count = min(Int(n & 7), input.count)
            end = m.controlPoint(Array(input.prefix(count)), now: now)
            input = input.dropFirst(count)
        case 3:
            m.written(now: now)
        case 4:
            if m.abort(now: now) != nil {
                check(ended == nil && !aborted, "an Abort after the end or twice")
                aborted = true
            }
        case 5:
            values += 1
            if m.malformed(now: now) == .deliver {
                check(ended == nil && !aborted, "a malformed value handed on after the Abort or the end")
                malformed += 1
                check(malformed <= kept, "more malformed values handed on than kept")
            }
        default:
            end = m.timeout(now: now)
        }
        if let deadline = m.deadline {
            check(deadline <= now + timeout && deadline <= overall && ended == nil, "deadline \(deadline) at \(now)")
        }
        if values > cap { check(m.finished != nil, "\(values) values and still running") }
        // A bound may end it on a record or a malformed value too.
        if end == nil, ended == nil, let f = m.finished, case .exceeded = f.outcome { end = f }
        if let end {
            check(ended == nil, "ended twice")
            check(end.records == delivered, "\(end.records) records counted, \(delivered) delivered")
            if case .aborted = end.outcome { check(aborted, "aborted with no Abort") }
            ended = end
        }
        check(m.finished == ended, "the summary kept")
    }
    return 0
}
