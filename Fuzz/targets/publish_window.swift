// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the gateway's publish window, driven as a broker and an MQTT client could:
// each input byte is one event (connect, lose, acknowledge or fail an id in flight, a
// late answer, readings arriving, the spool dropping its oldest, time passing). Checked on
// every step: nothing is handed over past the spool's end or below the head, first sends
// go in order, and the head never passes an id that is neither
// acknowledged nor dropped. At the end a well-behaved broker must get everything through.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let first = bytes.first else { return 0 }
    var w = PublishWindow(head: 0, capacity: Int(first % 8) + 1, resendAfter: 4)
    var end: UInt64 = 0, now: UInt64 = 0
    var inClient: [UInt64] = []
    var settled = Set<UInt64>()  // acknowledged or dropped
    var nextFirst: UInt64 = 0
    var sentOnce = Set<UInt64>()

    func hand() {
        while let id = w.next(end: end) {
            precondition(id < end && id >= w.head, "handed \(id) outside [\(w.head), \(end))")
            // (An id the client sat on past resendAfter is handed again: a duplicate, allowed.)
            w.sent(id, at: now)
            inClient.append(id)
            if sentOnce.insert(id).inserted {
                precondition(id == nextFirst || settled.contains(nextFirst) || id > nextFirst, "first sends out of order")
                nextFirst = id + 1
            }
        }
    }
    for b in bytes.dropFirst() {
        now += 1
        switch b % 9 {
        case 0: end += UInt64(b >> 4) + 1
        case 1: w.connectionUp()
        case 2: w.connectionLost()
        case 3 where !inClient.isEmpty:
            let id = inClient.remove(at: Int(b >> 4) % inClient.count)
            settled.insert(id)
            _ = w.acknowledged(id)
        case 4 where !inClient.isEmpty:
            w.failed(inClient.remove(at: Int(b >> 4) % inClient.count))
        case 5:
            // A late or duplicate answer for any id.
            let id = UInt64(b >> 3)
            if b & 4 != 0 { _ = w.acknowledged(id); if id < end { settled.insert(id) }; inClient.removeAll { $0 == id } } else { w.failed(id) }
        case 6 where end > w.head:
            let below = min(end, w.head + UInt64(b >> 5) + 1)
            for id in w.head ..< below { settled.insert(id) }
            w.dropped(below: below)
            inClient.removeAll { $0 < below }
        case 7:
            now += UInt64(b >> 4)
            _ = w.tick(now: now)
        default:
            // The client refusing to take more (disconnected, or its queue full), or a
            // refusal for now.
            if b & 0x10 != 0 { w.hold() } else { w.sendRefused(UInt64(b >> 5), disconnected: b & 0x20 != 0) }
        }
        hand()
        for id in 0 ..< w.head where id < end { precondition(settled.contains(id), "the head passed \(id), never acknowledged") }
    }
    // A well-behaved broker from here on: everything gets through.
    w.connectionUp()
    var rounds = 0
    while w.head < end {
        rounds += 1
        precondition(rounds < 100_000, "stuck at \(w.head) of \(end)")
        now += 5
        hand()
        if inClient.isEmpty {
            _ = w.tick(now: now)
        } else {
            let id = inClient.removeFirst()
            settled.insert(id)
            _ = w.acknowledged(id)
        }
    }
    return 0
}
