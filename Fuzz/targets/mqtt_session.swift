// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the MQTT session as a hostile or broken broker, a jumpy clock and a busy
// publisher drive it. Each record is an input: the transport opening or closing, bytes from
// the broker (raw, or a well-formed CONNACK/PUBACK/PUBLISH/PINGRESP/SUBACK/DISCONNECT built
// from the record), a publication, a subscription, time passing, or a disconnect. Checked
// on the client's own output, parsed back: nothing is sent without an open transport;
// CONNECT comes first on each connection and only then; Packet Identifiers in flight are
// unique and never 0; in flight never exceeds the broker's Receive Maximum; each tag is
// reported at most once; after disconnect nothing is sent and no transport opened.
@testable import HCIGATTGateway

/// A failed check, with its words (a precondition's message is dropped at -O).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let version: MQTTVersion = mode & 1 == 0 ? .v311 : .v5
    var settings = MQTTSessionSettings(connect: MQTTConnect(version: version, clientID: "fz", cleanStart: false,
                                                            keepAlive: UInt16(mode >> 1 & 7) * 5))
    settings.queueLimit = 16
    var session = MQTTSession(settings)
    var now: UInt64 = 1_000_000_000_000
    var open = false, sawConnect = false, stopped = false
    var receiveMaximum = 65535
    var nextTag: UInt64 = 1
    var reported: Set<UInt64> = []
    var inFlight: Set<UInt16> = []

    func take(_ actions: [MQTTSession.Action]) {
        for a in actions {
            switch a {
            case .open:
                check(!stopped, "opened after disconnect")
                mirror = MQTTFrameReader(maximumPacketSize: settings.maximumPacketSize)
                open = false  // the driver replaces any old transport
                sawConnect = false
                inFlight = []
            case .close:
                open = false
            case .send(let packet):
                check(open, "sent without a transport")
                let type = packet[0] >> 4
                if !sawConnect {
                    check(type == 1, "something before CONNECT")
                    sawConnect = true
                } else {
                    check(type != 1, "a second CONNECT")
                }
                if type == 3, packet[0] & 0x06 != 0 {
                    // PUBLISH QoS 1: the Packet Identifier follows the topic.
                    let topicLength = Int(packet[2]) << 8 | Int(packet[3])
                    let id = UInt16(packet[4 + topicLength]) << 8 | UInt16(packet[5 + topicLength])
                    check(id != 0, "Packet Identifier 0")
                    check(!inFlight.contains(id), "a Packet Identifier sent twice on one connection")
                    inFlight.insert(id)
                    check(inFlight.count <= receiveMaximum, "over the Receive Maximum")
                }
            case .event(let e):
                switch e {
                case .acknowledged(let tag), .failed(let tag, _):
                    check(!reported.contains(tag), "a tag reported twice")
                    reported.insert(tag)
                default:
                    break
                }
            }
        }
    }

    // The broker's side of the stream, read as the session should: its CONNACK gives the
    // Receive Maximum in force, its PUBACKs free Packet Identifiers.
    var mirror = MQTTFrameReader(maximumPacketSize: settings.maximumPacketSize)
    func receive(_ bytes: [UInt8]) {
        var waitingForConnAck = false, receiving = false
        switch session.state {
        case .awaitingConnAck: waitingForConnAck = true; receiving = true
        case .connected: receiving = true
        default: break
        }
        var granted: Int?
        if receiving {
            bytes.withUnsafeBytes { mirror.append($0) }
            while let packet = try? mirror.next() {
                switch try? MQTTIncoming.decode(packet, version: version) {
                case .connack(let ack)? where waitingForConnAck:
                    granted = Int(ack.receiveMaximum)
                    waitingForConnAck = false
                case .puback(let id, _)?:
                    inFlight.remove(id)
                default:
                    break
                }
            }
        }
        let n = now
        let wasConnected = session.isConnected
        if !wasConnected, let granted { receiveMaximum = granted }
        take(bytes.withUnsafeBytes { session.received($0, now: n) })
        switch session.state {
        case .awaitingConnAck, .connected: break
        default: mirror = MQTTFrameReader(maximumPacketSize: settings.maximumPacketSize)
        }
    }

    take(session.start(now: now))
    var i = 1
    while i + 3 <= bytes.count {
        let op = bytes[i], a = bytes[i + 1], b = bytes[i + 2]
        i += 3
        switch op % 12 {
        case 0:
            if !stopped, session.isRunning { open = true }
            take(session.transportOpened(now: now))
        case 1:
            open = false
            take(session.transportClosed(now: now, cause: "fuzz"))
        case 2:
            // CONNACK, maybe with Receive Maximum a (MQTT 5).
            if version == .v5 {
                let rm = max(UInt16(a % 8), 1)
                receive([0x20, 0x06, b & 1, b & 0x80 == 0 ? 0 : 0x87, 0x03, 0x21, 0x00, UInt8(rm)])
            } else {
                receive([0x20, 0x02, b & 1, b & 0x80 == 0 ? 0 : 5])
            }
        case 3:
            receive(version == .v5 ? [0x40, 0x03, 0, a, b] : [0x40, 0x02, 0, a])
        case 4:
            receive([0x30 | (b & 0x03) << 1 | (b >> 7), 0x05, 0x00, 0x01, 0x61, a, b])
        case 5:
            receive([0xD0, 0x00])
        case 6:
            receive([0x90, 0x03, 0, a, b])
        case 7:
            // Raw bytes from the record onwards.
            let n = min(Int(a % 16), bytes.count - i)
            receive(Array(bytes[i ..< i + n]))
            i += n
        case 8:
            let tag = nextTag
            nextTag += 1
            let payload = [UInt8](repeating: a, count: Int(b % 40))
            let n = now
            let (_, actions) = payload.withUnsafeBytes { session.publish(topic: "t/\(a % 4)", payload: $0, qos: b & 1 == 0 ? 1 : 0, tag: tag, now: n) }
            take(actions)
        case 9:
            let n = now
            take(session.subscribe("c/#", now: n).1)
        case 10:
            now += UInt64(a) * 200_000_000 + UInt64(b) * 1_000_000
            take(session.tick(now: now))
        default:
            if a == 0xFF {
                take(session.disconnect(now: now))
                stopped = true
                open = false
            } else {
                take(session.tick(now: now))
            }
        }
        check(!stopped || session.nextDeadline == nil, "a deadline after disconnect")
    }
    return 0
}
