import BluetoothGATT
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire

/// The stored readings of a device with no control point (a blood pressure cuff, a weight
/// scale): subscribed to, they come as indications, oldest first, with no count and no end
/// marker; the collection ends when the device disconnects, goes quiet, or at a time limit
/// (``IndicatedReadingsCollector``). Made by ``start(service:on:database:timing:)``;
/// ``stop()`` ends it early. Events: each ``RecordEvent/record(_:)``, malformed values,
/// then ``RecordEvent/collected(_:)``.
public final class ReadingCollection: AsyncSequence, Sendable {
    public typealias Element = RecordEvent
    public typealias AsyncIterator = AsyncThrowingStream<RecordEvent, any Error>.AsyncIterator

    enum Input: Sendable {
        case value(GATTValue)
        case tick
        case stop
        /// The subscription's stream ended: cleanly (drained after ``GATTSubscription/end()``)
        /// or with the link.
        case streamEnded(failed: Bool)
        /// The CCCD write ending the subscription was answered (or failed).
        case endWritten
    }

    private let events: AsyncThrowingStream<RecordEvent, any Error>
    private let inputs: AsyncStream<Input>.Continuation

    private init(events: AsyncThrowingStream<RecordEvent, any Error>, inputs: AsyncStream<Input>.Continuation) {
        self.events = events
        self.inputs = inputs
    }

    public func makeAsyncIterator() -> AsyncIterator { events.makeAsyncIterator() }

    /// Ends the collection now (what came so far stands).
    public func stop() { inputs.yield(.stop) }

    /// Subscribes to the service's measurement (indications, raising security where the
    /// device asks: cuffs and scales send stored readings to bonded collectors only) and
    /// collects. Throws when the device lacks the service or the subscription is refused.
    public static func start(service: RecordService, on client: GATTClient, database: GATTDatabase,
                             timing: IndicatedReadingsCollector.Timing = .init()) async throws(BluetoothError) -> ReadingCollection {
        guard !service.hasControlPoint else {
            throw BluetoothError(.invalidRequest, "the \(service.name) Service keeps its records behind a Record Access Control Point (RecordTransfer)")
        }
        guard let svc = database.services.first(where: { $0.uuid == service.uuid }) else {
            throw BluetoothError(.notFound, "the device has no \(service.name) Service (\(service.uuid))")
        }
        guard let measurement = svc.characteristics.first(where: { $0.uuid == service.recordCharacteristic }) else {
            throw BluetoothError(.notFound, "the \(service.name) Service has no \(service.recordCharacteristic)")
        }
        let subscription: GATTSubscription
        do throws(GATTError) {
            // Indications where the device has them: only those are confirmed, so only they
            // tell the device a reading was handed over.
            subscription = try await client.subscription(to: measurement, indicate: measurement.properties.contains(.indicate))
        } catch {
            throw BluetoothError(error)
        }
        let (inputStream, inputs) = AsyncStream<Input>.makeStream()
        let (events, sink) = AsyncThrowingStream<RecordEvent, any Error>.makeStream()
        sink.onTermination = { reason in
            if case .cancelled = reason { inputs.yield(.stop) }
        }
        Task {
            do {
                for try await v in subscription { inputs.yield(.value(v)) }
                inputs.yield(.streamEnded(failed: false))
            } catch {
                inputs.yield(.streamEnded(failed: true))
            }
        }
        let machine = IndicatedReadingsCollector(timing: timing, now: monotonicNow())
        Task {
            await drive(machine, service: service, subscription: subscription, inputs: inputStream, input: inputs, sink: sink)
        }
        return ReadingCollection(events: events, inputs: inputs)
    }

    /// The loop: values, the timer, a stop and the subscription's end go through the machine
    /// in order. The subscription is ended (CCCD cleared) before the last event: what came
    /// until then is delivered, and a program can disconnect right after.
    private static func drive(_ start: IndicatedReadingsCollector, service: RecordService, subscription: GATTSubscription,
                              inputs: AsyncStream<Input>, input: AsyncStream<Input>.Continuation,
                              sink: AsyncThrowingStream<RecordEvent, any Error>.Continuation) async {
        var machine = start
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        func arm() {
            timer?.cancel()
            guard let deadline = machine.deadline else { return }
            let wait = deadline &- Swift.min(deadline, monotonicNow())
            timer = Task {
                do { try await Task.sleep(for: .nanoseconds(Int64(clamping: wait))) } catch { return }
                input.yield(.tick)
            }
        }
        func endSubscription() {
            Task {
                try? await subscription.end()
                input.yield(.endWritten)
            }
        }
        arm()
        for await i in inputs {
            let now = monotonicNow()
            var end: IndicatedReadingsCollector.Summary?
            switch i {
            case .tick:
                if machine.timeout(now: now) { endSubscription() }
            case .stop:
                if machine.stop() { endSubscription() }
            case .streamEnded(let failed):
                end = failed ? machine.disconnected() : machine.streamEnded()
            case .endWritten:
                end = machine.subscriptionEnded()
            case .value(let v):
                if v.droppedBefore > 0 { machine.lost(v.droppedBefore) }
                let verdict = machine.reading(now: now)
                if verdict != .drop {
                    switch decodeReading(service, v.value) {
                    case .success(let d): sink.yield(.record(StoredRecord(service: service, measurement: v.value, context: nil, decoded: d)))
                    case .failure(let e): sink.yield(.malformed(service.recordCharacteristic, v.value, e))
                    }
                }
                if verdict == .deliverAndEnd { endSubscription() }
            }
            if let end {
                sink.yield(.collected(end))
                sink.finish()
                input.finish()
                return
            }
            arm()
        }
    }

    private static func decodeReading(_ service: RecordService, _ bytes: [UInt8]) -> Result<StoredRecord.Decoded, WireError> {
        bytes.withUnsafeBytes { raw in
            do throws(WireError) {
                switch service {
                case .bloodPressure: return .success(.bloodPressure(try BloodPressureMeasurement(parsing: raw)))
                case .weightScale: return .success(.weight(try WeightMeasurement(parsing: raw)))
                case .glucose, .pulseOximeter, .cgm:
                    throw WireError(.invalidValue, at: 0, "not an indicated-readings service")
                }
            } catch {
                return .failure(error)
            }
        }
    }
}
