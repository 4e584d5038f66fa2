import BluetoothGATT
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import Synchronization

/// A service that keeps readings taken while no collector was near: behind a Record Access
/// Control Point (0x2A52; ``RecordTransfer``), or indicated once a collector subscribes
/// (``ReadingCollection``).
public enum RecordService: String, Sendable, Hashable, CaseIterable {
    /// Glucose Service (0x1808): Glucose Measurement (0x2A18) notified, each followed by its
    /// Glucose Measurement Context (0x2A34) when its flags say so.
    case glucose
    /// Pulse Oximeter Service (0x1822): PLX Spot-check Measurement (0x2A5E) indicated; its
    /// RACP reports and deletes all records only (PLXS §3.3).
    case pulseOximeter = "plx"
    /// Blood Pressure Service (0x1810): no control point; a cuff indicates its stored Blood
    /// Pressure Measurements (0x2A35) once a bonded collector subscribes (the Blood Pressure
    /// Profile's stored measurements; BLS 1.1's Record Access Control Point is not used).
    case bloodPressure = "bp"
    /// Weight Scale Service (0x181D): no control point; stored Weight Measurements (0x2A9D)
    /// indicated once a bonded collector subscribes (the Weight Scale Profile's stored
    /// measurements).
    case weightScale = "weight"
    /// Continuous Glucose Monitoring Service (0x181F): CGM Measurement (0x2AA7) records, each
    /// placed by its Time Offset (minutes since the session started), which the RACP filters
    /// on as other services filter on sequence numbers (CGMS §3.2.7); dated by the CGM
    /// Session Start Time (0x2AAA).
    case cgm

    /// The service's UUID.
    public var uuid: BluetoothUUID {
        switch self {
        case .glucose: BluetoothUUID(0x1808)
        case .pulseOximeter: BluetoothUUID(0x1822)
        case .bloodPressure: BluetoothUUID(0x1810)
        case .weightScale: BluetoothUUID(0x181D)
        case .cgm: BluetoothUUID(0x181F)
        }
    }

    /// The characteristic that carries the records.
    public var recordCharacteristic: BluetoothUUID {
        switch self {
        case .glucose: BluetoothUUID(0x2A18)
        case .pulseOximeter: BluetoothUUID(0x2A5E)
        case .bloodPressure: BluetoothUUID(0x2A35)
        case .weightScale: BluetoothUUID(0x2A9D)
        case .cgm: BluetoothUUID(0x2AA7)
        }
    }

    /// The characteristic carrying a record's second part, if the service has one.
    public var contextCharacteristic: BluetoothUUID? {
        switch self {
        case .glucose: BluetoothUUID(0x2A34)
        case .pulseOximeter, .bloodPressure, .weightScale, .cgm: nil
        }
    }

    /// The service's name, for messages.
    public var name: String {
        switch self {
        case .glucose: "Glucose"
        case .pulseOximeter: "Pulse Oximeter"
        case .bloodPressure: "Blood Pressure"
        case .weightScale: "Weight Scale"
        case .cgm: "Continuous Glucose Monitoring"
        }
    }

    /// Whether its records carry a number the RACP can select by: a sequence number
    /// (glucose) or a time offset (CGM).
    public var hasSequenceNumbers: Bool { self == .glucose || self == .cgm }

    /// Whether its records are behind a Record Access Control Point (else indicated once a
    /// collector subscribes).
    public var hasControlPoint: Bool { self == .glucose || self == .pulseOximeter || self == .cgm }
}

/// Which stored records.
public enum RecordSelection: Sendable, Hashable {
    /// Every record.
    case all
    /// The oldest one.
    case first
    /// The newest one.
    case last
    /// Sequence numbers from `n` up.
    case atLeast(UInt16)
    /// Sequence numbers up to `n`.
    case atMost(UInt16)
    /// Sequence numbers in the range.
    case within(ClosedRange<UInt16>)

    func request(_ op: RACPOpCode) -> RecordAccessControlPoint.Owned {
        switch self {
        case .all: RecordAccessControlPoint.Owned(opCode: op, operator: .allRecords)
        case .first: RecordAccessControlPoint.Owned(opCode: op, operator: .firstRecord)
        case .last: RecordAccessControlPoint.Owned(opCode: op, operator: .lastRecord)
        case .atLeast(let n): .records(op, sequenceNumberAtLeast: n)
        case .atMost(let n): .records(op, sequenceNumberAtMost: n)
        case .within(let r): .records(op, sequenceNumbersIn: r)
        }
    }
}

/// What to ask the record store.
public enum RecordRequest: Sendable, Hashable {
    /// Report Stored Records: the records come, then the answer.
    case report(RecordSelection)
    /// Report Number of Stored Records.
    case count(RecordSelection)
    /// Delete Stored Records.
    case delete(RecordSelection)

    /// The control point value.
    public var controlPoint: RecordAccessControlPoint.Owned {
        switch self {
        case .report(let s): s.request(.reportStoredRecords)
        case .count(let s): s.request(.reportNumberOfStoredRecords)
        case .delete(let s): s.request(.deleteStoredRecords)
        }
    }

    var selection: RecordSelection {
        switch self {
        case .report(let s), .count(let s), .delete(let s): s
        }
    }
}

/// A record as it came, decoded.
public struct StoredRecord: Sendable, Hashable {
    /// The service it came from.
    public var service: RecordService
    /// The record characteristic's value.
    public var measurement: [UInt8]
    /// The second part (a glucose context), when one came.
    public var context: [UInt8]?
    /// The record decoded.
    public var decoded: Decoded

    /// A record decoded by its service.
    public enum Decoded: Sendable, Hashable {
        /// A glucose reading and its context.
        case glucose(GlucoseMeasurement, context: GlucoseMeasurementContext?)
        /// A pulse oximeter spot-check.
        case pulseOximeter(PLXSpotCheckMeasurement)
        /// A blood pressure reading.
        case bloodPressure(BloodPressureMeasurement)
        /// A weight.
        case weight(WeightMeasurement)
        /// A CGM record, with the session start that dates it (nil: the device has none).
        case cgm(CGMMeasurement, sessionStart: CGMSessionStartTime?)
    }

    /// The record's sequence number (glucose records have one; a CGM record's Time Offset
    /// plays its part).
    public var sequenceNumber: UInt16? {
        switch decoded {
        case .glucose(let m, _): m.sequenceNumber
        case .cgm(let m, _): m.timeOffset
        case .pulseOximeter, .bloodPressure, .weight: nil
        }
    }

    /// The measurement's decoded fields: a CGM record's own (not the notification's list of
    /// records), otherwise the characteristic decoder's.
    public var measurementFields: [Field] {
        if case .cgm(let m, _) = decoded { return m.fields }
        return measurement.withUnsafeBytes { raw in
            ((try? CharacteristicDecoder.decode(uuid: service.recordCharacteristic, value: raw)) ?? nil)?.fields ?? []
        }
    }

    /// When the reading was taken (its base time plus time offset), if it says.
    public var measurementTime: DateTime? {
        switch decoded {
        case .glucose(let m, _): m.baseTime.adding(minutes: Int(m.timeOffset ?? 0))
        case .pulseOximeter(let m): m.timestamp
        case .bloodPressure(let m): m.timestamp
        case .weight(let m): m.timestamp
        case .cgm(let m, let start): start?.time(of: m.timeOffset)
        }
    }
}

/// What a record transfer hands over, in order.
public enum RecordEvent: Sendable, Equatable {
    /// A record.
    case record(StoredRecord)
    /// A value on a record characteristic that does not decode (kept, with why).
    case malformed(BluetoothUUID, [UInt8], WireError)
    /// The procedure ended (always the last event of a ``RecordTransfer``).
    case finished(RACPClient.Summary)
    /// Collecting indicated readings ended (always the last event of a ``ReadingCollection``).
    case collected(IndicatedReadingsCollector.Summary)
}

/// One Record Access Control Point procedure on a connected device: the records as they
/// come, then how it ended. Made by ``start(_:service:on:database:)``; ``abort()`` stops it
/// (Abort Operation); the stream ends after ``RecordEvent/finished(_:)``, or throws when the
/// link goes.
public final class RecordTransfer: AsyncSequence, Sendable {
    public typealias Element = RecordEvent
    public typealias AsyncIterator = AsyncThrowingStream<RecordEvent, any Error>.AsyncIterator

    enum Input: Sendable {
        case value(GATTValue)
        case written
        case abort
        case tick
        case ended(any Error)
    }

    private let events: AsyncThrowingStream<RecordEvent, any Error>
    private let inputs: AsyncStream<Input>.Continuation

    private init(events: AsyncThrowingStream<RecordEvent, any Error>, inputs: AsyncStream<Input>.Continuation) {
        self.events = events
        self.inputs = inputs
    }

    public func makeAsyncIterator() -> AsyncIterator { events.makeAsyncIterator() }

    /// Stops the procedure (RACP Abort Operation): records that still come are dropped and
    /// counted, and the stream ends once the server answers (or the timeout passes).
    public func abort() { inputs.yield(.abort) }

    /// Subscribes to the service's record characteristics and control point on one ordered
    /// stream (so the answer cannot overtake the last records), writes `request` and returns
    /// the transfer. Throws when the device lacks the service, the request does not suit it
    /// (PLX: all records only), or the control point refuses the write (ATT 0x80/0xFE:
    /// a procedure already runs; 0x81/0xFD: not subscribed). Security is raised where the
    /// device asks for it (glucose meters want an encrypted, bonded link).
    public static func start(_ request: RecordRequest, service: RecordService, on client: GATTClient,
                             database: GATTDatabase, timeout: Duration = .seconds(30)) async throws(BluetoothError) -> RecordTransfer {
        guard service.hasControlPoint else {
            throw BluetoothError(.invalidRequest, "the \(service.name) Service has no Record Access Control Point: its stored readings are indicated once a collector subscribes (ReadingCollection)")
        }
        guard let svc = database.services.first(where: { $0.uuid == service.uuid }) else {
            throw BluetoothError(.notFound, "the device has no \(service.name) Service (\(service.uuid))")
        }
        func characteristic(_ u: BluetoothUUID) -> GATTCharacteristic? { svc.characteristics.first { $0.uuid == u } }
        guard let racp = characteristic(RecordAccessControlPoint.uuid) else {
            throw BluetoothError(.notFound, "the \(service.name) Service has no Record Access Control Point (2A52)")
        }
        guard let record = characteristic(service.recordCharacteristic) else {
            throw BluetoothError(.notFound, "the \(service.name) Service has no \(service.recordCharacteristic) to send records on")
        }
        if service == .pulseOximeter, request.selection != .all {
            throw BluetoothError(.invalidRequest, "the Pulse Oximeter Service's control point takes all records only (PLXS §3.3)")
        }
        func subscription(_ c: GATTCharacteristic) -> (GATTCharacteristic, indicate: Bool) {
            (c, indicate: !c.properties.contains(.notify))
        }
        var wanted = [subscription(record)]
        if let u = service.contextCharacteristic, let c = characteristic(u) { wanted.append(subscription(c)) }
        wanted.append((racp, indicate: true))
        let values: AsyncThrowingStream<GATTValue, any Error>
        do throws(GATTError) { values = try await client.subscribe(wanted) } catch { throw BluetoothError(error) }

        // A CGM's records are dated by its session's start, read before the request so the
        // records cannot wait on it (a device without one: undated records).
        var sessionStart: CGMSessionStartTime?
        if service == .cgm, let c = characteristic(BluetoothUUID(0x2AAA)), c.properties.contains(.read),
           let bytes = try? await client.read(handle: c.valueHandle) {
            sessionStart = try? parsed(bytes) { (raw) throws(WireError) in try CGMSessionStartTime(parsing: raw) }.get()
        }
        let (inputStream, inputs) = AsyncStream<Input>.makeStream()
        let (events, sink) = AsyncThrowingStream<RecordEvent, any Error>.makeStream()
        // A program that stops listening (its task cancelled, the loop left) stops the
        // procedure too: the device is left idle, not busy for 30 s.
        sink.onTermination = { reason in
            if case .cancelled = reason { inputs.yield(.abort) }
        }
        let pump = Task {
            do {
                for try await v in values { inputs.yield(.value(v)) }
                inputs.yield(.ended(BluetoothError(.disconnected, "the link went down during the record transfer")))
            } catch {
                inputs.yield(.ended(error))
            }
        }
        // At least 1 ms, at most a day: a Duration from a caller cannot overflow the clock.
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = seconds < 0 ? 1_000_000 : seconds >= 86_400 ? 86_400_000_000_000
            : UInt64(seconds) * 1_000_000_000 + UInt64(Swift.max(0, attoseconds) / 1_000_000_000)
        var machine = RACPClient(timeout: Swift.max(1_000_000, nanoseconds))
        guard let bytes = machine.start(request.controlPoint, now: monotonicNow()) else {
            pump.cancel()
            throw BluetoothError(.invalidRequest, "the request cannot be encoded")
        }
        do throws(GATTError) { try await client.write(handle: racp.valueHandle, value: bytes) } catch {
            pump.cancel()
            throw BluetoothError(recordError: error, service: service)
        }
        inputs.yield(.written)
        let handles = Handles(record: record.valueHandle, context: service.contextCharacteristic.flatMap { characteristic($0)?.valueHandle },
                              racp: racp.valueHandle)
        let transfer = RecordTransfer(events: events, inputs: inputs)
        Task {
            await Self.drive(machine, service: service, handles: handles, sessionStart: sessionStart, inputs: inputStream,
                             input: inputs, sink: sink, client: client)
            pump.cancel()
        }
        return transfer
    }

    struct Handles: Sendable {
        var record: UInt16, context: UInt16?, racp: UInt16
    }

    /// The one loop: values, the write's answer, the user's Abort and the timer go through
    /// the machine in order; a glucose measurement whose context follows waits for it.
    private static func drive(_ start: RACPClient, service: RecordService, handles: Handles, sessionStart: CGMSessionStartTime?,
                              inputs: AsyncStream<Input>,
                              input: AsyncStream<Input>.Continuation, sink: AsyncThrowingStream<RecordEvent, any Error>.Continuation,
                              client: GATTClient) async {
        var machine = start
        var held: GlucoseMeasurement?
        var heldBytes: [UInt8] = []
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
        func flush() {
            guard let m = held else { return }
            held = nil
            sink.yield(.record(StoredRecord(service: service, measurement: heldBytes, context: nil, decoded: .glucose(m, context: nil))))
        }
        func finish(_ s: RACPClient.Summary) {
            flush()
            sink.yield(.finished(s))
            sink.finish()
            input.finish()
        }
        arm()
        for await i in inputs {
            let now = monotonicNow()
            if case .value(let v) = i, v.droppedBefore > 0 { machine.lost(v.droppedBefore) }
            switch i {
            case .written:
                machine.written(now: now)
            case .abort:
                if let bytes = machine.abort(now: now) {
                    flush()
                    Task {
                        do throws(GATTError) { try await client.write(handle: handles.racp, value: bytes) } catch {
                            // Refused or lost: the timer ends the procedure.
                        }
                    }
                }
            case .tick:
                if let s = machine.timeout(now: now) { return finish(s) }
            case .ended(let e):
                flush()
                sink.finish(throwing: e)
                input.finish()
                return
            case .value(let v) where v.handle == handles.racp:
                if let s = machine.controlPoint(v.value, now: now) { return finish(s) }
            case .value(let v) where v.handle == handles.context:
                // A context belongs to the measurement just before it with its sequence number.
                do throws(WireError) {
                    let ctx = try parsed(v.value) { (raw) throws(WireError) in try GlucoseMeasurementContext(parsing: raw) }.get()
                    if let m = held, ctx.sequenceNumber == m.sequenceNumber {
                        held = nil
                        sink.yield(.record(StoredRecord(service: service, measurement: heldBytes, context: v.value,
                                                        decoded: .glucose(m, context: ctx))))
                    } else {
                        // One for no measurement: the measurement it belonged to was dropped.
                        flush()
                    }
                } catch {
                    flush()
                    sink.yield(.malformed(BluetoothUUID(0x2A34), v.value, error))
                }
            case .value(let v) where v.handle == handles.record:
                flush()
                switch service {
                case .glucose:
                    do throws(WireError) {
                        let m = try parsed(v.value) { (raw) throws(WireError) in try GlucoseMeasurement(parsing: raw) }.get()
                        guard machine.record(sequenceNumber: m.sequenceNumber, now: now) == .deliver else { break }
                        if m.contextFollows && handles.context != nil {
                            held = m
                            heldBytes = v.value
                        } else {
                            sink.yield(.record(StoredRecord(service: service, measurement: v.value, context: nil, decoded: .glucose(m, context: nil))))
                        }
                    } catch {
                        if machine.record(sequenceNumber: nil, now: now) == .deliver {
                            sink.yield(.malformed(service.recordCharacteristic, v.value, error))
                        }
                    }
                case .pulseOximeter:
                    do throws(WireError) {
                        let m = try parsed(v.value) { (raw) throws(WireError) in try PLXSpotCheckMeasurement(parsing: raw) }.get()
                        if machine.record(sequenceNumber: nil, now: now) == .deliver {
                            sink.yield(.record(StoredRecord(service: service, measurement: v.value, context: nil, decoded: .pulseOximeter(m))))
                        }
                    } catch {
                        if machine.record(sequenceNumber: nil, now: now) == .deliver {
                            sink.yield(.malformed(service.recordCharacteristic, v.value, error))
                        }
                    }
                case .cgm:
                    // One notification may carry several records, each led by its Size.
                    let records: Result<[(CGMMeasurement, [UInt8])], WireError> = v.value.withUnsafeBytes { raw in
                        do throws(WireError) {
                            _ = try CGMMeasurementRecords(parsing: raw)
                            var out: [(CGMMeasurement, [UInt8])] = []
                            var at = 0
                            while at < raw.count {
                                let record = UnsafeRawBufferPointer(rebasing: raw[at ..< at + Int(raw[at])])
                                out.append((try CGMMeasurement(parsing: record), Array(record)))
                                at += record.count
                            }
                            return .success(out)
                        } catch {
                            return .failure(error)
                        }
                    }
                    switch records {
                    case .success(let list):
                        for (m, bytes) in list where machine.record(sequenceNumber: m.timeOffset, now: now) == .deliver {
                            // A record its own E2E-CRC disowns is not a reading to keep.
                            guard m.crcMatches != false else {
                                sink.yield(.malformed(service.recordCharacteristic, bytes, WireError(.invalidValue, at: bytes.count - 2, "E2E-CRC mismatch")))
                                continue
                            }
                            sink.yield(.record(StoredRecord(service: service, measurement: bytes, context: nil,
                                                            decoded: .cgm(m, sessionStart: sessionStart))))
                        }
                    case .failure(let error):
                        if machine.record(sequenceNumber: nil, now: now) == .deliver {
                            sink.yield(.malformed(service.recordCharacteristic, v.value, error))
                        }
                    }
                case .bloodPressure, .weightScale:
                    break  // not started for these
                }
            case .value:
                break
            }
            arm()
        }
    }
}

/// Parses `bytes` with `body`, the typed error kept (`withUnsafeBytes` rethrows untyped).
private func parsed<T>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(WireError) -> T) -> Result<T, WireError> {
    bytes.withUnsafeBytes { raw in
        do throws(WireError) { return .success(try body(raw)) } catch { return .failure(error) }
    }
}

extension BluetoothError {
    /// A refused control point write, named as the record services name it: 0x80/0xFE a
    /// procedure already runs, 0x81/0xFD the client is not subscribed (the Glucose Service's
    /// own application error codes; later services use the Core Spec Supplement's common
    /// profile error codes).
    init(recordError e: GATTError, service: RecordService) {
        if case .attError(let code, _, _) = e {
            switch code.rawValue {
            case 0x80, 0xFE:
                self.init(.attError(code), "the \(service.name) Service is busy: a procedure is already in progress (ATT error 0x\(hex(code.rawValue, 2)))", underlying: e)
                return
            case 0x81, 0xFD:
                self.init(.attError(code), "the \(service.name) Service says its Client Characteristic Configuration is not set (ATT error 0x\(hex(code.rawValue, 2)))", underlying: e)
                return
            default:
                break
            }
        }
        self.init(e)
    }
}
