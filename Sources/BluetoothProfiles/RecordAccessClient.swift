// The collector side of the Record Access Control Point (GSS §3.187; Glucose Profile §4.9,
// CGM Profile §4.11, PLX Profile §4.6): one procedure at a time, records on the measurement
// characteristic, then one RACP indication ends it; 30 s without either is a failed procedure.
// A hostile server is bounded too: an overall deadline, a cap on the values it may send, and
// what it sends beyond the records (malformed, repeated, unasked) counted, not kept.
import BluetoothWire

/// One Record Access Control Point procedure as the collector runs it, sans-I/O. The caller
/// writes what ``start(_:now:)`` returns to the control point (Write Request), calls
/// ``written(now:)`` at its Write Response, passes each record with ``record(sequenceNumber:now:)``
/// and each control point indication with ``controlPoint(_:now:)``, and ``timeout(now:)`` at
/// ``deadline``. The procedure timer (30 s in every record profile) starts at the Write
/// Response and restarts with each record delivered (not with a value dropped or malformed:
/// a server streaming those cannot keep the procedure alive). Past the overall
/// ``Limits/procedureTimeout`` or ``Limits/maxValues`` the procedure ends
/// (``Outcome/exceeded(_:)``) and the caller sends Abort Operation. An ``abort(now:)`` sends
/// Abort Operation; records that still come are dropped and counted: they were queued
/// before the server saw it.
public struct RACPClient: Sendable {
    /// What bounds a procedure whatever the server sends.
    public struct Limits: Sendable, Hashable {
        /// Nanoseconds without a delivered record or an answer (30 s in GLP, CGMP and PLXP).
        public var recordTimeout: UInt64
        /// Nanoseconds for the whole procedure, from its start, however many records come.
        public var procedureTimeout: UInt64
        /// Values the server may send in one procedure (records, malformed, dropped): the
        /// sequence-number space, beyond which no honest store has anything to send.
        public var maxValues: Int
        /// Malformed values handed on (for the error message); the rest only counted.
        public var keptMalformed: Int

        /// The limits: 30 s between records, 2 minutes in all, 65536 values, 8 malformed kept.
        public init(recordTimeout: UInt64 = 30_000_000_000, procedureTimeout: UInt64 = 120_000_000_000,
                    maxValues: Int = 65536, keptMalformed: Int = 8) {
            self.recordTimeout = recordTimeout
            self.procedureTimeout = procedureTimeout
            self.maxValues = maxValues
            self.keptMalformed = keptMalformed
        }
    }

    /// Which bound ended a procedure.
    public enum Limit: Sendable, Hashable {
        /// The overall deadline (``Limits/procedureTimeout``, nanoseconds) passed.
        case procedureTimeout(UInt64)
        /// The server sent more values than ``Limits/maxValues``.
        case values(Int)

        /// Nanoseconds as seconds for a message: "120", "2.5".
        public static func seconds(_ nanoseconds: UInt64) -> String {
            let ms = nanoseconds / 1_000_000
            let whole = ms / 1000, fraction = ms % 1000
            guard fraction != 0 else { return "\(whole)" }
            var digits = String(fraction)
            digits = String(repeating: "0", count: 3 - digits.count) + digits
            while digits.last == "0" { digits.removeLast() }
            return "\(whole).\(digits)"
        }
    }

    /// How a procedure ended.
    public enum Outcome: Sendable, Hashable {
        /// The server's Response Code to the request (success, no records found, ...).
        case answered(RACPResponseCode)
        /// The server's Number of Stored Records Response.
        case count(UInt16)
        /// Stopped at our request; `confirmed`: the server answered the Abort with Success.
        /// `answer` is what it said when it did not (Abort Unsuccessful...).
        case aborted(confirmed: Bool, answer: RACPResponseCode?)
        /// Neither a record nor an answer for the procedure timeout.
        case timedOut
        /// A bound passed: the procedure was given up (Abort Operation is the caller's to send).
        case exceeded(Limit)
    }

    /// What a finished procedure did.
    public struct Summary: Sendable, Hashable {
        /// The end.
        public var outcome: Outcome
        /// Records delivered.
        public var records: Int
        /// Records that came after the Abort was sent, dropped.
        public var droppedAfterAbort: Int = 0
        /// Records with a sequence number already delivered in this procedure, dropped.
        public var duplicates: Int = 0
        /// Records whose sequence number was below the one before (delivered all the same).
        public var outOfOrder: Int = 0
        /// Control point values that did not answer this procedure (ignored).
        public var strayAnswers: Int = 0
        /// Records that came for a request that sends none (a count, a delete), dropped.
        public var unexpectedRecords: Int = 0
        /// Values lost before they reached the procedure (a consumer too slow for the
        /// notifications), as ``RACPClient/lost(_:)`` was told.
        public var lost: Int = 0
        /// Record values that did not decode (the first ``Limits/keptMalformed`` handed on).
        public var malformed: Int = 0
    }

    /// What to do with a record that came.
    public enum Verdict: Sendable, Hashable {
        /// Hand it to the user.
        case deliver
        /// Drop it: it came after the Abort, repeats one delivered, or no procedure asked.
        case drop
    }

    struct Running: Sendable, Hashable {
        var request: RecordAccessControlPoint.Owned
        /// The record timer's deadline.
        var deadline: UInt64
        /// The whole procedure's.
        var end: UInt64
        /// Values the server sent, whatever became of them.
        var values: Int = 0
        var summary: Summary
        var last: UInt16?
        var seen: Set<UInt16> = []
    }

    /// The phase of the procedure.
    enum State: Sendable, Hashable {
        /// No procedure yet.
        case idle
        /// The request is written (or being written); records and the answer come.
        case running(Running)
        /// Abort Operation is written; what comes until its answer is dropped.
        case aborting(Running)
        /// Done.
        case finished(Summary)
    }

    private(set) var state: State = .idle
    /// The bounds.
    public let limits: Limits
    /// The record timeout (30 s in GLP, CGMP and PLXP).
    public var timeout: UInt64 { limits.recordTimeout }

    /// A collector's procedure under `limits`.
    public init(limits: Limits = Limits()) { self.limits = limits }

    /// A collector's procedure with `timeout` nanoseconds without progress allowed (and the
    /// other limits' defaults).
    public init(timeout nanoseconds: UInt64) { limits = Limits(recordTimeout: nanoseconds) }

    /// When ``timeout(now:)`` is due (nil when nothing is running): the record timer's
    /// deadline or the whole procedure's, whichever comes first.
    public var deadline: UInt64? {
        switch state {
        case .running(let r), .aborting(let r): Swift.min(r.deadline, r.end)
        case .idle, .finished: nil
        }
    }

    /// The summary once finished.
    public var finished: Summary? {
        if case .finished(let s) = state { return s }
        return nil
    }

    /// Starts `request`; returns the bytes to write to the control point, nil when a
    /// procedure ran already (one machine per procedure).
    public mutating func start(_ request: RecordAccessControlPoint.Owned, now: UInt64) -> [UInt8]? {
        guard case .idle = state, let bytes = try? request.encoded() else { return nil }
        state = .running(Running(request: request, deadline: now &+ timeout, end: now &+ limits.procedureTimeout,
                                 summary: Summary(outcome: .timedOut, records: 0)))
        return bytes
    }

    /// The control point's Write Response came: the procedure timer starts now.
    public mutating func written(now: UInt64) {
        switch state {
        case .running(var r):
            r.deadline = now &+ timeout
            state = .running(r)
        case .aborting(var r):
            r.deadline = now &+ timeout
            state = .aborting(r)
        case .idle, .finished:
            break
        }
    }

    /// A record came, with its sequence number where the record has one (glucose; CGM and
    /// PLX records carry none). Only a record delivered restarts the record timer. Past
    /// ``Limits/maxValues`` the procedure ends here (see ``finished``).
    public mutating func record(sequenceNumber: UInt16?, now: UInt64) -> Verdict {
        let timeout = timeout
        return reportValue { r in
            if let n = sequenceNumber {
                guard r.seen.insert(n).inserted else {
                    r.summary.duplicates += 1
                    return .drop
                }
                // Sequence numbers wrap: `n` is behind when it is within half the space below the last.
                if let last = r.last, last &- n != 0, last &- n < 0x8000 { r.summary.outOfOrder += 1 }
                r.last = n
            }
            r.deadline = now &+ timeout
            r.summary.records += 1
            return .deliver
        }
    }

    /// A value on a record characteristic that did not decode: counted; the first
    /// ``Limits/keptMalformed`` are to be handed on (``Verdict/deliver``), the rest dropped.
    /// It restarts no timer.
    public mutating func malformed(now: UInt64) -> Verdict {
        let kept = limits.keptMalformed
        return reportValue { r in
            r.summary.malformed += 1
            return r.summary.malformed <= kept ? .deliver : .drop
        }
    }

    /// One value on a record characteristic: counted against the cap; dropped after the
    /// Abort, and for a request that sends no records (Report Number of Stored Records and
    /// Delete: one that comes is not ours); else `body` judges it.
    private mutating func reportValue(_ body: (inout Running) -> Verdict) -> Verdict {
        switch state {
        case .running(var r):
            guard counted(&r) else { return .drop }
            defer { state = .running(r) }
            guard r.request.opCode == .reportStoredRecords else {
                r.summary.unexpectedRecords += 1
                return .drop
            }
            return body(&r)
        case .aborting(var r):
            guard counted(&r) else { return .drop }
            r.summary.droppedAfterAbort += 1
            state = .aborting(r)
            return .drop
        case .idle, .finished:
            return .drop
        }
    }

    /// Counts one value from the server; false (and the procedure finished) past the cap.
    private mutating func counted(_ r: inout Running) -> Bool {
        r.values += 1
        guard r.values > limits.maxValues else { return true }
        _ = finish(r, .exceeded(.values(limits.maxValues)))
        return false
    }

    /// `n` values of the procedure were lost on the way (a record, or part of one): counted.
    public mutating func lost(_ n: Int) {
        switch state {
        case .running(var r):
            r.summary.lost += n
            state = .running(r)
        case .aborting(var r):
            r.summary.lost += n
            state = .aborting(r)
        case .idle, .finished:
            break
        }
    }

    /// A control point indication came; returns the summary when it ended the procedure.
    public mutating func controlPoint(_ value: [UInt8], now: UInt64) -> Summary? {
        let answer: (op: RACPOpCode, code: RACPResponseCode?, count: UInt16?)? = value.withUnsafeBytes { raw in
            guard let v = try? RecordAccessControlPoint(parsing: raw) else { return nil }
            if let n = v.numberOfRecords { return (.numberOfStoredRecordsResponse, nil, n) }
            if let (req, code) = v.response { return (req, code, nil) }
            return nil
        }
        switch state {
        case .running(var r):
            switch answer {
            case let (op, nil, n?)? where op == .numberOfStoredRecordsResponse && r.request.opCode == .reportNumberOfStoredRecords:
                return finish(r, .count(n))
            case let (op, code?, nil)? where op == r.request.opCode:
                return finish(r, .answered(code))
            default:
                guard counted(&r) else { return finished }
                r.summary.strayAnswers += 1
                state = .running(r)
                return nil
            }
        case .aborting(var r):
            switch answer {
            case let (op, code?, nil)? where op == .abortOperation:
                return finish(r, .aborted(confirmed: code == .success, answer: code == .success ? nil : code))
            case let (op, _, nil)? where op == r.request.opCode:
                // The aborted request's own answer (Procedure Not Completed, or Success for a
                // report that had ended): the Abort's is still to come.
                state = .aborting(r)
                return nil
            default:
                guard counted(&r) else { return finished }
                r.summary.strayAnswers += 1
                state = .aborting(r)
                return nil
            }
        case .idle, .finished:
            return nil
        }
    }

    /// Stops the running procedure: returns Abort Operation's bytes to write (nil when
    /// nothing runs or an Abort is out already). The answer is waited for as long as a record.
    public mutating func abort(now: UInt64) -> [UInt8]? {
        guard case .running(var r) = state, let bytes = try? RecordAccessControlPoint.Owned.abort.encoded() else { return nil }
        r.deadline = now &+ timeout
        state = .aborting(r)
        return bytes
    }

    /// The deadline passed with nothing from the server: the procedure failed (running), or
    /// the Abort went unanswered.
    public mutating func timeout(now: UInt64) -> Summary? {
        switch state {
        case .running(let r) where now >= r.end:
            return finish(r, .exceeded(.procedureTimeout(limits.procedureTimeout)))
        case .aborting(let r) where now >= r.end:
            return finish(r, .aborted(confirmed: false, answer: nil))
        case .running(let r) where now >= r.deadline:
            return finish(r, .timedOut)
        case .aborting(let r) where now >= r.deadline:
            return finish(r, .aborted(confirmed: false, answer: nil))
        default:
            return nil
        }
    }

    private mutating func finish(_ r: Running, _ outcome: Outcome) -> Summary {
        var s = r.summary
        s.outcome = outcome
        state = .finished(s)
        return s
    }
}
