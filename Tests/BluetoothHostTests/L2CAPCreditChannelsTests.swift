import FakeController
import BluetoothWire
import Testing
@testable import BluetoothHost

/// Two credit-based channel machines wired back to back over one link (handle 1).
struct CoCLink {
    var a = L2CAPCreditChannels()
    var b = L2CAPCreditChannels()
    var events: [(side: Character, L2CAPChannelEvent)] = []
    var framesAtoB: [[UInt8]] = []
    var framesBtoA: [[UInt8]] = []
    var nextID: UInt8 = 10
    var securityB = LinkSecurity.unencrypted
    /// When false, SDUs received are not taken by the application (no credits return).
    var consume = true

    mutating func id() -> UInt8 {
        nextID = nextID == 255 ? 1 : nextID + 1
        return nextID
    }

    mutating func run(_ actions: [L2CAPChannelAction], from side: Character) {
        var queue = actions.map { (side, $0) }
        while !queue.isEmpty {
            let (s, action) = queue.removeFirst()
            switch action {
            case .event(let e):
                events.append((s, e))
                if consume, case .received(let h, let cid, _, let frames) = e {
                    var ids = nextID
                    let next = { ids &+= 1; return ids }
                    queue += (s == "a" ? a.consumed(handle: h, cid: cid, frames: frames, indicationIdentifier: next)
                        : b.consumed(handle: h, cid: cid, frames: frames, indicationIdentifier: next)).map { (s, $0) }
                    nextID = ids
                }
            case .requestExpired:
                break
            case .send(_, let frame):
                if s == "a" { framesAtoB.append(frame) } else { framesBtoA.append(frame) }
                let cid = UInt16(frame[2]) | UInt16(frame[3]) << 8
                let payload = Array(frame[4...])
                let to: Character = s == "a" ? "b" : "a"
                var out: [L2CAPChannelAction] = []
                var ids = nextID
                payload.withUnsafeBytes { raw in
                    if cid == 5 {
                        guard let c = try? L2CAPSignalingCommand(parsing: raw) else { Issue.record("bad signaling \(payload)"); return }
                        out = to == "a" ? a.signaling(handle: 1, c, security: .unencrypted, nextIdentifier: { ids &+= 1; return ids })
                            : b.signaling(handle: 1, c, security: securityB, nextIdentifier: { ids &+= 1; return ids })
                    } else {
                        out = to == "a" ? a.received(handle: 1, cid: cid, payload: raw, nextIdentifier: { ids &+= 1; return ids })
                            : b.received(handle: 1, cid: cid, payload: raw, nextIdentifier: { ids &+= 1; return ids })
                    }
                }
                nextID = ids
                queue += out.map { (to, $0) }
            }
        }
    }

    func received(_ side: Character) -> [[UInt8]] {
        events.compactMap { e in if e.side == side, case .received(_, _, let sdu, _) = e.1 { sdu } else { nil } }
    }
}

@Suite struct L2CAPCreditChannelsTests {
    func opened(_ link: inout CoCLink, a pa: L2CAPChannelParameters = .init(), b pb: L2CAPChannelParameters = .init()) -> (UInt16, UInt16)? {
        link.b.listen(spsm: 0x0080, parameters: pb)
        let id = link.id()
        link.run(link.a.connect(handle: 1, spsm: 0x0080, parameters: pa, identifier: id, request: 7), from: "a")
        let mine = link.events.compactMap { e -> L2CAPChannelInfo? in if case .opened(7, let i) = e.1 { i } else { nil } }.first
        let theirs = link.events.compactMap { e -> L2CAPChannelInfo? in if case .accepted(let i) = e.1 { i } else { nil } }.first
        guard let mine, let theirs else { Issue.record("not opened: \(link.events)"); return nil }
        #expect(mine.peerCID == theirs.localCID && theirs.peerCID == mine.localCID)
        #expect(mine.peerMTU == pb.mtu && mine.peerMPS == pb.mps && theirs.peerMTU == pa.mtu)
        return (mine.localCID, theirs.localCID)
    }

    @Test("L2CAP/COS/CFC/BV-01-C, BV-03-C: SDUs larger than the MPS and one credit window arrive whole") func sdusLargerThanMPSAndThanOneCreditWindowArriveWhole() throws {
        var link = CoCLink()
        guard let (ca, _) = opened(&link, b: L2CAPChannelParameters(mtu: 2000, mps: 50, credits: 3)) else { return }
        let big = (0 ..< 1500).map { UInt8(truncatingIfNeeded: $0 * 7) }
        link.run(try link.a.send(handle: 1, cid: ca, sdu: big, token: 1), from: "a")
        link.run(try link.a.send(handle: 1, cid: ca, sdu: [1, 2, 3], token: 2), from: "a")
        #expect(link.received("b") == [big, [1, 2, 3]])
        // 1500 + 2 bytes in 50-byte K-frames: 31 frames, then one for the small SDU.
        #expect(link.framesAtoB.filter { $0[2] >= 0x40 }.count == 32)
        #expect(link.framesAtoB.allSatisfy { $0.count <= 4 + 50 })
        let sent = link.events.compactMap { e -> UInt64? in if case .sent(_, _, let t) = e.1 { t } else { nil } }
        #expect(sent == [1, 2])
    }

    @Test("L2CAP/LE/CFC/BV-06-C (part), BV-07-C: Nothing beyond the credits goes until the application reads") func nothingBeyondTheCreditsGoesUntilTheApplicationReads() throws {
        var link = CoCLink()
        link.consume = false
        guard let (ca, cb) = opened(&link, b: L2CAPChannelParameters(mtu: 100, mps: 100, credits: 2)) else { return }
        for t in 1 ... 5 { link.run(try link.a.send(handle: 1, cid: ca, sdu: [UInt8(t)], token: UInt64(t)), from: "a") }
        #expect(link.received("b") == [[1], [2]], "two credits: two SDUs, the rest waits on A")
        #expect(link.a.credits(handle: 1, cid: ca)?.tx == 0)
        // The application takes one: one credit back, one more SDU comes.
        link.run(link.b.consumed(handle: 1, cid: cb, frames: 1, indicationIdentifier: { 77 }), from: "b")
        #expect(link.received("b") == [[1], [2], [3]])
        // LE Flow Control Credit Ind (0x16) takes the link's next identifier, as every
        // command does (it used to be 1 always, the first request's too).
        let credits = link.framesBtoA.filter { $0[2] == 5 && $0[4] == 0x16 }
        #expect(credits.last?[5] == 77)
        #expect(Set(credits.map { $0[5] }).count == credits.count && !credits.contains { $0[5] == 1 })
    }

    @Test("L2CAP/LE/CFC/BV-04-C, BV-05-C, BV-10-C, BV-11-C: Refusals say why (unsupported SPSM, insufficient authentication)") func refusalsSayWhy() throws {
        var link = CoCLink()
        link.run(link.a.connect(handle: 1, spsm: 0x0081, parameters: .init(), identifier: link.id(), request: 1), from: "a")
        link.b.listen(spsm: 0x0082, parameters: .init(), security: .encryption)
        link.run(link.a.connect(handle: 1, spsm: 0x0082, parameters: .init(), identifier: link.id(), request: 2), from: "a")
        link.securityB = LinkSecurity(encrypted: true, keySize: 16, authenticated: false, secureConnections: true, bonded: true)
        link.b.listen(spsm: 0x0083, parameters: .init(), security: .authentication)
        link.run(link.a.connect(handle: 1, spsm: 0x0083, parameters: .init(), identifier: link.id(), request: 3), from: "a")
        let failures = link.events.compactMap { e -> L2CAPChannelEnd? in if case .openFailed(_, let why) = e.1 { why } else { nil } }
        #expect(failures == [.refused(.spsmNotSupported), .refused(.insufficientAuthentication), .refused(.insufficientAuthentication)])
        #expect(link.a.openChannels.isEmpty && link.b.openChannels.isEmpty)
    }

    @Test("L2CAP/LE/CFC/BV-08-C, BV-09-C: Either side disconnects and both hear of it") func eitherSideDisconnectsAndBothHearOfIt() throws {
        var link = CoCLink()
        guard let (ca, cb) = opened(&link) else { return }
        link.run(link.b.disconnect(handle: 1, cid: cb, identifier: link.id()), from: "b")
        let closes = link.events.compactMap { e -> (Character, L2CAPChannelEnd)? in if case .closed(_, _, let why) = e.1 { (e.side, why) } else { nil } }
        #expect(closes.map(\.0) == ["b", "a"] && closes.map(\.1) == [.disconnected(byPeer: false), .disconnected(byPeer: true)])
        #expect(link.a.openChannels.isEmpty && link.b.openChannels.isEmpty)
        #expect(throws: HostError.self) { try link.a.send(handle: 1, cid: ca, sdu: [1], token: 1) }
    }

    @Test("L2CAP/LE/CFC/BV-26-C, BV-27-C, BI-01-C: A peer breaking the rules is disconnected") func aPeerBreakingTheRulesIsDisconnected() throws {
        // An SDU over our MTU, a K-frame over our MPS, a K-frame without credit, credits past 65535.
        for rule in 0 ..< 4 {
            var link = CoCLink()
            link.consume = false
            guard let (ca, cb) = opened(&link, b: L2CAPChannelParameters(mtu: 100, mps: 30, credits: 1)) else { return }
            var ids: UInt8 = 50
            let out: [L2CAPChannelAction]
            switch rule {
            case 0: out = ([1, 2] as [UInt8]).withUnsafeBytes { link.b.received(handle: 1, cid: cb, payload: $0, nextIdentifier: { ids += 1; return ids }) } // length 0x0201
            case 1: out = [UInt8](repeating: 0, count: 31).withUnsafeBytes { link.b.received(handle: 1, cid: cb, payload: $0, nextIdentifier: { ids += 1; return ids }) }
            case 2:
                let first = ([1, 0, 9] as [UInt8]).withUnsafeBytes { link.b.received(handle: 1, cid: cb, payload: $0, nextIdentifier: { 1 }) }
                #expect(first.isEmpty || first.allSatisfy { if case .event(.received) = $0 { true } else { false } })
                out = ([1, 0, 9] as [UInt8]).withUnsafeBytes { link.b.received(handle: 1, cid: cb, payload: $0, nextIdentifier: { ids += 1; return ids }) }
            default:
                out = link.b.signaling(handle: 1, .flowControlCreditIndication(identifier: 3, cid: L2CAPChannelID(rawValue: ca), credits: 65535),
                                       security: .unencrypted, nextIdentifier: { ids += 1; return ids })
            }
            let ends = out.compactMap { a -> L2CAPChannelEnd? in if case .event(.closed(_, _, let why)) = a { why } else { nil } }
            guard case .protocolViolation(let why)? = ends.first else { Issue.record("rule \(rule): \(out)"); continue }
            #expect(!why.isEmpty && link.b.violations == 1)
            #expect(out.contains { if case .send(_, let f) = $0 { f[2] == 5 && f[4] == 0x06 } else { false } }, "a Disconnection Request went out")
        }
    }

    @Test func unansweredRequestsTimeOut() throws {
        var m = L2CAPCreditChannels()
        _ = m.connect(handle: 1, spsm: 0x80, parameters: .init(), identifier: 3, request: 9, now: 1_000)
        #expect(m.nextDeadline == 1_000 + L2CAPCreditChannels.responseTimeout)
        #expect(m.timerFired(now: 2_000).isEmpty)
        #expect(m.timerFired(now: 1_000 + L2CAPCreditChannels.responseTimeout)
                == [.event(.openFailed(request: 9, .timeout)), .requestExpired(handle: 1, identifier: 3)])
        #expect(m.nextDeadline == nil)
        // Refused before anything went out: the identifier taken for it is not awaited.
        #expect(m.connect(handle: 1, spsm: 0x80, parameters: .init(mtu: 10), identifier: 4, request: 10, now: 3_000)
                == [.event(.openFailed(request: 10, .refused(.invalidParameters))), .requestExpired(handle: 1, identifier: 4)])
        // A disconnection the peer never answers frees its CID when it times out.
        var link = CoCLink()
        guard let (ca, _) = opened(&link) else { return }
        _ = link.a.disconnect(handle: 1, cid: ca, identifier: 40, now: 5)
        #expect(link.a.credits(handle: 1, cid: ca) != nil)
        #expect(link.a.timerFired(now: 5 + L2CAPCreditChannels.responseTimeout) == [.requestExpired(handle: 1, identifier: 40)])
        #expect(link.a.credits(handle: 1, cid: ca) == nil)
    }

    @Test func aLinkGoingDownEndsItsChannels() throws {
        var link = CoCLink()
        guard opened(&link) != nil else { return }
        let out = link.a.linkClosed(1)
        #expect(out == [.event(.closed(handle: 1, cid: 0x0040, .linkClosed))])
        #expect(link.a.openChannels.isEmpty)
    }
}
