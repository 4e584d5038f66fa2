/// How long to wait before connecting again to a device that is followed for good (the
/// gateway's devices, `monitor`): `initial` after a connection that delivered something, else
/// twice the last wait, up to `maximum`, so a device that is off or refuses is not hammered
/// and one that comes back is followed again quickly.
public struct ReconnectBackoff: Sendable, Equatable {
    /// The first wait, and the wait after a connection that delivered.
    public let initial: Duration
    /// The longest wait.
    public let maximum: Duration
    private var last: Duration?

    /// 1 s doubling up to 60 s by default.
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The wait before the next attempt, after a connection that `delivered` (or not).
    public mutating func next(delivered: Bool) -> Duration {
        let wait = if delivered { initial } else if let last { min(last * 2, maximum) } else { initial }
        last = wait
        return wait
    }
}

/// When a followed device's link ended (or never came up): whether to connect again, and
/// after how long. The one reconnection policy of `monitor`, the health commands and the
/// gateway; sans I/O (the caller waits and connects).
public struct Reconnection: Sendable, Equatable {
    /// Which endings are retried.
    public enum Mode: Sendable, Equatable {
        /// None: the first ending ends the following.
        case never
        /// A lost link only (the device went out of range or off): `--reconnect`.
        case afterLinkLoss
        /// Every ending, a refusal or a failed connect included (the gateway: it follows
        /// its devices until it is stopped).
        case always
    }

    /// Which endings are retried.
    public let mode: Mode
    private var backoff: ReconnectBackoff
    /// The wait when only lost links are retried (a device that refuses at once is not
    /// hammered).
    public static let linkLossPause: Duration = .milliseconds(500)

    /// A policy; `.always` waits with `backoff`.
    public init(_ mode: Mode, backoff: ReconnectBackoff = ReconnectBackoff()) {
        self.mode = mode
        self.backoff = backoff
    }

    /// After a connection ended with `failure` (nil: the link closed without an error);
    /// `linkLoss`: the failure is the peer going away; `delivered`: the connection delivered
    /// something. The wait before connecting again, or nil to stop.
    public mutating func next(failure: (any Error)?, linkLoss: Bool, delivered: Bool) -> Duration? {
        switch mode {
        case .never: return nil
        case .afterLinkLoss: return failure == nil || linkLoss ? Self.linkLossPause : nil
        case .always: return backoff.next(delivered: delivered)
        }
    }
}
