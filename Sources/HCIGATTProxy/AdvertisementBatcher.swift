/// Raw advertisements gathered into the batches ESPHome sends: at most 16 per message (a
/// message of about 1.3 kB), sent as soon as 16 wait, else 100 ms after the first of a
/// batch came. Sans-I/O: time is an argument.
struct AdvertisementBatcher: Sendable {
    static let batchSize = 16
    static let interval: UInt64 = 100_000_000

    private(set) var pending: [APIRawAdvertisement] = []
    private var firstAt: UInt64?

    init() {}

    /// When the waiting batch is due.
    var deadline: UInt64? { firstAt.map { $0 + Self.interval } }

    /// Adds one; a full batch comes back to send now.
    mutating func add(_ a: APIRawAdvertisement, now: UInt64) -> [APIRawAdvertisement]? {
        if pending.isEmpty { firstAt = now }
        pending.append(a)
        return pending.count >= Self.batchSize ? take() : nil
    }

    /// The waiting batch once it is due.
    mutating func due(now: UInt64) -> [APIRawAdvertisement]? {
        guard let d = deadline, now >= d else { return nil }
        return take()
    }

    /// Drops what waits (nobody to send it to).
    mutating func clear() {
        pending = []
        firstAt = nil
    }

    private mutating func take() -> [APIRawAdvertisement]? {
        guard !pending.isEmpty else { return nil }
        let batch = pending
        pending = []
        firstAt = nil
        return batch
    }
}
