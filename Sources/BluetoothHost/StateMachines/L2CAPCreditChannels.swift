import BluetoothWire

/// What one side of an LE credit-based channel takes (Core Vol 3 Part A §4.22): the
/// largest SDU (MTU), the largest K-frame payload (MPS), and how many K-frames the peer may
/// send before waiting for more credits.
public struct L2CAPChannelParameters: Sendable, Hashable {
    /// 23...65535.
    public var mtu: UInt16
    /// 23...65533.
    public var mps: UInt16
    /// Credits given at the start and kept topped up as the application takes SDUs: what
    /// may wait unread is at most `credits` K-frames of `mps` bytes.
    public var credits: UInt16

    /// Parameters; without `credits`, enough for two whole SDUs of `mtu` in K-frames of `mps`.
    public init(mtu: UInt16 = 512, mps: UInt16 = 247, credits: UInt16? = nil) {
        self.mtu = mtu
        self.mps = mps
        // Two whole SDUs in flight by default.
        let perSDU = (Int(mtu) + 2 + Int(mps) - 1) / max(Int(mps), 1)
        self.credits = credits ?? UInt16(clamping: 2 * perSDU)
    }

    var isValid: Bool { mtu >= 23 && (23 ... 65533).contains(mps) && credits >= 1 }
}

/// Who may open a channel to a registered SPSM.
public enum L2CAPChannelSecurity: Sendable, Hashable {
    case none
    /// The link must be encrypted (else Insufficient Encryption, or Insufficient
    /// Authentication when the link is not paired at all).
    case encryption
    /// The link must be encrypted with an authenticated (MITM-protected) key.
    case authentication
}

/// A channel as both sides settled it.
public struct L2CAPChannelInfo: Sendable, Hashable {
    /// The link (Connection_Handle).
    public var handle: UInt16
    /// The Simplified PSM the channel was opened to.
    public var spsm: UInt16
    /// Our channel identifier (0x0040-0x007F): the peer sends K-frames to it.
    public var localCID: UInt16
    /// The peer's channel identifier: we send K-frames to it.
    public var peerCID: UInt16
    /// What we receive.
    public var local: L2CAPChannelParameters
    /// What the peer receives: the SDUs and K-frames we send are cut to these.
    public var peerMTU: UInt16
    /// The largest K-frame payload the peer takes.
    public var peerMPS: UInt16
}

/// Why a channel went away or could not open.
public enum L2CAPChannelEnd: Sendable, Hashable, CustomStringConvertible {
    /// The peer refused the connection with this result (Core Vol 3 Part A Table 4.16).
    case refused(L2CAPCreditBasedConnectionResult)
    /// The peer has no credit-based channels (Command Reject).
    case rejected
    /// One side disconnected the channel.
    case disconnected(byPeer: Bool)
    /// The peer broke the rules (an SDU over our MTU, a K-frame over our MPS or without
    /// credit, credits past 65535...): the channel was disconnected.
    case protocolViolation(String)
    /// The link went down.
    case linkClosed
    /// No response to our request in time.
    case timeout

    public var description: String {
        switch self {
        case .refused(let r): "refused: \(Self.resultName(r))"
        case .rejected: "the device has no LE credit-based channels (Command Reject)"
        case .disconnected(let byPeer): byPeer ? "disconnected by the peer" : "disconnected"
        case .protocolViolation(let why): "the peer broke the protocol: \(why)"
        case .linkClosed: "the link closed"
        case .timeout: "no answer from the peer"
        }
    }

    static func resultName(_ r: L2CAPCreditBasedConnectionResult) -> String {
        switch r {
        case .spsmNotSupported: "SPSM not supported (0x0002)"
        case .noResourcesAvailable: "no resources available (0x0004)"
        case .insufficientAuthentication: "insufficient authentication (0x0005)"
        case .insufficientAuthorization: "insufficient authorization (0x0006)"
        case .encryptionKeySizeTooShort: "encryption key size too short (0x0007)"
        case .insufficientEncryption: "insufficient encryption (0x0008)"
        case .invalidSourceCID: "invalid Source CID (0x0009)"
        case .sourceCIDAlreadyAllocated: "Source CID already allocated (0x000A)"
        case .unacceptableParameters: "unacceptable parameters (0x000B)"
        default: "result 0x\(hex(r.rawValue, 4))"
        }
    }
}

/// What the credit-based channel machine tells the host.
public enum L2CAPChannelEvent: Sendable, Hashable {
    /// A channel we asked for (request `id` of ``L2CAPCreditChannels/connect``) opened.
    case opened(request: UInt64, L2CAPChannelInfo)
    /// A channel we asked for did not open.
    case openFailed(request: UInt64, L2CAPChannelEnd)
    /// A peer opened a channel to an SPSM we listen on.
    case accepted(L2CAPChannelInfo)
    /// One whole SDU arrived; `frames` K-frames carried it (the credits to give back once
    /// the application took it: ``L2CAPCreditChannels/consumed(handle:cid:frames:)``).
    case received(handle: UInt16, cid: UInt16, sdu: [UInt8], frames: Int)
    /// The SDU queued with `token` left in K-frames (all of it).
    case sent(handle: UInt16, cid: UInt16, token: UInt64)
    case closed(handle: UInt16, cid: UInt16, L2CAPChannelEnd)
}

/// An action: a signaling command or a K-frame (a whole L2CAP basic frame, header
/// included) for the link, or an event.
public enum L2CAPChannelAction: Sendable, Hashable {
    case send(handle: UInt16, frame: [UInt8])
    case event(L2CAPChannelEvent)
    /// A request of ours went unanswered past its deadline (or never went out): its signaling
    /// identifier is no longer awaited (the link's allocator may hand it out again; a late
    /// answer is stray).
    case requestExpired(handle: UInt16, identifier: UInt8)
}

/// LE credit-based connection-oriented channels (Core Vol 3 Part A §4.22–4.24, §10.1),
/// sans-I/O: connection requests both ways, SDUs cut into K-frames by the peer's MPS and
/// sent as its credits allow, K-frames joined into SDUs up to our MTU, our credits given
/// back as the application takes SDUs (so nothing waits unread beyond what was granted),
/// disconnection both ways. Signaling identifiers come from the caller (the link's shared
/// counter); K-frames arrive on dynamic CIDs 0x0040–0x007F.
public struct L2CAPCreditChannels: Sendable {
    struct Listener: Sendable {
        var parameters: L2CAPChannelParameters
        var security: L2CAPChannelSecurity
    }

    enum Phase: Sendable, Equatable {
        case connecting(identifier: UInt8, request: UInt64)
        case open
        case disconnecting(identifier: UInt8)
    }

    struct Outgoing: Sendable {
        var token: UInt64
        var bytes: [UInt8]
        /// Bytes of `bytes` already in K-frames.
        var offset: Int
    }

    struct Channel: Sendable {
        var handle: UInt16
        var spsm: UInt16
        var localCID: UInt16
        var peerCID: UInt16 = 0
        var phase: Phase
        var local: L2CAPChannelParameters
        var peerMTU: UInt16 = 0
        var peerMPS: UInt16 = 0
        /// K-frames we may still send.
        var txCredits = 0
        /// K-frames the peer may still send.
        var rxCredits = 0
        var rxSDU: [UInt8] = []
        var rxExpected: Int?
        var rxFrames = 0
        var queue: [Outgoing] = []
        /// Connecting or disconnecting: when to stop waiting for the peer's response.
        var deadline: UInt64?

        var info: L2CAPChannelInfo {
            L2CAPChannelInfo(handle: handle, spsm: spsm, localCID: localCID, peerCID: peerCID, local: local,
                             peerMTU: peerMTU, peerMPS: peerMPS)
        }
    }

    /// Channels per link at most (each needs a CID in 0x0040–0x007F).
    public static let maximumChannelsPerLink = 64
    /// How long a connection or disconnection request waits for its response (Core Vol 3
    /// Part A §6.2.1: RTX at most 60 s), in nanoseconds.
    public static let responseTimeout: UInt64 = 30_000_000_000

    var listeners: [UInt16: Listener] = [:]
    var channels: [Channel] = []
    /// The time of the call being handled (for the deadlines it sets).
    var now: UInt64 = 0
    /// Protocol violations by peers (each disconnected the channel).
    public private(set) var violations = 0

    /// The smallest encryption key a listener that asks for security takes (octets; the
    /// host's pairing minimum).
    public let minimumKeySize: Int

    /// A machine with no channel and no server.
    public init(minimumKeySize: Int = 16) { self.minimumKeySize = minimumKeySize }

    // MARK: Servers

    /// Accepts channels to `spsm` (0x0001–0x00FF; dynamic 0x0080–0x00FF for applications).
    /// Parameters out of range are brought into it (MTU and MPS at least 23, a credit at least).
    public mutating func listen(spsm: UInt16, parameters: L2CAPChannelParameters, security: L2CAPChannelSecurity = .none) {
        var p = parameters
        p.mtu = max(p.mtu, 23)
        p.mps = min(max(p.mps, 23), 65533)
        p.credits = max(p.credits, 1)
        listeners[spsm] = Listener(parameters: p, security: security)
    }

    /// Refuses new channels to `spsm` again (PSM not supported); open channels stay.
    public mutating func stopListening(spsm: UInt16) { listeners[spsm] = nil }

    /// Whether channels to `spsm` are accepted.
    public func isListening(_ spsm: UInt16) -> Bool { listeners[spsm] != nil }

    // MARK: Opening

    /// Asks the peer for a channel to `spsm` with signaling `identifier` (the link's next).
    /// `request` names the outcome (``L2CAPChannelEvent/opened(request:_:)`` or `openFailed`).
    public mutating func connect(handle: UInt16, spsm: UInt16, parameters: L2CAPChannelParameters, identifier: UInt8,
                                 request: UInt64, now: UInt64 = 0) -> [L2CAPChannelAction] {
        // Refused before any request goes: the identifier taken for it is free again.
        guard parameters.isValid else {
            return [.event(.openFailed(request: request, .refused(.invalidParameters))), .requestExpired(handle: handle, identifier: identifier)]
        }
        guard let cid = freeCID(handle) else {
            return [.event(.openFailed(request: request, .refused(.noResourcesAvailable))), .requestExpired(handle: handle, identifier: identifier)]
        }
        channels.append(Channel(handle: handle, spsm: spsm, localCID: cid, phase: .connecting(identifier: identifier, request: request),
                                local: parameters, rxCredits: Int(parameters.credits), deadline: now &+ Self.responseTimeout))
        return [signal(handle, .leCreditBasedConnectionRequest(identifier: identifier, L2CAPLECreditBasedConnectionRequest(
            spsm: spsm, sourceCID: L2CAPChannelID(rawValue: cid), mtu: parameters.mtu, mps: parameters.mps,
            initialCredits: parameters.credits)))]
    }

    // MARK: Signaling from the peer

    /// A signaling command of the credit-based family (or a Command Reject answering one
    /// of ours). `security` is the link's now; `identifier` gives ours for any request
    /// this needs to send (a Disconnection Request after a violation).
    public mutating func signaling(handle: UInt16, _ command: L2CAPSignalingCommand, security: LinkSecurity,
                                   now: UInt64 = 0, nextIdentifier: () -> UInt8) -> [L2CAPChannelAction] {
        self.now = now
        switch command {
        case .leCreditBasedConnectionRequest(let id, let r):
            return incoming(handle, id, r, security)
        case .leCreditBasedConnectionResponse(let id, let r):
            guard let i = channels.firstIndex(where: { $0.handle == handle && $0.phase.isConnecting(id) }),
                  case .connecting(_, let request) = channels[i].phase else { return [] }
            guard r.result == .successful else {
                channels.remove(at: i)
                return [.event(.openFailed(request: request, .refused(r.result)))]
            }
            let dcid = r.destinationCID.rawValue
            let taken = channels.contains { $0.handle == handle && $0.peerCID == dcid && $0.localCID != channels[i].localCID }
            guard (0x0040 ... 0x007F).contains(dcid), !taken, r.mtu >= 23, (23 ... 65533).contains(r.mps) else {
                // A success we cannot use: close it again (§4.23).
                violations += 1
                channels[i].peerCID = dcid
                let idn = nextIdentifier()
                channels[i].phase = .disconnecting(identifier: idn)
                channels[i].deadline = self.now &+ Self.responseTimeout
                return [signal(handle, .disconnectionRequest(identifier: idn, destinationCID: r.destinationCID,
                                                             sourceCID: L2CAPChannelID(rawValue: channels[i].localCID))),
                        .event(.openFailed(request: request, .protocolViolation("a response with CID 0x\(hex(dcid, 4)), MTU \(r.mtu), MPS \(r.mps)")))]
            }
            channels[i].peerCID = dcid
            channels[i].peerMTU = r.mtu
            channels[i].peerMPS = r.mps
            channels[i].txCredits = Int(r.initialCredits)
            channels[i].phase = .open
            channels[i].deadline = nil
            return [.event(.opened(request: request, channels[i].info))]
        case .flowControlCreditIndication(_, let cid, let credits):
            guard let i = channels.firstIndex(where: { $0.handle == handle && $0.peerCID == cid.rawValue && $0.phase == .open }) else { return [] }
            channels[i].txCredits += Int(credits)
            if channels[i].txCredits > 65535 {
                // §10.1: credits past 65535 disconnect the channel.
                return violation(i, "credits past 65535", nextIdentifier)
            }
            return pump(i)
        case .disconnectionRequest(let id, let dcid, let scid):
            guard let i = channels.firstIndex(where: { $0.handle == handle && $0.localCID == dcid.rawValue && $0.peerCID == scid.rawValue }) else {
                // Our CID with another peer CID is silently discarded (§4.6); an unknown CID rejected.
                if channels.contains(where: { $0.handle == handle && $0.localCID == dcid.rawValue }) { return [] }
                return [signal(handle, .commandReject(identifier: id, reason: .invalidCID(localCID: dcid, remoteCID: scid)))]
            }
            let c = channels.remove(at: i)
            var out: [L2CAPChannelAction] = [signal(handle, .disconnectionResponse(identifier: id, destinationCID: dcid, sourceCID: scid))]
            // Crossing our own Disconnection Request: its end was reported already.
            if case .disconnecting = c.phase { return out }
            out += ended(c, .disconnected(byPeer: true))
            return out
        case .disconnectionResponse(let id, _, _):
            guard let i = channels.firstIndex(where: { $0.handle == handle && $0.phase == .disconnecting(identifier: id) }) else { return [] }
            channels.remove(at: i)
            return []  // the close was reported when it was asked for
        case .commandReject(let id, _):
            guard let i = channels.firstIndex(where: { $0.handle == handle && ($0.phase.isConnecting(id) || $0.phase == .disconnecting(identifier: id)) }) else { return [] }
            let c = channels.remove(at: i)
            if case .connecting(_, let request) = c.phase { return [.event(.openFailed(request: request, .rejected))] }
            return []
        default:
            return []
        }
    }

    private mutating func incoming(_ handle: UInt16, _ id: UInt8, _ r: L2CAPLECreditBasedConnectionRequest,
                                   _ security: LinkSecurity) -> [L2CAPChannelAction] {
        func refuse(_ result: L2CAPCreditBasedConnectionResult) -> [L2CAPChannelAction] {
            [signal(handle, .leCreditBasedConnectionResponse(identifier: id, L2CAPLECreditBasedConnectionResponse(
                destinationCID: .null, mtu: 0, mps: 0, initialCredits: 0, result: result)))]
        }
        guard let listener = listeners[r.spsm] else { return refuse(.spsmNotSupported) }
        switch listener.security {
        case .none: break
        case .encryption:
            if !security.encrypted { return refuse(security.bonded || security.keySize > 0 ? .insufficientEncryption : .insufficientAuthentication) }
        case .authentication:
            if !security.encrypted || !security.authenticated { return refuse(.insufficientAuthentication) }
        }
        if listener.security != .none && security.keySize < minimumKeySize { return refuse(.encryptionKeySizeTooShort) }
        let scid = r.sourceCID.rawValue
        guard (0x0040 ... 0x007F).contains(scid) else { return refuse(.invalidSourceCID) }
        guard !channels.contains(where: { $0.handle == handle && $0.peerCID == scid }) else { return refuse(.sourceCIDAlreadyAllocated) }
        guard r.mtu >= 23, (23 ... 65533).contains(r.mps) else { return refuse(.unacceptableParameters) }
        guard let cid = freeCID(handle) else { return refuse(.noResourcesAvailable) }
        let p = listener.parameters
        var c = Channel(handle: handle, spsm: r.spsm, localCID: cid, peerCID: scid, phase: .open, local: p)
        c.peerMTU = r.mtu
        c.peerMPS = r.mps
        c.txCredits = Int(r.initialCredits)
        c.rxCredits = Int(p.credits)
        channels.append(c)
        return [signal(handle, .leCreditBasedConnectionResponse(identifier: id, L2CAPLECreditBasedConnectionResponse(
            destinationCID: L2CAPChannelID(rawValue: cid), mtu: p.mtu, mps: p.mps, initialCredits: p.credits, result: .successful))),
                .event(.accepted(c.info))]
    }

    // MARK: Data

    /// A K-frame payload on dynamic `cid` of `handle` (Core Vol 3 Part A §3.4).
    /// `nextIdentifier` gives identifiers for requests (a disconnection), and
    /// `indicationIdentifier` (else `nextIdentifier`) for credit indications.
    public mutating func received(handle: UInt16, cid: UInt16, payload: UnsafeRawBufferPointer,
                                  now: UInt64 = 0, nextIdentifier: () -> UInt8,
                                  indicationIdentifier: (() -> UInt8)? = nil) -> [L2CAPChannelAction] {
        self.now = now
        guard let i = channels.firstIndex(where: { $0.handle == handle && $0.localCID == cid && $0.phase == .open }) else { return [] }
        var c = channels[i]
        guard c.rxCredits > 0 else { return violation(i, "a K-frame without credit", nextIdentifier) }
        guard payload.count <= Int(c.local.mps) else {
            return violation(i, "a K-frame of \(payload.count) bytes over our MPS \(c.local.mps)", nextIdentifier)
        }
        c.rxCredits -= 1
        c.rxFrames += 1
        var body = payload[...]
        if c.rxExpected == nil {
            guard payload.count >= 2 else { return violation(i, "a first K-frame without the SDU length", nextIdentifier) }
            let n = Int(payload[0]) | Int(payload[1]) << 8
            guard n <= Int(c.local.mtu) else { return violation(i, "an SDU of \(n) bytes over our MTU \(c.local.mtu)", nextIdentifier) }
            c.rxExpected = n
            c.rxSDU.reserveCapacity(n)
            body = payload[2...]
        }
        let expected = c.rxExpected ?? 0
        guard c.rxSDU.count + body.count <= expected else {
            return violation(i, "K-frames longer than their SDU (\(expected) bytes)", nextIdentifier)
        }
        // The copy `c` is written back on every path from here; the table's reference to the
        // buffer goes first so the append grows it in place (shared, it would copy the SDU so
        // far for every K-frame: O(SDU²/MPS) for a large SDU).
        channels[i].rxSDU = []
        c.rxSDU.append(contentsOf: UnsafeRawBufferPointer(rebasing: body))
        var out: [L2CAPChannelAction] = []
        if c.rxSDU.count < expected && c.rxCredits == 0 {
            // Fewer credits than the SDU has K-frames: what it still needs, or it never
            // completes (the buffer stays within one MTU).
            let more = (expected - c.rxSDU.count + Int(c.local.mps) - 1) / Int(c.local.mps)
            c.rxCredits += more
            channels[i] = c
            if let indicationIdentifier {
                out.append(signalCredits(i, more, indicationIdentifier))
            } else {
                out.append(signalCredits(i, more, nextIdentifier))
            }
        }
        if c.rxSDU.count == expected {
            out.append(.event(.received(handle: handle, cid: c.localCID, sdu: c.rxSDU, frames: c.rxFrames)))
            c.rxSDU = []
            c.rxExpected = nil
            c.rxFrames = 0
        }
        channels[i] = c
        return out
    }

    /// The application took an SDU that came in `frames` K-frames: the peer gets that many
    /// credits back, so it can send as fast as it is read and no faster.
    /// `indicationIdentifier` gives the link's next signaling identifier for the credit
    /// indication (a command no response answers).
    public mutating func consumed(handle: UInt16, cid: UInt16, frames: Int, indicationIdentifier: () -> UInt8) -> [L2CAPChannelAction] {
        guard frames > 0, let i = channels.firstIndex(where: { $0.handle == handle && $0.localCID == cid && $0.phase == .open }) else { return [] }
        let grant = min(frames, Int(channels[i].local.credits) - channels[i].rxCredits)
        guard grant > 0 else { return [] }
        channels[i].rxCredits += grant
        return [signalCredits(i, grant, indicationIdentifier)]
    }

    /// Core Vol 3 Part A §4: each command the link sends has an identifier of its own, an
    /// indication too (a peer's Command Reject names it), from the link's one sequence.
    private func signalCredits(_ i: Int, _ n: Int, _ nextIdentifier: () -> UInt8) -> L2CAPChannelAction {
        signal(channels[i].handle, .flowControlCreditIndication(identifier: nextIdentifier(),
                                                                cid: L2CAPChannelID(rawValue: channels[i].localCID),
                                                                credits: UInt16(n)))
    }

    /// Queues an SDU (at most the peer's MTU); K-frames go as credits allow, and
    /// ``L2CAPChannelEvent/sent(handle:cid:token:)`` says when all of it went.
    public mutating func send(handle: UInt16, cid: UInt16, sdu: [UInt8], token: UInt64) throws(HostError) -> [L2CAPChannelAction] {
        guard let i = channels.firstIndex(where: { $0.handle == handle && $0.localCID == cid && $0.phase == .open }) else {
            throw HostError(.disconnected(nil), "the L2CAP channel 0x\(hex(cid, 4)) is not open")
        }
        guard sdu.count <= Int(channels[i].peerMTU) else {
            throw HostError(.invalidParameters, "an SDU of \(sdu.count) bytes is over the peer's MTU \(channels[i].peerMTU)")
        }
        channels[i].queue.append(Outgoing(token: token, bytes: sdu, offset: -2))
        return pump(i)
    }

    /// K-frames while credits last: the first of an SDU starts with its length.
    private mutating func pump(_ i: Int) -> [L2CAPChannelAction] {
        var out: [L2CAPChannelAction] = []
        let mps = Int(channels[i].peerMPS)
        while channels[i].txCredits > 0, var o = channels[i].queue.first {
            var payload: [UInt8]
            if o.offset < 0 {
                let n = o.bytes.count
                payload = [UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8)]
                let take = min(mps - 2, n)
                payload += o.bytes[0 ..< take]
                o.offset = take
            } else {
                let take = min(mps, o.bytes.count - o.offset)
                payload = Array(o.bytes[o.offset ..< o.offset + take])
                o.offset += take
            }
            channels[i].txCredits -= 1
            out.append(.send(handle: channels[i].handle, frame: Self.basicFrame(channels[i].peerCID, payload)))
            if o.offset >= o.bytes.count {
                channels[i].queue.removeFirst()
                out.append(.event(.sent(handle: channels[i].handle, cid: channels[i].localCID, token: o.token)))
            } else {
                channels[i].queue[0] = o
            }
        }
        return out
    }

    // MARK: Closing

    /// Disconnects a channel (Disconnection Request with `identifier`); what was queued and
    /// not sent is dropped.
    public mutating func disconnect(handle: UInt16, cid: UInt16, identifier: UInt8, now: UInt64 = 0) -> [L2CAPChannelAction] {
        self.now = now
        guard let i = channels.firstIndex(where: { $0.handle == handle && $0.localCID == cid }) else { return [] }
        let c = channels[i]
        switch c.phase {
        case .disconnecting: return []
        case .connecting:
            // No CID of the peer's yet: forget it; a late success gets disconnected then.
            channels.remove(at: i)
            return ended(c, .disconnected(byPeer: false))
        case .open:
            channels[i].phase = .disconnecting(identifier: identifier)
            channels[i].deadline = now &+ Self.responseTimeout
            channels[i].queue = []
            return [signal(handle, .disconnectionRequest(identifier: identifier, destinationCID: L2CAPChannelID(rawValue: c.peerCID),
                                                         sourceCID: L2CAPChannelID(rawValue: c.localCID)))]
                + ended(c, .disconnected(byPeer: false))
        }
    }

    /// The link went down: every channel on it ends.
    public mutating func linkClosed(_ handle: UInt16) -> [L2CAPChannelAction] {
        var out: [L2CAPChannelAction] = []
        for c in channels where c.handle == handle {
            if case .disconnecting = c.phase { continue }  // its end went out when it was closed
            out += ended(c, .linkClosed)
        }
        channels.removeAll { $0.handle == handle }
        return out
    }

    /// The earliest response deadline, or nil.
    public var nextDeadline: UInt64? { channels.compactMap(\.deadline).min() }

    /// Requests unanswered past their deadline: an open fails with `.timeout`; a
    /// disconnection is taken as done (its CID is free again).
    public mutating func timerFired(now: UInt64) -> [L2CAPChannelAction] {
        var out: [L2CAPChannelAction] = []
        for c in channels where (c.deadline ?? .max) <= now {
            switch c.phase {
            case .connecting(let id, let request):
                out.append(.event(.openFailed(request: request, .timeout)))
                out.append(.requestExpired(handle: c.handle, identifier: id))
            case .disconnecting(let id):
                out.append(.requestExpired(handle: c.handle, identifier: id))
            case .open:
                break
            }
        }
        channels.removeAll { ($0.deadline ?? .max) <= now }
        return out
    }

    /// Channels open now (for tests and statistics).
    public var openChannels: [L2CAPChannelInfo] { channels.filter { $0.phase == .open }.map(\.info) }

    /// Credits the channel holds to send, and the peer holds to send to us.
    public func credits(handle: UInt16, cid: UInt16) -> (tx: Int, rx: Int)? {
        channels.first { $0.handle == handle && $0.localCID == cid }.map { ($0.txCredits, $0.rxCredits) }
    }

    private mutating func violation(_ i: Int, _ why: String, _ nextIdentifier: () -> UInt8) -> [L2CAPChannelAction] {
        violations += 1
        let c = channels[i]
        let id = nextIdentifier()
        channels[i].phase = .disconnecting(identifier: id)
        channels[i].deadline = now &+ Self.responseTimeout
        channels[i].queue = []
        return [signal(c.handle, .disconnectionRequest(identifier: id, destinationCID: L2CAPChannelID(rawValue: c.peerCID),
                                                       sourceCID: L2CAPChannelID(rawValue: c.localCID)))]
            + ended(c, .protocolViolation(why))
    }

    private func ended(_ c: Channel, _ end: L2CAPChannelEnd) -> [L2CAPChannelAction] {
        if case .connecting(_, let request) = c.phase { return [.event(.openFailed(request: request, end))] }
        return [.event(.closed(handle: c.handle, cid: c.localCID, end))]
    }

    private func freeCID(_ handle: UInt16) -> UInt16? {
        let used = Set(channels.filter { $0.handle == handle }.map(\.localCID))
        return (UInt16(0x0040) ... 0x007F).first { !used.contains($0) }
    }

    private func signal(_ handle: UInt16, _ command: L2CAPSignalingCommand) -> L2CAPChannelAction {
        .send(handle: handle, frame: (try? L2CAPFrame(channelID: .leSignaling, payload: command).encoded()) ?? [])
    }

    static func basicFrame(_ cid: UInt16, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: cid), UInt8(truncatingIfNeeded: cid >> 8)] + payload
    }
}

extension L2CAPCreditChannels.Phase {
    func isConnecting(_ identifier: UInt8) -> Bool {
        if case .connecting(let id, _) = self { return id == identifier }
        return false
    }
}
