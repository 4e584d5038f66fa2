// Which spooled readings to hand to the MQTT client, and when: a sans-I/O state machine the
// broker drives through the client's callbacks (acknowledged, failed, connected, lost), so
// ordering and redelivery are tested without a broker.

/// The readings between the spool's head (the oldest not yet acknowledged) and its end, as
/// the publisher hands them to the MQTT client.
///
/// - At most `capacity` are in flight (sent, no PUBACK yet): the client resends those
///   itself, in order, after a reconnect to a broker that kept the session.
/// - One the client gave up on (the broker lost the session, a write failed, a negative
///   acknowledgement) is sent again, before anything newer.
/// - One in flight for `resendAfter` without an answer while connected is sent again (a
///   duplicate at worst: delivery is at least once).
/// - The head moves past a reading only once it and every older one are acknowledged.
public struct PublishWindow: Sendable {
    /// Readings in flight at most.
    public let capacity: Int
    /// Nanoseconds without an acknowledgement, connected, after which a reading is sent again.
    public let resendAfter: UInt64
    /// The oldest reading not yet acknowledged.
    public private(set) var head: UInt64
    /// The next reading never handed to the client.
    public private(set) var cursor: UInt64
    /// Whether the client is connected (sending is pointless otherwise).
    public private(set) var connected = false
    /// The client's queue was full: nothing is handed over until it moves.
    public private(set) var blocked = false
    /// In flight: id and when it was handed over (ascending ids).
    private var inFlight: [(id: UInt64, since: UInt64)] = []
    /// Given up by the client: to send again first (ascending).
    private var retry: [UInt64] = []
    /// Acknowledged above the head (an acknowledgement may overtake an older one).
    private var acknowledgedAhead: [UInt64] = []

    /// A window starting at the spool's head.
    public init(head: UInt64, capacity: Int = 32, resendAfter: UInt64 = 60_000_000_000) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.resendAfter = resendAfter
        self.head = head
        self.cursor = head
    }

    /// In flight now.
    public var inFlightCount: Int { inFlight.count }

    /// The client connected at `now`: sending may go on (retries first). The time spent
    /// disconnected does not count towards `resendAfter` (the client resends its own).
    public mutating func connectionUp(now: UInt64 = 0) {
        connected = true
        blocked = false
        for i in inFlight.indices { inFlight[i].since = now }
    }

    /// The client lost the connection. What is in flight stays with it: it resends or gives
    /// each up (``failed(_:)``) after reconnecting.
    public mutating func connectionLost() { connected = false }

    /// The next reading to hand over, with `end` the spool's next id; nil when nothing is
    /// to be sent now. The caller then reports ``sent(_:at:)`` or ``sendRefused(_:)``.
    public func next(end: UInt64) -> UInt64? {
        guard connected, !blocked, inFlight.count < capacity else { return nil }
        if let r = retry.first { return r }
        return cursor < end ? cursor : nil
    }

    /// `id` (from ``next(end:)``) is with the client now.
    public mutating func sent(_ id: UInt64, at now: UInt64) {
        if let i = retry.firstIndex(of: id) {
            retry.remove(at: i)
        } else if id == cursor {
            cursor += 1
        }
        guard id >= head, !isAcknowledged(id) else { return }
        insertInFlight(id, now)
    }

    /// The client would not take `id`: it stays next. `disconnected`: until
    /// ``connectionUp(now:)``; else (its queue is full) until the next acknowledgement,
    /// failure or ``tick(now:)``.
    public mutating func sendRefused(_ id: UInt64, disconnected: Bool) {
        if disconnected { connected = false } else { blocked = true }
    }

    /// Hands nothing over until the next acknowledgement, failure or ``tick(now:)`` (a
    /// refusal for now: the broker is busy).
    public mutating func hold() { blocked = true }

    /// The broker acknowledged `id`; returns the new head when it moved.
    public mutating func acknowledged(_ id: UInt64) -> UInt64? {
        // An answer for what was never handed over (a confused client) changes nothing.
        guard id < cursor else { return nil }
        blocked = false
        removeInFlight(id)
        if let i = retry.firstIndex(of: id) { retry.remove(at: i) }
        guard id >= head else { return nil }
        if id > head {
            if !isAcknowledged(id) { insertSorted(&acknowledgedAhead, id) }
            return nil
        }
        head += 1
        while let first = acknowledgedAhead.first, first <= head {
            acknowledgedAhead.removeFirst()
            if first == head { head += 1 }
        }
        if cursor < head { cursor = head }
        return head
    }

    /// The client gave `id` up: it is sent again before anything newer.
    public mutating func failed(_ id: UInt64) {
        blocked = false
        removeInFlight(id)
        guard id >= head, id < cursor, !isAcknowledged(id), !retry.contains(id) else { return }
        insertSorted(&retry, id)
    }

    /// The spool dropped every reading below `newHead` (it was full): they are no longer
    /// waited for.
    public mutating func dropped(below newHead: UInt64) {
        guard newHead > head else { return }
        head = newHead
        if cursor < head { cursor = head }
        inFlight.removeAll { $0.id < newHead }
        retry.removeAll { $0 < newHead }
        acknowledgedAhead.removeAll { $0 < newHead }
        while let first = acknowledgedAhead.first, first == head {
            acknowledgedAhead.removeFirst()
            head += 1
        }
        if cursor < head { cursor = head }
    }

    /// Readings in flight too long while connected go back to be sent again; true when any did.
    public mutating func tick(now: UInt64) -> Bool {
        blocked = false
        guard connected else { return false }
        let stale = inFlight.filter { now &- $0.since >= resendAfter }
        guard !stale.isEmpty else { return false }
        inFlight.removeAll { now &- $0.since >= resendAfter }
        for entry in stale { insertSorted(&retry, entry.id) }
        return true
    }

    private func isAcknowledged(_ id: UInt64) -> Bool { acknowledgedAhead.contains(id) }

    private mutating func insertInFlight(_ id: UInt64, _ now: UInt64) {
        if let i = inFlight.firstIndex(where: { $0.id >= id }) {
            if inFlight[i].id == id { inFlight[i].since = now } else { inFlight.insert((id, now), at: i) }
        } else {
            inFlight.append((id, now))
        }
    }

    private mutating func removeInFlight(_ id: UInt64) {
        if let i = inFlight.firstIndex(where: { $0.id == id }) { inFlight.remove(at: i) }
    }

    private func insertSorted(_ list: inout [UInt64], _ id: UInt64) {
        if let i = list.firstIndex(where: { $0 >= id }) {
            if list[i] != id { list.insert(id, at: i) }
        } else {
            list.append(id)
        }
    }
}
