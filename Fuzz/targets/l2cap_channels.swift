// Fuzz target: the LE credit-based channel machine (L2CAPCreditChannels) driven by a
// hostile peer. The input is a script: each step a byte saying what happens (a signaling
// command, a K-frame on a dynamic CID, the application sending, reading or closing, the
// link dropping), then for PDUs a length byte and the bytes. Invariants: nothing traps, no
// channel holds more credits than allowed, what is delivered fits our MTU.
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothHost

let ours = L2CAPChannelParameters(mtu: 300, mps: 40, credits: 4)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    var m = L2CAPCreditChannels()
    m.listen(spsm: 0x80, parameters: ours)
    m.listen(spsm: 0x81, parameters: ours, security: .encryption)
    var id: UInt8 = 1
    var token: UInt64 = 1
    var security = LinkSecurity.unencrypted
    var received: [(cid: UInt16, frames: Int)] = []
    func next() -> UInt8 {
        id = id == 255 ? 1 : id + 1
        return id
    }
    func check(_ actions: [L2CAPChannelAction]) {
        for a in actions {
            if case .event(.received(_, let cid, let sdu, let frames)) = a {
                precondition(sdu.count <= Int(ours.mtu), "an SDU over our MTU was delivered")
                received.append((cid, frames))
            }
        }
        for c in m.openChannels {
            if let credits = m.credits(handle: c.handle, cid: c.localCID) {
                precondition(credits.tx <= 65535 && credits.rx <= Int(ours.mtu) + Int(ours.credits), "credits out of bounds")
            }
        }
    }
    while let step = input.popFirst() {
        let handle = UInt16(step & 1) + 1
        switch step >> 1 {
        case 0 ..< 64:
            // A signaling command from the peer.
            guard let n = input.popFirst() else { return 0 }
            let bytes = Array(input.prefix(Int(n)))
            input = input.dropFirst(Int(n))
            bytes.withUnsafeBytes { raw in
                guard let command = try? L2CAPSignalingCommand(parsing: raw) else { return }
                check(m.signaling(handle: handle, command, security: security, nextIdentifier: next))
            }
        case 64 ..< 100:
            // A K-frame on one of the dynamic CIDs.
            guard let n = input.popFirst(), let c = input.popFirst() else { return 0 }
            let bytes = Array(input.prefix(Int(n)))
            input = input.dropFirst(Int(n))
            bytes.withUnsafeBytes { check(m.received(handle: handle, cid: 0x40 + UInt16(c & 0x3F), payload: $0, nextIdentifier: next)) }
        case 100 ..< 108:
            check(m.connect(handle: handle, spsm: 0x80 + UInt16(step & 7), parameters: ours, identifier: next(), request: token))
            token += 1
        case 108 ..< 116:
            if let c = m.openChannels.first {
                let count = Int(step & 7) * 97
                check((try? m.send(handle: c.handle, cid: c.localCID, sdu: [UInt8](repeating: 0x5A, count: count), token: token)) ?? [])
                token += 1
            }
        case 116 ..< 122:
            if !received.isEmpty {
                let r = received.removeFirst()
                check(m.consumed(handle: handle, cid: r.cid, frames: r.frames, indicationIdentifier: next))
            }
        case 122 ..< 124:
            if let c = m.openChannels.last { check(m.disconnect(handle: c.handle, cid: c.localCID, identifier: next())) }
        case 124 ..< 126:
            security = LinkSecurity(encrypted: true, keySize: 16, authenticated: step & 1 == 0, secureConnections: true, bonded: true)
        default:
            check(m.linkClosed(handle))
        }
    }
    return 0
}
