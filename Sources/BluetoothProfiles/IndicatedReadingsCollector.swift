// The collector's side of the services with no control point: a blood pressure cuff or a
// weight scale indicates the readings it took while no collector was near, oldest first,
// once a bonded collector is subscribed, with no count and no end marker (Blood Pressure
// Profile 1.0 and Weight Scale Profile 1.0, the sensor's stored measurements). What ends
// the collection is the collector's choice: the device disconnects (cuffs do once they have
// sent everything), it goes quiet, or a time limit. A reading that arrives is never dropped:
// its indication is confirmed, and the device takes it as handed over.

/// When collecting indicated readings ends, sans-I/O: readings and time in; out, when to end
/// the subscription and, once it is ended and drained, the summary.
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

    /// What to do with a reading.
    public enum Verdict: Sendable, Hashable {
        /// Hand it over.
        case deliver
        /// Hand it over and end the subscription now (it came at or past the limit).
        case deliverAndEnd
        /// Not ours: the collection is over.
        case drop
    }

    /// The phase.
    enum State: Sendable, Hashable {
        /// Subscribed at `start`; no reading yet.
        case waitingForFirst(start: UInt64, lost: Int)
        /// Readings coming; the last at `last`.
        case collecting(start: UInt64, last: UInt64, readings: Int, lost: Int)
        /// The ending is decided and the subscription is being ended: readings still on
        /// their way are delivered; done once the CCCD write is answered (`written`) and
        /// the stream has handed out what it held (`drained`).
        case closing(Summary, written: Bool, drained: Bool)
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

    /// When ``timeout(now:)`` is due; nil once the ending is decided.
    public var deadline: UInt64? {
        switch state {
        case .waitingForFirst(let start, _):
            return Swift.min(start &+ timing.firstWait, start &+ timing.limit)
        case .collecting(let start, let last, _, _):
            return Swift.min(last &+ timing.quiet, start &+ timing.limit)
        case .closing, .finished:
            return nil
        }
    }

    /// The summary once finished.
    public var finished: Summary? {
        if case .finished(let s) = state { return s }
        return nil
    }

    /// A reading came. Every reading until the subscription is ended and drained is
    /// delivered (the device had its confirmation); one at or past the limit also ends it.
    public mutating func reading(now: UInt64) -> Verdict {
        switch state {
        case .waitingForFirst(let start, let lost):
            return take(start: start, now: now, readings: 1, lost: lost)
        case .collecting(let start, _, let readings, let lost):
            return take(start: start, now: now, readings: readings + 1, lost: lost)
        case .closing(var s, let written, let drained):
            s.readings += 1
            state = .closing(s, written: written, drained: drained)
            return .deliver
        case .finished:
            return .drop
        }
    }

    private mutating func take(start: UInt64, now: UInt64, readings: Int, lost: Int) -> Verdict {
        guard now &- start < timing.limit else {
            state = .closing(Summary(ending: .timeLimit, readings: readings, lost: lost), written: false, drained: false)
            return .deliverAndEnd
        }
        state = .collecting(start: start, last: now, readings: readings, lost: lost)
        return .deliver
    }

    /// `count` values were lost before the next one.
    public mutating func lost(_ count: Int) {
        switch state {
        case .waitingForFirst(let start, let lost):
            state = .waitingForFirst(start: start, lost: lost &+ count)
        case .collecting(let start, let last, let readings, let lost):
            state = .collecting(start: start, last: last, readings: readings, lost: lost &+ count)
        case .closing(var s, let written, let drained):
            s.lost &+= count
            state = .closing(s, written: written, drained: drained)
        case .finished:
            break
        }
    }

    /// Time passed: true (once) when the quiet period or the limit is over: end the
    /// subscription now.
    public mutating func timeout(now: UInt64) -> Bool {
        guard let deadline, now >= deadline else { return false }
        switch state {
        case .waitingForFirst(_, let lost):
            close(Summary(ending: timing.firstWait <= timing.limit ? .quiet : .timeLimit, readings: 0, lost: lost))
        case .collecting(let start, let last, let readings, let lost):
            // Whichever deadline came first names the ending.
            close(Summary(ending: last &+ timing.quiet <= start &+ timing.limit ? .quiet : .timeLimit, readings: readings, lost: lost))
        case .closing, .finished:
            return false
        }
        return true
    }

    /// The collector stops: true (once) when the subscription is to be ended now.
    public mutating func stop() -> Bool {
        switch state {
        case .waitingForFirst(_, let lost): close(Summary(ending: .stopped, readings: 0, lost: lost))
        case .collecting(_, _, let readings, let lost): close(Summary(ending: .stopped, readings: readings, lost: lost))
        case .closing, .finished: return false
        }
        return true
    }

    private mutating func close(_ s: Summary) { state = .closing(s, written: false, drained: false) }

    /// The CCCD write that ends the subscription was answered (or failed): the summary when
    /// the stream is drained too.
    public mutating func subscriptionEnded() -> Summary? {
        guard case .closing(let s, _, let drained) = state else { return nil }
        state = drained ? .finished(s) : .closing(s, written: true, drained: false)
        return finished
    }

    /// The stream ended. While closing: it handed out everything (the summary once the
    /// CCCD write is answered too). Otherwise the link went: ended as disconnected.
    public mutating func streamEnded() -> Summary? {
        switch state {
        case .waitingForFirst(_, let lost):
            state = .finished(Summary(ending: .disconnected, readings: 0, lost: lost))
        case .collecting(_, _, let readings, let lost):
            state = .finished(Summary(ending: .disconnected, readings: readings, lost: lost))
        case .closing(let s, let written, _):
            state = written ? .finished(s) : .closing(s, written: false, drained: true)
        case .finished:
            return nil
        }
        return finished
    }

    /// The link went while closing (the CCCD write will not be answered): the summary.
    public mutating func disconnected() -> Summary? {
        switch state {
        case .closing(let s, _, _):
            state = .finished(s)
            return s
        case .waitingForFirst, .collecting:
            return streamEnded()
        case .finished:
            return nil
        }
    }
}
