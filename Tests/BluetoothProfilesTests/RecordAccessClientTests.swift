import Testing
import BluetoothWire
@testable import BluetoothProfiles

/// The collector's side of a Record Access Control Point procedure: what ends it, what is
/// dropped, and the 30 s timer that each record restarts (GLP §4.9; CGMP, PLXP alike).
@Suite struct RecordAccessClientTests {
    static let s: UInt64 = 1_000_000_000

    func answer(_ op: RACPOpCode, _ code: RACPResponseCode) -> [UInt8] { [6, 0, op.rawValue, code.rawValue] }

    @Test("Report all: records delivered in order, the Success answer ends it with the count")
    func reportAll() throws {
        var m = RACPClient()
        let v1 = m.start(.reportAllRecords, now: 0)
        #expect(v1 == [1, 1])
        let v2 = m.start(.reportAllRecords, now: 0)
        #expect(v2 == nil, "one procedure per machine")
        m.written(now: 1 * Self.s)
        for n: UInt16 in 1 ... 3 {
            let v = m.record(sequenceNumber: n, now: 2 * Self.s)
            #expect(v == .deliver)
        }
        let v4 = m.controlPoint(answer(.reportStoredRecords, .success), now: 3 * Self.s)
        let end = try #require(v4)
        #expect(end == RACPClient.Summary(outcome: .answered(.success), records: 3))
        #expect(m.deadline == nil && m.finished == end)
        let v5 = m.record(sequenceNumber: 4, now: 4 * Self.s)
        #expect(v5 == .drop, "nothing after the end")
    }

    @Test("The 30 s timer starts at the Write Response and restarts with every record")
    func timer() throws {
        var m = RACPClient()
        _ = m.start(.reportAllRecords, now: 0)
        m.written(now: 5 * Self.s)
        #expect(m.deadline == 35 * Self.s)
        let v6 = m.timeout(now: 34 * Self.s)
        #expect(v6 == nil)
        _ = m.record(sequenceNumber: 1, now: 30 * Self.s)
        let v7 = m.timeout(now: 35 * Self.s)
        #expect(v7 == nil, "the record restarted it")
        let v8 = m.timeout(now: 60 * Self.s)
        let end = try #require(v8)
        #expect(end.outcome == .timedOut && end.records == 1)
    }

    @Test("A hostile server: dropped, unasked and malformed values restart no timer")
    func nothingButRecordsRestartsTheTimer() throws {
        // Repeats of one record, every 10 s: on main each restarted the 30 s timer.
        var m = RACPClient()
        _ = m.start(.reportAllRecords, now: 0)
        m.written(now: 0)
        let r1 = m.record(sequenceNumber: 7, now: 0)
        #expect(r1 == .deliver)
        for t: UInt64 in [10, 20] {
            let v = m.record(sequenceNumber: 7, now: t * Self.s)
            #expect(v == .drop)
        }
        for t: UInt64 in [25, 29] {
            let v = m.malformed(now: t * Self.s)
            #expect(v == .deliver)
        }
        #expect(m.deadline == 30 * Self.s, "only the delivered record at 0 s counts")
        let r4 = m.timeout(now: 30 * Self.s)
        let end = try #require(r4)
        #expect(end.outcome == .timedOut && end.records == 1 && end.duplicates == 2 && end.malformed == 2)
        // Records during a count are not ours and restart nothing either.
        var c = RACPClient()
        _ = c.start(.reportNumberOfAllRecords, now: 0)
        c.written(now: 0)
        _ = c.record(sequenceNumber: 1, now: 20 * Self.s)
        _ = c.malformed(now: 25 * Self.s)
        #expect(c.deadline == 30 * Self.s)
        let r5 = c.timeout(now: 30 * Self.s)
        #expect(r5?.unexpectedRecords == 2)
    }

    @Test("Malformed values: the first few handed on, all counted")
    func malformedKeptFew() throws {
        var m = RACPClient(limits: RACPClient.Limits(keptMalformed: 3))
        _ = m.start(.reportAllRecords, now: 0)
        let verdicts = (0 ..< 5).map { _ in m.malformed(now: 1) }
        #expect(verdicts == [.deliver, .deliver, .deliver, .drop, .drop])
        let r6 = m.controlPoint(answer(.reportStoredRecords, .success), now: 2)
        let end = try #require(r6)
        #expect(end.malformed == 5 && end.records == 0)
    }

    @Test("The overall deadline ends a procedure that records keep alive")
    func procedureDeadline() throws {
        var m = RACPClient(limits: RACPClient.Limits(procedureTimeout: 120 * Self.s))
        _ = m.start(.reportAllRecords, now: 0)
        m.written(now: Self.s)
        // A record every 20 s, each a new number: the record timer never fires.
        for n: UInt16 in 1 ... 5 {
            let v = m.record(sequenceNumber: n, now: UInt64(n) * 20 * Self.s)
            #expect(v == .deliver)
        }
        #expect(m.deadline == 120 * Self.s, "the overall deadline is the nearer one")
        let r8 = m.timeout(now: 119 * Self.s)
        #expect(r8 == nil)
        let r9 = m.timeout(now: 120 * Self.s)
        let end = try #require(r9)
        #expect(end.outcome == .exceeded(.procedureTimeout(120 * Self.s)) && end.records == 5)
        // An Abort waits for its answer no longer than the overall deadline either.
        var a = RACPClient(limits: RACPClient.Limits(procedureTimeout: 40 * Self.s))
        _ = a.start(.reportAllRecords, now: 0)
        _ = a.abort(now: 30 * Self.s)
        #expect(a.deadline == 40 * Self.s)
        let r10 = a.timeout(now: 40 * Self.s)
        #expect(r10?.outcome == .aborted(confirmed: false, answer: nil))
    }

    @Test("Past the cap on values the procedure ends, whatever the values were")
    func valueCap() throws {
        for kind in 0 ..< 4 {
            var m = RACPClient(limits: RACPClient.Limits(maxValues: 10))
            _ = m.start(.reportAllRecords, now: 0)
            var ended: RACPClient.Summary?
            for i in 0 ..< 11 where ended == nil {
                switch kind {
                case 0: _ = m.record(sequenceNumber: UInt16(i), now: 1)
                case 1: _ = m.record(sequenceNumber: 3, now: 1)
                case 2: _ = m.malformed(now: 1)
                default: ended = m.controlPoint(answer(.deleteStoredRecords, .success), now: 1)
                }
                if let f = m.finished { ended = f }
            }
            let end = try #require(ended, "kind \(kind)")
            #expect(end.outcome == .exceeded(.values(10)), "kind \(kind)")
            let after = m.record(sequenceNumber: 99, now: 2)
            #expect(m.deadline == nil && after == .drop)
        }
    }

    @Test("Error answers, no records found, and a count answer each end the procedure")
    func answers() throws {
        for code in [RACPResponseCode.noRecordsFound, .operatorNotSupported, .invalidOperand, .procedureNotCompleted] {
            var m = RACPClient()
            _ = m.start(.reportLastRecord, now: 0)
            let v9 = m.controlPoint(answer(.reportStoredRecords, code), now: 1)
            #expect(v9?.outcome == .answered(code))
        }
        var m = RACPClient()
        _ = m.start(.reportNumberOfAllRecords, now: 0)
        let v10 = m.record(sequenceNumber: 1, now: 1)
        #expect(v10 == .drop, "a count request gets no records")
        let counted = m.controlPoint([5, 0, 3, 0], now: 1)
        #expect(counted?.unexpectedRecords == 1 && counted?.strayAnswers == 0)
        var c = RACPClient()
        _ = c.start(.reportNumberOfAllRecords, now: 0)
        c.lost(2)
        let v11 = c.controlPoint([5, 0, 12, 0], now: 1)
        let end = try #require(v11)
        #expect(end.outcome == .count(12) && end.lost == 2)
        // A count request refused (op code not supported) ends it with the code.
        var r = RACPClient()
        _ = r.start(.reportNumberOfAllRecords, now: 0)
        let v12 = r.controlPoint(answer(.reportNumberOfStoredRecords, .opCodeNotSupported), now: 1)
        #expect(v12?.outcome == .answered(.opCodeNotSupported))
    }

    @Test("Answers to other requests, malformed values and a count for a report are stray: ignored and counted")
    func strays() throws {
        var m = RACPClient()
        _ = m.start(.reportAllRecords, now: 0)
        let v13 = m.controlPoint(answer(.deleteStoredRecords, .success), now: 1)
        #expect(v13 == nil)
        let v14 = m.controlPoint([5, 0, 3, 0], now: 1)
        #expect(v14 == nil)
        let v15 = m.controlPoint([6, 0, 1], now: 1)
        #expect(v15 == nil, "too short")
        let v16 = m.controlPoint([], now: 1)
        #expect(v16 == nil)
        let v17 = m.controlPoint(answer(.reportStoredRecords, .success), now: 2)
        let end = try #require(v17)
        #expect(end.strayAnswers == 4)
    }

    @Test("Repeated sequence numbers dropped, ones going back delivered and counted, wrap is forward")
    func order() throws {
        var m = RACPClient()
        _ = m.start(.reportAllRecords, now: 0)
        let verdicts = [UInt16(0xFFFE), 0xFFFF, 0, 1, 1, 5, 3].map { m.record(sequenceNumber: $0, now: 1) }
        #expect(verdicts == [.deliver, .deliver, .deliver, .deliver, .drop, .deliver, .deliver])
        let v18 = m.controlPoint(answer(.reportStoredRecords, .success), now: 2)
        let end = try #require(v18)
        #expect(end.records == 6 && end.duplicates == 1 && end.outOfOrder == 1)
        // Records without sequence numbers (PLX spot-checks) are all delivered.
        var p = RACPClient()
        _ = p.start(.reportAllRecords, now: 0)
        let plx = [UInt16?.none, nil].map { p.record(sequenceNumber: $0, now: 1) }
        #expect(plx == [.deliver, .deliver])
    }

    @Test("Abort: later records dropped and counted; the aborted request's own answer waited past")
    func abort() throws {
        var m = RACPClient()
        _ = m.start(.reportAllRecords, now: 0)
        _ = m.record(sequenceNumber: 1, now: 1)
        let v19 = m.abort(now: 2)
        #expect(v19 == [3, 0])
        let v20 = m.abort(now: 2)
        #expect(v20 == nil, "one Abort")
        let v21 = m.record(sequenceNumber: 2, now: 3)
        #expect(v21 == .drop)
        let v22 = m.record(sequenceNumber: 3, now: 3)
        #expect(v22 == .drop)
        let v23 = m.controlPoint(answer(.reportStoredRecords, .procedureNotCompleted), now: 4)
        #expect(v23 == nil)
        let v24 = m.controlPoint(answer(.abortOperation, .success), now: 5)
        let end = try #require(v24)
        #expect(end == RACPClient.Summary(outcome: .aborted(confirmed: true, answer: nil), records: 1, droppedAfterAbort: 2))
        // Unanswered: the timer ends it; refused: said.
        var u = RACPClient()
        _ = u.start(.reportAllRecords, now: 0)
        _ = u.abort(now: Self.s)
        let v25 = u.timeout(now: 31 * Self.s)
        #expect(v25?.outcome == .aborted(confirmed: false, answer: nil))
        var r = RACPClient()
        _ = r.start(.reportAllRecords, now: 0)
        _ = r.abort(now: 1)
        let v26 = r.controlPoint(answer(.abortOperation, .abortUnsuccessful), now: 2)
        #expect(v26?.outcome == .aborted(confirmed: false, answer: .abortUnsuccessful))
        // Nothing to abort before start or after the end.
        var idle = RACPClient()
        let v27 = idle.abort(now: 0)
        #expect(v27 == nil)
    }

    @Test("Against the server machine: every request's records and answer come through unchanged")
    func againstTheServer() throws {
        let stored: [UInt16] = [4, 5, 6, 9]
        let requests: [RecordAccessControlPoint.Owned] = [
            .reportAllRecords, .reportFirstRecord, .reportLastRecord, .records(sequenceNumberAtLeast: 6),
            .records(sequenceNumbersIn: 1 ... 3), .reportNumberOfAllRecords, Self.nullOperator,
        ]
        for request in requests {
            var client = RACPClient()
            var server = RACPServer()
            let v28 = client.start(request, now: 0)
            let bytes = try #require(v28)
            var actions = server.write(bytes, stored: stored, racpIndications: true, recordNotifications: true)
            var delivered: [UInt16] = []
            var end: RACPClient.Summary?
            while let a = actions.first {
                actions.removeFirst()
                switch a {
                case .sendRecord(let n):
                    if client.record(sequenceNumber: n, now: 1) == .deliver { delivered.append(n) }
                    actions += server.recordSent()
                case .indicate(let v):
                    end = client.controlPoint(try v.encoded(), now: 2)
                    actions += server.responseConfirmed()
                case .reject, .delete:
                    break
                }
            }
            let summary = try #require(end, "\(request)")
            #expect(summary.records == delivered.count)
            switch request {
            case .reportNumberOfAllRecords: #expect(summary.outcome == .count(4))
            case .records(sequenceNumbersIn: 1 ... 3): #expect(summary.outcome == .answered(.noRecordsFound))
            case Self.nullOperator: #expect(summary.outcome == .answered(.invalidOperator))
            default: #expect(summary.outcome == .answered(.success) && !delivered.isEmpty)
            }
        }
    }

    static let nullOperator = RecordAccessControlPoint.Owned(opCode: .reportStoredRecords, operator: .null)
}
