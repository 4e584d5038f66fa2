import FakeController
import BluetoothWire
import Testing
@testable import BluetoothHost

/// L2CAP LE credit-based channels against the cases of L2CAP.TS (LE/CFC), driven as the
/// tester drives them: raw signaling and K-frames into one machine.
@Suite struct L2CAPCreditChannelsPTSTests {
    /// A raw signaling command (code, identifier, length, data) into `m` on link 1.
    func signal(_ m: inout L2CAPCreditChannels, _ code: UInt8, _ id: UInt8, _ data: [UInt8],
                security: LinkSecurity = .unencrypted) -> [L2CAPChannelAction] {
        let bytes = [code, id, UInt8(data.count), UInt8(data.count >> 8)] + data
        var ids: UInt8 = 100
        return bytes.withUnsafeBytes { raw -> [L2CAPChannelAction] in
            guard let c = try? L2CAPSignalingCommand(parsing: raw) else {
                Issue.record("bad signaling \(bytes)")
                return []
            }
            return m.signaling(handle: 1, c, security: security, nextIdentifier: { ids &+= 1; return ids })
        }
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

    /// LE Credit Based Connection Request data: SPSM, SCID, MTU, MPS, initial credits.
    static func request(spsm: UInt16 = 0x0080, scid: UInt16, mtu: UInt16 = 100, mps: UInt16 = 50, credits: UInt16 = 5) -> [UInt8] {
        le16(spsm) + le16(scid) + le16(mtu) + le16(mps) + le16(credits)
    }

    /// The Result of the LE Credit Based Connection Response among `actions`.
    func responseResult(_ actions: [L2CAPChannelAction]) -> UInt16? {
        for case .send(_, let f) in actions where f.count >= 18 && f[2] == 5 && f[4] == 0x15 {
            return UInt16(f[16]) | UInt16(f[17]) << 8
        }
        return nil
    }

    func accepted(_ actions: [L2CAPChannelAction]) -> L2CAPChannelInfo? {
        for case .event(.accepted(let info)) in actions { return info }
        return nil
    }

    @Test("L2CAP/LE/CFC/BV-20-C: a second request with a Source CID in use is refused (Source CID Already Allocated)")
    func aSourceCIDInUseIsRefused() throws {
        var m = L2CAPCreditChannels()
        m.listen(spsm: 0x0080, parameters: .init())
        let first = signal(&m, 0x14, 1, Self.request(scid: 0x0041))
        #expect(responseResult(first) == 0x0000 && accepted(first) != nil)
        let second = signal(&m, 0x14, 2, Self.request(scid: 0x0041))
        #expect(responseResult(second) == L2CAPCreditBasedConnectionResult.sourceCIDAlreadyAllocated.rawValue)
        #expect(accepted(second) == nil && m.openChannels.count == 1, "the first channel stays; no second one")
    }

    @Test("L2CAP/LE/CFC/BV-25-C: a bonded peer on an unencrypted link is refused with Insufficient Encryption")
    func anUnencryptedBondedLinkIsRefusedWithInsufficientEncryption() throws {
        var m = L2CAPCreditChannels()
        m.listen(spsm: 0x0080, parameters: .init(), security: .encryption)
        let out = signal(&m, 0x14, 1, Self.request(scid: 0x0040), security: LinkSecurity(encrypted: false, keySize: 16, bonded: true))
        #expect(responseResult(out) == L2CAPCreditBasedConnectionResult.insufficientEncryption.rawValue)
        #expect(m.openChannels.isEmpty)
        // Encrypted, the same request opens it.
        let again = signal(&m, 0x14, 2, Self.request(scid: 0x0040), security: LinkSecurity(encrypted: true, keySize: 16, bonded: true))
        #expect(responseResult(again) == 0x0000 && m.openChannels.count == 1)
    }

    @Test("L2CAP/LE/CFC/BV-29-C: the Source CIDs we give our channels are unique, within 0x0040-0x007F")
    func ourSourceCIDsAreUniqueAndInTheLERange() throws {
        var m = L2CAPCreditChannels()
        var cids: [UInt16] = []
        for request in 1 ... 8 {
            let out = m.connect(handle: 1, spsm: 0x0080, parameters: .init(), identifier: UInt8(request), request: UInt64(request))
            for case .send(_, let f) in out where f.count >= 12 && f[4] == 0x14 { cids.append(UInt16(f[10]) | UInt16(f[11]) << 8) }
        }
        #expect(cids.count == 8 && Set(cids).count == 8 && cids.allSatisfy { (0x0040 ... 0x007F).contains($0) }, "\(cids)")
        // Accepted channels take CIDs of their own too, none of the ones pending.
        m.listen(spsm: 0x0081, parameters: .init())
        let info = accepted(signal(&m, 0x14, 20, Self.request(spsm: 0x0081, scid: 0x0040)))
        #expect(info.map { !cids.contains($0.localCID) && (0x0040 ... 0x007F).contains($0.localCID) } == true)
    }

    @Test("L2CAP/LE/CFC/BV-28-C: K-frames carrying more than the SDU length announced: the channel is disconnected")
    func segmentsBeyondTheSDULengthDisconnect() throws {
        var m = L2CAPCreditChannels()
        m.listen(spsm: 0x0080, parameters: L2CAPChannelParameters(mtu: 100, mps: 30, credits: 5))
        let info = try #require(accepted(signal(&m, 0x14, 1, Self.request(scid: 0x0040))))
        var ids: UInt8 = 60
        // SDU length 10: a first K-frame of 2 + 6 bytes, then one of 8 (14 > 10).
        let first = (Self.le16(10) + [UInt8](repeating: 1, count: 6)).withUnsafeBytes {
            m.received(handle: 1, cid: info.localCID, payload: $0, nextIdentifier: { ids += 1; return ids })
        }
        #expect(first.isEmpty)
        let second = [UInt8](repeating: 2, count: 8).withUnsafeBytes {
            m.received(handle: 1, cid: info.localCID, payload: $0, nextIdentifier: { ids += 1; return ids })
        }
        #expect(second.contains { if case .event(.closed(_, _, .protocolViolation)) = $0 { true } else { false } }, "\(second)")
        #expect(second.contains { if case .send(_, let f) = $0 { f[2] == 5 && f[4] == 0x06 } else { false } }, "Disconnection Request")
        #expect(!second.contains { if case .event(.received) = $0 { true } else { false } }, "nothing is delivered")
    }

    @Test("L2CAP/LE/CFC/BV-32-C: SDUs of MPS-1, MPS, MPS+1 and 2 x MPS bytes arrive whole, the channel stays",
          arguments: [28, 30, 31, 60])
    func sdusAroundTheMPSArriveWhole(size: Int) throws {
        var link = CoCLink()
        link.b.listen(spsm: 0x0080, parameters: L2CAPChannelParameters(mtu: 100, mps: 30, credits: 10))
        link.run(link.a.connect(handle: 1, spsm: 0x0080, parameters: .init(), identifier: link.id(), request: 7), from: "a")
        let ca = try #require(link.events.compactMap { e -> UInt16? in if case .opened(7, let i) = e.1 { i.localCID } else { nil } }.first)
        let sdu = (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        link.run(try link.a.send(handle: 1, cid: ca, sdu: sdu, token: 1), from: "a")
        link.run(try link.a.send(handle: 1, cid: ca, sdu: [9], token: 2), from: "a")
        #expect(link.received("b") == [sdu, [9]])
        #expect(link.b.violations == 0 && link.a.openChannels.count == 1 && link.b.openChannels.count == 1)
        // First K-frame: SDU length + up to MPS - 2 bytes; every frame within the MPS.
        let kframes = link.framesAtoB.filter { $0[2] >= 0x40 }
        #expect(kframes.count == (size + 2 + 29) / 30 + 1 && kframes.allSatisfy { $0.count <= 4 + 30 })
    }

    @Test("L2CAP/LE/CFC/BV-01-C (refused by Command Reject): our request rejected: the open fails, no channel")
    func aCommandRejectToOurRequestFailsTheOpen() throws {
        var m = L2CAPCreditChannels()
        _ = m.connect(handle: 1, spsm: 0x0080, parameters: .init(), identifier: 9, request: 4)
        let out = signal(&m, 0x01, 9, [0x00, 0x00])  // Command Not Understood
        #expect(out == [.event(.openFailed(request: 4, .rejected))])
        #expect(m.openChannels.isEmpty && m.nextDeadline == nil, "nothing stays pending")
        // A reject naming another identifier changes nothing.
        _ = m.connect(handle: 1, spsm: 0x0080, parameters: .init(), identifier: 10, request: 5)
        #expect(signal(&m, 0x01, 77, [0x00, 0x00]).isEmpty && m.nextDeadline != nil)
    }

    @Test("A secured listener refuses a key below the minimum (Insufficient Encryption Key Size)")
    func aShortKeyIsRefusedBySecuredListeners() throws {
        var m = L2CAPCreditChannels(minimumKeySize: 16)
        m.listen(spsm: 0x0080, parameters: .init(), security: .encryption)
        m.listen(spsm: 0x0081, parameters: .init())
        let short = LinkSecurity(encrypted: true, keySize: 7, bonded: true)
        #expect(responseResult(signal(&m, 0x14, 1, Self.request(scid: 0x0040), security: short))
                == L2CAPCreditBasedConnectionResult.encryptionKeySizeTooShort.rawValue)
        #expect(responseResult(signal(&m, 0x14, 2, Self.request(spsm: 0x0081, scid: 0x0041), security: short)) == 0, "an open listener asks nothing")
        var lax = L2CAPCreditChannels(minimumKeySize: 7)
        lax.listen(spsm: 0x0080, parameters: .init(), security: .encryption)
        #expect(responseResult(signal(&lax, 0x14, 1, Self.request(scid: 0x0040), security: short)) == 0)
    }
}
