// What the gateway's scan publishes, as one state machine: reports and time in, readings
// and presence changes out. The radio side feeds it each report and wakes it at its next
// deadline; nothing here does I/O, so every rule is tested with a made-up clock.
import BluetoothHost
import BluetoothProfiles
import BluetoothWire

/// How the scan's reports become messages (`--allow`, `--deny`, `--only-sensors`,
/// `--presence`, `--away-timeout`, `--min-interval`).
public struct ScanPublishing: Sendable {
    /// The devices published about.
    public var filter: ScanFilter
    /// Only decoded sensors and beacons, no `advertisement` readings.
    public var onlySensors: Bool
    /// Publish present/away per device; the away timeout in nanoseconds (nil: no presence).
    public var awayAfter: UInt64?
    /// At most one reading per device and measurement in this many nanoseconds, the
    /// latest value winning (nil: every change).
    public var minInterval: UInt64?
    /// Keys for encrypted BTHome readings.
    public var keys: SensorKeys?

    /// Settings; the defaults publish every change of every device, without presence.
    public init(filter: ScanFilter = ScanFilter(), onlySensors: Bool = false, awayAfter: UInt64? = nil,
                minInterval: UInt64? = nil, keys: SensorKeys? = nil) {
        self.filter = filter
        self.onlySensors = onlySensors
        self.awayAfter = awayAfter
        self.minInterval = minInterval
        self.keys = keys
    }
}

/// A device came into range or left it (``ScanPublisher``'s presence).
public struct PresenceUpdate: Sendable, Equatable {
    /// The device (its identity address when its private address was resolved).
    public var device: BluetoothAddress
    /// Heard (`present`), or not heard for the away timeout (`away`).
    public var present: Bool
    /// Its smoothed signal strength when last heard.
    public var rssi: Int8?
    /// Its advertised name, if it gave one.
    public var name: String?
    /// When: milliseconds since 1970 (UTC).
    public var milliseconds: Int64

    /// An update with these fields.
    public init(device: BluetoothAddress, present: Bool, rssi: Int8?, name: String?, milliseconds: Int64) {
        self.device = device
        self.present = present
        self.rssi = rssi
        self.name = name
        self.milliseconds = milliseconds
    }
}

/// Reports and time in, messages out: the filter, the readings (``BroadcastReadings``),
/// RSSI smoothing, presence and the per-measurement rate limit.
///
/// RSSI is smoothed as the median of the device's last five reports: one reflection or
/// one report from a bad angle does not move it, and it follows a device that moves within
/// five reports (an exponential average lags behind a jump for much longer).
public struct ScanPublisher: Sendable {
    /// One thing to publish or say.
    public enum Output: Sendable {
        /// A reading for the runtime.
        case reading(PendingReading)
        /// A presence change.
        case presence(PresenceUpdate)
        /// A line for the operator.
        case log(String)
    }

    /// What it was set up with.
    public let settings: ScanPublishing
    private var readings: BroadcastReadings
    private var signal: [BluetoothAddress: RSSIWindow] = [:]
    private var presence: PresenceTable?
    private var throttle: ReadingThrottle?

    /// A publisher; `presentAtStart` are the devices a previous run said were present
    /// (they go away after the timeout unless heard), `now` the monotonic clock (ns).
    public init(_ settings: ScanPublishing, presentAtStart: [BluetoothAddress] = [], now: UInt64) {
        self.settings = settings
        readings = BroadcastReadings(keys: settings.keys, onlySensors: settings.onlySensors)
        if let away = settings.awayAfter {
            var table = PresenceTable(awayAfter: away)
            for device in presentAtStart { table.assumePresent(device, now: now) }
            presence = table
        }
        throttle = settings.minInterval.map { ReadingThrottle(interval: $0) }
    }

    /// The earliest time ``expire(now:wallMilliseconds:into:)`` has something to do.
    public var nextDeadline: UInt64? {
        switch (presence?.nextDeadline, throttle?.nextDeadline) {
        case (let a?, let b?): min(a, b)
        case (let a?, nil): a
        case (nil, let b): b
        }
    }

    /// The devices present now (what a restart starts from).
    public var presentDevices: [BluetoothAddress] { presence?.devices ?? [] }

    /// One scan report; appends what it makes to `out`.
    public mutating func report(_ device: DiscoveredDevice, now: UInt64, wallMilliseconds: Int64, into out: inout [Output]) {
        guard settings.filter.admits(device) else { return }
        let address = device.identity?.address ?? device.address.address
        var rssi = device.rssi
        if let r = device.rssi {
            if signal[address] == nil, signal.count >= BroadcastReadings.capacity { signal.removeAll(keepingCapacity: true) }
            rssi = signal[address, default: RSSIWindow()].add(r)
        }
        switch readings.reading(device, now: now, wallMilliseconds: wallMilliseconds) {
        case .reading(var r):
            r.rssi = rssi
            if var t = throttle {
                throttle = nil  // no copy while it changes
                if let due = t.offer(r, now: now) { out.append(.reading(due)) }
                throttle = t
            } else {
                out.append(.reading(r))
            }
        case .notPublished(let why):
            out.append(.log(why))
        case .unchanged:
            break
        }
        // Presence for the devices that keep their address (public, static, or a bonded
        // device's identity behind its private ones): a private address that rotates every
        // 15 minutes would be a new device each time, and its `away` a retained topic left
        // for good.
        if var p = presence, device.identity != nil || device.address.kind == .public || device.address.kind == .randomStatic {
            presence = nil
            switch p.heard(address, now: now) {
            case .arrived:
                let name = device.name
                p.setName(address, name)
                out.append(.presence(PresenceUpdate(device: address, present: true, rssi: rssi, name: name,
                                                    milliseconds: wallMilliseconds)))
            case .full(let first):
                if first {
                    out.append(.log("presence: \(PresenceTable.capacity) devices present; more are not tracked until some leave (narrow it with --allow)"))
                }
            case .known(let named):
                // A name that came later (in a scan response) is kept for the tracker.
                if !named, let name = device.name { p.setName(address, name) }
            }
            presence = p
        }
    }

    /// Everything the rate limit holds, at once (the scan is ending).
    public mutating func flush(into out: inout [Output]) {
        if var t = throttle {
            throttle = nil
            for r in t.due(now: .max) { out.append(.reading(r)) }
            throttle = t
        }
    }

    /// What is due at `now`: devices gone away, readings held back by the rate limit.
    public mutating func expire(now: UInt64, wallMilliseconds: Int64, into out: inout [Output]) {
        if var p = presence {
            presence = nil
            for (device, name) in p.expire(now: now) {
                out.append(.presence(PresenceUpdate(device: device, present: false, rssi: signal[device]?.median, name: name,
                                                    milliseconds: wallMilliseconds)))
                signal[device] = nil
            }
            presence = p
        }
        if var t = throttle {
            throttle = nil
            for r in t.due(now: now) { out.append(.reading(r)) }
            throttle = t
        }
    }
}

/// The last five RSSI values of a device; their median.
struct RSSIWindow: Sendable {
    private var values: InlineArray<5, Int8> = .init(repeating: 0)
    private var count = 0
    private var next = 0

    /// Adds `value`; the median after it.
    mutating func add(_ value: Int8) -> Int8 {
        values[next] = value
        next = next == 4 ? 0 : next + 1
        count = min(count + 1, 5)
        return median ?? value
    }

    /// The median of the values kept (the mean of the middle two for an even count).
    var median: Int8? {
        guard count > 0 else { return nil }
        var sorted: InlineArray<5, Int8> = values
        // Insertion sort of at most five.
        for i in 1 ..< count {
            var j = i
            while j > 0, sorted[j - 1] > sorted[j] {
                sorted.swapAt(j - 1, j)
                j -= 1
            }
        }
        if count % 2 == 1 { return sorted[count / 2] }
        let sum = Int(sorted[count / 2 - 1]) + Int(sorted[count / 2])
        return Int8((Double(sum) / 2).rounded())
    }
}

/// A min-queue of deadlines (a binary heap): the next one in O(1), adding and taking in
/// O(log n), so nothing walks every device per report or per tick.
struct DeadlineQueue<Key: Sendable>: Sendable {
    private var heap: [(deadline: UInt64, key: Key)] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    /// The earliest deadline.
    var first: UInt64? { heap.first?.deadline }

    mutating func insert(_ deadline: UInt64, _ key: Key) {
        heap.append((deadline, key))
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[parent].deadline > heap[i].deadline else { break }
            heap.swapAt(parent, i)
            i = parent
        }
    }

    /// Takes the earliest entry if it is due at `now`.
    mutating func popDue(_ now: UInt64) -> (deadline: UInt64, key: Key)? {
        guard let top = heap.first, top.deadline <= now else { return nil }
        let last = heap.removeLast()
        if heap.isEmpty { return top }
        heap[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count, heap[l].deadline < heap[smallest].deadline { smallest = l }
            if r < heap.count, heap[r].deadline < heap[smallest].deadline { smallest = r }
            if smallest == i { break }
            heap.swapAt(i, smallest)
            i = smallest
        }
        return top
    }
}

/// Which devices are present: heard within `awayAfter`. Each present device has one entry
/// in the deadline queue, at the time it would go away if not heard since it was queued;
/// when that comes and it was heard since, it is queued again from its last report.
struct PresenceTable: Sendable {
    enum Heard {
        case arrived
        /// Present already; whether its name is known.
        case known(named: Bool)
        /// Not tracked: the table is full (`first`: the first refusal since it filled).
        case full(first: Bool)
    }

    /// The most devices tracked at once (a crowd of rotating addresses is refused beyond).
    static let capacity = 16384

    let awayAfter: UInt64
    private var lastHeard: [BluetoothAddress: (at: UInt64, name: String?)] = [:]
    private var queue = DeadlineQueue<BluetoothAddress>()
    private var refusing = false

    init(awayAfter: UInt64) { self.awayAfter = awayAfter }

    var nextDeadline: UInt64? { queue.first }
    var devices: [BluetoothAddress] { Array(lastHeard.keys) }

    /// Present since a previous run: away after the timeout unless heard.
    mutating func assumePresent(_ device: BluetoothAddress, now: UInt64) {
        guard lastHeard[device] == nil, lastHeard.count < Self.capacity else { return }
        lastHeard[device] = (now, nil)
        queue.insert(now &+ awayAfter, device)
    }

    mutating func heard(_ device: BluetoothAddress, now: UInt64) -> Heard {
        if let entry = lastHeard[device] {
            lastHeard[device] = (max(entry.at, now), entry.name)
            return .known(named: entry.name != nil)
        }
        guard lastHeard.count < Self.capacity else {
            defer { refusing = true }
            return .full(first: !refusing)
        }
        refusing = false
        lastHeard[device] = (now, nil)
        queue.insert(now &+ awayAfter, device)
        return .arrived
    }

    mutating func setName(_ device: BluetoothAddress, _ name: String?) {
        guard let name, let entry = lastHeard[device] else { return }
        lastHeard[device] = (entry.at, name)
    }

    /// The devices not heard for `awayAfter` at `now` (forgotten: heard again, they arrive).
    mutating func expire(now: UInt64) -> [(BluetoothAddress, String?)] {
        var gone: [(BluetoothAddress, String?)] = []
        while let (_, device) = queue.popDue(now) {
            guard let entry = lastHeard[device] else { continue }
            let deadline = entry.at &+ awayAfter
            if deadline <= now {
                lastHeard[device] = nil
                gone.append((device, entry.name))
            } else {
                queue.insert(deadline, device)
            }
        }
        return gone
    }
}

/// `--min-interval`: at most one reading per device and measurement per interval; a
/// reading inside the interval is held, replaced by any later one (the last value wins),
/// and published when the interval ends.
struct ReadingThrottle: Sendable {
    private struct Key: Hashable, Sendable {
        var device: BluetoothAddress
        var measurement: String
    }

    let interval: UInt64
    private var lastSent: [Key: UInt64] = [:]
    /// The reading waiting for its key's interval to end, and when that is.
    private var held: [Key: (reading: PendingReading, due: UInt64)] = [:]
    private var queue = DeadlineQueue<Key>()

    init(interval: UInt64) { self.interval = interval }

    var nextDeadline: UInt64? { queue.first }

    /// `r` if it may go now; else nil, and it is held.
    mutating func offer(_ r: PendingReading, now: UInt64) -> PendingReading? {
        let key = Key(device: r.device, measurement: r.measurement)
        if let sent = lastSent[key], now < sent &+ interval {
            let due = sent &+ interval
            let queued = held[key]?.due == due
            held[key] = (r, due)
            if !queued { queue.insert(due, key) }
            return nil
        }
        // Newer than anything held for the key (whose queue entry is then skipped).
        held[key] = nil
        if lastSent.count >= BroadcastReadings.capacity { forgetIdle(now) }
        lastSent[key] = now
        return r
    }

    /// The held readings whose interval has ended, oldest first.
    mutating func due(now: UInt64) -> [PendingReading] {
        var out: [PendingReading] = []
        while let (deadline, key) = queue.popDue(now) {
            guard let h = held[key], h.due == deadline else { continue }
            held[key] = nil
            // From when it went (a late timer does not shorten the next interval).
            lastSent[key] = now
            out.append(h.reading)
        }
        return out
    }

    /// Drops the entries that hold nothing and whose interval is over (they limit nothing);
    /// if that frees too little (a long interval in a crowd), every entry that holds
    /// nothing: those keys may then publish once early, the table stays bounded.
    private mutating func forgetIdle(_ now: UInt64) {
        lastSent = lastSent.filter { held[$0.key] != nil || now < $0.value &+ interval }
        if lastSent.count >= BroadcastReadings.capacity / 2 {
            lastSent = lastSent.filter { held[$0.key] != nil }
        }
    }
}
