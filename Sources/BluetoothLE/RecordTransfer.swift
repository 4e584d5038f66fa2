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
    /// A value on a record characteristic that does not decode, with why: the first few of
    /// a procedure (``RACPClient/Limits/keptMalformed``); the rest are only counted
    /// (``RACPClient/Summary/malformed``).
    case malformed(BluetoothUUID, [UInt8], WireError)
    /// The procedure ended (always the last event of a ``RecordTransfer``).
    case finished(RACPClient.Summary)
    /// Collecting indicated readings ended (always the last event of a ``ReadingCollection``).
    case collected(IndicatedReadingsCollector.Summary)
}

/// One Record Access Control Point procedure on a connected device: the records as they
/// come, then how it ended. Made by ``start(_:service:on:database:limits:)``; ``abort()``
/// stops it (Abort Operation); the stream ends after ``RecordEvent/finished(_:)``, or throws
/// when the link goes or its reader falls ``bufferedEvents`` behind. Whatever the device
/// sends, the procedure ends within its ``RACPClient/Limits`` and holds bounded memory.
public final class RecordTransfer: AsyncSequence, Sendable {
    public typealias Element = RecordEvent
    public typealias AsyncIterator = AsyncThrowingStream<RecordEvent, any Error>.AsyncIterator

    /// Events held for a reader that has not taken them; one more ends the transfer.
    public static let bufferedEvents = 4096
    /// Values held between the link and the procedure; more are counted as lost.
    static let bufferedInputs = 512

    enum Input: Sendable {
        case value(GATTValue)
        case written
        /// A wake-up: ``Control/abortAsked`` says what for (a wake-up may be dropped from a
        /// full queue, the request is not).
        case abort
        case tick
    }

    /// What reaches the loop outside the bounded queue: the reader's Abort, values the
    /// queue could not take, and why the link's values ended.
    final class Control: Sendable {
        let abortAsked = Atomic<Bool>(false)
        let lost = Atomic<Int>(0)
        let ending = Mutex<(any Error)?>(nil)
    }

    private let events: AsyncThrowingStream<RecordEvent, any Error>
    private let inputs: AsyncStream<Input>.Continuation
    private let control: Control

    private init(events: AsyncThrowingStream<RecordEvent, any Error>, inputs: AsyncStream<Input>.Continuation, control: Control) {
        self.events = events
        self.inputs = inputs
        self.control = control
    }

    public func makeAsyncIterator() -> AsyncIterator { events.makeAsyncIterator() }

    /// Stops the procedure (RACP Abort Operation): records that still come are dropped and
    /// counted, and the stream ends once the server answers (or the timeout passes).
    public func abort() {
        control.abortAsked.store(true, ordering: .releasing)
        inputs.yield(.abort)
    }

    /// Subscribes to the service's record characteristics and control point on one ordered
    /// stream (so the answer cannot overtake the last records), writes `request` and returns
    /// the transfer. Throws when the device lacks the service, the request does not suit it
    /// (PLX: all records only), or the control point refuses the write (ATT 0x80/0xFE:
    /// a procedure already runs; 0x81/0xFD: not subscribed). Security is raised where the
    /// device asks for it (glucose meters want an encrypted, bonded link).
    public static func start(_ request: RecordRequest, service: RecordService, on client: GATTClient,
                             database: GATTDatabase, limits: RACPClient.Limits = RACPClient.Limits()) async throws(BluetoothError) -> RecordTransfer {
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
        // Both queues bounded: a device that floods cannot grow them (what the input queue
        // cannot take is counted lost; an event queue full ends the transfer).
        let (inputStream, inputs) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingOldest(bufferedInputs))
        let (events, sink) = AsyncThrowingStream<RecordEvent, any Error>.makeStream(bufferingPolicy: .bufferingOldest(bufferedEvents))
        let control = Control()
        // A program that stops listening (its task cancelled, the loop left) stops the
        // procedure too: the device is left idle, not busy for 30 s.
        sink.onTermination = { reason in
            if case .cancelled = reason {
                control.abortAsked.store(true, ordering: .releasing)
                inputs.yield(.abort)
            }
        }
        let pump = Task {
            do {
                for try await v in values {
                    if case .dropped = inputs.yield(.value(v)) { control.lost.add(1 + v.droppedBefore, ordering: .relaxed) }
                }
                control.ending.withLock { $0 = BluetoothError(.disconnected, "the link went down during the record transfer") }
            } catch {
                control.ending.withLock { $0 = error }
            }
            // The loop takes what is queued, then the ending.
            inputs.finish()
        }
        var machine = RACPClient(limits: limits)
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
        let transfer = RecordTransfer(events: events, inputs: inputs, control: control)
        Task {
            await Self.drive(machine, service: service, handles: handles, sessionStart: sessionStart, inputs: inputStream,
                             input: inputs, control: control, sink: sink, client: client)
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
                              inputs: AsyncStream<Input>, input: AsyncStream<Input>.Continuation, control: Control,
                              sink: AsyncThrowingStream<RecordEvent, any Error>.Continuation,
                              client: GATTClient) async {
        var machine = start
        /// Set when the reader fell behind: the transfer ends with this error.
        var overrun: BluetoothError?
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
        /// Hands `event` on; a reader that let the queue fill is told by the transfer's end.
        func emit(_ event: RecordEvent) {
            guard overrun == nil else { return }
            if case .dropped = sink.yield(event) {
                overrun = BluetoothError(.protocolViolation, "records came faster than they were taken (\(bufferedEvents) waiting): the transfer was given up")
            }
        }
        func flush() {
            guard let m = held else { return }
            held = nil
            emit(.record(StoredRecord(service: service, measurement: heldBytes, context: nil, decoded: .glucose(m, context: nil))))
        }
        /// Tells the device to stop a procedure it was given up on: the Abort is sent before
        /// the transfer ends (a program may close the link next), its Write Response waited
        /// for 1 s at most (a hostile device need not answer), the Abort's answer not at all.
        func abandon() async {
            guard let bytes = try? RecordAccessControlPoint.Owned.abort.encoded() else { return }
            // Whichever comes first resumes: the write's answer or the second passing (a task
            // group would wait for the write, which no cancellation ends).
            let resumed = Atomic<Bool>(false)
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let once: @Sendable () -> Void = {
                    if !resumed.exchange(true, ordering: .acquiringAndReleasing) { c.resume() }
                }
                Task {
                    do throws(GATTError) { try await client.write(handle: handles.racp, value: bytes) } catch {}
                    once()
                }
                Task {
                    try? await Task.sleep(for: .seconds(1))
                    once()
                }
            }
        }
        func finish(_ s: RACPClient.Summary) async {
            flush()
            if case .exceeded = s.outcome { await abandon() }
            emit(.finished(s))
            if let overrun { sink.finish(throwing: overrun) } else { sink.finish() }
            input.finish()
        }
        arm()
        for await i in inputs {
            let now = monotonicNow()
            if case .value(let v) = i, v.droppedBefore > 0 { machine.lost(v.droppedBefore) }
            let lost = control.lost.exchange(0, ordering: .relaxed)
            if lost > 0 { machine.lost(lost) }
            if overrun != nil {
                // The reader fell behind: the procedure is given up.
                if machine.abort(now: now) != nil { await abandon() }
                flush()
                if let overrun { sink.finish(throwing: overrun) }
                input.finish()
                return
            }
            switch i {
            case .written:
                machine.written(now: now)
            case .abort, .value, .tick:
                break
            }
            if control.abortAsked.exchange(false, ordering: .acquiring) {
                if let bytes = machine.abort(now: now) {
                    flush()
                    Task {
                        do throws(GATTError) { try await client.write(handle: handles.racp, value: bytes) } catch {
                            // Refused or lost: the timer ends the procedure.
                        }
                    }
                }
            }
            switch i {
            case .written, .abort:
                break
            case .tick:
                if let s = machine.timeout(now: now) { return await finish(s) }
            case .value(let v) where v.handle == handles.racp:
                if let s = machine.controlPoint(v.value, now: now) { return await finish(s) }
            case .value(let v) where v.handle == handles.context:
                // A context belongs to the measurement just before it with its sequence number.
                do throws(WireError) {
                    let ctx = try parsed(v.value) { (raw) throws(WireError) in try GlucoseMeasurementContext(parsing: raw) }.get()
                    if let m = held, ctx.sequenceNumber == m.sequenceNumber {
                        held = nil
                        emit(.record(StoredRecord(service: service, measurement: heldBytes, context: v.value,
                                                        decoded: .glucose(m, context: ctx))))
                    } else {
                        // One for no measurement: the measurement it belonged to was dropped.
                        flush()
                    }
                } catch {
                    flush()
                    if machine.malformed(now: now) == .deliver { emit(.malformed(BluetoothUUID(0x2A34), v.value, error)) }
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
                            emit(.record(StoredRecord(service: service, measurement: v.value, context: nil, decoded: .glucose(m, context: nil))))
                        }
                    } catch {
                        if machine.malformed(now: now) == .deliver {
                            emit(.malformed(service.recordCharacteristic, v.value, error))
                        }
                    }
                case .pulseOximeter:
                    do throws(WireError) {
                        let m = try parsed(v.value) { (raw) throws(WireError) in try PLXSpotCheckMeasurement(parsing: raw) }.get()
                        if machine.record(sequenceNumber: nil, now: now) == .deliver {
                            emit(.record(StoredRecord(service: service, measurement: v.value, context: nil, decoded: .pulseOximeter(m))))
                        }
                    } catch {
                        if machine.malformed(now: now) == .deliver {
                            emit(.malformed(service.recordCharacteristic, v.value, error))
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
                                emit(.malformed(service.recordCharacteristic, bytes, WireError(.invalidValue, at: bytes.count - 2, "E2E-CRC mismatch")))
                                continue
                            }
                            emit(.record(StoredRecord(service: service, measurement: bytes, context: nil,
                                                            decoded: .cgm(m, sessionStart: sessionStart))))
                        }
                    case .failure(let error):
                        if machine.malformed(now: now) == .deliver {
                            emit(.malformed(service.recordCharacteristic, v.value, error))
                        }
                    }
                case .bloodPressure, .weightScale:
                    break  // not started for these
                }
            case .value:
                break
            }
            // A bound passed on the way (too many values): given up.
            if let s = machine.finished { return await finish(s) }
            arm()
        }
        // The link's values ended (or the queue was closed by the loop's own finish).
        flush()
        let ending: (any Error)? = control.ending.withLock { $0 }
        sink.finish(throwing: ending ?? BluetoothError(.disconnected, "the link went down during the record transfer"))
    }
}

extension RACPClient.Limits {
    /// The limits with durations: each at least 1 ms and at most a day, so a caller's
    /// Duration cannot overflow the clock.
    public init(recordTimeout: Duration = .seconds(30), procedureTimeout: Duration = .seconds(120), maxValues: Int = 65536) {
        func nanoseconds(_ d: Duration) -> UInt64 {
            let (seconds, attoseconds) = d.components
            let ns = seconds < 0 ? 1_000_000 : seconds >= 86_400 ? 86_400_000_000_000
                : UInt64(seconds) * 1_000_000_000 + UInt64(Swift.max(0, attoseconds) / 1_000_000_000)
            return Swift.max(1_000_000, ns)
        }
        self.init(recordTimeout: nanoseconds(recordTimeout), procedureTimeout: nanoseconds(procedureTimeout), maxValues: maxValues)
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
