// The MQTT client's session, sans I/O: API calls, bytes from the broker, the transport's
// news and the time go in; bytes to send, transport actions and events come out. The I/O
// driver (MQTTConnection) only moves bytes, so every rule here is tested without a socket.

/// What the client reports.
public enum MQTTEvent: Sendable, Equatable {
    /// Connected (the first time, or again after a loss).
    case connected
    /// A connection attempt failed before any succeeded (the transport: code -1; or the
    /// broker's CONNACK refusal code with its reason string). The client keeps retrying
    /// unless told to stop.
    case connectFailed(code: Int32, message: String)
    /// The connection was lost, and why; the client reconnects by itself.
    case connectionLost(cause: String)
    /// The broker acknowledged the message published with `tag`.
    case acknowledged(tag: UInt64)
    /// The message published with `tag` will not be acknowledged (the broker lost the
    /// session, or refused it with an MQTT 5 reason code ≥ 0x80): publish it again or drop it.
    case failed(tag: UInt64, code: Int32)
    /// A message on a subscribed topic; `retained`: the broker kept it from before.
    case message(topic: String, payload: [UInt8], retained: Bool)
    /// The broker refused a subscription (SUBACK return code ≥ 0x80).
    case subscriptionRefused(filter: String, code: UInt8)
    /// ``MQTTSession/disconnect(now:)`` finished.
    case disconnected
}

/// How a session behaves.
public struct MQTTSessionSettings: Sendable {
    /// What CONNECT says (version, client identifier, keep-alive, will, credentials).
    public var connect: MQTTConnect
    /// Nanoseconds for the transport and CONNACK together.
    public var connectTimeout: UInt64 = 10_000_000_000
    /// Back-off between attempts: from `retryMin` doubling to `retryMax` (nanoseconds).
    public var retryMin: UInt64 = 1_000_000_000
    /// The longest back-off (nanoseconds).
    public var retryMax: UInt64 = 30_000_000_000
    /// Publications queued or in flight at most; more are refused (``MQTTSession/PublishResult/full``).
    public var queueLimit = 8192
    /// The largest packet taken from the broker (bytes), also told to an MQTT 5 broker.
    public var maximumPacketSize = 1 << 20

    /// The defaults around `connect`.
    public init(connect: MQTTConnect) {
        self.connect = connect
    }
}

/// One client's session with a broker (MQTT §4.1: the Session State of the client).
///
///     idle ─start─▶ opening ─transport up─▶ awaitingConnAck ─CONNACK 0─▶ connected
///     opening/awaitingConnAck ─failure, refusal or timeout─▶ waiting ─back-off─▶ opening
///     connected ─lost─▶ waiting          any ─disconnect─▶ stopped
///
/// Publications at QoS 1 stay in the session across connections until PUBACK: after a
/// reconnect to a broker that kept the session they are sent again with DUP and their
/// Packet Identifiers [MQTT-4.4.0-1]; to one that did not, tagged ones are reported
/// ``MQTTEvent/failed(tag:code:)`` (the publisher sends them again in its order) and the
/// others are sent again as new.
public struct MQTTSession: Sendable {
    /// What the driver does.
    public enum Action: Sendable, Equatable {
        /// Open the transport (TCP, TLS), then report ``transportOpened(now:)`` or
        /// ``transportClosed(now:cause:)``.
        case open
        /// Write these bytes, in order.
        case send([UInt8])
        /// Close the transport (no report expected).
        case close
        /// Tell the client's user.
        case event(MQTTEvent)
    }

    /// Why a publication was not taken.
    public enum PublishResult: Sendable, Equatable {
        case accepted
        /// Not connected: nothing is queued while disconnected (the spool keeps readings).
        case notConnected
        /// ``MQTTSessionSettings/queueLimit`` publications wait already.
        case full
        /// The topic is not a valid Topic Name (too long, U+0000, a wildcard, empty).
        case invalidTopic
        /// Over MQTT's largest packet (256 MB).
        case tooLarge
    }

    /// A live connection's data.
    struct Link: Sendable {
        var frames: MQTTFrameReader
        /// When the client last sent a packet (keep-alive counts from it).
        var lastSent: UInt64
        /// A PINGREQ waits for its PINGRESP since then.
        var pingSince: UInt64?
        /// The keep-alive in force (nanoseconds; 0: off).
        var keepAlive: UInt64
        /// Unacknowledged QoS 1 publications allowed (MQTT 5 Receive Maximum).
        var receiveMaximum: Int
        /// The broker's Maximum Packet Size, if it gave one.
        var maximumPacketSize: Int?
        /// MQTT 5: the highest QoS the broker takes; higher is sent at it [MQTT-3.2.2-11].
        var maximumQoS: UInt8
        /// MQTT 5: whether the broker keeps retained messages; if not, RETAIN is never
        /// set [MQTT-3.2.2-14].
        var retainAvailable: Bool
    }

    enum State: Sendable {
        case idle
        case waiting(until: UInt64)
        case opening(since: UInt64)
        /// `connectSent`: when CONNECT went out (the broker's keep-alive counts from it).
        case awaitingConnAck(since: UInt64, connectSent: UInt64, frames: MQTTFrameReader)
        case connected(Link)
        case stopped
    }

    /// A QoS 1 publication of the session.
    struct Outgoing: Sendable {
        var packetID: UInt16
        /// The PUBLISH as first sent (DUP clear).
        var packet: [UInt8]
        var tag: UInt64?
        /// Sent on this connection and not acknowledged.
        var sent: Bool
        /// Sent on an earlier connection of the session: DUP when sent again [MQTT-3.3.1-1].
        var dup = false
    }

    /// What it was made with.
    public let settings: MQTTSessionSettings
    private(set) var state = State.idle
    /// In the order published: in flight first (the first `sentCount`), then waiting for room.
    private(set) var outgoing: [Outgoing] = []
    private var sentCount = 0
    /// Packet Identifiers in use (``outgoing`` and ``subscribing``).
    private var idsInUse: Set<UInt16> = []
    /// SUBSCRIBEs waiting for their SUBACK: Packet Identifier → filter.
    private var subscribing: [UInt16: String] = [:]
    private var lastPacketID: UInt16 = 0
    /// Failed attempts since the last connection (the back-off grows with them).
    private var failures = 0
    /// Whether a connection ever succeeded (failures before that are reported).
    private var everConnected = false

    /// A session not started yet.
    public init(_ settings: MQTTSessionSettings) {
        self.settings = settings
    }

    /// Connected to the broker now.
    public var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// Not stopped by ``disconnect(now:)``.
    public var isRunning: Bool {
        if case .stopped = state { return false }
        return true
    }

    /// Publications queued or in flight.
    public var pendingCount: Int { outgoing.count }

    /// When ``tick(now:)`` has something to do.
    public var nextDeadline: UInt64? {
        switch state {
        case .idle, .stopped: return nil
        case .waiting(let until): return until
        case .opening(let since), .awaitingConnAck(let since, _, _): return since &+ settings.connectTimeout
        case .connected(let link):
            guard link.keepAlive > 0 else { return nil }
            if let ping = link.pingSince { return ping &+ link.keepAlive }
            return link.lastSent &+ link.keepAlive
        }
    }

    /// Starts connecting.
    public mutating func start(now: UInt64) -> [Action] {
        guard case .idle = state else { return [] }
        state = .opening(since: now)
        return [.open]
    }

    /// The transport is up: CONNECT goes first [MQTT-3.1.0-1].
    public mutating func transportOpened(now: UInt64) -> [Action] {
        guard case .opening(let since) = state else { return [] }
        state = .awaitingConnAck(since: since, connectSent: now, frames: Self.frameReader(settings))
        var c = settings.connect
        if c.version == .v5, c.maximumPacketSize == nil { c.maximumPacketSize = UInt32(clamping: settings.maximumPacketSize) }
        return [.send(MQTTEncode.connect(c))]
    }

    /// The transport closed or could not open (`cause` says why).
    public mutating func transportClosed(now: UInt64, cause: String) -> [Action] {
        switch state {
        case .idle, .waiting, .stopped:
            return []
        case .opening, .awaitingConnAck:
            return attemptFailed(now: now, code: -1, message: cause, close: false)
        case .connected:
            return lost(now: now, cause: cause, close: false)
        }
    }

    /// Bytes from the broker.
    public mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [Action] {
        var actions: [Action] = []
        // Each phase's data is taken out of `state` before it changes (`.idle` stands in
        // meanwhile), so the frame buffer is not copied on every append.
        switch state {
        case .awaitingConnAck(let since, let sent, var frames):
            state = .idle
            frames.append(bytes)
            state = .awaitingConnAck(since: since, connectSent: sent, frames: frames)
        case .connected(var link):
            state = .idle
            link.frames.append(bytes)
            state = .connected(link)
        default:
            return []
        }
        while true {
            let packet: [UInt8]
            switch state {
            case .awaitingConnAck(let since, let sent, var frames):
                state = .idle
                do {
                    let p = try frames.next()
                    state = .awaitingConnAck(since: since, connectSent: sent, frames: frames)
                    guard let p else { return actions }
                    packet = p
                } catch {
                    state = .awaitingConnAck(since: since, connectSent: sent, frames: frames)
                    return actions + attemptFailed(now: now, code: -1, message: "\(error)", close: true)
                }
            case .connected(var link):
                state = .idle
                do {
                    let p = try link.frames.next()
                    state = .connected(link)
                    guard let p else { return actions }
                    packet = p
                } catch {
                    state = .connected(link)
                    return actions + lost(now: now, cause: "the broker sent a \(error)", close: true)
                }
            default:
                return actions
            }
            let incoming: MQTTIncoming
            do {
                incoming = try MQTTIncoming.decode(packet, version: settings.connect.version)
            } catch {
                if isConnected { return actions + lost(now: now, cause: "the broker sent a \(error)", close: true) }
                return actions + attemptFailed(now: now, code: -1, message: "the broker sent a \(error)", close: true)
            }
            actions += handle(incoming, now: now)
        }
    }

    /// Time passed: back-off over, timeouts, keep-alive.
    public mutating func tick(now: UInt64) -> [Action] {
        switch state {
        case .idle, .stopped:
            return []
        case .waiting(let until):
            guard now >= until else { return [] }
            state = .opening(since: now)
            return [.open]
        case .opening(let since), .awaitingConnAck(let since, _, _):
            guard now &- since >= settings.connectTimeout else { return [] }
            let waited = settings.connectTimeout / 1_000_000_000
            if case .opening = state {
                return attemptFailed(now: now, code: -1, message: "no connection within \(waited) s", close: true)
            }
            return attemptFailed(now: now, code: -1, message: "no CONNACK within \(waited) s", close: true)
        case .connected(var link):
            guard link.keepAlive > 0 else { return [] }
            if let ping = link.pingSince {
                // No PINGRESP within the keep-alive: the connection is dead (§3.1.2.10).
                guard now &- ping >= link.keepAlive else { return [] }
                return lost(now: now, cause: "no PINGRESP within \(link.keepAlive / 1_000_000_000) s", close: true)
            }
            // Nothing sent for the keep-alive: PINGREQ [MQTT-3.1.2-20] (3.1.1: [MQTT-3.1.2-23]).
            guard now &- link.lastSent >= link.keepAlive else { return [] }
            link.pingSince = now
            link.lastSent = now
            state = .connected(link)
            return [.send(MQTTEncode.pingreq)]
        }
    }

    /// Publishes `payload` on `topic`. QoS 1 publications stay in the session until PUBACK;
    /// with a `tag`, the outcome is reported (``MQTTEvent/acknowledged(tag:)`` or
    /// ``MQTTEvent/failed(tag:code:)``). A QoS 0 publication's tag is acknowledged once
    /// written: at most once is all QoS 0 promises. An MQTT 5 broker's limits are kept:
    /// above its Maximum QoS a publication goes at QoS 0; without Retain Available the
    /// RETAIN flag is left off (the broker would close the connection on either).
    public mutating func publish(topic: String, payload: UnsafeRawBufferPointer, qos: UInt8 = 1, retain: Bool = false,
                                 tag: UInt64? = nil, now: UInt64) -> (PublishResult, [Action]) {
        guard case .connected(var link) = state else { return (.notConnected, []) }
        guard !topic.isEmpty, MQTTEncode.isValidString(topic),
              !topic.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) else {
            return (.invalidTopic, [])
        }
        guard topic.utf8.count + payload.count + 8 <= MQTTEncode.maximumRemainingLength else { return (.tooLarge, []) }
        let qos = min(qos, 1, link.maximumQoS)
        let retain = retain && link.retainAvailable
        if qos == 0 {
            let packet = MQTTEncode.publish(topic: topic, payload: payload, qos: 0, retain: retain, dup: false,
                                            packetID: nil, version: settings.connect.version)
            // Larger than the broker takes [MQTT-3.2.2-15]: refused as the broker would (0x95).
            if let limit = link.maximumPacketSize, packet.count > limit {
                return (.accepted, tag.map { [.event(.failed(tag: $0, code: 0x95))] } ?? [])
            }
            link.lastSent = now
            state = .connected(link)
            return (.accepted, [.send(packet)] + (tag.map { [.event(.acknowledged(tag: $0))] } ?? []))
        }
        guard outgoing.count < min(settings.queueLimit, 60_000), let id = nextPacketID() else { return (.full, []) }
        let packet = MQTTEncode.publish(topic: topic, payload: payload, qos: 1, retain: retain, dup: false,
                                        packetID: id, version: settings.connect.version)
        if let limit = link.maximumPacketSize, packet.count > limit {
            idsInUse.remove(id)
            return (.accepted, tag.map { [.event(.failed(tag: $0, code: 0x95))] } ?? [])
        }
        outgoing.append(Outgoing(packetID: id, packet: packet, tag: tag, sent: false))
        return (.accepted, sendWaiting(now: now))
    }

    /// Subscribes to `filter` at QoS 1; refusals are reported.
    public mutating func subscribe(_ filter: String, now: UInt64) -> (PublishResult, [Action]) {
        guard case .connected(var link) = state else { return (.notConnected, []) }
        guard !filter.isEmpty, MQTTEncode.isValidString(filter) else { return (.invalidTopic, []) }
        guard let id = nextPacketID() else { return (.full, []) }
        subscribing[id] = filter
        link.lastSent = now
        state = .connected(link)
        return (.accepted, [.send(MQTTEncode.subscribe(filter, qos: 1, packetID: id, version: settings.connect.version))])
    }

    /// Ends the session's connection: DISCONNECT when connected (the broker then discards
    /// the will), the transport closed, no reconnecting.
    public mutating func disconnect(now: UInt64) -> [Action] {
        let previous = state
        state = .stopped
        switch previous {
        case .stopped: return []
        case .connected: return [.send(MQTTEncode.disconnect), .close, .event(.disconnected)]
        case .opening, .awaitingConnAck: return [.close, .event(.disconnected)]
        case .idle, .waiting: return [.event(.disconnected)]
        }
    }

    // MARK: - Inside

    private mutating func handle(_ incoming: MQTTIncoming, now: UInt64) -> [Action] {
        if case .awaitingConnAck = state {
            // The broker's first packet is CONNACK [MQTT-3.2.0-1].
            guard case .connack(let ack) = incoming else {
                return attemptFailed(now: now, code: -1, message: "the broker sent another packet before CONNACK", close: true)
            }
            return connAck(ack, now: now)
        }
        guard case .connected(var link) = state else { return [] }
        switch incoming {
        case .connack:
            return lost(now: now, cause: "the broker sent a second CONNACK", close: true)
        case .publish(let p):
            var actions: [Action] = []
            if p.qos == 1, let id = p.packetID {
                // PUBACK with the message's Packet Identifier [MQTT-4.3.2-4] (3.1.1: [MQTT-4.3.2-2]).
                link.lastSent = now
                state = .connected(link)
                actions.append(.send(MQTTEncode.puback(id)))
            } else if p.qos == 2 {
                // Subscribed at QoS 1: the broker may not send QoS 2 (§3.8.4).
                return lost(now: now, cause: "the broker sent a QoS 2 message to a QoS 1 subscription", close: true)
            }
            actions.append(.event(.message(topic: p.topic, payload: p.payload, retained: p.retain)))
            return actions
        case .puback(let id, let reason):
            guard let i = outgoing.firstIndex(where: { $0.packetID == id && $0.sent }) else {
                // An acknowledgement of nothing in flight: ignored (a duplicate after resending).
                return []
            }
            let done = outgoing.remove(at: i)
            sentCount -= 1
            idsInUse.remove(id)
            var actions: [Action] = []
            if let tag = done.tag {
                // MQTT 5: ≥ 0x80 is a refusal; 0x10 (no matching subscribers) is success.
                actions.append(.event(reason >= 0x80 ? .failed(tag: tag, code: Int32(reason)) : .acknowledged(tag: tag)))
            }
            return actions + sendWaiting(now: now)
        case .suback(let id, let codes):
            guard let filter = subscribing.removeValue(forKey: id) else { return [] }
            idsInUse.remove(id)
            if let code = codes.first, code >= 0x80 { return [.event(.subscriptionRefused(filter: filter, code: code))] }
            return []
        case .unsuback:
            return []
        case .pingresp:
            link.pingSince = nil
            state = .connected(link)
            return []
        case .disconnect(let reason, let text):
            let why = "the broker disconnected (reason 0x\(String(reason, radix: 16))" + (text.map { ": \($0)" } ?? "") + ")"
            return lost(now: now, cause: why, close: true)
        case .unexpected(let type):
            return lost(now: now, cause: "the broker sent packet type \(type), which this client never asks for", close: true)
        }
    }

    private mutating func connAck(_ ack: MQTTConnAck, now: UInt64) -> [Action] {
        guard ack.code == 0 else {
            return attemptFailed(now: now, code: Int32(ack.code), message: ack.reasonString ?? "", close: true)
        }
        // Server Keep Alive replaces ours [MQTT-3.2.2-21].
        let keepAlive = UInt64(ack.serverKeepAlive ?? settings.connect.keepAlive) * 1_000_000_000
        var link = Link(frames: Self.frameReader(settings), lastSent: now, pingSince: nil,
                        keepAlive: keepAlive, receiveMaximum: Int(ack.receiveMaximum),
                        maximumPacketSize: ack.maximumPacketSize.map { Int($0) },
                        maximumQoS: ack.maximumQoS, retainAvailable: ack.retainAvailable)
        // The broker's keep-alive runs from CONNECT, not from CONNACK.
        if case .awaitingConnAck(_, let sent, let frames) = state {
            link.frames = frames
            link.lastSent = sent
        }
        state = .connected(link)
        failures = 0
        everConnected = true
        for id in subscribing.keys { idsInUse.remove(id) }
        subscribing = [:]
        var actions: [Action] = []
        if ack.sessionPresent {
            // The broker kept the session: what was in flight goes again, DUP set, same
            // Packet Identifiers, in order [MQTT-4.4.0-1, MQTT-3.3.1-1, MQTT-4.6.0-1], as
            // the new connection's Receive Maximum allows [MQTT-3.3.4-7].
            // A session present for a process that just started is taken too (where
            // [MQTT-3.2.2-4] says to close): the gateway's session state is its spool on
            // disk, and the broker's side (the command subscription, commands queued
            // while the gateway was down) is worth keeping.
            for i in 0 ..< sentCount {
                outgoing[i].sent = false
                outgoing[i].dup = true
            }
            sentCount = 0
        } else {
            // A new session: what was in flight was lost with the old one. Tagged ones go
            // back to the publisher; the rest are sent as new.
            var kept: [Outgoing] = []
            for o in outgoing {
                if o.sent, let tag = o.tag {
                    actions.append(.event(.failed(tag: tag, code: -2)))
                    idsInUse.remove(o.packetID)
                } else {
                    var o = o
                    o.sent = false
                    o.dup = false
                    kept.append(o)
                }
            }
            outgoing = kept
            sentCount = 0
        }
        actions.append(.event(.connected))
        return actions + sendWaiting(now: now)
    }

    /// Sends what waits while the broker's Receive Maximum leaves room [MQTT-3.3.4-7].
    private mutating func sendWaiting(now: UInt64) -> [Action] {
        guard case .connected(var link) = state else { return [] }
        var actions: [Action] = []
        // The sent ones are a prefix: sending goes in order, acknowledgements only remove.
        while sentCount < outgoing.count, sentCount < link.receiveMaximum {
            outgoing[sentCount].sent = true
            var packet = outgoing[sentCount].packet
            if outgoing[sentCount].dup { packet[0] |= 0x08 }
            actions.append(.send(packet))
            sentCount += 1
        }
        if !actions.isEmpty {
            link.lastSent = now
            state = .connected(link)
        }
        return actions
    }

    /// A Packet Identifier not in use, never 0 [MQTT-2.2.1-3] (3.1.1: [MQTT-2.3.1-1], [MQTT-2.3.1-2]);
    /// nil when all 65 535 are.
    private mutating func nextPacketID() -> UInt16? {
        guard idsInUse.count < Int(UInt16.max) else { return nil }
        while true {
            lastPacketID = lastPacketID == UInt16.max ? 1 : lastPacketID + 1
            let id = lastPacketID
            if idsInUse.insert(id).inserted { return id }
        }
    }

    /// The frame reader of a connection: MQTT 3.1.1 skips what is over the limit (the
    /// broker was never told it), MQTT 5 fails on it.
    static func frameReader(_ settings: MQTTSessionSettings) -> MQTTFrameReader {
        MQTTFrameReader(maximumPacketSize: settings.maximumPacketSize, skipsOversized: settings.connect.version == .v311)
    }

    private func backoff() -> UInt64 {
        let shift = UInt64(min(max(failures - 1, 0), 20))
        return min(settings.retryMin << shift, settings.retryMax)
    }

    private mutating func attemptFailed(now: UInt64, code: Int32, message: String, close: Bool) -> [Action] {
        failures += 1
        state = .waiting(until: now &+ backoff())
        var actions: [Action] = close ? [.close] : []
        // The first failure is said; so is every refusal by the broker (credentials ...).
        if (!everConnected && failures == 1) || code > 0 {
            actions.append(.event(.connectFailed(code: code, message: message)))
        }
        return actions
    }

    private mutating func lost(now: UInt64, cause: String, close: Bool) -> [Action] {
        failures = 1
        state = .waiting(until: now &+ settings.retryMin)
        for id in subscribing.keys { idsInUse.remove(id) }
        subscribing = [:]
        return (close ? [.close] : []) + [.event(.connectionLost(cause: cause))]
    }
}
