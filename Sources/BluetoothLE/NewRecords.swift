import BluetoothGATT
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire

/// Where a collector is in a device's record store: the newest record it has taken.
public struct RecordPosition: Sendable, Hashable {
    /// That record's sequence number.
    public var sequenceNumber: UInt16
    /// That record's measurement time (seconds since 1970, the device's clock), when known:
    /// a device that was reset and has since numbered more records than this one is told
    /// from one that was not by the time its record of this number carries.
    public var time: Int64?

    /// A position.
    public init(sequenceNumber: UInt16, time: Int64? = nil) {
        self.sequenceNumber = sequenceNumber
        self.time = time
    }

    /// The position of `record` (nil when it has no sequence number).
    public init?(of record: StoredRecord) {
        guard let n = record.sequenceNumber else { return nil }
        self.init(sequenceNumber: n, time: record.measurementTime?.secondsSince1970)
    }

    /// Whether sequence number `n` comes after `m`: record numbers wrap (65535, then 0), so
    /// `n` is after when it is less than half the number space ahead.
    public static func isAfter(_ n: UInt16, _ m: UInt16) -> Bool {
        let d = n &- m
        return d != 0 && d < 0x8000
    }
}

/// What a device holds beyond a ``RecordPosition``.
public struct NewRecords: Sendable {
    /// The records newer than the position (every record when `renumbered` or with no
    /// position), oldest first, each once.
    public var records: [StoredRecord]
    /// The device numbers its records anew (it was reset): the position no longer applies.
    public var renumbered: Bool
    /// The last procedure's ending.
    public var summary: RACPClient.Summary
    /// Values that did not decode, as they came: the first few (``malformedCount`` says
    /// how many came in all).
    public var malformed: [(BluetoothUUID, [UInt8], WireError)]
    /// How many values did not decode over the whole sync.
    public var malformedCount: Int = 0
}

extension RecordTransfer {
    /// The records `service` on the device holds beyond `position` (all of them with none):
    /// the collector's sync, as a gateway or an app that keeps its place needs it.
    ///
    /// The newest record (Report last) says where the device is: at the position (nothing
    /// new), ahead of it (the newer ones are asked for, both sides of a wrap past 65535), or
    /// behind it (the device forgot its records and numbers anew: all of them). Ahead, the
    /// record of the position's own number is asked for too: one whose time is not the
    /// position's says the device was reset and has since taken more readings than the
    /// position counts, and all its records are new. A device that cannot report its last
    /// record is asked for all; one that ignores the operator and reports everything is
    /// filtered here. Throws when a procedure fails, or lost values on the way (a gap a
    /// position would pass: ask again). `limits` bound the whole sync, its procedures
    /// together: ``RACPClient/Limits/procedureTimeout`` from the first request to the last
    /// answer, the cap on values and malformed values kept per procedure.
    public static func newRecords(after position: RecordPosition?, service: RecordService, on client: GATTClient,
                                  database: GATTDatabase, limits: RACPClient.Limits = RACPClient.Limits()) async throws(BluetoothError) -> NewRecords
    {
        guard service.hasSequenceNumbers else {
            throw BluetoothError(.invalidRequest, "the \(service.name) Service's records carry no sequence numbers to keep a place by")
        }
        var malformed: [(BluetoothUUID, [UInt8], WireError)] = []
        var malformedCount = 0
        let end = monotonicNow() &+ limits.procedureTimeout
        func fetch(_ selection: RecordSelection) async throws(BluetoothError) -> ([StoredRecord], RACPClient.Summary) {
            // Each procedure has what is left of the sync's time.
            var left = limits
            left.procedureTimeout = end &- Swift.min(end, monotonicNow())
            guard left.procedureTimeout > 0 else { throw BluetoothError.procedureTimeout(limits.procedureTimeout) }
            // One request right after another: a device may still count the first as running
            // for a moment after its answer was confirmed (busy, 0x80 / 0xFE); asked again
            // after a pause, twice at most.
            var transfer: RecordTransfer
            var attempt = 0
            while true {
                do {
                    transfer = try await start(.report(selection), service: service, on: client, database: database, limits: left)
                    break
                } catch {
                    guard attempt < 2, case .attError(let code) = error.kind, code.rawValue == 0x80 || code.rawValue == 0xFE else { throw error }
                    attempt += 1
                    do { try await Task.sleep(for: .milliseconds(300 * attempt)) } catch { throw BluetoothError(.cancelled, "cancelled") }
                }
            }
            var records: [StoredRecord] = []
            do {
                for try await e in transfer {
                    switch e {
                    case .record(let r): records.append(r)
                    case .malformed(let u, let b, let error):
                        if malformed.count < limits.keptMalformed { malformed.append((u, b, error)) }
                    case .finished(let s):
                        malformedCount += s.malformed
                        if case .exceeded(let limit) = s.outcome {
                            // The sync's deadline, not what was left of it for this procedure.
                            let bound = if case .procedureTimeout = limit { RACPClient.Limit.procedureTimeout(limits.procedureTimeout) } else { limit }
                            throw BluetoothError.exceeded(bound, summary: s)
                        }
                        if s.lost > 0 {
                            throw BluetoothError(.protocolViolation, "\(s.lost) value\(s.lost == 1 ? "" : "s") lost on the way; ask again")
                        }
                        return (records, s)
                    case .collected:
                        break
                    }
                }
            } catch let e as BluetoothError {
                throw e
            } catch {
                throw BluetoothError(.disconnected, "the link went down during the record transfer")
            }
            throw BluetoothError(.protocolViolation, "the record transfer ended without an answer")
        }
        func result(_ records: [StoredRecord], _ summary: RACPClient.Summary, renumbered: Bool = false) -> NewRecords {
            // Each sequence number once (a device that ignores the operator sends a record
            // to each request), only those after the position unless it no longer applies.
            var seen = Set<UInt16>()
            let kept = records.filter { r in
                guard let n = r.sequenceNumber, seen.insert(n).inserted else { return false }
                guard !renumbered, let m = position?.sequenceNumber else { return true }
                return RecordPosition.isAfter(n, m)
            }
            return NewRecords(records: kept, renumbered: renumbered, summary: summary, malformed: malformed, malformedCount: malformedCount)
        }
        /// Whether `records` hold the position's record with another time: reset, numbered anew.
        func contradicts(_ records: [StoredRecord], _ p: RecordPosition) -> Bool {
            guard let t = p.time, let r = records.first(where: { $0.sequenceNumber == p.sequenceNumber }),
                  let u = r.measurementTime?.secondsSince1970 else { return false }
            return t != u
        }
        /// A fetch whose records can be relied on whole: answered Success or No Records
        /// Found (a timed-out, aborted or refused one would leave a gap a position passes).
        func complete(_ selection: RecordSelection) async throws(BluetoothError) -> ([StoredRecord], RACPClient.Summary) {
            let (records, summary) = try await fetch(selection)
            switch summary.outcome {
            case .answered(.success), .answered(.noRecordsFound):
                return (records, summary)
            case .answered(let code):
                throw BluetoothError(.protocolViolation, "the device answered \(code.name); ask again")
            case .aborted, .timedOut, .count, .exceeded:
                throw BluetoothError(.timeout, "the record procedure did not complete; ask again")
            }
        }
        /// The newest of `records` by sequence number (a device that ignores the operator
        /// may send them in any order).
        func newest(_ records: [StoredRecord]) -> UInt16? {
            records.compactMap(\.sequenceNumber).reduce(nil) { best, n in
                guard let b = best else { return n }
                return RecordPosition.isAfter(n, b) ? n : b
            }
        }
        guard let p = position else {
            let (all, s) = try await complete(.all)
            return result(all, s)
        }
        let m = p.sequenceNumber
        /// All the records decide where the device is; the newer kept.
        func judgedByAll() async throws(BluetoothError) -> NewRecords {
            let (all, s) = try await complete(.all)
            guard let found = newest(all) else { return result([], s) }
            let numberedAnew = contradicts(all, p) || found != m && !RecordPosition.isAfter(found, m)
            return result(all, s, renumbered: numberedAnew)
        }
        let (last, lastSummary) = try await fetch(.last)
        let n: UInt16
        switch lastSummary.outcome {
        case .answered(.success), .answered(.noRecordsFound):
            guard let found = newest(last) else {
                // The newest came malformed (a CGM record its E2E-CRC disowns): what is
                // before it must not wait for a newer good one; all of them decide.
                return malformed.isEmpty ? result([], lastSummary) : try await judgedByAll()
            }
            n = found
        case .answered:
            // It cannot report its last record.
            return try await judgedByAll()
        case .aborted, .timedOut, .count, .exceeded:
            throw BluetoothError(.timeout, "the device did not report its newest record; ask again")
        }
        if n == m {
            guard contradicts(last, p) else { return result([], lastSummary) }
            let (all, s) = try await complete(.all)
            return result(all, s, renumbered: true)
        }
        guard RecordPosition.isAfter(n, m) else {
            let (all, s) = try await complete(.all)
            return result(all, s, renumbered: true)
        }
        var (records, summary) = try await complete(.atLeast(m))
        if n < m {
            let (wrapped, s) = try await complete(.within(0 ... n))
            records += wrapped
            summary = s
        }
        if contradicts(records, p) {
            let (all, s) = try await complete(.all)
            return result(all, s, renumbered: true)
        }
        return result(records, summary)
    }
}

extension BluetoothError {
    /// The sync's overall deadline passed before its next procedure.
    static func procedureTimeout(_ nanoseconds: UInt64) -> BluetoothError {
        BluetoothError(.timeout, "the record procedure did not finish within \(RACPClient.Limit.seconds(nanoseconds)) s: given up")
    }

    /// A procedure given up at a bound, with what the device had sent.
    static func exceeded(_ limit: RACPClient.Limit, summary s: RACPClient.Summary) -> BluetoothError {
        var text = switch limit {
        case .procedureTimeout(let ns): "the record procedure did not finish within \(RACPClient.Limit.seconds(ns)) s: given up"
        case .values(let n): "the device sent more than \(n) values in one record procedure: given up"
        }
        text += " (\(s.records) record\(s.records == 1 ? "" : "s")"
        if s.malformed > 0 { text += ", \(s.malformed) malformed" }
        let dropped = s.duplicates + s.unexpectedRecords + s.droppedAfterAbort
        if dropped > 0 { text += ", \(dropped) dropped" }
        return BluetoothError(.timeout, text + ")")
    }
}
