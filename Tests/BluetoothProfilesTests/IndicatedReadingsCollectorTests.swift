import Testing
@testable import BluetoothProfiles

/// When collecting a cuff's or a scale's indicated readings ends: a first wait, a quiet
/// period after each reading, an overall limit, the device's disconnection, a stop; and the
/// subscription's end, during which readings still on their way are delivered.
@Suite struct IndicatedReadingsCollectorTests {
    static let s: UInt64 = 1_000_000_000
    let timing = IndicatedReadingsCollector.Timing(firstWait: 10 * s, quiet: 3 * s, limit: 20 * s)

    /// Ends the subscription the way the driver does (CCCD answered, then the stream drained).
    func close(_ m: inout IndicatedReadingsCollector) -> IndicatedReadingsCollector.Summary? {
        let early = m.subscriptionEnded()
        #expect(early == nil, "not done before the stream is drained")
        return m.streamEnded()
    }

    @Test("Nothing stored: the first wait ends it, quiet, no readings")
    func nothingStored() {
        var m = IndicatedReadingsCollector(timing: timing, now: 100)
        #expect(m.deadline == 100 + 10 * Self.s)
        let notYet = m.timeout(now: 100 + 10 * Self.s - 1)
        #expect(!notYet)
        let due = m.timeout(now: 100 + 10 * Self.s)
        #expect(due && m.deadline == nil)
        let again = m.timeout(now: 100 + 20 * Self.s)
        #expect(!again, "once")
        #expect(close(&m) == .init(ending: .quiet, readings: 0, lost: 0))
        let late = m.reading(now: 100 + 21 * Self.s)
        #expect(late == .drop, "after the subscription ended: not ours")
        let after = (m.streamEnded(), m.disconnected(), m.stop())
        #expect(after.0 == nil && after.1 == nil && !after.2, "ends once")
    }

    @Test("Readings back to back, then quiet: each restarts the quiet period; one on its way is still delivered")
    func quietAfterReadings() {
        var m = IndicatedReadingsCollector(timing: timing, now: 0)
        for t in [1, 2, 4, 6] { let v = m.reading(now: UInt64(t) * Self.s); #expect(v == .deliver) }
        #expect(m.deadline == 9 * Self.s)
        let early = m.timeout(now: 8 * Self.s)
        #expect(!early)
        let beat = m.reading(now: 9 * Self.s + 1)
        #expect(beat == .deliver, "a reading that beats its timer to the machine")
        let due = m.timeout(now: 12 * Self.s + 1)
        #expect(due)
        // The device sent one more before the CCCD was cleared: confirmed, so delivered.
        let onItsWay = m.reading(now: 12 * Self.s + 2)
        #expect(onItsWay == .deliver)
        #expect(close(&m) == .init(ending: .quiet, readings: 6, lost: 0))
    }

    @Test("Still coming at the limit: timeLimit; a reading at the limit is delivered and ends it")
    func limit() {
        var m = IndicatedReadingsCollector(timing: timing, now: 0)
        for t in stride(from: 1, through: 19, by: 2) { let v = m.reading(now: UInt64(t) * Self.s); #expect(v == .deliver) }
        #expect(m.deadline == 20 * Self.s)
        let due = m.timeout(now: 20 * Self.s)
        #expect(due)
        #expect(close(&m) == .init(ending: .timeLimit, readings: 10, lost: 0))
        var late = IndicatedReadingsCollector(timing: timing, now: 0)
        let first = late.reading(now: 19 * Self.s), atLimit = late.reading(now: 20 * Self.s)
        #expect(first == .deliver && atLimit == .deliverAndEnd)
        #expect(late.deadline == nil)
        // The stream drained first, then the CCCD write answered: either order ends it.
        let drained = late.streamEnded()
        #expect(drained == nil)
        #expect(late.subscriptionEnded() == .init(ending: .timeLimit, readings: 2, lost: 0))
        // A first wait longer than the limit: the limit names the ending.
        var long = IndicatedReadingsCollector(timing: .init(firstWait: 30 * Self.s, quiet: Self.s, limit: 5 * Self.s), now: 0)
        #expect(long.deadline == 5 * Self.s)
        let longDue = long.timeout(now: 5 * Self.s)
        #expect(longDue)
        #expect(close(&long)?.ending == .timeLimit)
    }

    @Test("The device disconnects (done sending), the collector stops; lost values counted")
    func endings() {
        var m = IndicatedReadingsCollector(timing: timing, now: 0)
        m.lost(2)
        let v = m.reading(now: Self.s)
        #expect(v == .deliver)
        m.lost(1)
        #expect(m.disconnected() == .init(ending: .disconnected, readings: 1, lost: 3))
        var n = IndicatedReadingsCollector(timing: timing, now: 0)
        let stopped = n.stop(), twice = n.stop()
        #expect(stopped && !twice)
        #expect(close(&n) == .init(ending: .stopped, readings: 0, lost: 0))
        // The link goes while the subscription is being ended: the decided ending stands.
        var o = IndicatedReadingsCollector(timing: timing, now: 0)
        _ = o.reading(now: Self.s)
        let due = o.timeout(now: 4 * Self.s)
        #expect(due)
        #expect(o.disconnected() == .init(ending: .quiet, readings: 1, lost: 0))
        // The stream ending on its own (not asked): the link went.
        var p = IndicatedReadingsCollector(timing: timing, now: 0)
        #expect(p.streamEnded() == .init(ending: .disconnected, readings: 0, lost: 0))
    }
}
