// The collector's side of the services with no control point: a blood pressure cuff (BLS
// 1.0 §3.1) or a weight scale (WSS 1.0 §3.1) indicates the readings it took while no
// collector was near, oldest first, once a bonded collector is subscribed, with no count
// and no end marker. What ends the collection is the collector's choice: the device
// disconnects (cuffs do once they have sent everything), it goes quiet, or a time limit.

/// When collecting indicated readings ends, sans-I/O: readings and time in, the ending out.
public struct IndicatedReadingsCollector: Sendable {
    /// Why collecting ended.
    public enum Ending: Sendable, Hashable {
        /// No reading came for the quiet period (or for the first wait, before any came).
        case quiet
        /// The overall limit passed while readings still came.
        case timeLimit
        /// The device disconnected (what cuffs do when they have sent everything).
        case disconnected
        /// The collector stopped it (Ctrl-C, a program that stopped listening).
        case stopped
    }

    /// How it went.
    public struct Summary: Sendable, Hashable {
        /// Why it ended.
        public var ending: Ending
        /// Readings delivered.
        public var readings: Int
        /// Values lost on the way (a consumer too slow for the subscription's buffer).
        public var lost: Int
    }

    /// How long to wait, in nanoseconds.
    public struct Timing: Sendable, Hashable {
        /// For the first reading after subscribing (devices take a moment to start).
        public var firstWait: UInt64
        /// After each reading, for the next.
        public var quiet: UInt64
        /// Overall, from the start.
        public var limit: UInt64

        /// Defaults: 10 s for the first reading, 3 s between readings, 2 min in all (readings
        /// come back to back, one per confirmed indication; one collector app's limit).
        public init(firstWait: UInt64 = 10_000_000_000, quiet: UInt64 = 3_000_000_000, limit: UInt64 = 120_000_000_000) {
            self.firstWait = firstWait
            self.quiet = quiet
            self.limit = limit
        }
    }

    /// The phase.
    enum State: Sendable, Hashable {
        /// Subscribed at `start`; no reading yet.
        case waitingForFirst(start: UInt64, lost: Int)
        /// Readings coming; the last at `last`.
        case collecting(start: UInt64, last: UInt64, readings: Int, lost: Int)
        /// Done.
        case finished(Summary)
    }

    private(set) var state: State
    /// The waits it was made with.
    public let timing: Timing

    /// Collecting from `now` (the subscription is in place).
    public init(timing: Timing = Timing(), now: UInt64) {
        self.timing = timing
        state = .waitingForFirst(start: now, lost: 0)
    }

    /// When ``timeout(now:)`` is due; nil once finished.
    public var deadline: UInt64? {
        switch state {
        case .waitingForFirst(let start, _):
            return Swift.min(start &+ timing.firstWait, start &+ timing.limit)
        case .collecting(let start, let last, _, _):
            return Swift.min(last &+ timing.quiet, start &+ timing.limit)
        case .finished:
            return nil
        }
    }

    /// The summary once finished.
    public var finished: Summary? {
        if case .finished(let s) = state { return s }
        return nil
    }

    /// A reading came: true to deliver it (false once finished, or past the limit: the
    /// collection is over however late its timer runs). One that beats the quiet period's
    /// timer is still taken.
    public mutating func reading(now: UInt64) -> Bool {
        switch state {
        case .waitingForFirst(let start, let lost):
            guard now &- start < timing.limit else {
                state = .finished(Summary(ending: .timeLimit, readings: 0, lost: lost))
                return false
            }
            state = .collecting(start: start, last: now, readings: 1, lost: lost)
        case .collecting(let start, _, let readings, let lost):
            guard now &- start < timing.limit else {
                state = .finished(Summary(ending: .timeLimit, readings: readings, lost: lost))
                return false
            }
            state = .collecting(start: start, last: now, readings: readings + 1, lost: lost)
        case .finished:
            return false
        }
        return true
    }

    /// `count` values were lost before the next one.
    public mutating func lost(_ count: Int) {
        switch state {
        case .waitingForFirst(let start, let lost):
            state = .waitingForFirst(start: start, lost: lost &+ count)
        case .collecting(let start, let last, let readings, let lost):
            state = .collecting(start: start, last: last, readings: readings, lost: lost &+ count)
        case .finished:
            break
        }
    }

    /// Time passed: the summary when the quiet period or the limit is over.
    public mutating func timeout(now: UInt64) -> Summary? {
        guard let deadline, now >= deadline else { return nil }
        let summary: Summary
        switch state {
        case .waitingForFirst(_, let lost):
            summary = Summary(ending: timing.firstWait <= timing.limit ? .quiet : .timeLimit, readings: 0, lost: lost)
        case .collecting(let start, let last, let readings, let lost):
            // Whichever deadline came first names the ending.
            let quiet = last &+ timing.quiet <= start &+ timing.limit
            summary = Summary(ending: quiet ? .quiet : .timeLimit, readings: readings, lost: lost)
        case .finished:
            return nil
        }
        state = .finished(summary)
        return summary
    }

    /// The link went: the summary (nil when finished already).
    public mutating func disconnected() -> Summary? { end(.disconnected) }

    /// The collector stops: the summary (nil when finished already).
    public mutating func stop() -> Summary? { end(.stopped) }

    private mutating func end(_ ending: Ending) -> Summary? {
        let summary: Summary
        switch state {
        case .waitingForFirst(_, let lost): summary = Summary(ending: ending, readings: 0, lost: lost)
        case .collecting(_, _, let readings, let lost): summary = Summary(ending: ending, readings: readings, lost: lost)
        case .finished: return nil
        }
        state = .finished(summary)
        return summary
    }
}
