import Testing
import BluetoothWire
@testable import BluetoothProfiles

/// The Record Access Control Point server, step by step: the Glucose Profile test suite's
/// cases in spirit (GLP.TS: report all / first / last / ≥, delete, number, abort, busy, the
/// CCCD checks) and a model that every run of writes and sends must agree with.
@Suite struct RecordAccessServerTests {
    static let stored: [UInt16] = [1, 2, 3, 7, 8]

    /// Drives a report to its end: every record named is "sent"; the final indication returned.
    func run(_ s: inout RACPServer, _ first: [RACPServer.Action]) -> (sent: [UInt16], final: [RACPServer.Action]) {
        var sent: [UInt16] = [], actions = first
        while case .sendRecord(let n)? = actions.first {
            sent.append(n)
            actions = s.recordSent()
        }
        return (sent, actions)
    }

    func write(_ s: inout RACPServer, _ v: RecordAccessControlPoint.Owned, stored: [UInt16] = stored,
               racp: Bool = true, records: Bool = true) -> [RACPServer.Action] {
        s.write(raw(v), stored: stored, racpIndications: racp, recordNotifications: records)
    }

    @Test("Report all, first, last, ≥, ≤, range: the records in order, then Success")
    func reports() {
        let cases: [(RecordAccessControlPoint.Owned, [UInt16])] = [
            (.reportAllRecords, [1, 2, 3, 7, 8]),
            (.reportFirstRecord, [1]),
            (.reportLastRecord, [8]),
            (.records(sequenceNumberAtLeast: 3), [3, 7, 8]),
            (.records(sequenceNumberAtMost: 3), [1, 2, 3]),
            (.records(sequenceNumbersIn: 2 ... 7), [2, 3, 7]),
        ]
        for (request, expected) in cases {
            var s = RACPServer()
            let (sent, final) = run(&s, write(&s, request))
            #expect(sent == expected, "\(request)")
            #expect(final == [.indicate(.response(to: .reportStoredRecords, .success))])
            #expect(s.state == .responding(thenAnswerAbort: nil))
            #expect(s.responseConfirmed() == [])
            #expect(s.state == .idle)
        }
    }

    @Test("Nothing matches: No Records Found, no record sent; Report Number says 0 instead")
    func noRecords() {
        var s = RACPServer()
        #expect(write(&s, .records(sequenceNumberAtLeast: 9)) == [.indicate(.response(to: .reportStoredRecords, .noRecordsFound))])
        _ = s.responseConfirmed()
        #expect(write(&s, .reportAllRecords, stored: []) == [.indicate(.response(to: .reportStoredRecords, .noRecordsFound))])
        _ = s.responseConfirmed()
        #expect(write(&s, .records(.reportNumberOfStoredRecords, sequenceNumberAtLeast: 9)) == [.indicate(.numberOfRecordsResponse(0))])
        _ = s.responseConfirmed()
        #expect(write(&s, .reportNumberOfAllRecords) == [.indicate(.numberOfRecordsResponse(5))])
        _ = s.responseConfirmed()
        #expect(write(&s, .records(.deleteStoredRecords, sequenceNumberAtLeast: 9)) == [.indicate(.response(to: .deleteStoredRecords, .noRecordsFound))])
    }

    @Test("Delete: the matching records go, then Success; not supported: Op Code Not Supported")
    func delete() {
        var s = RACPServer()
        #expect(write(&s, .records(.deleteStoredRecords, sequenceNumberAtMost: 3))
                == [.delete([1, 2, 3]), .indicate(.response(to: .deleteStoredRecords, .success))])
        var rules = RACPServerRules()
        rules.deletes = false
        var t = RACPServer(rules: rules)
        #expect(write(&t, .deleteAllRecords) == [.indicate(.response(to: .deleteStoredRecords, .opCodeNotSupported))])
    }

    @Test("Refused in the services' order: CCCDs (0x81), busy (0x80), op code, operator, operand, filter")
    func refusals() {
        var s = RACPServer()
        #expect(write(&s, .reportAllRecords, racp: false) == [.reject(ATTErrorCode(rawValue: 0x81))])
        #expect(write(&s, .reportAllRecords, records: false) == [.reject(ATTErrorCode(rawValue: 0x81))])
        #expect(s.state == .idle, "a refused write starts nothing")
        // Report Number and Delete send no records: the RACP CCCD is enough.
        #expect(write(&s, .reportNumberOfAllRecords, records: false) == [.indicate(.numberOfRecordsResponse(5))])
        // Busy until the final indication is confirmed.
        #expect(write(&s, .reportAllRecords) == [.reject(ATTErrorCode(rawValue: 0x80))])
        _ = s.responseConfirmed()
        let bad: [([UInt8], RACPOpCode, RACPResponseCode)] = [
            ([0x07, 0x01], RACPOpCode(rawValue: 7), .opCodeNotSupported),         // reserved op code
            ([0x05, 0x00, 0x01, 0x00], .numberOfStoredRecordsResponse, .opCodeNotSupported),  // a response, written
            ([0x01, 0x00], .reportStoredRecords, .invalidOperator),               // Null
            ([0x01, 0x07], .reportStoredRecords, .invalidOperator),               // reserved
            ([0x01, 0x01, 0x01], .reportStoredRecords, .invalidOperand),          // All takes none
            ([0x01, 0x03, 0x01, 0x05], .reportStoredRecords, .invalidOperand),    // half a u16
            ([0x01, 0x03], .reportStoredRecords, .invalidOperand),                // no filter type
            ([0x01, 0x04, 0x01, 0x07, 0x00, 0x02, 0x00], .reportStoredRecords, .invalidOperand),  // 7...2
            ([0x01, 0x03, 0x00, 0x01, 0x00], .reportStoredRecords, .invalidOperand),  // filter type 0
            ([0x01, 0x03, 0x02] + [0xEA, 0x07, 12, 7, 8, 0, 0], .reportStoredRecords, .operandNotSupported),  // user facing time
            ([0x04, 0x03, 0x02] + [0xEA, 0x07, 12, 7, 8, 0, 0], .reportNumberOfStoredRecords, .operandNotSupported),
            ([0x01], .reportStoredRecords, .invalidOperator),                     // no operator
            ([0x09], RACPOpCode(rawValue: 9), .opCodeNotSupported),               // the op code first
            ([0x01, 0x03, 0x02, 0xEA], .reportStoredRecords, .invalidOperand),    // a short Date Time
        ]
        for (value, op, code) in bad {
            var t = RACPServer()
            #expect(t.write(value, stored: Self.stored, racpIndications: true, recordNotifications: true)
                    == [.indicate(.response(to: op, code))], "\(value)")
            #expect(t.state == .responding(thenAnswerAbort: nil))
        }
        var empty = RACPServer()
        #expect(empty.write([], stored: Self.stored, racpIndications: true, recordNotifications: true)
                == [.reject(.invalidAttributeValueLength)])
        var rules = RACPServerRules()
        rules.operators = [1, 5, 6]
        var t = RACPServer(rules: rules)
        #expect(write(&t, .records(sequenceNumberAtLeast: 1)) == [.indicate(.response(to: .reportStoredRecords, .operatorNotSupported))])
        rules.busyError = .procedureAlreadyInProgress
        rules.notSubscribedError = .cccdImproperlyConfigured
        var u = RACPServer(rules: rules)
        #expect(write(&u, .reportAllRecords, racp: false) == [.reject(.cccdImproperlyConfigured)])
        _ = write(&u, .reportAllRecords)
        #expect(write(&u, .reportNumberOfAllRecords) == [.reject(.procedureAlreadyInProgress)])
    }

    @Test("The Pulse Oximeter preset: All Records only for every op code, 0xFD unsubscribed, 0xFE busy")
    func pulseOximeterRules() {
        var s = RACPServer(rules: .pulseOximeter)
        #expect(write(&s, .reportAllRecords, records: false) == [.reject(ATTErrorCode(rawValue: 0xFD))])
        for request in [RecordAccessControlPoint.Owned.reportLastRecord, .reportFirstRecord, .records(sequenceNumberAtLeast: 2),
                        .records(.reportNumberOfStoredRecords, sequenceNumberAtLeast: 2), .records(.deleteStoredRecords, sequenceNumberAtMost: 2)] {
            var t = RACPServer(rules: .pulseOximeter)
            #expect(write(&t, request) == [.indicate(.response(to: request.opCode, .operatorNotSupported))], "\(request)")
        }
        let (sent, final) = run(&s, write(&s, .reportAllRecords))
        #expect(sent == Self.stored)
        #expect(final == [.indicate(.response(to: .reportStoredRecords, .success))])
        #expect(write(&s, .reportNumberOfAllRecords) == [.reject(ATTErrorCode(rawValue: 0xFE))], "busy until confirmed")
        _ = s.responseConfirmed()
        #expect(write(&s, .reportNumberOfAllRecords) == [.indicate(.numberOfRecordsResponse(5))])
        _ = s.responseConfirmed()
        #expect(write(&s, .deleteAllRecords) == [.delete(Self.stored), .indicate(.response(to: .deleteStoredRecords, .success))])
        #expect(RACPServerRules.glucose == RACPServerRules())
    }

    @Test("Abort between records: the rest is not sent, one answer (Abort, Success); the report gets none")
    func abortDuringReport() {
        var s = RACPServer()
        #expect(write(&s, .reportAllRecords) == [.sendRecord(1)])
        #expect(s.recordSent() == [.sendRecord(2)])
        #expect(write(&s, .abort) == [], "accepted; answered once the record in flight is out")
        #expect(write(&s, .reportAllRecords) == [.reject(ATTErrorCode(rawValue: 0x80))], "busy while aborting")
        #expect(s.recordSent() == [.indicate(.response(to: .abortOperation, .success))])
        #expect(s.responseConfirmed() == [])
        #expect(s.state == .idle)
    }

    @Test("A malformed Abort stops a report too and is answered Invalid Operator; a second Abort adds nothing")
    func malformedAbortDuringReport() {
        var s = RACPServer()
        #expect(write(&s, .reportAllRecords) == [.sendRecord(1)])
        #expect(s.write([0x03, 0x01], stored: Self.stored, racpIndications: true, recordNotifications: true) == [],
                "an Abort is never busy")
        #expect(write(&s, .abort) == [], "one answer for the Aborts of one procedure")
        #expect(s.recordSent() == [.indicate(.response(to: .abortOperation, .invalidOperator))])
        #expect(s.responseConfirmed() == [])
        #expect(s.state == .idle)
    }

    @Test("A record that cannot be sent ends the report with Procedure Not Completed")
    func recordFailed() {
        var s = RACPServer()
        #expect(write(&s, .reportAllRecords) == [.sendRecord(1)])
        #expect(s.recordSent() == [.sendRecord(2)])
        #expect(s.recordFailed() == [.indicate(.response(to: .reportStoredRecords, .procedureNotCompleted))])
        #expect(s.recordFailed() == [], "nothing more once answered")
        _ = s.responseConfirmed()
        #expect(s.state == .idle)
    }

    @Test("First and Last go by age, ≤ ≥ and range by value: a store whose numbers wrapped")
    func wrapped() {
        var s = RACPServer()
        let aged: [UInt16] = [65534, 65535, 0, 1]
        #expect(write(&s, .reportFirstRecord, stored: aged) == [.sendRecord(65534)])
        s.reset()
        #expect(write(&s, .reportLastRecord, stored: aged) == [.sendRecord(1)])
        s.reset()
        let (sent, _) = run(&s, write(&s, .records(sequenceNumberAtMost: 1), stored: aged))
        #expect(sent == [0, 1])
        s.reset()
        let (all, _) = run(&s, write(&s, .reportAllRecords, stored: aged))
        #expect(all == aged, "in the order they were taken")
    }

    @Test("Abort with nothing running: Success; with an operator or operand: Invalid Operator / Operand")
    func abortIdle() {
        var s = RACPServer()
        #expect(write(&s, .abort) == [.indicate(.response(to: .abortOperation, .success))])
        _ = s.responseConfirmed()
        #expect(s.write([0x03, 0x01], stored: [], racpIndications: true, recordNotifications: true)
                == [.indicate(.response(to: .abortOperation, .invalidOperator))])
        _ = s.responseConfirmed()
        #expect(s.write([0x03, 0x00, 0x01], stored: [], racpIndications: true, recordNotifications: true)
                == [.indicate(.response(to: .abortOperation, .invalidOperand))])
    }

    @Test("Abort while the final indication is out: answered after its confirmation")
    func abortWhileResponding() {
        var s = RACPServer()
        _ = write(&s, .reportNumberOfAllRecords)
        #expect(write(&s, .abort) == [])
        #expect(s.responseConfirmed() == [.indicate(.response(to: .abortOperation, .success))])
        #expect(s.responseConfirmed() == [])
        #expect(s.state == .idle)
    }

    @Test("A link that goes ends the procedure silently; the next request starts afresh")
    func reset() {
        var s = RACPServer()
        _ = write(&s, .reportAllRecords)
        s.reset()
        #expect(s.state == .idle)
        #expect(s.recordSent() == [], "a stale send after the reset does nothing")
        #expect(write(&s, .reportLastRecord) == [.sendRecord(8)])
    }

    @Test("Against a model: any run of writes, sends and confirmations keeps one procedure at a time")
    func model() {
        var seed: UInt64 = 0x5EED
        func next() -> UInt64 { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return seed >> 33 }
        let requests: [[UInt8]] = [
            raw(.reportAllRecords), raw(.abort), raw(.reportNumberOfAllRecords), raw(.records(sequenceNumberAtLeast: 4)),
            raw(.records(.deleteStoredRecords, sequenceNumberAtMost: 2)), [0x01], [0x09, 0x01],
        ]
        for _ in 0 ..< 200 {
            var s = RACPServer()
            var stored: [UInt16] = [1, 2, 3, 4, 5, 6]
            var inFlight: (record: UInt16?, indication: RecordAccessControlPoint.Owned?) = (nil, nil)
            var answers = 0, procedures = 0
            for _ in 0 ..< 40 {
                var actions: [RACPServer.Action] = []
                switch next() % 3 {
                case 0:
                    let before = s.state
                    actions = s.write(requests[Int(next() % UInt64(requests.count))], stored: stored,
                                      racpIndications: true, recordNotifications: true)
                    if case .reject = actions.first {
                        #expect(before != .idle, "only a running procedure refuses a subscribed client")
                    } else if case .reporting = before {
                        // An Abort: its answer replaces the report's.
                    } else {
                        // A new procedure, or an Abort answered after the answer in flight.
                        procedures += 1
                    }
                case 1:
                    if inFlight.record != nil { inFlight.record = nil; actions = s.recordSent() }
                default:
                    if inFlight.indication != nil { inFlight.indication = nil; actions = s.responseConfirmed() }
                }
                for a in actions {
                    switch a {
                    case .sendRecord(let n):
                        #expect(inFlight.record == nil && inFlight.indication == nil, "one thing out at a time")
                        #expect(stored.contains(n))
                        inFlight.record = n
                    case .indicate(let v):
                        #expect(inFlight.record == nil && inFlight.indication == nil, "the answer after the last record")
                        inFlight.indication = v
                        answers += 1
                    case .delete(let gone):
                        stored.removeAll { gone.contains($0) }
                    case .reject:
                        break
                    }
                }
                if s.state == .idle { #expect(inFlight.record == nil && inFlight.indication == nil) }
            }
            #expect(answers <= procedures, "at most one answer per procedure (an Abort's included)")
        }
    }
}

func raw(_ v: RecordAccessControlPoint.Owned) -> [UInt8] { (try? v.encoded()) ?? [] }
