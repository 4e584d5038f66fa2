/// The timer of a state machine run under a lock: one task sleeping until the machine's
/// next deadline (nanoseconds since `base`), replaced when the deadline changes.
struct DeadlineTimer: Sendable {
    private var task: Task<Void, Never>?
    private var deadline: UInt64?

    /// Nanoseconds from `base` to now: the clock the state machines are fed.
    static func now(since base: ContinuousClock.Instant) -> UInt64 {
        let (s, a) = (ContinuousClock.now - base).components
        return UInt64(max(0, s)) &* 1_000_000_000 &+ UInt64(max(0, a / 1_000_000_000))
    }

    /// Sleeps until `deadline` (nil: no timer) and then calls `fire`; does nothing when the
    /// deadline did not change.
    mutating func arm(_ deadline: UInt64?, base: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) {
        guard deadline != self.deadline else { return }
        task?.cancel()
        self.deadline = deadline
        guard let deadline else {
            task = nil
            return
        }
        let instant = base.advanced(by: .nanoseconds(Int64(clamping: deadline)))
        task = Task {
            do {
                try await Task.sleep(until: instant, clock: .continuous)
            } catch {
                return
            }
            fire()
        }
    }

    /// The timer went off: the next `arm` re-arms even for the same deadline (the clock
    /// may have read a hair early).
    mutating func fired() { deadline = nil }

    mutating func cancel() {
        task?.cancel()
        task = nil
        deadline = nil
    }
}
