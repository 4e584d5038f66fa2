/// How long to wait before connecting again to a device that is followed for good (the
/// gateway's devices, `monitor`): `initial` after a session that delivered something, else
/// twice the last wait, up to `maximum`, so a device that is off or refuses is not hammered
/// and one that comes back is followed again quickly.
public struct ReconnectBackoff: Sendable, Equatable {
    /// The first wait, and the wait after a session that delivered.
    public let initial: Duration
    /// The longest wait.
    public let maximum: Duration
    private var last: Duration?

    /// 1 s doubling up to 60 s by default.
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The wait before the next attempt, after a session that `delivered` (or not).
    public mutating func next(delivered: Bool) -> Duration {
        let wait = if delivered { initial } else if let last { min(last * 2, maximum) } else { initial }
        last = wait
        return wait
    }
}
