import Testing
@testable import BluetoothProfiles

/// When collecting a cuff's or a scale's indicated readings ends: a first wait, a quiet
/// period after each reading, an overall limit, the device's disconnection, a stop.
@Suite struct IndicatedReadingsCollectorTests {
    static let s: UInt64 = 1_000_000_000
    let timing = IndicatedReadingsCollector.Timing(firstWait: 10 * s, quiet: 3 * s, limit: 20 * s)

    @Test("Nothing stored: the first wait ends it, quiet, no readings")
    func nothingStored() {
        var m = IndicatedReadingsCollector(timing: timing, now: 100)
        #expect(m.deadline == 100 + 10 * Self.s)
        let r1 = m.timeout(now: 100 + 10 * Self.s - 1)
        #expect(r1 == nil)
        let r2 = m.timeout(now: 100 + 10 * Self.s)
        #expect(r2 == .init(ending: .quiet, readings: 0, lost: 0))
        #expect(m.deadline == nil)
        let r3 = m.reading(now: 100 + 11 * Self.s)
        #expect(r3 == false, "a late reading is not ours")
        let r4 = m.disconnected()
        let r4b = m.stop()
        #expect(r4 == nil && r4b == nil, "ends once")
    }

    @Test("Readings back to back, then quiet: each restarts the quiet period")
    func quietAfterReadings() {
        var m = IndicatedReadingsCollector(timing: timing, now: 0)
        for t in [1, 2, 4, 6] { let ok = m.reading(now: UInt64(t) * Self.s); #expect(ok) }
        #expect(m.deadline == 9 * Self.s)
        let r5 = m.timeout(now: 8 * Self.s)
        #expect(r5 == nil)
        // A reading that beats its timer to the machine is still taken.
        let r6 = m.reading(now: 9 * Self.s + 1)
        #expect(r6)
        let r7 = m.timeout(now: 12 * Self.s + 1)
        #expect(r7 == .init(ending: .quiet, readings: 5, lost: 0))
    }

    @Test("Still coming at the limit: timeLimit; a reading past the limit is not delivered")
    func limit() {
        var m = IndicatedReadingsCollector(timing: timing, now: 0)
        for t in stride(from: 1, through: 19, by: 2) { let ok = m.reading(now: UInt64(t) * Self.s); #expect(ok) }
        #expect(m.deadline == 20 * Self.s)
        let r8 = m.timeout(now: 20 * Self.s)
        #expect(r8 == .init(ending: .timeLimit, readings: 10, lost: 0))
        var late = IndicatedReadingsCollector(timing: timing, now: 0)
        let r9 = late.reading(now: 19 * Self.s)
        #expect(r9)
        let r10 = late.reading(now: 20 * Self.s)
        #expect(r10 == false)
        #expect(late.finished == .init(ending: .timeLimit, readings: 1, lost: 0))
        // A first wait longer than the limit: the limit names the ending.
        var long = IndicatedReadingsCollector(timing: .init(firstWait: 30 * Self.s, quiet: Self.s, limit: 5 * Self.s), now: 0)
        #expect(long.deadline == 5 * Self.s)
        let r11 = long.timeout(now: 5 * Self.s)
        #expect(r11?.ending == .timeLimit)
    }

    @Test("The device disconnects (done sending), the collector stops; lost values counted")
    func endings() {
        var m = IndicatedReadingsCollector(timing: timing, now: 0)
        m.lost(2)
        let r12 = m.reading(now: Self.s)
        #expect(r12)
        m.lost(1)
        let r13 = m.disconnected()
        #expect(r13 == .init(ending: .disconnected, readings: 1, lost: 3))
        var n = IndicatedReadingsCollector(timing: timing, now: 0)
        let r14 = n.stop()
        #expect(r14 == .init(ending: .stopped, readings: 0, lost: 0))
        let r15 = n.timeout(now: 100 * Self.s)
        #expect(r15 == nil)
    }
}
