// Fuzz target: the Record Access Control Point server (RACPServer) driven by a hostile
// collector. The input is a script: each step is a byte saying what happens (a write with a
// length byte and the value, with or without the client's CCCDs; the record in flight sent;
// the final indication confirmed; the link reset), and the store changes as the server says.
// A record in flight is sent or fails (the client unsubscribed).
// Checked on every step: one thing out at a time (a record or the final indication), records
// only from the store and in order, a refusal only while a procedure runs or unsubscribed,
// at most one answer per procedure.
// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothProfiles

/// A failed check names itself (precondition's message is gone in -O builds).
func check(_ ok: Bool, _ what: @autoclosure () -> String = "check") {
    if !ok { fatalError(what()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    var rules = RACPServerRules()
    if let r = input.popFirst() {
        rules.operators = Set((1 ... 6).filter { r & (1 << ($0 - 1)) != 0 })
        rules.deletes = r & 0x80 != 0
    }
    var server = RACPServer(rules: rules)
    var stored: [UInt16] = [1, 2, 3, 5, 8, 13, 0xFFFF]  // oldest first
    var recordOut: UInt16?, answerOut = false, lastSent: UInt16?
    while let step = input.popFirst() {
        var actions: [RACPServer.Action] = []
        switch step & 3 {
        case 0:
            guard let n = input.popFirst() else { return 0 }
            let count = min(Int(n & 0x1F), input.count)
            let value = Array(input.prefix(count))
            input = input.dropFirst(count)
            let before = server.state
            let racp = step & 4 == 0, records = step & 8 == 0
            actions = server.write(value, stored: stored, racpIndications: racp, recordNotifications: records)
            if case .reject(let code)? = actions.first {
                check(actions.count == 1, "a refusal with more")
                check(code == rules.busyError || code == rules.notSubscribedError
                      || (code == .invalidAttributeValueLength && value.isEmpty), "refused with \(code)")
                check(code != rules.busyError || before != .idle, "busy while idle")
                check(server.state == before, "a refused write changed the procedure")
            } else if before == .idle {
                lastSent = nil
            }
        case 1:
            if recordOut != nil {
                recordOut = nil
                actions = step & 4 == 0 ? server.recordSent() : server.recordFailed()
            }
        case 2:
            if answerOut { answerOut = false; actions = server.responseConfirmed() }
        default:
            server.reset()
            recordOut = nil
            answerOut = false
        }
        for a in actions {
            switch a {
            case .sendRecord(let seq):
                check(recordOut == nil && !answerOut, "two things out at once")
                check(stored.contains(seq), "a record not in the store")
                if let last = lastSent { check(seq > last, "records out of order") }
                lastSent = seq
                recordOut = seq
            case .indicate(let v):
                check(recordOut == nil && !answerOut, "the answer before the last record was sent")
                check(v.opCode == .responseCode || v.opCode == .numberOfStoredRecordsResponse, "answer \(v)")
                answerOut = true
            case .delete(let gone):
                check(!gone.isEmpty && gone.allSatisfy(stored.contains), "deleted \(gone)")
                stored.removeAll { gone.contains($0) }
            case .reject:
                check(actions.count == 1, "a refusal beside other actions")  // a write's, checked above
            }
        }
        if server.state == .idle { check(recordOut == nil && !answerOut, "idle with something out") }
    }
    return 0
}
