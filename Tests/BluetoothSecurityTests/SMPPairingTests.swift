import BluetoothCrypto
import BluetoothWire
import Synchronization
import Testing
@testable import BluetoothSecurity

let centralAddress = LEAddress(BluetoothAddress(rawValue: 0xC0FF_EE00_0001), type: .random)
let peripheralAddress = LEAddress(BluetoothAddress(rawValue: 0xF0F1_F2F3_F401), type: .public)

/// A deterministic random source (the same run every time).
func counter(_ seed: UInt64) -> @Sendable () -> UInt64 {
    let state = Mutex(seed)
    return {
        state.withLock { s in
            s = s &* 6364136223846793005 &+ 1442695040888963407
            return s
        }
    }
}

/// Two pairing machines wired together: PDUs go across, encryption starts when the central
/// asks (the peripheral must produce the same key), users type what the other side shows.
struct PairingLink {
    var central: SMPPairing
    var peripheral: SMPPairing
    var now: UInt64 = 0
    /// What the user types when asked (nil: the passkey the other side displayed).
    var typed: UInt32?
    /// What the users answer to the numeric comparison.
    var numbersMatch = true
    var shown: [UInt32] = []
    var compared: [UInt32] = []
    var centralResult: Result<SMPPairingResult, SMPFailure>?
    var peripheralResult: Result<SMPPairingResult, SMPFailure>?
    var sentByCentral: [[UInt8]] = []
    var sentByPeripheral: [[UInt8]] = []
    var encryptedWith: SMPLongTermKey?
    /// The typing side reports these keys before it enters the passkey.
    var keysTyped: [SMPKeypressNotificationType] = []
    /// Keypress notifications each side passed to its user.
    var keypressesSeen: [(byPeripheral: Bool, SMPKeypressNotificationType)] = []

    init(central: SMPConfiguration, peripheral: SMPConfiguration, seed: UInt64 = 1) {
        self.central = SMPPairing(role: .initiator, configuration: central, localAddress: centralAddress,
                                  peerAddress: peripheralAddress, random: counter(seed))
        self.peripheral = SMPPairing(role: .responder, configuration: peripheral, localAddress: peripheralAddress,
                                     peerAddress: centralAddress, random: counter(seed &+ 1000))
    }

    mutating func run() {
        var queue: [(toCentral: Bool, action: SMPAction)] = central.start(now: now).map { (false, $0) }
        var steps = 0
        while !queue.isEmpty, steps < 10_000 {
            steps += 1
            let (fromPeripheral, action) = queue.removeFirst()
            let sender = fromPeripheral ? "peripheral" : "central"
            switch action {
            case .send(let pdu):
                if fromPeripheral { sentByPeripheral.append(pdu) } else { sentByCentral.append(pdu) }
                let next = pdu.withUnsafeBytes { b in fromPeripheral ? central.received(b, now: now) : peripheral.received(b, now: now) }
                queue += next.map { (!fromPeripheral, $0) }
            case .encrypt(let key):
                #expect(!fromPeripheral, "only the central starts encryption")
                #expect(peripheral.keyForEncryption(ediv: key.ediv, rand: key.rand) == key.key, "both sides hold the same key")
                encryptedWith = key
                queue += peripheral.encryptionChanged(encrypted: true, now: now).map { (true, $0) }
                queue += central.encryptionChanged(encrypted: true, now: now).map { (false, $0) }
            case .displayPasskey(let v):
                shown.append(v)
            case .requestPasskey:
                // The other side displayed it already (it shows before it waits), or both type.
                let value = typed ?? shown.last ?? 123_456
                for k in keysTyped {
                    queue += (fromPeripheral ? peripheral.keypress(k, now: now) : central.keypress(k, now: now)).map { (fromPeripheral, $0) }
                }
                queue += (fromPeripheral ? peripheral.passkeyEntered(value, now: now) : central.passkeyEntered(value, now: now))
                    .map { (fromPeripheral, $0) }
            case .confirmNumber(let v):
                compared.append(v)
                queue += (fromPeripheral ? peripheral.numericComparisonConfirmed(numbersMatch, now: now)
                          : central.numericComparisonConfirmed(numbersMatch, now: now)).map { (fromPeripheral, $0) }
            case .paired(let r):
                if fromPeripheral { peripheralResult = .success(r) } else { centralResult = .success(r) }
            case .failed(let f):
                if fromPeripheral { peripheralResult = .failure(f) } else { centralResult = .failure(f) }
            case .keypress(let k):
                keypressesSeen.append((fromPeripheral, k))
            case .securityRequested:
                Issue.record("\(sender): unexpected \(action)")
            }
        }
    }
}

func config(_ io: SMPIOCapability, mitm: Bool = false, sc: Bool = true, keys: UInt8 = 16) -> SMPConfiguration {
    SMPConfiguration(ioCapability: io, mitm: mitm, secureConnections: sc, minimumKeySize: 7, maximumKeySize: keys,
                     identityResolvingKey: 0x0102_0304_0506_0708_090A_0B0C_0D0E_0F10,
                     identityAddress: LEAddress(BluetoothAddress(rawValue: 0xC0DE_C0DE_0001), type: .random))
}

@Suite struct SMPPairingTests {
    @Test("SM/CEN/JW/BV-01-C, SM/PER/JW/BV-02-C; SC: SM/CEN/SCJW/BV-01-C, SM/PER/SCJW/BV-02-C; KDU (part): Just Works, both sides agree on the keys", arguments: [false, true])
    func justWorksPairsAndBothSidesAgreeOnTheKeys(sc: Bool) {
        var link = PairingLink(central: config(.noInputNoOutput, sc: sc), peripheral: config(.noInputNoOutput, sc: sc))
        link.run()
        guard case .success(let c)? = link.centralResult, case .success(let p)? = link.peripheralResult else {
            Issue.record("central \(String(describing: link.centralResult)), peripheral \(String(describing: link.peripheralResult))")
            return
        }
        #expect(c.method == .justWorks && !c.authenticated && c.secureConnections == sc && c.keySize == 16 && c.bonded)
        // Each learned the other's identity and signature key.
        #expect(c.peerIdentityAddress?.address.rawValue == 0xC0DE_C0DE_0001 && c.peerIdentityResolvingKey == 0x0102_0304_0506_0708_090A_0B0C_0D0E_0F10)
        #expect(p.peerIdentityResolvingKey == c.peerIdentityResolvingKey)
        #expect(c.peerSignatureKey == p.localSignatureKey && p.peerSignatureKey == c.localSignatureKey)
        if sc {
            // One LTK, derived on both sides; none distributed.
            #expect(c.peerLTK == p.peerLTK && c.peerLTK == link.encryptedWith && c.localLTK == nil)
        } else {
            // Legacy: each distributed its own LTK with EDIV/Rand.
            #expect(c.peerLTK == p.localLTK && p.peerLTK == c.localLTK && c.peerLTK != nil && p.peerLTK != nil)
        }
    }

    @Test("SM/PER/PKE/BV-02-C; SC: SM/PER/SCPK/BV-02-C (part): Passkey Entry, shown on one side and typed on the other", arguments: [false, true])
    func passkeyEntryShownOnTheKeyboardlessSideAndTyped(sc: Bool) {
        var link = PairingLink(central: config(.keyboardOnly, mitm: true, sc: sc), peripheral: config(.displayOnly, sc: sc))
        link.run()
        guard case .success(let c)? = link.centralResult, case .success(let p)? = link.peripheralResult else {
            Issue.record("\(String(describing: link.centralResult)) / \(String(describing: link.peripheralResult))"); return
        }
        #expect(c.method == .passkeyEntry(localDisplays: false, peerDisplays: true))
        #expect(p.method == .passkeyEntry(localDisplays: true, peerDisplays: false))
        #expect(c.authenticated && p.authenticated && link.shown.count == 1)
        if sc {
            // 20 rounds: a Pairing Confirm and a Pairing Random each way per bit of the passkey.
            #expect(link.sentByCentral.filter { $0.first == 0x03 }.count == 20)
            #expect(link.sentByPeripheral.filter { $0.first == 0x04 }.count == 20)
        }
    }

    @Test("SM/PER/SCPK/BV-02-C (keypress clause, part): Keypress notifications only when both asked for them", arguments: [false, true])
    func keypressesReachTheDisplayingSideOnlyWhenBothAskedForThem(both: Bool) {
        var c = config(.keyboardOnly, mitm: true), p = config(.displayOnly)
        c.keypressNotifications = true
        p.keypressNotifications = both
        var link = PairingLink(central: c, peripheral: p)
        link.keysTyped = [.passkeyEntryStarted, .passkeyDigitEntered, .passkeyDigitErased, .passkeyEntryCompleted]
        link.run()
        guard case .success? = link.peripheralResult else { Issue.record("\(String(describing: link.peripheralResult))"); return }
        let sent = link.sentByCentral.filter { $0.first == 0x0E }
        if both {
            #expect(sent.map { $0 } == [[0x0E, 0], [0x0E, 1], [0x0E, 2], [0x0E, 4]])
            #expect(link.keypressesSeen.map(\.1) == link.keysTyped && link.keypressesSeen.allSatisfy(\.byPeripheral))
        } else {
            #expect(sent.isEmpty && link.keypressesSeen.isEmpty, "no notifications unless both asked")
        }
    }

    @Test("SM/PER/PKE/BI-03-C; SC: SM/PER/SCPK/BI-03-C: A wrong passkey fails with Confirm Value Failed", arguments: [false, true])
    func aWrongPasskeyFailsWithConfirmValueFailed(sc: Bool) {
        var link = PairingLink(central: config(.keyboardOnly, mitm: true, sc: sc), peripheral: config(.displayOnly, sc: sc))
        link.typed = 999_999
        link.run()
        guard case .failure(let f)? = link.peripheralResult ?? link.centralResult else { Issue.record("paired with a wrong passkey"); return }
        #expect(f.reason == .confirmValueFailed)
        #expect(link.encryptedWith == nil)
        // Exactly one side detected it and told the other.
        let failedPDUs = (link.sentByCentral + link.sentByPeripheral).filter { $0.first == 0x05 }
        #expect(failedPDUs == [[0x05, 0x04]])
    }

    @Test("SM/CEN/SCJW/BV-01-C, SM/PER/SCJW/BV-02-C (Numeric Comparison, part): The same number on both sides") func numericComparisonShowsTheSameNumberOnBothSides() {
        var link = PairingLink(central: config(.displayYesNo, mitm: true), peripheral: config(.keyboardDisplay, mitm: true))
        link.run()
        guard case .success(let c)? = link.centralResult, case .success? = link.peripheralResult else {
            Issue.record("\(String(describing: link.centralResult))"); return
        }
        #expect(c.method == .numericComparison && c.authenticated)
        #expect(link.compared.count == 2 && link.compared[0] == link.compared[1] && link.compared[0] < 1_000_000)
    }

    @Test func numbersThatDoNotMatchFailPairing() {
        var link = PairingLink(central: config(.displayYesNo, mitm: true), peripheral: config(.displayYesNo, mitm: true))
        link.numbersMatch = false
        link.run()
        guard case .failure(let f)? = link.centralResult else { Issue.record("\(String(describing: link.centralResult))"); return }
        #expect(f.reason == .numericComparisonFailed)
        #expect(link.encryptedWith == nil)
    }

    @Test("SM/CEN/EKS/BI-01-C; SM/CEN/EKS/BV-01-C (part): A key size below the minimum is refused") func aKeyBelowTheMinimumIsRefusedWithEncryptionKeySize() {
        var strict = config(.noInputNoOutput)
        strict.minimumKeySize = 16
        var link = PairingLink(central: strict, peripheral: config(.noInputNoOutput, keys: 10))
        link.run()
        guard case .failure(let f)? = link.centralResult else { Issue.record("\(String(describing: link.centralResult))"); return }
        #expect(f.reason == .encryptionKeySize && f.origin == .local)
        #expect(link.sentByCentral.last == [0x05, 0x06])
        // Accepted when allowed: the LTK is cut to 10 bytes.
        var loose = PairingLink(central: config(.noInputNoOutput), peripheral: config(.noInputNoOutput, keys: 10))
        loose.run()
        guard case .success(let r)? = loose.centralResult else { Issue.record("\(String(describing: loose.centralResult))"); return }
        #expect(r.keySize == 10 && (r.peerLTK?.key ?? 0) >> 80 == 0)
    }

    @Test func mitmRequiredButImpossibleFailsWithAuthenticationRequirements() {
        var link = PairingLink(central: config(.keyboardDisplay, mitm: true), peripheral: config(.noInputNoOutput))
        link.run()
        guard case .failure(let f)? = link.centralResult else { Issue.record("\(String(describing: link.centralResult))"); return }
        #expect(f.reason == .authenticationRequirements)
    }

    @Test func secureConnectionsOnlyRefusesLegacy() {
        var only = config(.noInputNoOutput)
        only.secureConnectionsOnly = true
        var link = PairingLink(central: config(.noInputNoOutput, sc: false), peripheral: only)
        link.run()
        guard case .failure(let f)? = link.peripheralResult else { Issue.record("\(String(describing: link.peripheralResult))"); return }
        #expect(f.reason == .authenticationRequirements)
        #expect(link.sentByPeripheral == [[0x05, 0x03]], "no Pairing Response, only Pairing Failed")
    }

    @Test func theMethodTableOfTheSpecification() {
        typealias M = SMPPairingMethod
        let cases: [(SMPIOCapability, SMPIOCapability, Bool, M)] = [
            (.displayOnly, .keyboardOnly, false, .passkeyEntry(localDisplays: true, peerDisplays: false)),
            (.keyboardOnly, .displayOnly, false, .passkeyEntry(localDisplays: false, peerDisplays: true)),
            (.keyboardOnly, .keyboardOnly, true, .passkeyEntry(localDisplays: false, peerDisplays: false)),
            (.displayYesNo, .displayYesNo, false, .justWorks),
            (.displayYesNo, .displayYesNo, true, .numericComparison),
            (.keyboardDisplay, .keyboardDisplay, false, .passkeyEntry(localDisplays: true, peerDisplays: false)),
            (.keyboardDisplay, .keyboardDisplay, true, .numericComparison),
            (.keyboardDisplay, .displayYesNo, false, .passkeyEntry(localDisplays: false, peerDisplays: true)),
            (.noInputNoOutput, .keyboardDisplay, true, .justWorks),
            (.displayOnly, .displayYesNo, true, .justWorks),
        ]
        for (i, r, sc, m) in cases {
            #expect(M.select(initiator: i, responder: r, secureConnections: sc, role: .initiator) == m, "\(i) → \(r), SC \(sc)")
        }
    }
}

/// The peripheral starting it (Security Request, Core Vol 3 Part H §2.4.6, §3.6.7).
@Suite struct SMPSecurityRequestTests {
    @Test("SM/PER/PIS/BV-01-C (part): the peripheral asks with a Security Request carrying its AuthReq; the central is told")
    func theResponderAsksTheCentralToPair() {
        let settings = config(.displayYesNo, mitm: true)
        var p = SMPPairing(role: .responder, configuration: settings, localAddress: peripheralAddress, peerAddress: centralAddress)
        let a = p.requestSecurity(now: 0)
        guard case .send(let pdu)? = a.first, a.count == 1 else { Issue.record("\(a)"); return }
        #expect(pdu == [0x0B, settings.authenticationRequirements.rawValue])
        #expect(settings.authenticationRequirements.contains(.mitm) && settings.authenticationRequirements.contains(.bonding))
        #expect(p.deadline == nil && !p.isActive, "no timer: the central may answer by encrypting with its bond")
        var c = SMPPairing(role: .initiator, configuration: config(.displayYesNo, mitm: true), localAddress: centralAddress, peerAddress: peripheralAddress)
        let told = pdu.withUnsafeBytes { c.received($0, now: 0) }
        guard case .securityRequested(let auth)? = told.first else { Issue.record("\(told)"); return }
        #expect(auth == settings.authenticationRequirements)
        // The central's answer, a Pairing Request, runs the pairing as ever.
        #expect(!p.requestSecurity(now: 0).isEmpty, "asking again before an answer is allowed")
        #expect(c.requestSecurity(now: 0).isEmpty, "only a peripheral sends a Security Request")
    }
}

/// A hostile or broken central against our responder, PDU by PDU (PTS SM/PER/... where one fits).
@Suite struct SMPResponderHostileTests {
    func responder(_ c: SMPConfiguration = config(.noInputNoOutput)) -> SMPPairing {
        SMPPairing(role: .responder, configuration: c, localAddress: peripheralAddress, peerAddress: centralAddress, random: counter(7))
    }
    /// Pairing Request: NoInputNoOutput, bonding + SC, key 16, all keys.
    let request: [UInt8] = [0x01, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07]

    func feed(_ m: inout SMPPairing, _ pdu: [UInt8], now: UInt64 = 0) -> [SMPAction] {
        pdu.withUnsafeBytes { m.received($0, now: now) }
    }
    func sent(_ a: [SMPAction]) -> [[UInt8]] { a.compactMap { if case .send(let p) = $0 { p } else { nil } } }
    func failure(_ a: [SMPAction]) -> SMPFailure? { a.lazy.compactMap { if case .failed(let f) = $0 { f } else { nil } }.first }

    @Test("SM/PER/SCJW/BV-02-C (step 2, part): The Pairing Response narrows keys and AuthReq") func theResponseNarrowsKeysAndAuthToWhatBothSupport() {
        var m = responder()
        let out = sent(feed(&m, request))
        // IO NoInputNoOutput, no OOB, bonding + SC, 16 bytes; keys: what both offer.
        #expect(out == [[0x02, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07]])
    }

    @Test func aConfirmBeforeThePublicKeyIsOutOfTurn() {
        // A PDU out of order (no PTS case of its own) ends pairing with Unspecified Reason.
        var m = responder()
        _ = feed(&m, request)
        let a = feed(&m, [0x03] + [UInt8](repeating: 0, count: 16))
        #expect(sent(a) == [[0x05, 0x08]])
        #expect(failure(a)?.reason == .unspecifiedReason)
        #expect(feed(&m, [0x04] + [UInt8](repeating: 0, count: 16)).isEmpty, "nothing after a failure")
    }

    @Test("SM/PER/KDU/BI-04-C (round 3, part): A public key off the curve fails with DHKey Check Failed") func aPublicKeyOffTheCurveIsRefusedWithDHKeyCheckFailed() throws {
        var m = responder()
        _ = feed(&m, request)
        let key = try P256.PrivateKey.generate().publicKey
        var bad = SMPUInt256(bigEndianBytes: key.x).wireBytes + SMPUInt256(bigEndianBytes: key.y).wireBytes
        bad[40] ^= 0x01
        let a = feed(&m, [0x0C] + bad)
        #expect(sent(a) == [[0x05, 0x0B]], "refused before our key is sent")
        #expect(failure(a)?.reason == .dhKeyCheckFailed)
    }

    @Test("SM/PER/EKS/BI-02-C (part): Malformed PDUs are Invalid Parameters, unknown codes Command Not Supported") func malformedPDUsAreInvalidParametersAndUnknownCodesNotSupported() {
        var m = responder()
        #expect(sent(feed(&m, [0x01, 0x03, 0x00])) == [[0x05, 0x0A]])           // truncated Pairing Request
        var k = responder()
        #expect(sent(feed(&k, [0x01, 0x03, 0x00, 0x09, 0x06, 0x07, 0x07])) == [[0x05, 0x0A]])  // key size 6
        var u = responder()
        _ = feed(&u, request)
        #expect(sent(feed(&u, [0x7F, 0x01])) == [[0x05, 0x07]])
    }

    @Test("SM/PER/PROT/BV-02-C: SMP timeout, IUT responder: pairing ends, the channel goes quiet") func theTimerEndsPairingAndSilencesTheChannel() {
        var m = responder()
        _ = feed(&m, request, now: 0)
        #expect(m.deadline == 30_000_000_000)
        #expect(m.timerFired(now: 29_000_000_000).isEmpty)
        let a = m.timerFired(now: 30_000_000_000)
        #expect(failure(a)?.origin == .timeout && sent(a).isEmpty, "no Pairing Failed after the timeout")
        #expect(feed(&m, request, now: 31_000_000_000).isEmpty, "no SMP on this link any more (Core Vol 3 Part H §3.4)")
    }

    @Test("A reserved IO capability is Invalid Parameters, not Just Works")
    func aReservedIOCapabilityIsInvalidParameters() {
        for io: UInt8 in [0x05, 0xFF] {
            var m = responder()
            let a = feed(&m, [0x01, io, 0x00, 0x09, 0x10, 0x07, 0x07])
            #expect(sent(a) == [[0x05, 0x0A]] && failure(a)?.reason == .invalidParameters, "IO 0x\(String(io, radix: 16)): \(a)")
        }
    }

    /// The Secure Connections debug key (Core Vol 3 Part H §2.3.5.6.1) as a Pairing Public Key
    /// PDU (coordinates least significant octet first).
    static let debugKeyPDU: [UInt8] = {
        let x: [UInt8] = [0x20, 0xB0, 0x03, 0xD2, 0xF2, 0x97, 0xBE, 0x2C, 0x5E, 0x2C, 0x83, 0xA7, 0xE9, 0xF9, 0xA5, 0xB9,
                          0xEF, 0xF4, 0x91, 0x11, 0xAC, 0xF4, 0xFD, 0xDB, 0xCC, 0x03, 0x01, 0x48, 0x0E, 0x35, 0x9D, 0xE6]
        let y: [UInt8] = [0xDC, 0x80, 0x9C, 0x49, 0x65, 0x2A, 0xEB, 0x6D, 0x63, 0x32, 0x9A, 0xBF, 0x5A, 0x52, 0x15, 0x5C,
                          0x76, 0x63, 0x45, 0xC2, 0x8F, 0xED, 0x30, 0x24, 0x74, 0x1C, 0x8E, 0xD0, 0x15, 0x89, 0xD2, 0x8B]
        return [0x0C] + x.reversed() + y.reversed()
    }()

    @Test("The Secure Connections debug key is refused unless allowed")
    func theDebugKeyIsRefusedUnlessAllowed() {
        var m = responder()
        _ = feed(&m, request)
        let a = feed(&m, Self.debugKeyPDU)
        #expect(sent(a) == [[0x05, 0x03]] && failure(a)?.reason == .authenticationRequirements, "\(a)")
        #expect(failure(a)?.message.contains("debug key") == true)
        var open = config(.noInputNoOutput)
        open.allowsDebugKeys = true
        var allowed = responder(open)
        _ = feed(&allowed, request)
        let b = feed(&allowed, Self.debugKeyPDU)
        #expect(failure(b) == nil && sent(b).first?.first == 0x0C, "allowed: our public key answers it")
    }

    @Test("SM/CEN/PROT/BV-01-C: SMP timeout, IUT initiator: a Pairing Response after it is ignored, nothing is sent")
    func aLateResponseAfterTheTimeoutIsIgnored() {
        var central = SMPPairing(role: .initiator, configuration: config(.noInputNoOutput), localAddress: centralAddress,
                                 peerAddress: peripheralAddress, random: counter(3))
        let start = central.start(now: 0)
        let preq = sent(start).first ?? []
        #expect(preq.first == 0x01 && central.deadline == 30_000_000_000)
        // The tester answers only after 30 s.
        let timeout = central.timerFired(now: 30_000_000_000)
        #expect(failure(timeout)?.origin == .timeout && sent(timeout).isEmpty)
        var tester = responder()
        let pres = sent(feed(&tester, preq)).first ?? []
        #expect(pres.first == 0x02)
        let late = feed(&central, pres, now: 31_000_000_000)
        #expect(late.isEmpty, "no Pairing Confirm, no Pairing Failed: the link's SMP is done (Core Vol 3 Part H §3.4)")
        #expect(central.start(now: 32_000_000_000).isEmpty, "and no new pairing on this link")
        #expect(central.deadline == nil)
    }

    @Test("SM/PER/SCPK/BI-04-C (part): The peer's Pairing Failed ends pairing with its reason") func thePeersPairingFailedEndsItWithTheirReason() {
        var m = responder()
        _ = feed(&m, request)
        let a = feed(&m, [0x05, 0x01])
        #expect(sent(a).isEmpty)
        #expect(failure(a) == SMPFailure(reason: .passkeyEntryFailed, origin: .peer, message: "the peer ended pairing: \(SMPPairingFailedReason.passkeyEntryFailed)"))
    }

    @Test func aSecondConfirmWhileTheUserTypesIsOutOfTurn() {
        // Legacy Passkey Entry, our side types: the central's Mconfirm is kept until the
        // passkey is in; a second one must not replace it.
        var m = responder(config(.keyboardOnly, mitm: true, sc: false))
        let a = feed(&m, [0x01, 0x00, 0x00, 0x05, 0x10, 0x07, 0x07])
        #expect(a.contains { if case .requestPasskey = $0 { true } else { false } })
        #expect(feed(&m, [0x03] + [UInt8](repeating: 1, count: 16)).isEmpty)
        let b = feed(&m, [0x03] + [UInt8](repeating: 2, count: 16))
        #expect(sent(b) == [[0x05, 0x08]] && failure(b)?.reason == .unspecifiedReason)
        #expect(m.passkeyEntered(123_456, now: 0).isEmpty, "the failed pairing takes no passkey")
    }

    @Test("SM/PER/EKS/BI-02-C (after a pairing, part): A new request below the minimum key size is refused with Pairing Failed") func aRefusedSecondPairingIsReportedToThePeer() {
        var strict = config(.noInputNoOutput)
        strict.minimumKeySize = 16
        var link = PairingLink(central: config(.noInputNoOutput), peripheral: strict)
        link.run()
        guard case .success? = link.peripheralResult else { Issue.record("first pairing: \(String(describing: link.peripheralResult))"); return }
        let a = feed(&link.peripheral, [0x01, 0x03, 0x00, 0x09, 0x0A, 0x07, 0x07])
        #expect(sent(a) == [[0x05, 0x06]], "the central learns why (Encryption Key Size)")
        #expect(failure(a)?.reason == .encryptionKeySize)
    }

    /// Shuttles PDUs between a real initiator and `peripheral` until the initiator sends a
    /// PDU `stop` picks; returns it undelivered. The initiator's user confirms numbers at
    /// once; the peripheral's user never answers.
    func exchange(_ c: SMPConfiguration, _ peripheral: inout SMPPairing, until stop: ([UInt8]) -> Bool) -> [UInt8]? {
        var central = SMPPairing(role: .initiator, configuration: c, localAddress: centralAddress,
                                 peerAddress: peripheralAddress, random: counter(3))
        var toPeripheral = sent(central.start(now: 0))
        for _ in 0..<50 {
            var toCentral: [[UInt8]] = []
            for pdu in toPeripheral {
                if stop(pdu) { return pdu }
                toCentral += sent(feed(&peripheral, pdu))
            }
            toPeripheral = []
            for pdu in toCentral {
                let a = feed(&central, pdu)
                toPeripheral += sent(a)
                if a.contains(where: { if case .confirmNumber = $0 { true } else { false } }) {
                    toPeripheral += sent(central.numericComparisonConfirmed(true, now: 0))
                }
            }
        }
        return nil
    }

    @Test func aSecondConfirmWhileTheUserTypesIsOutOfTurnInSecureConnections() {
        // SC Passkey Entry, our side types: the central's Cai is kept; a second one is refused.
        var m = responder(config(.keyboardOnly, mitm: true))
        guard let cai = exchange(config(.displayOnly, mitm: true), &m, until: { $0.first == 0x03 }) else {
            Issue.record("the central never committed")
            return
        }
        #expect(feed(&m, cai).isEmpty, "kept until the passkey is typed")
        let b = feed(&m, cai)
        #expect(sent(b) == [[0x05, 0x08]] && failure(b)?.reason == .unspecifiedReason)
    }

    @Test func aSecondDHKeyCheckWhileTheUserComparesIsOutOfTurn() {
        // Numeric Comparison: the central's Ea waits for our user; a second Ea is refused.
        var m = responder(config(.displayYesNo, mitm: true))
        guard let ea = exchange(config(.displayYesNo, mitm: true), &m, until: { $0.first == 0x0D }) else {
            Issue.record("the central never sent its DHKey check")
            return
        }
        #expect(feed(&m, ea).isEmpty, "held until the user answers")
        let b = feed(&m, ea)
        #expect(sent(b) == [[0x05, 0x08]] && failure(b)?.reason == .unspecifiedReason)
        #expect(m.numericComparisonConfirmed(true, now: 0).isEmpty, "the failed pairing takes no answer")
    }

    @Test("SM/CEN/KDU/BI-04-C (round 5) and SM/PER/KDU/BI-04-C: our own public key sent back, with either y, is refused", arguments: [false, true])
    func ourOwnPublicKeyReflectedIsRefused(negatedY: Bool) throws {
        let key = try P256.PrivateKey(rawValue: [UInt8](repeating: 0x22, count: 32))
        var m = SMPPairing(role: .responder, configuration: config(.noInputNoOutput), localAddress: peripheralAddress,
                           peerAddress: centralAddress, privateKey: key, random: counter(7))
        _ = feed(&m, request)
        // p − y: the same x, the other point of the curve with it.
        // p = 2^256 − 2^224 + 2^192 + 2^96 − 1 (FIPS 186-4 D.1.2.3), big-endian.
        let p: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01] + [UInt8](repeating: 0, count: 12)
            + [UInt8](repeating: 0xFF, count: 12)
        var y = key.publicKey.y
        if negatedY {
            var borrow = 0
            for i in (0..<32).reversed() {
                let d = Int(p[i]) - Int(y[i]) - borrow
                y[i] = UInt8((d + 256) % 256)
                borrow = d < 0 ? 1 : 0
            }
            #expect(P256.PublicKey(x: key.publicKey.x, y: y).isValid, "(x, p − y) is a point of the curve")
        }
        let a = feed(&m, [0x0C] + SMPUInt256(bigEndianBytes: key.publicKey.x).wireBytes + SMPUInt256(bigEndianBytes: y).wireBytes)
        #expect(sent(a).last == [0x05, 0x0B], "DHKey Check Failed")
        #expect(failure(a)?.message == "the peer sent our own public key back")
    }

    @Test func keysBeforeEncryptionAreRefused() {
        var m = responder(config(.noInputNoOutput, sc: false))
        _ = feed(&m, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])
        let a = feed(&m, [0x06] + [UInt8](repeating: 1, count: 16))
        #expect(failure(a)?.reason == .unspecifiedReason)
    }
}

/// A hostile responder against our initiator.
@Suite struct SMPInitiatorHostileTests {
    @Test func aDHKeyCheckBeforeOursCannotSkipTheUsersComparison() {
        // Numeric Comparison: the man in the middle knows MacKey and sends Eb at once, hoping
        // the initiator encrypts before its user answers.
        var link = PairingLink(central: config(.displayYesNo, mitm: true), peripheral: config(.displayYesNo, mitm: true))
        var central = link.central
        var actions = central.start(now: 0)
        var peripheral = link.peripheral
        var pending: [SMPAction] = actions
        var eb: [UInt8]?
        var rounds = 0
        // Run the exchange until the central asks its user; capture the responder's check.
        while !pending.isEmpty, rounds < 50 {
            rounds += 1
            var next: [SMPAction] = []
            for a in pending {
                guard case .send(let pdu) = a else { continue }
                let out = pdu.withUnsafeBytes { peripheral.received($0, now: 0) }
                for case .confirmNumber in out { _ = peripheral.numericComparisonConfirmed(true, now: 0) }
                for case .send(let p) in out {
                    let back = p.withUnsafeBytes { central.received($0, now: 0) }
                    next += back
                }
            }
            pending = next
            if pending.contains(where: { if case .confirmNumber = $0 { true } else { false } }) { break }
        }
        #expect(pending.contains { if case .confirmNumber = $0 { true } else { false } }, "the central reached its user's comparison")
        // Forge an Eb now (any value; the order alone must refuse it) before the user answered.
        eb = [0x0D] + [UInt8](repeating: 0x42, count: 16)
        actions = eb!.withUnsafeBytes { central.received($0, now: 0) }
        #expect(!actions.contains { if case .encrypt = $0 { true } else { false } }, "encrypted without the user's answer")
        #expect(actions.contains { if case .failed(let f) = $0 { f.reason == .unspecifiedReason } else { false } })
        link.central = central
        link.peripheral = peripheral
    }
}

/// Runs a pairing between a central and a peripheral like ``PairingLink``, with every PDU
/// passing through `tamper` (fromPeripheral, PDU) first; returns each side's actions.
func tamperedPairing(central: SMPConfiguration, peripheral: SMPConfiguration,
                     tamper: (Bool, [UInt8]) -> [UInt8]) -> (central: [SMPAction], peripheral: [SMPAction]) {
    var c = SMPPairing(role: .initiator, configuration: central, localAddress: centralAddress, peerAddress: peripheralAddress, random: counter(11))
    var p = SMPPairing(role: .responder, configuration: peripheral, localAddress: peripheralAddress, peerAddress: centralAddress, random: counter(12))
    var seenByCentral: [SMPAction] = [], seenByPeripheral: [SMPAction] = []
    var queue: [(fromPeripheral: Bool, SMPAction)] = c.start(now: 0).map { (false, $0) }
    var steps = 0
    while !queue.isEmpty, steps < 1_000 {
        steps += 1
        let (fromPeripheral, action) = queue.removeFirst()
        if fromPeripheral { seenByPeripheral.append(action) } else { seenByCentral.append(action) }
        switch action {
        case .send(let pdu):
            let bytes = tamper(fromPeripheral, pdu)
            let out = bytes.withUnsafeBytes { fromPeripheral ? c.received($0, now: 0) : p.received($0, now: 0) }
            queue += out.map { (!fromPeripheral, $0) }
        case .encrypt(let key):
            guard p.keyForEncryption(ediv: key.ediv, rand: key.rand) == key.key else { continue }
            queue += p.encryptionChanged(encrypted: true, now: 0).map { (true, $0) }
            queue += c.encryptionChanged(encrypted: true, now: 0).map { (false, $0) }
        default:
            break
        }
    }
    return (seenByCentral, seenByPeripheral)
}

/// Legacy Just Works against a peer whose confirm does not match its random value.
@Suite struct SMPJustWorksFailureTests {
    func failures(_ a: [SMPAction]) -> [SMPFailure] { a.compactMap { if case .failed(let f) = $0 { f } else { nil } } }
    func sent(_ a: [SMPAction]) -> [[UInt8]] { a.compactMap { if case .send(let p) = $0 { p } else { nil } } }

    @Test("SM/CEN/JW/BI-01-C: Just Works, the responder's confirm is wrong: Confirm Value Failed after its random")
    func aWrongResponderConfirmFailsTheCentral() {
        let (c, p) = tamperedPairing(central: config(.noInputNoOutput, sc: false), peripheral: config(.noInputNoOutput, sc: false)) { fromPeripheral, pdu in
            fromPeripheral && pdu.first == 0x03 ? [0x03] + pdu.dropFirst().map { $0 ^ 0x5A } : pdu
        }
        #expect(sent(c).last == [0x05, 0x04], "Pairing Failed, Confirm Value Failed")
        #expect(failures(c).map(\.reason) == [.confirmValueFailed])
        #expect(!c.contains { if case .encrypt = $0 { true } else { false } }, "never encrypted with the STK")
        #expect(failures(p).map(\.origin) == [.peer])
    }

    @Test("SM/PER/JW/BI-02-C: Just Works, the initiator's confirm is wrong: Confirm Value Failed after its random")
    func aWrongInitiatorConfirmFailsThePeripheral() {
        let (c, p) = tamperedPairing(central: config(.noInputNoOutput, sc: false), peripheral: config(.noInputNoOutput, sc: false)) { fromPeripheral, pdu in
            !fromPeripheral && pdu.first == 0x03 ? [0x03] + pdu.dropFirst().map { $0 ^ 0xA5 } : pdu
        }
        #expect(sent(p).last == [0x05, 0x04])
        #expect(failures(p).map(\.reason) == [.confirmValueFailed])
        // The peripheral answered Mconfirm with Sconfirm and checked only once Mrand came.
        #expect(sent(p).filter { $0.first == 0x04 }.isEmpty, "no Srand after a wrong Mconfirm")
        #expect(failures(c).map(\.origin) == [.peer])
    }

    @Test("SM/CEN/JW/BI-04-C: reserved AuthReq bits in the Pairing Response are ignored, and c1 takes the PDU as sent")
    func reservedAuthReqBitsInTheResponseAreTolerated() throws {
        // The tester is the responder: every reserved AuthReq bit set (0xC0), bonding, no
        // keys; its confirm covers the Pairing Response exactly as it sent it.
        var c = SMPPairing(role: .initiator, configuration: config(.noInputNoOutput, sc: false), localAddress: centralAddress,
                           peerAddress: peripheralAddress, random: counter(5))
        guard let preq = sent(c.start(now: 0)).first else { Issue.record("no Pairing Request"); return }
        let pres: [UInt8] = [0x02, 0x03, 0x00, 0xC1, 0x10, 0x00, 0x00]
        func feed(_ pdu: [UInt8]) -> [SMPAction] { pdu.withUnsafeBytes { c.received($0, now: 0) } }
        func c1(_ r: UInt128) throws -> [UInt8] {
            try SecurityFunctions.c1(k: [UInt8](repeating: 0, count: 16), r: r.bigEndianBytes, preq: preq, pres: pres,
                                     iat: centralAddress.smpType, ia: centralAddress.addressBytes,
                                     rat: peripheralAddress.smpType, ra: peripheralAddress.addressBytes)
        }
        guard let mconfirm = sent(feed(pres)).first, mconfirm.first == 0x03 else { Issue.record("no Mconfirm"); return }
        let srand: UInt128 = 0x1122_3344_5566_7788_99AA_BBCC_DDEE_FF00
        let sconfirm = try c1(srand)
        guard let mrand = sent(feed([0x03] + sconfirm.reversed())).first, mrand.first == 0x04 else { Issue.record("no Mrand"); return }
        #expect(Array(mconfirm.dropFirst()) == (try c1(UInt128(bigEndianBytes: mrand.dropFirst().reversed()))).reversed(),
                "the central's confirm covers the response as received")
        let a = feed([0x04] + srand.bigEndianBytes.reversed())
        #expect(failures(a).isEmpty, "\(failures(a))")
        #expect(a.contains { if case .encrypt = $0 { true } else { false } }, "encrypts with the STK")
    }
}
