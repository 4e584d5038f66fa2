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
        case ended
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
        let values: AsyncThrowingStream<GATTValue, any Error>
        do throws(GATTError) {
            values = try await client.subscribe(characteristic: measurement, indicate: !measurement.properties.contains(.notify))
        } catch {
            throw BluetoothError(error)
        }
        let (inputStream, inputs) = AsyncStream<Input>.makeStream()
        let (events, sink) = AsyncThrowingStream<RecordEvent, any Error>.makeStream()
        sink.onTermination = { reason in
            if case .cancelled = reason { inputs.yield(.stop) }
        }
        let pump = Task {
            do {
                for try await v in values { inputs.yield(.value(v)) }
            } catch {}
            inputs.yield(.ended)
        }
        let machine = IndicatedReadingsCollector(timing: timing, now: monotonicNow())
        Task {
            let unsubscribe = await drive(machine, service: service, handle: measurement.valueHandle, inputs: inputStream,
                                          input: inputs, sink: sink)
            pump.cancel()
            // The link is still up: the device is left quiet (a bonded one keeps what comes
            // next for the next collection).
            if unsubscribe { try? await client.unsubscribe(characteristic: measurement) }
        }
        return ReadingCollection(events: events, inputs: inputs)
    }

    /// The loop: values, the timer and a stop go through the machine in order. True when
    /// the link is still up at the end.
    private static func drive(_ start: IndicatedReadingsCollector, service: RecordService, handle: UInt16,
                              inputs: AsyncStream<Input>, input: AsyncStream<Input>.Continuation,
                              sink: AsyncThrowingStream<RecordEvent, any Error>.Continuation) async -> Bool {
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
        func finish(_ s: IndicatedReadingsCollector.Summary) {
            sink.yield(.collected(s))
            sink.finish()
            input.finish()
        }
        arm()
        for await i in inputs {
            let now = monotonicNow()
            switch i {
            case .tick:
                if let s = machine.timeout(now: now) { finish(s); return true }
            case .stop:
                if let s = machine.stop() { finish(s) }
                return true
            case .ended:
                if let s = machine.disconnected() { finish(s) }
                return false
            case .value(let v) where v.handle == handle:
                if v.droppedBefore > 0 { machine.lost(v.droppedBefore) }
                guard machine.reading(now: now) else {
                    if let s = machine.finished { finish(s); return true }
                    break
                }
                switch decodeReading(service, v.value) {
                case .success(let d): sink.yield(.record(StoredRecord(service: service, measurement: v.value, context: nil, decoded: d)))
                case .failure(let e): sink.yield(.malformed(service.recordCharacteristic, v.value, e))
                }
            case .value:
                break
            }
            arm()
        }
        return false
    }

    private static func decodeReading(_ service: RecordService, _ bytes: [UInt8]) -> Result<StoredRecord.Decoded, WireError> {
        bytes.withUnsafeBytes { raw in
            do throws(WireError) {
                switch service {
                case .bloodPressure: return .success(.bloodPressure(try BloodPressureMeasurement(parsing: raw)))
                case .weightScale: return .success(.weight(try WeightMeasurement(parsing: raw)))
                case .glucose, .pulseOximeter:
                    throw WireError(.invalidValue, at: 0, "not an indicated-readings service")
                }
            } catch {
                return .failure(error)
            }
        }
    }
}
