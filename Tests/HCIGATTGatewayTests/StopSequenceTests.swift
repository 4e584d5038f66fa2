import HCIGATTGateway
import Testing

private let s: UInt64 = 1_000_000_000

@Suite struct StopSequenceTests {
    @Test func runningDoesNothingUntilAStop() {
        var stop = StopSequence()
        #expect(stop.advance(now: 100 * s, inFlight: 0, connected: true, linkEnded: false) == nil)
        #expect(stop.advance(now: 100 * s, inFlight: 0, connected: false, linkEnded: true) == nil, "a lost link is no stop")
        #expect(!stop.isStopping)
    }

    @Test func connectedAndIdleSaysOfflineThenDisconnectsAndEndsWithTheDisconnect() {
        var stop = StopSequence()
        #expect(stop.stop(now: 10 * s, connected: true) == .publishOffline)
        #expect(stop.isStopping && !stop.isStopped)
        #expect(stop.stop(now: 10 * s, connected: true) == nil, "asked twice")
        #expect(stop.advance(now: 10 * s, inFlight: 0, connected: true, linkEnded: false) == .disconnect)
        #expect(stop.advance(now: 11 * s, inFlight: 0, connected: true, linkEnded: false) == nil)
        #expect(stop.advance(now: 11 * s, inFlight: 0, connected: false, linkEnded: true) == .finish)
        #expect(stop.isStopped)
        #expect(stop.advance(now: 12 * s, inFlight: 0, connected: false, linkEnded: true) == nil)
    }

    @Test func inFlightReadingsAreWaitedForUpToTheDrainTime() {
        var stop = StopSequence()
        _ = stop.stop(now: 0, connected: true)
        #expect(stop.advance(now: 1 * s, inFlight: 5, connected: true, linkEnded: false) == nil)
        // Acknowledged meanwhile: out at once.
        var early = stop
        #expect(early.advance(now: 2 * s, inFlight: 0, connected: true, linkEnded: false) == .disconnect)
        // Never acknowledged: at 3 s.
        #expect(stop.advance(now: StopSequence.drainTime - 1, inFlight: 5, connected: true, linkEnded: false) == nil)
        #expect(stop.advance(now: StopSequence.drainTime, inFlight: 5, connected: true, linkEnded: false) == .disconnect)
    }

    @Test func aLinkDownStopsWaitingForAcknowledgements() {
        var stop = StopSequence()
        #expect(stop.stop(now: 0, connected: false) == nil, "offline cannot be said: the will says it")
        #expect(stop.advance(now: 0, inFlight: 7, connected: false, linkEnded: false) == .disconnect)
        var lost = StopSequence()
        _ = lost.stop(now: 0, connected: true)
        #expect(lost.advance(now: s, inFlight: 7, connected: false, linkEnded: true) == .disconnect)
        #expect(lost.advance(now: 2 * s, inFlight: 7, connected: false, linkEnded: true) == .finish)
    }

    @Test func aDisconnectNeverReportedEndsAfterItsTime() {
        var stop = StopSequence()
        _ = stop.stop(now: 0, connected: true)
        #expect(stop.advance(now: 0, inFlight: 0, connected: true, linkEnded: false) == .disconnect)
        #expect(stop.advance(now: StopSequence.disconnectTime - 1, inFlight: 0, connected: true, linkEnded: false) == nil)
        #expect(stop.advance(now: StopSequence.disconnectTime, inFlight: 0, connected: true, linkEnded: false) == .finish)
    }
}
