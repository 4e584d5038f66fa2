/// The timer of a state machine run under a lock: one task sleeping until the machine's
/// next deadline, replaced when the deadline changes. Deadlines are in the stack's one
/// clock (``monotonicNow()``, as the host driver's), so GATT's timeouts and the host's
/// share one time base.
public struct DeadlineTimer: Sendable {
    private var task: Task<Void, Never>?
    /// The deadline it sleeps until (nil: none).
    public private(set) var deadline: UInt64?

    /// No timer yet.
    public init() {}

    /// Sleeps until `deadline` (nil: no timer) and then calls `fire`; does nothing when the
    /// deadline did not change.
    public mutating func arm(_ deadline: UInt64?, _ fire: @escaping @Sendable () -> Void) {
        guard deadline != self.deadline else { return }
        task?.cancel()
        self.deadline = deadline
        guard let deadline else {
            task = nil
            return
        }
        let wait = deadline &- min(deadline, monotonicNow())  // 0 when it has passed
        task = Task {
            do {
                try await Task.sleep(for: .nanoseconds(Int64(clamping: wait)))
            } catch {
                return
            }
            fire()
        }
    }

    /// The timer went off: the next `arm` re-arms even for the same deadline (the clock
    /// may have read a hair early).
    public mutating func fired() { deadline = nil }

    /// Stops the timer: `fire` is not called for the deadline armed.
    public mutating func cancel() {
        task?.cancel()
        task = nil
        deadline = nil
    }
}
