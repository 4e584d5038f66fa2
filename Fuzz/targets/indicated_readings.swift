// Fuzz target: collecting a cuff's or scale's indicated readings (IndicatedReadingsCollector)
// driven by a hostile device and any timing: readings at any time, values lost, time
// passing, the link going, the collector stopping.
// Checked on every step: readings delivered are counted exactly, none after the end or at
// or past the limit; the collection ends at most once; the deadline never passes the limit;
// the timer ends it when due.
// fuzz-modules: BluetoothWire BluetoothProfiles

/// A failed check names itself (precondition's message is gone in -O builds).
func check(_ ok: Bool, _ what: @autoclosure () -> String = "check") {
    if !ok { fatalError(what()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    guard let a = input.popFirst(), let b = input.popFirst(), let c = input.popFirst() else { return 0 }
    let timing = IndicatedReadingsCollector.Timing(firstWait: UInt64(a) * 100, quiet: UInt64(b) * 100, limit: UInt64(c) * 400)
    let start: UInt64 = 1_000
    var m = IndicatedReadingsCollector(timing: timing, now: start)
    var now = start, delivered = 0, lost = 0
    var ended: IndicatedReadingsCollector.Summary?
    while let step = input.popFirst() {
        now += UInt64(step >> 3) * 50
        var end: IndicatedReadingsCollector.Summary?
        switch step & 7 {
        case 0, 1, 2:
            if m.reading(now: now) {
                check(ended == nil, "a reading delivered after the end")
                check(now - start < timing.limit, "a reading delivered at \(now) past the limit")
                delivered += 1
            } else if ended == nil {
                end = m.finished
                check(end?.ending == .timeLimit, "a reading refused before the end, not at the limit")
            }
        case 3:
            let n = Int(step >> 3)
            m.lost(n)
            if ended == nil { lost += n }
        case 4:
            end = m.disconnected()
            if ended == nil { check(end?.ending == .disconnected, "disconnected: \(String(describing: end))") }
        case 5:
            end = m.stop()
        default:
            let due = m.deadline.map { now >= $0 } ?? false
            end = m.timeout(now: now)
            check(due == (end != nil), "the timer due \(due), ended \(end != nil)")
        }
        if let deadline = m.deadline { check(deadline <= start + timing.limit && ended == nil, "deadline \(deadline)") }
        if let end {
            check(ended == nil, "ended twice")
            check(end.readings == delivered, "\(end.readings) readings counted, \(delivered) delivered")
            check(end.lost == lost, "\(end.lost) lost counted, \(lost) told")
            ended = end
        }
        if ended != nil { check(m.deadline == nil && m.finished == ended, "a finished collection keeps its summary") }
    }
    return 0
}
