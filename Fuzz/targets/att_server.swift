// Fuzz target: the ATT server state machine (ATTServer) driven by a hostile client.
// The input is a script: each step is a byte saying what happens, then for PDUs a length
// byte and the PDU. Two clients share one database; time, security and the application's
// own notifications and indications are part of the script.
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothHost BluetoothGATT

let services: [GATTLocalService] = [
    .genericAccess(deviceName: "fuzz"),
    .genericAttribute(),
    GATTLocalService(uuid: BluetoothUUID(0x1809), includedServices: [BluetoothUUID(0x180F)], characteristics: [
        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1C), properties: .indicate),
        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A21), properties: [.read, .write, .indicate], value: .stored([1, 0]),
                                descriptors: [GATTLocalDescriptor(uuid: BluetoothUUID(0x2906), value: .stored([1, 0, 60, 0]))],
                                maximumLength: 2, onWrite: { _, v in v.count == 2 && v[1] == 0 ? nil : .outOfRange }),
        GATTLocalCharacteristic(uuid: BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!, properties: [.read, .write, .notify, .writeWithoutResponse, .authenticatedSignedWrites],
                                permissions: [.readable, .readEncryptionRequired, .writeable], value: .stored([UInt8](repeating: 7, count: 300))),
        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A9F), properties: .write),
        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A3D), properties: .read, permissions: [.readable, .readAuthenticationRequired],
                                value: .computed { ctx in ctx.offset > 10 ? .failure(.insufficientAuthorization) : .success([1, 2, 3]) }),
    ]),
    GATTLocalService(uuid: BluetoothUUID(0x180F), isPrimary: false, characteristics: [
        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], value: .stored([99])),
    ]),
]
let table: GATTAttributeTable = {
    do { return try GATTAttributeTable(services: services) } catch { preconditionFailure("\(error)") }
}()

/// Opcodes a request of `op` may be answered with.
func expectedResponse(_ op: UInt8) -> UInt8? {
    switch op {
    case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20: op + 1
    default: nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    var server = ATTServer(table: table, options: .init(prepareQueueLimit: 8))
    // One output for every call, as the runtime would keep: each call leaves only its own PDU.
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ATTServerOutput.capacity, alignment: 1)
    defer { buffer.deallocate() }
    var out = ATTServerOutput(buffer)
    let clients = [ATTServerClientID(rawValue: 1), ATTServerClientID(rawValue: 2)]
    for c in clients { server.connect(c) }
    // Client 1 may sign its writes: every Signed Write Command gets verified (none forges).
    server.setSigningKey(ATTSigningKey(csrk: [UInt8](repeating: 0x5A, count: 16), lastCounter: nil,
                                       security: LinkSecurity(encrypted: true, keySize: 16, authenticated: true,
                                                              secureConnections: true, bonded: true)), for: clients[0])
    var now: UInt64 = 0
    var dead: Set<ATTServerClientID> = []
    while let step = input.popFirst() {
        let client = clients[Int(step & 1)]
        switch step >> 1 {
        case 0 ..< 96:
            // A PDU from the client.
            guard let n = input.popFirst() else { return 0 }
            let count = min(Int(n), input.count)
            let pdu = Array(input.prefix(count))
            input = input.dropFirst(count)
            guard !pdu.isEmpty else { continue }
            let mtu = server.mtu(of: client) ?? 23
            let events = pdu.withUnsafeBytes { server.receive(from: client, pdu: $0, now: now, into: &out) }
            let responses: [[UInt8]] = out.isEmpty ? [] : [out.bytes]
            let op = ATTOpcode(rawValue: pdu[0])
            if dead.contains(client) {
                precondition(responses.isEmpty && events.isEmpty, "a dead bearer answered")
                continue
            }
            if op.isCommand || !op.isClientToServer || op == .handleValueConfirmation {
                precondition(responses.isEmpty, "a command or confirmation was answered")
            } else {
                precondition(responses.count == 1, "request \(op) unanswered")
                let r = responses[0]
                let limit = max(mtu, server.mtu(of: client) ?? 23)
                precondition(r.count <= limit, "response of \(r.count) bytes over ATT_MTU \(limit)")
                if r[0] == 0x01 {
                    precondition(r.count == 5 && r[1] == pdu[0], "error response names another request")
                    precondition(r[4] != 0, "error code 0")
                } else {
                    precondition(expectedResponse(pdu[0]) == r[0], "\(op) answered with \(r[0])")
                }
            }
            for e in events {
                if case .wrote(_, let h, let v, _) = e {
                    precondition(v.count <= 512, "value over 512 bytes stored")
                    precondition(h != 0 && Int(h) <= Int(table.lastHandle))
                }
            }
        case 96 ..< 104:
            now &+= UInt64(step) * 1_000_000_000
            for e in server.timerFired(now: now) {
                if case .indicationTimedOut(let c, _) = e { dead.insert(c) }
            }
        case 104 ..< 112:
            let enc = step & 2 != 0
            server.setSecurity(LinkSecurity(encrypted: enc, keySize: enc ? Int(7 + (step >> 2) % 10) : 0, authenticated: step & 4 != 0), for: client)
        case 112 ..< 120:
            let handle = UInt16(input.popFirst() ?? 0)
            let mtu = server.mtu(of: client) ?? 23
            if (try? server.notify(client, handle: handle, value: [1, 2, 3], into: &out)) == nil {
                precondition(out.isEmpty, "a refused notification left a PDU")
            }
            precondition(out.count <= mtu)
        case 120 ..< 126:
            let handle = UInt16(input.popFirst() ?? 0)
            let mtu = server.mtu(of: client) ?? 23
            _ = try? server.indicate(client, handle: handle, value: [UInt8](repeating: 5, count: 600), now: now, into: &out)
            precondition(out.count <= mtu)
        default:
            // The bearer closes and a new one opens.
            server.disconnect(client)
            server.connect(client)
            dead.remove(client)
        }
    }
    return 0
}
