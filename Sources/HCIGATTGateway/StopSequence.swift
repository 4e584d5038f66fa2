// How the gateway stops, sans I/O: the publisher feeds it the time and what the MQTT client
// reports, and it says when to say "offline", when to send DISCONNECT and when to finish.

/// The gateway's stop, from the request (a signal, or a failure) to the end of the publisher.
///
///     running ──stop──▶ draining ──nothing in flight, or the link down, or 3 s──▶ disconnecting
///     disconnecting ──the client reports the link ended, or 5 s──▶ stopped
///
/// While draining nothing new is handed to the client and the readings in flight may still
/// be acknowledged (each one acknowledged is one fewer sent twice). The 5 s bound: a DISCONNECT
/// stuck behind a stalled socket (a broker that stopped reading) is given up on.
public struct StopSequence: Sendable, Equatable {
    /// The longest wait for what is in flight (nanoseconds).
    public static let drainTime: UInt64 = 3_000_000_000
    /// The longest wait for the client to report the DISCONNECT done (nanoseconds).
    public static let disconnectTime: UInt64 = 5_000_000_000

    private enum State: Equatable {
        case running
        case draining(until: UInt64)
        case disconnecting(since: UInt64)
        case stopped
    }

    /// What the publisher does.
    public enum Action: Sendable, Equatable {
        /// Publish the retained status "offline" (before the DISCONNECT, which keeps the
        /// broker from sending the last will).
        case publishOffline
        /// Send DISCONNECT.
        case disconnect
        /// Stop: sync the spool and return.
        case finish
    }

    private var state = State.running

    /// Running.
    public init() {}

    /// Whether a stop was asked for: nothing new is handed to the client.
    public var isStopping: Bool { state != .running }
    /// Whether the publisher is done.
    public var isStopped: Bool { state == .stopped }

    /// A stop asked for at `now` (monotonic nanoseconds); a second request changes nothing.
    public mutating func stop(now: UInt64, connected: Bool) -> Action? {
        guard state == .running else { return nil }
        state = .draining(until: now + Self.drainTime)
        return connected ? .publishOffline : nil
    }

    /// After each input of the publisher (a reading, a client event, a tick): the step due
    /// at `now`. `inFlight`: readings handed over and not acknowledged; `connected`: the
    /// link to the broker; `linkEnded`: this input was the client's report that the link
    /// ended (DISCONNECT done, or lost).
    public mutating func advance(now: UInt64, inFlight: Int, connected: Bool, linkEnded: Bool) -> Action? {
        switch state {
        case .running, .stopped:
            return nil
        case .draining(let until):
            guard inFlight == 0 || !connected || now >= until else { return nil }
            state = .disconnecting(since: now)
            return .disconnect
        case .disconnecting(let since):
            guard linkEnded || now >= since + Self.disconnectTime else { return nil }
            state = .stopped
            return .finish
        }
    }
}
