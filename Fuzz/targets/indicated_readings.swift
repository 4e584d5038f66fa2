// Fuzz target: collecting a cuff's or scale's indicated readings (IndicatedReadingsCollector)
// driven by a hostile device and any timing: readings at any time, values lost, time
// passing, the link going, the collector stopping, the subscription's end answered and its
// stream drained in either order.
// Checked on every step: every reading before the end is delivered and counted exactly,
// none after; the subscription is asked to end at most once, and the collection ends only
// after that (or with the link), at most once; the deadline never passes the limit; the
// timer ends it when due.
// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothProfiles

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
    var endAsked = false
    var ended: IndicatedReadingsCollector.Summary?
    while let step = input.popFirst() {
        now += UInt64(step >> 3) * 50
        var end: IndicatedReadingsCollector.Summary?
        switch step & 7 {
        case 0, 1:
            switch m.reading(now: now) {
            case .deliver:
                check(ended == nil, "a reading delivered after the end")
                delivered += 1
            case .deliverAndEnd:
                check(ended == nil && !endAsked, "asked to end twice, or after the end")
                check(now - start >= timing.limit, "ended by a reading before the limit")
                delivered += 1
                endAsked = true
            case .drop:
                check(ended != nil, "a reading dropped before the end")
            }
        case 2:
            let n = Int(step >> 3)
            m.lost(n)
            if ended == nil { lost += n }
        case 3:
            if m.stop() {
                check(!endAsked && ended == nil, "a stop asked to end twice")
                endAsked = true
            }
        case 4:
            end = m.disconnected()
        case 5:
            end = m.streamEnded()
        case 6:
            end = m.subscriptionEnded()
            if end != nil { check(endAsked, "ended by a CCCD write never asked for") }
        default:
            let due = m.deadline.map { now >= $0 } ?? false
            let asked = m.timeout(now: now)
            check(due == asked, "the timer due \(due), asked to end \(asked)")
            if asked {
                check(!endAsked && ended == nil, "the timer asked to end twice")
                endAsked = true
            }
        }
        if let deadline = m.deadline { check(deadline <= start + timing.limit && !endAsked && ended == nil, "deadline \(deadline)") }
        if let end {
            check(ended == nil, "ended twice")
            check(end.readings == delivered, "\(end.readings) readings counted, \(delivered) delivered")
            check(end.lost == lost, "\(end.lost) lost counted, \(lost) told")
            if end.ending != .disconnected { check(endAsked, "a \(end.ending) ending without the subscription ended") }
            ended = end
        }
        if ended != nil { check(m.deadline == nil && m.finished == ended, "a finished collection keeps its summary") }
    }
    return 0
}
