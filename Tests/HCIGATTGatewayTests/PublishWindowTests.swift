import Testing
@testable import HCIGATTGateway

/// The publish window as the broker drives it: acknowledgements in and out of order,
/// sessions kept and lost, a client that stops answering.
@Suite struct PublishWindowTests {
    /// Hands over everything it may; returns the ids in the order given.
    func drain(_ w: inout PublishWindow, end: UInt64, now: UInt64 = 0) -> [UInt64] {
        var out: [UInt64] = []
        while let id = w.next(end: end) {
            w.sent(id, at: now)
            out.append(id)
        }
        return out
    }

    @Test func inOrderWithinCapacityAndTheHeadFollowsAcknowledgements() {
        var w = PublishWindow(head: 10, capacity: 4)
        #expect(w.next(end: 20) == nil, "nothing before the connection")
        w.connectionUp()
        #expect(drain(&w, end: 20) == [10, 11, 12, 13])
        let ahead = w.acknowledged(11)
        #expect(ahead == nil, "an acknowledgement ahead of the head does not move it")
        #expect(drain(&w, end: 20) == [14])
        let both = w.acknowledged(10)
        #expect(both == 12, "both are acknowledged now")
        #expect(drain(&w, end: 20) == [15])
        let h13 = w.acknowledged(12), h14 = w.acknowledged(13)
        #expect(h13 == 13 && h14 == 14)
    }

    @Test func aLostSessionSendsTheGivenUpAgainBeforeAnythingNewer() {
        var w = PublishWindow(head: 0, capacity: 8)
        w.connectionUp()
        #expect(drain(&w, end: 5) == [0, 1, 2, 3, 4])
        let h1 = w.acknowledged(0)
        #expect(h1 == 1)
        w.connectionLost()
        #expect(w.next(end: 10) == nil)
        // The broker lost the session: the client gives each in-flight message up.
        for id in [1, 2, 3, 4] as [UInt64] { w.failed(id) }
        w.connectionUp()
        #expect(drain(&w, end: 10) == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test func aKeptSessionResendsByItselfAndNothingIsDuplicated() {
        var w = PublishWindow(head: 0, capacity: 8)
        w.connectionUp()
        #expect(drain(&w, end: 3) == [0, 1, 2])
        w.connectionLost()
        w.connectionUp()
        // The client resends 0...2 itself; the window goes on with what is new.
        #expect(drain(&w, end: 5) == [3, 4])
        for id in 0 ..< 5 as Range<UInt64> { _ = w.acknowledged(id) }
        #expect(w.head == 5 && w.inFlightCount == 0)
    }

    @Test func timeDisconnectedDoesNotCountTowardsResending() {
        var w = PublishWindow(head: 0, capacity: 4, resendAfter: 100)
        w.connectionUp(now: 0)
        #expect(drain(&w, end: 1, now: 0) == [0])
        w.connectionLost()
        w.connectionUp(now: 500)  // the client resends 0 itself
        let stale = w.tick(now: 550)
        #expect(!stale)
        let later = w.tick(now: 600)
        #expect(later)
    }

    @Test func aMessageTheClientNeverAnswersIsSentAgain() {
        var w = PublishWindow(head: 0, capacity: 4, resendAfter: 100)
        w.connectionUp()
        #expect(drain(&w, end: 2, now: 0) == [0, 1])
        let early = w.tick(now: 50)
        #expect(!early)
        _ = w.acknowledged(1)
        let late = w.tick(now: 150)
        #expect(late)
        #expect(drain(&w, end: 2, now: 150) == [0])
        let h2 = w.acknowledged(0)
        #expect(h2 == 2)
    }

    @Test func aRefusedSendStaysNextAndDroppedReadingsAreNotWaitedFor() {
        var w = PublishWindow(head: 0, capacity: 4)
        w.connectionUp()
        let id = w.next(end: 10)
        #expect(id == 0)
        w.sendRefused(0, disconnected: true)
        #expect(w.next(end: 10) == nil && !w.connected)
        w.connectionUp()
        #expect(w.next(end: 10) == 0)
        // A full client queue: held until something moves, still connected.
        w.sendRefused(0, disconnected: false)
        #expect(w.next(end: 10) == nil && w.connected && w.blocked)
        _ = w.tick(now: 1)
        #expect(w.next(end: 10) == 0)
        #expect(drain(&w, end: 10) == [0, 1, 2, 3])
        w.dropped(below: 6)
        #expect(w.head == 6 && w.inFlightCount == 0)
        #expect(drain(&w, end: 10) == [6, 7, 8, 9])
        _ = w.acknowledged(2)  // a late answer for a dropped one changes nothing
        #expect(w.head == 6)
    }

    /// Found by the fuzz target: an answer for an id never handed over moved the head.
    @Test func anAnswerForWhatWasNeverSentChangesNothing() {
        var w = PublishWindow(head: 0, capacity: 4)
        let h = w.acknowledged(0)
        #expect(h == nil && w.head == 0)
        w.connectionUp()
        #expect(drain(&w, end: 1) == [0])
        let h1 = w.acknowledged(0)
        #expect(h1 == 1)
    }

    /// Random broker behaviour against a model: every id is eventually acknowledged,
    /// handed over in order the first time, and the head never passes an unacknowledged one.
    @Test func randomBrokerBehaviourNeverLosesOrReorders() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0 ..< 200 {
            var w = PublishWindow(head: 0, capacity: Int.random(in: 1 ... 6, using: &rng), resendAfter: 5)
            var now: UInt64 = 0
            var end: UInt64 = 0
            var acked = Set<UInt64>()
            var inClient: [UInt64] = []
            var firstSends: [UInt64] = []
            var sentOnce = Set<UInt64>()
            for _ in 0 ..< 300 {
                now += 1
                switch Int.random(in: 0 ..< 10, using: &rng) {
                case 0: end += UInt64.random(in: 1 ... 3, using: &rng)
                case 1: w.connectionLost()
                case 2: w.connectionUp()
                case 3 where !inClient.isEmpty:
                    let id = inClient.remove(at: Int.random(in: 0 ..< inClient.count, using: &rng))
                    w.failed(id)
                case 4 where !inClient.isEmpty:
                    let id = inClient.remove(at: 0)
                    acked.insert(id)
                    _ = w.acknowledged(id)
                default: _ = w.tick(now: now)
                }
                while let id = w.next(end: end) {
                    w.sent(id, at: now)
                    inClient.append(id)
                    if sentOnce.insert(id).inserted { firstSends.append(id) }
                }
                #expect(w.head <= (acked.isEmpty ? 0 : (0 ... w.head).first { !acked.contains($0) } ?? w.head))
            }
            // Then a well-behaved broker: everything gets through.
            w.connectionUp()
            end += 1
            var rounds = 0
            while w.head < end, rounds < 10_000 {
                rounds += 1
                now += 10
                while let id = w.next(end: end) {
                    w.sent(id, at: now)
                    inClient.append(id)
                    if sentOnce.insert(id).inserted { firstSends.append(id) }
                }
                if inClient.isEmpty { _ = w.tick(now: now) } else { _ = w.acknowledged(inClient.removeFirst()) }
            }
            #expect(w.head == end, "stuck at \(w.head) of \(end)")
            #expect(firstSends == Array(0 ..< end), "first sends in order")
        }
    }
}
