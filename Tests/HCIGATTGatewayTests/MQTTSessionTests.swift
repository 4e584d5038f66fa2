import Testing
@testable import HCIGATTGateway

/// The MQTT codec and session, sans I/O. Each rule of the OASIS texts a test relies on is
/// named in its title: MQTT 5's number first, 3.1.1's where it differs.
private func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0 ... $0 + 1]), radix: 16)! }
}

private let second: UInt64 = 1_000_000_000

/// A session driven by a test: what it sent, what it said.
private struct Harness {
    var session: MQTTSession
    var now: UInt64 = 1_000 * second
    var sent: [[UInt8]] = []
    var events: [MQTTEvent] = []
    var opens = 0
    var closes = 0

    init(version: MQTTVersion = .v311, keepAlive: UInt16 = 30, configure: (inout MQTTSessionSettings) -> Void = { _ in }) {
        var s = MQTTSessionSettings(connect: MQTTConnect(version: version, clientID: "gw", cleanStart: false, keepAlive: keepAlive))
        configure(&s)
        session = MQTTSession(s)
    }

    mutating func take(_ actions: [MQTTSession.Action]) {
        for a in actions {
            switch a {
            case .open: opens += 1
            case .close: closes += 1
            case .send(let b): sent.append(b)
            case .event(let e): events.append(e)
            }
        }
    }

    mutating func receive(_ bytes: [UInt8]) {
        let n = now
        take(bytes.withUnsafeBytes { session.received($0, now: n) })
    }

    /// Start, transport up, CONNACK.
    mutating func connect(sessionPresent: Bool = false, connack: [UInt8]? = nil) {
        take(session.start(now: now))
        take(session.transportOpened(now: now))
        receive(connack ?? (session.settings.connect.version == .v5 ? [0x20, 0x03, sessionPresent ? 1 : 0, 0, 0] : [0x20, 0x02, sessionPresent ? 1 : 0, 0]))
    }

    mutating func reconnect(sessionPresent: Bool) {
        now += 60 * second
        take(session.tick(now: now))
        take(session.transportOpened(now: now))
        receive([0x20, 0x02, sessionPresent ? 1 : 0, 0])
    }

    mutating func publish(_ topic: String = "t", _ payload: String = "p", tag: UInt64? = nil, retain: Bool = false) -> MQTTSession.PublishResult {
        var text = payload
        let n = now
        let (r, actions) = text.withUTF8 { session.publish(topic: topic, payload: UnsafeRawBufferPointer($0), retain: retain, tag: tag, now: n) }
        take(actions)
        return r
    }

    mutating func drain() -> [[UInt8]] {
        defer { sent = [] }
        return sent
    }
}

@Suite struct MQTTCodecTests {
    @Test("CONNECT 3.1.1: protocol name, level 4, Clean Session 0, keep-alive, client id")
    func connect311() {
        let c = MQTTConnect(version: .v311, clientID: "c", cleanStart: false, keepAlive: 30)
        #expect(MQTTEncode.connect(c) == hex("10 0D 0004 4D515454 04 00 001E 0001 63"))
    }

    @Test("CONNECT with will, user name and password: the flags and the payload order (§3.1.3)")
    func connectWithWillAndCredentials() {
        var c = MQTTConnect(version: .v311, clientID: "c", cleanStart: true, keepAlive: 10)
        c.will = MQTTWill(topic: "s", payload: Array("off".utf8), retain: true, qos: 1)
        c.username = "u"
        c.password = Array("pw".utf8)
        // Flags: user 0x80 | password 0x40 | will retain 0x20 | will QoS 1 0x08 | will 0x04 | clean 0x02.
        #expect(MQTTEncode.connect(c) == hex("10 1C 0004 4D515454 04 EE 000A 0001 63 0001 73 0003 6F6666 0001 75 0002 7077"))
    }

    @Test("CONNECT 3.1.1: a password without a user name gets an empty user name [MQTT-3.1.2-22]")
    func passwordNeedsAUserName() {
        var c = MQTTConnect(version: .v311, clientID: "c", cleanStart: false, keepAlive: 30)
        c.password = Array("pw".utf8)
        #expect(MQTTEncode.connect(c) == hex("10 13 0004 4D515454 04 C0 001E 0001 63 0000 0002 7077"))
    }

    @Test("CONNECT fields that cannot be encoded are named before anything is sent")
    func connectProblems() {
        var c = MQTTConnect(version: .v5, clientID: "c", cleanStart: false, keepAlive: 30)
        #expect(c.problem == nil)
        c.clientID = String(repeating: "x", count: 70_000)
        #expect(c.problem == "the client identifier is not a valid MQTT string")
        c.clientID = "c"
        c.will = MQTTWill(topic: "a/#", payload: [], retain: false)
        #expect(c.problem == "the will's topic is not a valid Topic Name")
        c.will = nil
        c.username = "a\u{0}b"
        #expect(c.problem == "the user name is not a valid MQTT string")
    }

    @Test("MQTT 3.1.1: a packet over the limit (the broker was never told it) is skipped, the stream goes on")
    func oversizedSkipped() throws {
        var r = MQTTFrameReader(maximumPacketSize: 10, skipsOversized: true)
        let big: [UInt8] = [0x30, 20] + [UInt8](repeating: 7, count: 20)
        [UInt8](big.prefix(5)).withUnsafeBytes { r.append($0) }
        #expect(try r.next() == nil)
        ([UInt8](big.dropFirst(5)) + [0xD0, 0x00]).withUnsafeBytes { r.append($0) }
        #expect(try r.next() == [0xD0, 0x00])
        #expect(r.skippedCount == 1)
    }

    @Test("CONNECT 5: Session Expiry and Maximum Packet Size properties, an empty will property list")
    func connect5() {
        var c = MQTTConnect(version: .v5, clientID: "c", cleanStart: false, keepAlive: 30)
        c.sessionExpiry = 604_800
        c.maximumPacketSize = 1 << 20
        #expect(MQTTEncode.connect(c) == hex("10 18 0004 4D515454 05 00 001E 0A 11 00093A80 27 00100000 0001 63"))
        c.will = MQTTWill(topic: "s", payload: [], retain: false, qos: 1)
        #expect(MQTTEncode.connect(c).suffix(9) == hex("0001 63 00 0001 73 0000"))
    }

    @Test("PUBLISH: DUP, QoS and RETAIN in the fixed header, the Packet Identifier after the topic (§3.3)")
    func publish() {
        let p = Array("21.5".utf8).withUnsafeBytes {
            MQTTEncode.publish(topic: "a/b", payload: $0, qos: 1, retain: true, dup: false, packetID: 7, version: .v311)
        }
        #expect(p == hex("33 0B 0003 612F62 0007 32312E35"))
        let p5 = Array("x".utf8).withUnsafeBytes {
            MQTTEncode.publish(topic: "a", payload: $0, qos: 0, retain: false, dup: false, packetID: nil, version: .v5)
        }
        #expect(p5 == hex("30 05 0001 61 00 78"))
    }

    @Test("SUBSCRIBE's fixed header flags are 0010 [MQTT-3.8.1-1]")
    func subscribeFlags() {
        #expect(MQTTEncode.subscribe("h/#", qos: 1, packetID: 2, version: .v311) == hex("82 08 0002 0003 682F23 01"))
        #expect(MQTTEncode.subscribe("h/#", qos: 1, packetID: 2, version: .v5) == hex("82 09 0002 00 0003 682F23 01"))
    }

    @Test("Remaining Length: 1 to 4 bytes, split anywhere across reads; a fifth byte is malformed (§1.5.5, §2.1.4)")
    func frames() throws {
        let payload = [UInt8](repeating: 0x41, count: 200)
        let packet = payload.withUnsafeBytes {
            MQTTEncode.publish(topic: "t", payload: $0, qos: 0, retain: false, dup: false, packetID: nil, version: .v311)
        }
        #expect(packet[1] == 0xCB && packet[2] == 0x01)  // 203 = 0x4B | 0x80, 0x01
        var r = MQTTFrameReader()
        let stream = packet + [0xD0, 0x00] + packet
        for b in stream { [b].withUnsafeBytes { r.append($0) } }
        #expect(try r.next() == packet)
        #expect(try r.next() == [0xD0, 0x00])
        #expect(try r.next() == packet)
        #expect(try r.next() == nil)
        var bad = MQTTFrameReader()
        [UInt8]([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).withUnsafeBytes { bad.append($0) }
        #expect(throws: MQTTDecodeError.self) { try bad.next() }
        var big = MQTTFrameReader(maximumPacketSize: 100)
        [UInt8]([0x30, 0xFF, 0x01]).withUnsafeBytes { big.append($0) }
        #expect(throws: MQTTDecodeError(offset: 1, "a 258-byte packet, over the 100-byte limit")) { try big.next() }
    }

    @Test("CONNACK: Session Present, return code; reserved flag bits are malformed [MQTT-2.1.3-1]")
    func connack() throws {
        #expect(try MQTTIncoming.decode(hex("20 02 01 00"), version: .v311) == .connack(MQTTConnAck(sessionPresent: true, code: 0)))
        #expect(throws: MQTTDecodeError.self) { try MQTTIncoming.decode(hex("20 02 02 00"), version: .v311) }
        #expect(throws: MQTTDecodeError.self) { try MQTTIncoming.decode(hex("21 02 00 00"), version: .v311) }
        // MQTT 5: Receive Maximum 2, Server Keep Alive 5, Maximum Packet Size 1000, a reason string.
        let ack = try MQTTIncoming.decode(hex("20 13 00 00 10 21 0002 13 0005 27 000003E8 1F 0002 6869"), version: .v5)
        var expected = MQTTConnAck(sessionPresent: false, code: 0)
        expected.receiveMaximum = 2
        expected.serverKeepAlive = 5
        expected.maximumPacketSize = 1000
        expected.reasonString = "hi"
        #expect(ack == .connack(expected))
        // Receive Maximum 0 is a Protocol Error (§3.2.2.3.3); an unknown property cannot be skipped.
        #expect(throws: MQTTDecodeError.self) { try MQTTIncoming.decode(hex("20 06 00 00 03 21 0000"), version: .v5) }
        #expect(throws: MQTTDecodeError.self) { try MQTTIncoming.decode(hex("20 05 00 00 02 7F 00"), version: .v5) }
    }

    @Test("PUBLISH from the broker: QoS 3 [MQTT-3.3.1-4], DUP on QoS 0 [MQTT-3.3.1-2], U+0000 [MQTT-1.5.4-2], a wildcard [MQTT-3.3.2-2], Packet Identifier 0 are malformed")
    func incomingPublishRules() throws {
        #expect(try MQTTIncoming.decode(hex("33 06 0001 61 0009 7A"), version: .v311)
                == .publish(MQTTIncomingPublish(topic: "a", payload: [0x7A], qos: 1, retain: true, dup: false, packetID: 9)))
        for bad in ["36 06 0001 61 0009 7A", "38 04 0001 61 7A", "30 04 0001 00 7A", "30 04 0001 23 7A", "32 06 0001 61 0000 7A",
                    "30 04 0001 C3", "30 03 0001"] {
            #expect(throws: MQTTDecodeError.self, "\(bad)") { try MQTTIncoming.decode(hex(bad), version: .v311) }
        }
    }

    @Test("PUBACK 5: the reason code is optional (0 when absent, §3.4.2.1); DISCONNECT from a 3.1.1 broker is malformed")
    func pubackAndDisconnect() throws {
        #expect(try MQTTIncoming.decode(hex("40 02 0005"), version: .v5) == .puback(packetID: 5, reason: 0))
        #expect(try MQTTIncoming.decode(hex("40 04 0005 87 00"), version: .v5) == .puback(packetID: 5, reason: 0x87))
        #expect(try MQTTIncoming.decode(hex("E0 01 8B"), version: .v5) == .disconnect(reason: 0x8B, reasonString: nil))
        #expect(throws: MQTTDecodeError.self) { try MQTTIncoming.decode(hex("E0 00"), version: .v311) }
        #expect(throws: MQTTDecodeError.self) { try MQTTIncoming.decode(hex("10 00"), version: .v311) }
    }
}

@Suite struct MQTTSessionTests {
    @Test("CONNECT is the first packet [MQTT-3.1.0-1]; CONNACK 0 reports connected")
    func connects() {
        var h = Harness()
        h.connect()
        #expect(h.opens == 1)
        #expect(h.sent.first?.first == 0x10)
        #expect(h.events == [.connected])
        #expect(h.session.isConnected)
    }

    @Test("A QoS 1 publication stays until its PUBACK, which reports its tag")
    func acknowledged() {
        var h = Harness()
        h.connect()
        _ = h.drain()
        #expect(h.publish(tag: 42) == .accepted)
        #expect(h.drain() == [hex("32 06 0001 74 0001 70")])
        #expect(h.session.pendingCount == 1)
        h.receive(hex("40 02 0001"))
        #expect(h.events.last == .acknowledged(tag: 42))
        #expect(h.session.pendingCount == 0)
    }

    @Test("Nothing is taken while disconnected; a full queue refuses")
    func refusals() {
        var h = Harness { $0.queueLimit = 2 }
        #expect(h.publish() == .notConnected)
        h.connect()
        #expect(h.publish() == .accepted && h.publish() == .accepted)
        #expect(h.publish() == .full)
        #expect(h.publish("a/+") == .invalidTopic)
    }

    @Test("Reconnect, session present: in-flight PUBLISH again with DUP and the same Packet Identifier, in order, before new ones [MQTT-4.4.0-1] [MQTT-3.3.1-1] [MQTT-4.6.0-1]")
    func resendWithDup() {
        var h = Harness()
        h.connect()
        _ = h.publish("a", tag: 1)
        _ = h.publish("b", tag: 2)
        h.receive(hex("40 02 0001"))
        _ = h.drain()
        h.take(h.session.transportClosed(now: h.now, cause: "reset"))
        #expect(h.events.last == .connectionLost(cause: "reset"))
        #expect(h.publish("c") == .notConnected)
        h.reconnect(sessionPresent: true)
        let sent = h.drain()
        #expect(sent.count == 2)  // CONNECT, then b again
        #expect(sent[1] == hex("3A 06 0001 62 0002 70"))
        #expect(h.events.suffix(1) == [.connected])
        h.receive(hex("40 02 0002"))
        #expect(h.events.last == .acknowledged(tag: 2))
    }

    @Test("Reconnect, no session at the broker: tagged in-flight ones go back to the publisher, the others are sent as new (DUP 0)")
    func sessionLost() {
        var h = Harness()
        h.connect()
        _ = h.publish("a", tag: 1)
        _ = h.publish("s")
        _ = h.drain()
        h.take(h.session.transportClosed(now: h.now, cause: "reset"))
        h.reconnect(sessionPresent: false)
        #expect(h.events.suffix(2) == [.failed(tag: 1, code: -2), .connected])
        let sent = h.drain()
        #expect(sent.count == 2 && sent[1][0] == 0x32)
    }

    @Test("The broker's Receive Maximum bounds what is in flight [MQTT-3.3.4-7]")
    func receiveMaximum() {
        var h = Harness(version: .v5)
        h.connect(connack: hex("20 06 00 00 03 21 0002"))
        _ = h.drain()
        for t in 1 ... 3 { _ = h.publish(tag: UInt64(t)) }
        #expect(h.drain().count == 2)
        h.receive(hex("40 02 0001"))
        let next = h.drain()
        #expect(next.count == 1 && next[0][5] == 0 && next[0][6] == 3)
    }

    @Test("Reconnect, session present, a smaller Receive Maximum: the resends wait their turn, still with DUP [MQTT-3.3.4-7] [MQTT-3.3.1-1] (found by the fuzz target)")
    func resendWithinTheNewReceiveMaximum() {
        var h = Harness(version: .v5)
        h.connect(connack: hex("20 06 00 00 03 21 0003"))
        for t in 1 ... 3 { _ = h.publish(tag: UInt64(t)) }
        _ = h.drain()
        h.take(h.session.transportClosed(now: h.now, cause: "reset"))
        h.now += 60 * second
        h.take(h.session.tick(now: h.now))
        h.take(h.session.transportOpened(now: h.now))
        h.receive(hex("20 06 01 00 03 21 0001"))
        let first = h.drain()
        #expect(first.count == 2 && first[1][0] == 0x3A)  // CONNECT, then only id 1 (DUP)
        h.receive(hex("40 02 0001"))
        let second = h.drain()
        #expect(second.count == 1 && second[0][0] == 0x3A && second[0][6] == 2)
    }

    @Test("MQTT 5 limits: above Maximum QoS a publication goes at QoS 0 [MQTT-3.2.2-11], without Retain Available RETAIN stays off [MQTT-3.2.2-14]")
    func brokerLimits() {
        var h = Harness(version: .v5)
        h.connect(connack: hex("20 07 00 00 04 24 00 25 00"))
        _ = h.drain()
        #expect(h.publish("t", "p", tag: 5, retain: true) == .accepted)
        #expect(h.drain() == [hex("30 05 0001 74 00 70")])
        #expect(h.events.last == .acknowledged(tag: 5))
        #expect(h.session.pendingCount == 0)
    }

    @Test("Keep-alive counts from CONNECT, as the broker's does, not from CONNACK")
    func keepAliveFromConnect() {
        var h = Harness(keepAlive: 10)
        h.take(h.session.start(now: h.now))
        h.take(h.session.transportOpened(now: h.now))
        let sent = h.now
        h.now += 4 * second
        h.receive(hex("20 02 00 00"))
        #expect(h.session.nextDeadline == sent + 10 * second)
    }

    @Test("Keep-alive: PINGREQ after the keep-alive without a packet sent [MQTT-3.1.2-20] (3.1.1: [MQTT-3.1.2-23]); no PINGRESP within it: the connection is closed")
    func keepAlive() {
        var h = Harness(keepAlive: 10)
        h.connect()
        _ = h.drain()
        #expect(h.session.nextDeadline == h.now + 10 * second)
        h.now += 9 * second
        h.take(h.session.tick(now: h.now))
        #expect(h.drain().isEmpty)
        h.now += 1 * second
        h.take(h.session.tick(now: h.now))
        #expect(h.drain() == [hex("C0 00")])
        h.receive(hex("D0 00"))
        h.now += 10 * second
        h.take(h.session.tick(now: h.now))
        #expect(h.drain() == [hex("C0 00")])
        h.now += 10 * second
        h.take(h.session.tick(now: h.now))
        #expect(h.closes == 1)
        #expect(h.events.last == .connectionLost(cause: "no PINGRESP within 10 s"))
    }

    @Test("Server Keep Alive replaces the client's [MQTT-3.2.2-21]")
    func serverKeepAlive() {
        var h = Harness(version: .v5, keepAlive: 60)
        h.connect(connack: hex("20 06 00 00 03 13 0005"))
        #expect(h.session.nextDeadline == h.now + 5 * second)
    }

    @Test("A QoS 1 message from the broker is acknowledged with its Packet Identifier [MQTT-4.3.2-4] (3.1.1: [MQTT-4.3.2-2]) and reported with its RETAIN flag")
    func incoming() {
        var h = Harness()
        h.connect()
        _ = h.drain()
        h.receive(hex("33 06 0001 61 0009 7A"))
        #expect(h.drain() == [hex("40 02 0009")])
        #expect(h.events.last == .message(topic: "a", payload: [0x7A], retained: true))
    }

    @Test("A refused CONNACK is reported with its code, the connection closed, and the next attempt waits 1, 2, 4 ... 30 s")
    func refusedAndBackOff() {
        var h = Harness()
        h.connect(connack: hex("20 02 00 05"))
        #expect(h.events == [.connectFailed(code: 5, message: "")])
        #expect(h.closes == 1 && !h.session.isConnected)
        var waits: [UInt64] = []
        for _ in 0 ..< 7 {
            guard let d = h.session.nextDeadline else { break }
            waits.append((d - h.now) / second)
            h.now = d
            h.take(h.session.tick(now: h.now))
            h.take(h.session.transportClosed(now: h.now, cause: "refused"))
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30])
        // Transport failures after the first are not said again; refusals by the broker are.
        #expect(h.events.count == 1)
    }

    @Test("Packet Identifiers: never 0, never one in use, wrapping at 65535 [MQTT-2.2.1-3] (3.1.1: [MQTT-2.3.1-1] [MQTT-2.3.1-2])")
    func packetIdentifiers() {
        var h = Harness()
        h.connect()
        _ = h.publish(tag: 1)  // id 1 stays in flight
        // 2 ... 65535, each acknowledged at once: then the identifiers wrap.
        for id in 2 ... 65535 {
            _ = h.publish()
            h.receive([0x40, 0x02, UInt8(id >> 8), UInt8(id & 0xFF)])
        }
        _ = h.drain()
        _ = h.publish()
        let p = h.drain().last!
        #expect(p[5] == 0 && p[6] == 2)  // not 0, not 1 (in use)
        #expect(h.session.pendingCount == 2)
    }

    @Test("Protocol errors close the connection: a packet before CONNACK [MQTT-3.2.0-1], a second CONNACK, malformed bytes, QoS 2 to a QoS 1 subscription")
    func protocolErrors() {
        for bytes in [hex("20 02 00 00"), hex("30 02 0000"), hex("34 06 0001 61 0001 7A"), hex("F0 00")] {
            var h = Harness()
            h.connect()
            h.receive(bytes)
            #expect(h.closes == 1, "\(bytes)")
            if case .connectionLost = h.events.last {} else { Issue.record("\(bytes): \(h.events)") }
        }
        var early = Harness()
        early.take(early.session.start(now: early.now))
        early.take(early.session.transportOpened(now: early.now))
        early.receive(hex("D0 00"))
        #expect(early.closes == 1 && !early.session.isConnected)
    }

    @Test("MQTT 5 PUBACK reasons: ≥ 0x80 is a refusal reported with its code, 0x10 (no matching subscribers) a success")
    func pubackReasons() {
        var h = Harness(version: .v5)
        h.connect()
        _ = h.publish(tag: 1)
        _ = h.publish(tag: 2)
        h.receive(hex("40 03 0001 87"))
        h.receive(hex("40 03 0002 10"))
        #expect(h.events.suffix(2) == [.failed(tag: 1, code: 0x87), .acknowledged(tag: 2)])
    }

    @Test("Larger than the broker's Maximum Packet Size: not sent, refused as 0x95 [MQTT-3.2.2-15]")
    func maximumPacketSize() {
        var h = Harness(version: .v5)
        h.connect(connack: hex("20 08 00 00 05 27 00000014"))
        _ = h.drain()
        #expect(h.publish("t", String(repeating: "x", count: 30), tag: 9) == .accepted)
        #expect(h.drain().isEmpty)
        #expect(h.events.last == .failed(tag: 9, code: 0x95))
    }

    @Test("DISCONNECT, then the transport closed and no reconnecting [MQTT-3.14.4-1] [MQTT-3.14.4-2]")
    func disconnect() {
        var h = Harness()
        h.connect()
        _ = h.drain()
        h.take(h.session.disconnect(now: h.now))
        #expect(h.drain() == [hex("E0 00")])
        #expect(h.closes == 1 && h.events.last == .disconnected)
        #expect(h.session.nextDeadline == nil && !h.session.isRunning)
        #expect(h.publish() == .notConnected)
    }

    @Test("MQTT 5: the broker's DISCONNECT ends the connection with its reason; the client reconnects after 1 s")
    func serverDisconnect() {
        var h = Harness(version: .v5)
        h.connect()
        h.receive(hex("E0 07 8E 05 1F 0002 6869"))
        #expect(h.events.last == .connectionLost(cause: "the broker disconnected (reason 0x8e: hi)"))
        #expect(h.session.nextDeadline == h.now + second)
    }

    @Test("A refused subscription is reported with its filter [MQTT-3.9.3-2]")
    func subscriptionRefused() {
        var h = Harness()
        h.connect()
        _ = h.drain()
        let n = h.now
        let (r, actions) = h.session.subscribe("hcigatt/+/+/command", now: n)
        h.take(actions)
        #expect(r == .accepted)
        let id = Array(h.drain()[0][2 ... 3])
        h.receive([0x90, 0x03] + id + [0x80])
        #expect(h.events.last == .subscriptionRefused(filter: "hcigatt/+/+/command", code: 0x80))
    }

    @Test("Connect timeout: no transport or no CONNACK within 10 s is a failed attempt")
    func connectTimeout() {
        var h = Harness()
        h.take(h.session.start(now: h.now))
        h.now += 10 * second
        h.take(h.session.tick(now: h.now))
        #expect(h.events == [.connectFailed(code: -1, message: "no connection within 10 s")])
        h.now += second
        h.take(h.session.tick(now: h.now))
        h.take(h.session.transportOpened(now: h.now))
        h.now += 10 * second
        h.take(h.session.tick(now: h.now))
        #expect(h.closes == 2 && !h.session.isConnected)
    }
}
