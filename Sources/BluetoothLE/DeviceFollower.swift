import BluetoothTransport
import Synchronization

// The application layer's device follower: connect, discover, read what identifies the
// device, set it up, subscribe to its measurements and hand over every value, connecting
// again as ``Reconnection`` says. `monitor`, the health commands and the gateway's links.

/// What to do on each connection to a followed device.
public struct FollowPlan: Sendable {
    /// Read once after discovery, where the device has them and they are readable.
    public var reads: [BluetoothUUID]
    /// After the reads, before subscribing (write a measurement interval, say).
    public var setup: @Sendable (GATTClient, GATTDatabase) async throws -> Void
    /// What to subscribe to: each characteristic and whether to ask for indications. None
    /// is a failure (the device is not what was expected).
    public var subscriptions: @Sendable (GATTDatabase) -> [(GATTCharacteristic, indicate: Bool)]
    /// The value handles whose subscriptions wait for the setup; the others are subscribed
    /// at once and the setup runs beside them (nil: every subscription waits for it). A
    /// setup that uses some characteristics itself (a record fetch: the record service's)
    /// holds back only those: a slow or hostile device delays none of its other values.
    public var waitingForSetup: (@Sendable (GATTDatabase) -> Set<UInt16>)?

    /// A plan.
    public init(reads: [BluetoothUUID] = [], setup: @escaping @Sendable (GATTClient, GATTDatabase) async throws -> Void = { _, _ in },
                waitingForSetup: (@Sendable (GATTDatabase) -> Set<UInt16>)? = nil,
                subscriptions: @escaping @Sendable (GATTDatabase) -> [(GATTCharacteristic, indicate: Bool)]) {
        self.reads = reads
        self.setup = setup
        self.waitingForSetup = waitingForSetup
        self.subscriptions = subscriptions
    }

    /// The measurement characteristics ``everyMeasurement`` subscribes to when the device has
    /// them: temperature, blood pressure, heart rate, battery, glucose, weight, pulse
    /// oximetry, cycling and running, environmental sensing, SensorTag keys.
    public static let measurementUUIDs: [UInt16] = [0x2A1C, 0x2A1E, 0x2A21, 0x2A35, 0x2A36, 0x2A37, 0x2A19, 0x2A18, 0x2A9D,
                                                    0x2A5E, 0x2A5F, 0x2A5B, 0x2A53, 0x2A6E, 0x2A6F, 0x2A6D, 0xFFE1]

    /// The device name read, then every measurement the device has, notifications where
    /// it offers them, else indications (`monitor` and the gateway's devices).
    public static let everyMeasurement = FollowPlan(reads: [BluetoothUUID(0x2A00)]) { db in
        measurementUUIDs.compactMap { u -> (GATTCharacteristic, indicate: Bool)? in
            guard let c = db.characteristic(uuid: BluetoothUUID(u)) else { return nil }
            if c.properties.contains(.notify) { return (c, false) }
            if c.properties.contains(.indicate) { return (c, true) }
            return nil
        }
    }
}

/// What happens while a device is followed, in order.
public enum FollowEvent: Sendable {
    /// Opening the peer: scanning, connecting, bond encryption.
    case progress(PeerProgress)
    /// Connected; the database is discovered next (`fromCache`: the bond's kept database may
    /// be reused after one Database Hash read).
    case connected(GATTPeer, fromCache: Bool)
    /// The database, where it came from, and how long it took.
    case discovered(DatabaseDiscovery, elapsed: Duration, mtu: Int)
    /// One of the plan's reads (its decoded name is the device's for 2A00).
    case read(GATTCharacteristic, [UInt8])
    /// Subscribed to a characteristic.
    case subscribed(GATTCharacteristic, indications: Bool)
    /// A value of a subscribed characteristic from `device`. `droppedBefore` also counts
    /// values this follower had to drop for a consumer that fell behind.
    case value(GATTCharacteristic, GATTValue, device: LEAddress)
    /// The connection ended with `failure` (nil: the link closed cleanly) and the device is
    /// connected again after `retryIn`.
    case retrying(failure: (any Error)?, device: LEAddress?, retryIn: Duration)
}

/// Follows one device until stopped or until ``Reconnection`` gives up: a stream of
/// ``FollowEvent``s that ends with the failure that ended it (or without one, after
/// ``stop()`` or a clean close the policy does not retry). ``stop()`` unsubscribes and
/// disconnects before it returns, so the controller can be closed right after.
public final class DeviceFollower: Sendable {
    /// The events; one consumer.
    public let events: AsyncThrowingStream<FollowEvent, any Error>
    private let task: Mutex<Task<Void, Never>?>

    /// Values buffered for a slow consumer before the oldest are dropped (and counted in
    /// the next value's `droppedBefore`).
    public static let bufferLimit = 1024

    /// Starts following `target` on `route`: names and untyped addresses are looked up
    /// (the first connection's address is kept for the next ones), `plan` runs on each
    /// connection, `reconnection` decides what comes after one ends.
    public init(_ target: DeviceTarget, via route: PeerRoute, settings: PeerSettings = PeerSettings(), plan: FollowPlan,
                reconnection: Reconnection) {
        let (stream, continuation) = AsyncThrowingStream<FollowEvent, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.bufferLimit))
        events = stream
        task = Mutex(nil)
        let run = Task {
            let failure = await Self.run(target, route, settings, plan, reconnection, continuation)
            continuation.finish(throwing: failure)
        }
        task.withLock { $0 = run }
        continuation.onTermination = { _ in run.cancel() }
    }

    /// Stops following: the subscriptions are cleared (unless the link is gone), the link
    /// is closed, and the events end. Returns once that is done.
    public func stop() async {
        guard let t = task.withLock({ $0 }) else { return }
        t.cancel()
        await t.value
    }

    /// Whether `error` is the peer going away (out of range, off), not a refusal: what
    /// ``Reconnection/Mode/afterLinkLoss`` retries.
    public static func isLinkLoss(_ error: any Error) -> Bool {
        switch error {
        case let b as BluetoothError: return b.kind == .disconnected || b.underlying.map(isLinkLoss) ?? false
        case let g as GATTError: return g.isLinkLoss
        case let h as HostError: return h.isLinkLoss
        default: return false
        }
    }

    private static func run(_ first: DeviceTarget, _ route: PeerRoute, _ settings: PeerSettings, _ plan: FollowPlan,
                            _ reconnection: Reconnection, _ out: AsyncThrowingStream<FollowEvent, any Error>.Continuation)
        async -> (any Error)?
    {
        var target = first
        var policy = reconnection
        let counts = FollowCounts()
        while true {
            var failure: (any Error)?
            var device: LEAddress?
            counts.delivered.store(false, ordering: .relaxed)
            do {
                try await connection(target, route, settings, plan, out, counts, device: &device)
            } catch is CancellationError {
                return nil
            } catch {
                failure = error
            }
            if Task.isCancelled { return nil }
            // A lookup's answer is kept: the same device next time, not the first of a name.
            if let device { target = .address(device) }
            guard let pause = policy.next(failure: failure, linkLoss: failure.map(isLinkLoss) ?? false,
                                            delivered: counts.delivered.load(ordering: .relaxed)) else {
                return failure
            }
            out.yield(.retrying(failure: failure, device: device, retryIn: pause))
            do { try await Task.sleep(for: pause) } catch { return nil }
        }
    }

    /// One connection: open, discover, read, set up, subscribe, deliver until the link
    /// drops or the task is cancelled; unsubscribes (link still up) and disconnects.
    private static func connection(_ target: DeviceTarget, _ route: PeerRoute, _ settings: PeerSettings, _ plan: FollowPlan,
                                   _ out: AsyncThrowingStream<FollowEvent, any Error>.Continuation, _ counts: FollowCounts,
                                   device: inout LEAddress?) async throws {
        let peer = try await GATTPeer.open(target, via: route, settings: settings) { out.yield(.progress($0)) }
        device = peer.address
        let address = peer.address
        var subscribed: [GATTCharacteristic] = []
        var ending: (any Error)?
        do {
            out.yield(.connected(peer, fromCache: peer.mayReuseCache(settings.reuseCache)))
            let start = ContinuousClock.now
            let discovery = try await peer.discover(reuseCache: settings.reuseCache)
            out.yield(.discovered(discovery, elapsed: ContinuousClock.now - start, mtu: peer.client.mtu))
            let db = discovery.discovery.database
            for uuid in plan.reads {
                guard let c = db.characteristic(uuid: uuid), c.properties.contains(.read) else { continue }
                out.yield(.read(c, try await peer.client.read(handle: c.valueHandle)))
            }
            let wanted = plan.subscriptions(db)
            guard !wanted.isEmpty else {
                throw BluetoothError(.notFound, "the device has none of the characteristics to subscribe to")
            }
            let held = plan.waitingForSetup?(db)
            let first = held.map { h in wanted.filter { !h.contains($0.0.valueHandle) } } ?? []
            let later = held.map { h in wanted.filter { h.contains($0.0.valueHandle) } } ?? wanted
            let client = peer.client
            let subscribing = SubscribedCharacteristics()
            @Sendable func subscribe(_ list: [(GATTCharacteristic, indicate: Bool)]) async throws -> [(GATTCharacteristic, AsyncThrowingStream<GATTValue, any Error>)] {
                var streams: [(GATTCharacteristic, AsyncThrowingStream<GATTValue, any Error>)] = []
                for (c, indicate) in list {
                    streams.append((c, try await client.subscribe(characteristic: c, indicate: indicate)))
                    subscribing.list.withLock { $0.append(c) }
                    out.yield(.subscribed(c, indications: indicate))
                }
                return streams
            }
            /// Hands over a subscription's values until it ends (an error: the link went).
            @Sendable func deliver(_ c: GATTCharacteristic, _ stream: AsyncThrowingStream<GATTValue, any Error>) async throws {
                for try await v in stream {
                    var value = v
                    value.droppedBefore += counts.dropped.exchange(0, ordering: .relaxed)
                    counts.delivered.store(true, ordering: .relaxed)
                    if case .dropped = out.yield(.value(c, value, device: address)) {
                        counts.dropped.add(1 + value.droppedBefore, ordering: .relaxed)
                    }
                }
                if Task.isCancelled { return }
                throw GATTError.bearerClosed(client.failure.flatMap {
                    if case .bearerClosed(let r) = $0 { return r }
                    return nil
                } ?? ChannelClosed(message: "the subscription to \(c.uuid) ended"))
            }
            do {
                if held == nil { try await plan.setup(client, db) }
                let streams = try await subscribe(first)
                enum Ended: Sendable { case setup, subscription }
                try await withThrowingTaskGroup(of: Ended.self) { group in
                    for (c, stream) in streams {
                        group.addTask {
                            try await deliver(c, stream)
                            return .subscription
                        }
                    }
                    // The setup beside the first subscriptions, then the ones it held back.
                    group.addTask {
                        if held != nil { try await plan.setup(client, db) }
                        let more = try await subscribe(later)
                        guard !more.isEmpty else { return .setup }
                        try await withThrowingTaskGroup(of: Void.self) { inner in
                            for (c, stream) in more { inner.addTask { try await deliver(c, stream) } }
                            try await inner.next()
                            inner.cancelAll()
                        }
                        return .subscription
                    }
                    // The connection lasts while a subscription does: the setup ending
                    // (with nothing held back) is not the end.
                    while let ended = try await group.next() {
                        if case .setup = ended, !group.isEmpty { continue }
                        break
                    }
                    group.cancelAll()
                }
            } catch {
                subscribed = subscribing.list.withLock { $0 }
                throw error
            }
            subscribed = subscribing.list.withLock { $0 }
        } catch {
            ending = error
        }
        // Clear the CCCDs unless the link is gone (nothing to tell the device then).
        if !(ending.map(isLinkLoss) ?? false) {
            for c in subscribed { try? await peer.client.unsubscribe(characteristic: c) }
        }
        await peer.close()
        if let ending { throw ending }
    }
}

/// The characteristics a connection subscribed to, from whichever of its tasks did: cleared
/// when it ends.
final class SubscribedCharacteristics: Sendable {
    let list = Mutex<[GATTCharacteristic]>([])
}

/// What the follower's tasks count together: values dropped for a slow consumer (told with
/// the next one), and whether the connection delivered anything (for the back-off).
final class FollowCounts: Sendable {
    let dropped = Atomic<Int>(0)
    let delivered = Atomic<Bool>(false)
}
