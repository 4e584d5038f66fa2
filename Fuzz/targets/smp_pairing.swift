// Fuzz target: the Security Manager's pairing state machine (SMPPairing) driven by a
// hostile peer, as initiator and as responder: the input is a script of SMP PDUs, user
// answers, encryption changes and time. Traps are bugs; after any sequence the machine's
// actions must stay well-formed (one result at most per pairing, no PDU after the timeout).
// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothSecurity

let local = LEAddress(BluetoothAddress(rawValue: 0xC0FF_EE00_0001), type: .random)
let peer = LEAddress(BluetoothAddress(rawValue: 0xF0F1_F2F3_F401), type: .public)
// A fixed key keeps runs fast and repeatable (key generation is not what is fuzzed).
let fixedKey = try! P256.PrivateKey(rawValue: [UInt8](repeating: 0x11, count: 32))

final class Seq: @unchecked Sendable {
    var v: UInt64 = 1
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    guard let first = input.popFirst() else { return 0 }
    let seq = Seq()
    let ios: [SMPIOCapability] = [.displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay]
    let config = SMPConfiguration(ioCapability: ios[Int(first % 5)], mitm: first & 0x08 != 0, secureConnections: first & 0x10 != 0,
                                  minimumKeySize: 7, identityResolvingKey: 1, identityAddress: local)
    var m = SMPPairing(role: first & 0x80 != 0 ? .initiator : .responder, configuration: config,
                       localAddress: local, peerAddress: peer, privateKey: fixedKey,
                       random: { seq.v = seq.v &* 6364136223846793005 &+ 1; return seq.v })
    var now: UInt64 = 0
    func check(_ actions: [SMPAction]) {
        if m.timedOut { precondition(!actions.contains { if case .send = $0 { true } else { false } }, "SMP after the timeout") }
    }
    check(m.start(now: now))
    while let step = input.popFirst() {
        switch step % 8 {
        case 0, 1, 2, 3:
            let n = Int(input.popFirst() ?? 0) % 80
            let pdu = Array(input.prefix(n))
            input = input.dropFirst(min(n, input.count))
            let wasTimedOut = m.timedOut
            let a = pdu.withUnsafeBytes { m.received($0, now: now) }
            if wasTimedOut { precondition(a.isEmpty, "a dead SMP channel answered") }
            check(a)
        case 4: check(m.passkeyEntered(UInt32(step) * 3917, now: now))
        case 5: check(m.numericComparisonConfirmed(step & 0x10 != 0, now: now))
        case 6: check(m.encryptionChanged(encrypted: step & 0x10 != 0, now: now))
        default:
            now &+= UInt64(step) * 500_000_000
            check(m.timerFired(now: now))
            _ = m.keyForEncryption(ediv: 0, rand: 0)
        }
    }
    return 0
}
