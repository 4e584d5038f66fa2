// Fuzz target: the controller initialisation (ControllerInitializer) against a hostile
// controller: every command answered with any status and any return parameters (too
// short, too long, nonsense), as Command Complete or Command Status, or not at all.
// Checked on every step: no trap; each command sent is a well-formed HCI command packet
// whose opcode is the one announced; the sequence ends (finished or failed) within a
// bound of commands and says nothing after; a finished initialisation has the buffer it
// will use (ACL packets of at least 27 bytes, at least one of them).
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothHost

/// A failed check names itself (precondition's message is gone in -O builds).
func check(_ ok: Bool, _ what: @autoclosure () -> String = "check") {
    if !ok { fatalError(what()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    var m = ControllerInitializer(probeTimeout: 1_000)
    var action = m.start()
    var sent = 0
    while true {
        switch action {
        case .finished(let info):
            check(info.aclBufferLength >= 27 && info.aclBufferCount >= 1,
                  "finished with an ACL buffer of \(info.aclBufferCount) × \(info.aclBufferLength)")
            return 0
        case .failed:
            return 0
        case .send(let command):
            sent += 1
            check(sent <= 24, "more than 24 commands")
            let p = command.packet
            check(p.count >= 4 && p[0] == 0x01, "not an H4 command packet")
            check(UInt16(p[1]) | UInt16(p[2]) << 8 == command.opcode.rawValue, "the packet's opcode is not the one announced")
            check(Int(p[3]) == p.count - 4, "the parameter length does not match")
            // The answer: byte 0 picks how, byte 1 the status, byte 2 the length of the
            // return parameters after the status (the rest of the input when it runs out).
            guard let how = input.popFirst() else { return 0 }
            let answer: Result<CommandReturn, HostError>
            switch how & 3 {
            case 0:
                answer = .failure(HostError(.commandTimeout, "no answer", opcode: command.opcode))
            case 1:
                let status = HCIErrorCode(rawValue: input.popFirst() ?? 0)
                answer = .success(CommandReturn(opcode: command.opcode, status: status, returnParameters: [], isCommandStatus: true))
            default:
                let status = input.popFirst() ?? 0
                let n = min(Int(input.popFirst() ?? 0), input.count)
                let rest = Array(input.prefix(n))
                input = input.dropFirst(n)
                let code = HCIErrorCode(rawValue: status)
                let parameters = how & 4 != 0 ? rest : [status] + rest
                answer = code == .success || how & 8 != 0
                    ? .success(CommandReturn(opcode: command.opcode, status: code, returnParameters: parameters))
                    : .failure(HostError(.commandFailed(code), "refused", opcode: command.opcode))
            }
            action = m.handle(answer)
        }
    }
}
