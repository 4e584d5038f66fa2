// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: a command payload from MQTT (anyone who may publish on the broker can send
// one): GatewayCommand.parse must refuse or return a command within its limits, never trap;
// the same bytes then drive the ledger (begin, and finish of what runs, by device and id:
// a running command is never forgotten, a redelivery gets its reply) and the topic's
// device level, whose invariants are checked.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        let c = try GatewayCommand.parse(bytes)
        precondition(bytes.count <= GatewayCommand.maximumPayload)
        switch c.operation {
        case .read: precondition(c.value == nil, "a read with a value")
        case .write, .writeWithoutResponse: precondition((c.value?.count ?? 513) <= 512, "a write without a value, or over 512 bytes")
        }
        precondition(c.timeout > .zero && c.timeout <= .seconds(300), "timeout \(c.timeout)")
        if case .handle(let h) = c.attribute { precondition(h != 0) }
        _ = CommandReply.success(id: c.id)
    } catch {
        _ = CommandReply.failure(id: error.id, error: error.reason)
    }
    // The ledger: each byte begins or finishes one of a few ids on a few devices.
    var ledger = CommandLedger(capacity: Int(bytes.first ?? 0) % 8 + 1)
    var done: [String: String] = [:]
    var running = Set<String>()
    for b in bytes {
        let device = "D\(b & 3)", id = "\((b >> 2) & 7)"
        if b & 0x80 == 0 {
            switch ledger.begin(device: device, id: id) {
            case .answered(let r): precondition(r == done[device + id], "answered with another reply")
            case .execute:
                running.insert(device + id)
                // A new command evicts: the answered ones within the capacity, the running
                // ones all kept. (Finishes and repeats leave more until the next new one.)
                precondition(ledger.count <= ledger.capacity + running.count, "the ledger outgrew its capacity")
            case .inProgress: precondition(running.contains(device + id), "in progress, never begun")
            }
        } else if running.remove(device + id) != nil {
            let reply = "r\(b)"
            ledger.finish(device: device, id: id, reply: reply)
            done[device + id] = reply
        }
    }
    let level = String(decoding: bytes.prefix(16), as: UTF8.self)
    if let a = GatewayNaming.device(level: level) {
        precondition(GatewayNaming.deviceLevel(a) == level.uppercased(), "a level that does not name its device")
    }
    _ = GatewayNaming(gatewayID: "gw").commandDevice(level)
    return 0
}
