import BluetoothWire
import Synchronization

/// The events of one scan (``HCIHost/scan(_:)``): an AsyncSequence that ends without error
/// when the scan is stopped, or throws why it ended (scanning could not start, the
/// controller went away).
///
/// It is bounded (8192 events) and carries back-pressure: when the consumer falls 4096
/// events behind, the host stops reading a transport that holds unread data without loss
/// (``HCITransport/holdsUnreadData``: TCP, a UART with RTS/CTS) until the consumer is back
/// under 1024, so a burst waits in the socket instead of being dropped. It does so only
/// while nothing else needs the controller (no link, connection attempt, command in flight
/// or connectable advertising); otherwise, and on kernel sockets, events past the bound are
/// dropped and counted in ``HostStatistics/droppedScanEvents``.
public struct ScanEventStream: AsyncSequence, Sendable {
    /// One scan event.
    public typealias Element = ScanEvent
    /// Why the scan ended early.
    public typealias Failure = any Error

    let base: AsyncThrowingStream<ScanEvent, any Error>
    let backlog: ScanBacklog
    /// Which scan of the host this is (stopping it stops no other).
    public internal(set) var scanID: UInt64 = 0

    /// Events delivered and not taken yet: 0 when the consumer has caught up (a good time
    /// to write out what it has rendered).
    public var waiting: Int { Swift.max(0, backlog.value) }

    /// One iterator per stream (one consumer).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), backlog: backlog)
    }

    /// Takes the events in order; every event taken makes room for the host to read on.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<ScanEvent, any Error>.AsyncIterator
        let backlog: ScanBacklog

        /// The next event, nil once the scan stopped, or the error that ended it.
        public mutating func next() async throws -> ScanEvent? {
            guard let event = try await base.next() else { return nil }
            backlog.taken()
            return event
        }
    }
}

/// Events delivered to a scan's stream and not yet taken by its consumer, shared by the
/// driver (which adds) and the consumer (which takes). When the driver has paused reading
/// on it, the consumer that brings it down to ``lowWater`` wakes the driver, once.
final class ScanBacklog: Sendable {
    /// The stream's bound: past it the oldest undelivered event is dropped (and counted).
    static let capacity = 8192
    /// The driver stops reading a transport that holds unread data at this many.
    static let highWater = 4096
    /// ...and reads again at this many.
    static let lowWater = 1024

    private let count = Atomic<Int>(0)
    /// Set by the driver while it does not read because of this backlog.
    private let paused = Atomic<Bool>(false)
    private let wake: @Sendable () -> Void

    init(wake: @escaping @Sendable () -> Void) { self.wake = wake }

    var value: Int { count.load(ordering: .sequentiallyConsistent) }

    /// Driver: one more event in the stream.
    func added() { count.add(1, ordering: .relaxed) }

    /// Consumer: one event taken.
    func taken() {
        // Sequentially consistent with holdReading's store-then-load: one side sees the other.
        let left = count.subtract(1, ordering: .sequentiallyConsistent).newValue
        guard left <= Self.lowWater, paused.load(ordering: .sequentiallyConsistent) else { return }
        if paused.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged { wake() }
    }

    /// Driver: whether to stay paused (`wasPaused`) or pause now, given the backlog.
    /// Pausing publishes the flag before reading the count again, so a consumer that took
    /// the backlog down meanwhile either sees the flag (and wakes the driver) or is seen.
    func holdReading(wasPaused: Bool) -> Bool {
        if !wasPaused && value < Self.highWater { return false }
        paused.store(true, ordering: .sequentiallyConsistent)
        if value <= Self.lowWater {
            paused.store(false, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Driver: reading goes on regardless (something else needs the controller, or the scan ended).
    func release() { paused.store(false, ordering: .relaxed) }
}
