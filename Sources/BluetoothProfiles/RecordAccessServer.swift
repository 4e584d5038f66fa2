// The sensor side of the Record Access Control Point (GSS §3.187; Glucose Service §3.2.4,
// CGM Service §3.2.7, PLX Service §3.3): one procedure at a time per client, records sent on
// the measurement characteristic, then exactly one RACP indication.
import BluetoothWire

/// What a record store's server accepts. The Glucose Service's set by default (Nordic's
/// qualified server has the same): report / delete / report number with all, first, last,
/// ≤, ≥ and within range of sequence numbers.
public struct RACPServerRules: Sendable, Hashable {
    /// Operators taken (the first three op codes alike).
    public var operators: Set<UInt8> = [1, 2, 3, 4, 5, 6]
    /// Delete Stored Records is done (else Op Code Not Supported).
    public var deletes = true
    /// The ATT error for a request while one runs: the Glucose Service's own 0x80
    /// (Procedure Already In Progress), 0xFE in the later services (Core Spec Supplement Part B).
    public var busyError = ATTErrorCode(rawValue: 0x80)
    /// The ATT error for a client not subscribed where the procedure sends: 0x81 (Glucose
    /// Service), 0xFD (later services).
    public var notSubscribedError = ATTErrorCode(rawValue: 0x81)

    /// The Glucose Service's rules.
    public init() {}

    /// The Glucose Service's rules (``init()``).
    public static let glucose = RACPServerRules()

    /// The Continuous Glucose Monitoring Service's (CGMS §3.2.7): every operator, its
    /// records' Time Offset in the place of a sequence number (filter type 0x01, u16), the
    /// Core Specification Supplement's 0xFE / 0xFD errors.
    public static let cgm: RACPServerRules = {
        var r = RACPServerRules()
        r.busyError = ATTErrorCode(rawValue: 0xFE)
        r.notSubscribedError = ATTErrorCode(rawValue: 0xFD)
        return r
    }()

    /// The Pulse Oximeter Service's (PLXS §3.3): every op code with the All Records operator
    /// only (its records carry no sequence number to filter on), the Core Specification
    /// Supplement's 0xFE / 0xFD errors.
    public static let pulseOximeter: RACPServerRules = {
        var r = RACPServerRules()
        r.operators = [1]
        r.busyError = ATTErrorCode(rawValue: 0xFE)
        r.notSubscribedError = ATTErrorCode(rawValue: 0xFD)
        return r
    }()
}

/// One client's Record Access Control Point procedure, sans-I/O: a write comes in with the
/// sequence numbers held and what the client subscribed to; out come what to send. The caller
/// sends each record named by ``RACPServer/Action/sendRecord(_:)`` and calls
/// ``recordSent()`` (so an Abort is seen between records), sends the final indication and
/// calls ``responseConfirmed()``; a link that goes calls ``reset()``.
public struct RACPServer: Sendable {
    /// The phase of the procedure.
    public enum State: Sendable, Equatable {
        /// Nothing running: a request starts one.
        case idle
        /// Sending records (sequence numbers, in order; `next` is the one to send now).
        case reporting(records: [UInt16], next: Int)
        /// An Abort came while records were going out: it is answered (with `answer`: Success,
        /// or Invalid Operator / Operand for a malformed one, which stops the report all the
        /// same) after the record in flight.
        case aborting(answer: RACPResponseCode)
        /// The final indication is out; busy until it is confirmed (then the answer to an
        /// Abort that came meanwhile, if one did).
        case responding(thenAnswerAbort: RACPResponseCode?)
    }

    /// What to do, in order.
    public enum Action: Sendable, Equatable {
        /// Refuse the write with this ATT error: no procedure starts, nothing is indicated.
        case reject(ATTErrorCode)
        /// Send the record with this sequence number (and its context, where it has one),
        /// then call ``RACPServer/recordSent()``.
        case sendRecord(UInt16)
        /// Remove these records from the store.
        case delete([UInt16])
        /// Indicate this on the control point, then call ``RACPServer/responseConfirmed()``.
        case indicate(RecordAccessControlPoint.Owned)
    }

    /// The phase now.
    public private(set) var state: State = .idle
    /// What this server accepts.
    public let rules: RACPServerRules

    /// A server with these rules, idle.
    public init(rules: RACPServerRules = RACPServerRules()) {
        self.rules = rules
    }

    /// A write of the control point. `stored`: the keys (sequence numbers) held, oldest first
    /// in the order they were taken (after a wrap not numeric: First and Last go by age, ≤ ≥
    /// and range by value). `racpIndications` / `recordNotifications`: the client's CCCDs. The checks run in
    /// the order the services give: subscriptions, busy, op code, operator, operand, filter.
    public mutating func write(_ value: [UInt8], stored: [UInt16], racpIndications: Bool,
                               recordNotifications: Bool) -> [Action] {
        guard let code = value.first else { return [.reject(.invalidAttributeValueLength)] }
        // A value without its operator names an invalid one (0xFF), as a qualified server
        // decodes it: the op code is still checked first.
        let op = RACPOpCode(rawValue: code), oper = RACPOperator(rawValue: value.count > 1 ? value[1] : 0xFF)
        let operand = value.count > 2 ? Array(value[2...]) : []
        guard racpIndications, op != .reportStoredRecords || recordNotifications else {
            return [.reject(rules.notSubscribedError)]
        }
        if op == .abortOperation { return abort(oper, operand) }
        guard case .idle = state else { return [.reject(rules.busyError)] }
        switch op {
        case .reportStoredRecords, .reportNumberOfStoredRecords:
            break
        case .deleteStoredRecords where rules.deletes:
            break
        default:
            return respond(to: op, .opCodeNotSupported)
        }
        guard (1 ... 6).contains(oper.rawValue) else { return respond(to: op, .invalidOperator) }
        guard rules.operators.contains(oper.rawValue) else { return respond(to: op, .operatorNotSupported) }
        let selected: [UInt16]
        switch select(oper, operand, from: stored) {
        case .records(let s): selected = s
        case .refused(let code): return respond(to: op, code)
        }
        switch op {
        case .reportNumberOfStoredRecords:
            state = .responding(thenAnswerAbort: nil)
            return [.indicate(.numberOfRecordsResponse(UInt16(clamping: selected.count)))]
        case .deleteStoredRecords:
            guard !selected.isEmpty else { return respond(to: op, .noRecordsFound) }
            state = .responding(thenAnswerAbort: nil)
            return [.delete(selected), .indicate(.response(to: op, .success))]
        default:
            guard let first = selected.first else { return respond(to: op, .noRecordsFound) }
            state = .reporting(records: selected, next: 0)
            return [.sendRecord(first)]
        }
    }

    /// The record last named went out: the next one, or the final indication (an Abort's
    /// answer when one came).
    public mutating func recordSent() -> [Action] {
        switch state {
        case .reporting(let records, let next):
            let n = next + 1
            if n < records.count {
                state = .reporting(records: records, next: n)
                return [.sendRecord(records[n])]
            }
            return respond(to: .reportStoredRecords, .success)
        case .aborting(let answer):
            return respond(to: .abortOperation, answer)
        case .idle, .responding:
            return []
        }
    }

    /// The record last named could not be sent (the client unsubscribed, its link's queue
    /// stayed full): the report ends with Procedure Not Completed (an Abort's answer, if one
    /// came).
    public mutating func recordFailed() -> [Action] {
        switch state {
        case .reporting:
            return respond(to: .reportStoredRecords, .procedureNotCompleted)
        case .aborting(let answer):
            return respond(to: .abortOperation, answer)
        case .idle, .responding:
            return []
        }
    }

    /// The final indication was confirmed: idle, or the Abort that came meanwhile answered.
    public mutating func responseConfirmed() -> [Action] {
        guard case .responding(let abortAnswer) = state else { return [] }
        state = .idle
        return abortAnswer.map { respond(to: .abortOperation, $0) } ?? []
    }

    /// The link went (or the client unsubscribed): the procedure ends silently.
    public mutating func reset() {
        state = .idle
    }

    /// Abort Operation: Null operator, no operand. Always taken, even while a procedure runs
    /// (only other op codes are busy); it stops a report between records and is answered
    /// once (the aborted report gets no answer of its own). A malformed one stops it too and
    /// is answered Invalid Operator / Operand. With nothing running: Success (nothing runs).
    private mutating func abort(_ oper: RACPOperator, _ operand: [UInt8]) -> [Action] {
        let answer: RACPResponseCode = oper != .null ? .invalidOperator : (!operand.isEmpty ? .invalidOperand : .success)
        switch state {
        case .idle:
            return respond(to: .abortOperation, answer)
        case .reporting:
            state = .aborting(answer: answer)
            return []
        case .aborting:
            return []  // one answer for the Aborts of one procedure
        case .responding(let pending):
            state = .responding(thenAnswerAbort: pending ?? answer)
            return []
        }
    }

    private mutating func respond(to op: RACPOpCode, _ code: RACPResponseCode) -> [Action] {
        state = .responding(thenAnswerAbort: nil)
        return [.indicate(.response(to: op, code))]
    }

    /// The records an operator and operand pick, or the response code that refuses them.
    private enum Selection {
        case records([UInt16])
        case refused(RACPResponseCode)
    }

    private func select(_ oper: RACPOperator, _ operand: [UInt8], from stored: [UInt16]) -> Selection {
        switch oper {
        case .allRecords, .firstRecord, .lastRecord:
            guard operand.isEmpty else { return .refused(.invalidOperand) }
            if oper == .allRecords { return .records(stored) }
            let one = oper == .firstRecord ? stored.first : stored.last
            return .records(one.map { [$0] } ?? [])
        default:
            guard let type = operand.first else { return .refused(.invalidOperand) }
            guard type == RACPFilterType.sequenceNumber.rawValue || type == RACPFilterType.userFacingTime.rawValue else {
                return .refused(.invalidOperand)
            }
            let count = oper == .withinRange ? 2 : 1
            let width = type == RACPFilterType.sequenceNumber.rawValue ? 2 : 7
            guard operand.count == 1 + width * count else { return .refused(.invalidOperand) }
            // Records are selected by their u16 key (the Glucose Service's sequence number,
            // the CGM Service's time offset); a time filter is well formed but not taken.
            guard type == RACPFilterType.sequenceNumber.rawValue else { return .refused(.operandNotSupported) }
            let a = UInt16(operand[1]) | UInt16(operand[2]) << 8
            switch oper {
            case .lessThanOrEqual: return .records(stored.filter { $0 <= a })
            case .greaterThanOrEqual: return .records(stored.filter { $0 >= a })
            default:
                let b = UInt16(operand[3]) | UInt16(operand[4]) << 8
                guard a <= b else { return .refused(.invalidOperand) }
                return .records(stored.filter { a <= $0 && $0 <= b })
            }
        }
    }
}
