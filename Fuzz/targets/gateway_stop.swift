// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the gateway's stop sequence, driven as signals, a broker and the MQTT client
// could: each byte is one input (a stop, the link up or down, an acknowledgement, readings
// handed over, time passing). Checked on every step: nothing happens before a stop,
// "offline" at most once and only before the DISCONNECT, one DISCONNECT, the end only after
// it, and the end at most drainTime + disconnectTime after the stop, whatever the broker does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var stop = StopSequence()
    var now: UInt64 = 0, inFlight = 0, connected = false
    var stoppedAt: UInt64?
    var offline = 0, disconnects = 0, finished = false
    func apply(_ a: StopSequence.Action?) {
        switch a {
        case .publishOffline?:
            precondition(stoppedAt != nil && disconnects == 0 && offline == 0, "offline out of turn")
            offline += 1
        case .disconnect?:
            precondition(stoppedAt != nil && disconnects == 0, "a second DISCONNECT, or one before a stop")
            disconnects += 1
        case .finish?:
            precondition(disconnects == 1 && !finished, "finished before a DISCONNECT, or twice")
            finished = true
        case nil: break
        }
    }
    for b in UnsafeBufferPointer(start: data, count: size) {
        var linkEnded = false
        switch b % 6 {
        case 0:
            if !stop.isStopping { stoppedAt = now }
            apply(stop.stop(now: now, connected: connected))
        case 1: connected = true
        case 2:
            connected = false
            linkEnded = true
        case 3: inFlight = max(0, inFlight - Int(b >> 4))
        case 4: if !stop.isStopping { inFlight += Int(b >> 4) }
        default: now += UInt64(b >> 3) * 100_000_000
        }
        apply(stop.advance(now: now, inFlight: inFlight, connected: connected, linkEnded: linkEnded))
        precondition(stop.isStopped == finished)
        if let at = stoppedAt, !finished {
            // Each deadline is seen at the first input after it: up to one step late (3.1 s).
            precondition(now < at + StopSequence.drainTime + StopSequence.disconnectTime + 2 * 3_100_000_000,
                         "still not stopped \(now - at) ns after the stop")
        }
    }
    return 0
}
