import FakeController
import BluetoothSecurity
import BluetoothTransport
import BluetoothWire
import Synchronization
import Glibc
import Testing
@testable import BluetoothHost

/// Pairing through the host at run time: our HCIHost as central, a fake controller, and on
/// the far side of the "link" an SMPPairing responder playing the peripheral.
@Suite struct SecurityRuntimeTests {
    final class Peer: @unchecked Sendable {
        let machine: Mutex<SMPPairing>
        let results = Mutex<[SMPAction]>([])
        init(_ config: SMPConfiguration) {
            machine = Mutex(SMPPairing(role: .responder, configuration: config,
                                       localAddress: peerA, peerAddress: LEAddress(BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66), type: .public)))
        }
        /// Runs the responder's actions: PDUs go to the host as ACL on CID 6.
        func run(_ actions: [SMPAction], _ fake: FakeControllerTransport) {
            for a in actions {
                switch a {
                case .send(let pdu): fake.injectACL(handle: 0x40, l2capFrameBytes(cid: 6, pdu))
                default: results.withLock { $0.append(a) }
                }
            }
        }
    }

    func world(_ peerConfig: SMPConfiguration) -> (FakeControllerTransport, Peer) {
        var model = FakeControllerModel()
        model.statusOpcodes.insert(.leEnableEncryption)
        let peer = Peer(peerConfig)
        let fake = FakeControllerTransport(model: model, onCommand: { opcode, fake in
            if opcode == .leCreateConnection { fake.injectEvent(connectionCompleteEvent(handle: 0x40)) }
            guard opcode == .leEnableEncryption, let p = fake.commandPackets.last, p.count >= 32 else { return }
            // Parameters: handle, Rand (8), EDIV (2), LTK (16, least significant first).
            let ltk = p[16 ..< 32].reversed().reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
            let expected = peer.machine.withLock { $0.keyForEncryption(ediv: 0, rand: 0) }
            let ok: UInt8 = expected == ltk ? 1 : 0
            fake.injectEvent([0x08, 4, ok == 1 ? 0x00 : 0x06, 0x40, 0x00, ok])  // Encryption Change
            peer.run(peer.machine.withLock { $0.encryptionChanged(encrypted: ok == 1, now: 0) }, fake)
        }, onACL: { bytes, fake in
            let (_, _, l2cap) = aclParts(bytes)
            guard l2cap.count >= 4, l2cap[2] == 6 else { return }
            let pdu = Array(l2cap[4...])
            peer.run(pdu.withUnsafeBytes { b in peer.machine.withLock { $0.received(b, now: 0) } }, fake)
        })
        return (fake, peer)
    }

    @Test("SM/CEN/JW/BV-01-C; SC: SM/CEN/SCJW/BV-01-C (part): A central pairs, encrypts, and the link says so", arguments: [false, true])
    func aCentralPairsEncryptsAndTheLinkSaysSo(sc: Bool) async throws {
        let (fake, peer) = world(SMPConfiguration(secureConnections: sc, identityResolvingKey: 7, identityAddress: peerA))
        let host = try await HCIHost.open(transport: fake, options: HostOptions(security: SMPConfiguration(secureConnections: sc)))
        let link = try await host.connect(to: peerA, timeout: .seconds(2))
        #expect(!link.security.encrypted)
        let result = try await link.pair()
        #expect(result.secureConnections == sc && result.method == .justWorks && result.keySize == 16)
        #expect(result.peerIdentityResolvingKey == 7 && result.peerIdentityAddress == peerA)
        #expect(link.security.encrypted && link.security.keySize == 16 && !link.security.authenticated)
        #expect(await eventually { peer.results.withLock { $0.contains { if case .paired = $0 { true } else { false } } } },
                "the peer finished too (it got our keys)")
        await host.close()
    }

    @Test("SM/CEN/JW/BV-05-C (part): A refusing peer fails pairing with its reason") func aRefusingPeerFailsPairingWithItsReason() async throws {
        var strict = SMPConfiguration()
        strict.secureConnectionsOnly = true
        let (fake, _) = world(strict)
        let host = try await HCIHost.open(transport: fake, options: HostOptions(security: SMPConfiguration(secureConnections: false)))
        let link = try await host.connect(to: peerA, timeout: .seconds(2))
        do {
            _ = try await link.pair()
            Issue.record("paired")
        } catch {
            #expect(error.kind == .pairingFailed(.authenticationRequirements))
            #expect(error.message.contains("pairing with"))
        }
        #expect(!link.security.encrypted)
        await host.close()
    }

    @Test func aPeripheralAnswersLongTermKeyRequestsItHasNoKeyForWithANegativeReply() async throws {
        let fake = FakeControllerTransport(onCommand: { _, _ in })
        let host = try await HCIHost.open(transport: fake)
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        _ = await incoming.next()
        // LE Long Term Key Request: handle 0x0041, Rand 0, EDIV 0.
        fake.injectEvent([0x3E, 13, 0x05, 0x41, 0x00] + [UInt8](repeating: 0, count: 10))
        #expect(await eventually { fake.commands.contains(.leLongTermKeyRequestNegativeReply) })
        await host.close()
    }

    /// A central on the far side of a fake controller, pairing with our host as peripheral.
    final class Central: @unchecked Sendable {
        let machine: Mutex<SMPPairing>
        let outcomes = Mutex<[SMPAction]>([])
        let typed: UInt32
        init(passkey: UInt32, config: SMPConfiguration = SMPConfiguration(ioCapability: .keyboardOnly, mitm: true), address: LEAddress = peerA) {
            typed = passkey
            machine = Mutex(Self.fresh(config, address: address))
        }
        static func fresh(_ config: SMPConfiguration = SMPConfiguration(ioCapability: .keyboardOnly, mitm: true), address: LEAddress = peerA) -> SMPPairing {
            SMPPairing(role: .initiator, configuration: config,
                       localAddress: address, peerAddress: LEAddress(BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66), type: .public))
        }
        func run(_ actions: [SMPAction], _ fake: FakeControllerTransport) {
            for a in actions {
                switch a {
                case .send(let pdu): fake.injectACL(handle: 0x41, l2capFrameBytes(cid: 6, pdu))
                case .requestPasskey: run(machine.withLock { $0.passkeyEntered(typed, now: 0) }, fake)
                default: outcomes.withLock { $0.append(a) }
                }
            }
        }
        /// A fake controller whose SMP traffic from our host (as peripheral, link 0x41) goes to this central.
        func controller() -> FakeControllerTransport {
            FakeControllerTransport(onCommand: { _, _ in }, onACL: { [self] bytes, fake in
                let (_, _, l2cap) = aclParts(bytes)
                guard l2cap.count >= 4, l2cap[2] == 6 else { return }
                let pdu = Array(l2cap[4...])
                run(pdu.withUnsafeBytes { b in machine.withLock { $0.received(b, now: 0) } }, fake)
            })
        }

        /// Starts pairing and encrypts with the new key as a central does: our host's LTK
        /// reply to the LE Long Term Key Request, then Encryption Change (this central's
        /// first: the host's keys follow its Encryption Change at once). False when a step
        /// never came.
        func pairAndEncrypt(_ fake: FakeControllerTransport) async -> Bool {
            run(machine.withLock { $0.start(now: 0) }, fake)
            guard await eventually({ outcomes.withLock { $0.contains { if case .encrypt = $0 { true } else { false } } } }) else { return false }
            fake.injectEvent([0x3E, 13, 0x05, 0x41, 0x00] + [UInt8](repeating: 0, count: 10))
            guard await eventually({ fake.commands.contains(.leLongTermKeyRequestReply) }) else { return false }
            run(machine.withLock { $0.encryptionChanged(encrypted: true, now: 0) }, fake)
            fake.injectEvent([0x08, 4, 0x00, 0x41, 0x00, 0x01])
            return true
        }

        var failures: [SMPFailure] {
            outcomes.withLock { $0.compactMap { if case .failed(let f) = $0 { f } else { nil } } }
        }
    }

    @Test("SM/PER/SCPK/BI-03-C (part): A central that failed its check must wait") func aPeripheralMakesACentralThatFailedItsCheckWait() async throws {
        let central = Central(passkey: 999_999)
        let shown = Mutex<[UInt32]>([])
        let fake = central.controller()
        let agent = PairingAgent.fixed(passkey: nil, confirm: false, display: { _, v in shown.withLock { $0.append(v) } })
        let host = try await HCIHost.open(transport: fake, options: HostOptions(security: SMPConfiguration(ioCapability: .displayOnly),
                                                                                 pairingAgent: agent))
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        let link = await incoming.next()
        // The central types a wrong passkey: our check fails it.
        central.run(central.machine.withLock { $0.start(now: 0) }, fake)
        #expect(await eventually { !central.failures.isEmpty })
        #expect(central.failures.first?.reason == .confirmValueFailed && shown.withLock { $0.count } == 1)
        // It tries again at once: refused with Repeated Attempts, no passkey shown.
        central.machine.withLock { $0 = Central.fresh() }
        central.run(central.machine.withLock { $0.start(now: 0) }, fake)
        #expect(await eventually { central.failures.count == 2 })
        #expect(central.failures.last?.reason == .repeatedAttempts && central.failures.last?.origin == .peer)
        #expect(shown.withLock { $0.count } == 1)
        // Asking that central to pair from our side is refused the same way, with the wait.
        do {
            _ = try await link?.pair()
            Issue.record("paired")
        } catch {
            #expect(error.kind == .pairingFailed(.repeatedAttempts))
            // Two failures make a 2 s wait; the host's clock is the wall clock, so a loaded
            // machine may already be into the second when the pairing is asked for.
            #expect(error.message.contains("wait 2 s") || error.message.contains("wait 1 s"), "\(error.message)")
        }
        await host.close()
    }

    @Test func aPeerStartedJustWorksPairingCannotReplaceAnAuthenticatedBond() async throws {
        var template = Array("/tmp/hcigatt-downgrade-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        let store = BondStore(directory: dir)
        let central = LEAddress(peerA.address, type: peerA.type)
        try store.save(Bond(identity: central, result: SMPPairingResult(
            method: .passkeyEntry(localDisplays: true, peerDisplays: false), secureConnections: true, authenticated: true,
            keySize: 16, bonded: true, peerLTK: SMPLongTermKey(key: 77)), created: 0))
        // An impostor with the central's address and no IO: Just Works only.
        let impostor = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput))
        let fake = impostor.controller()
        let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: store))
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        _ = await incoming.next()
        impostor.run(impostor.machine.withLock { $0.start(now: 0) }, fake)
        #expect(await eventually { !impostor.failures.isEmpty })
        #expect(impostor.failures.first?.reason == .authenticationRequirements, "\(impostor.failures)")
        #expect(try store.bond(for: central)?.authenticated == true, "the bond is as it was")
        await host.close()
        _ = try? store.remove(central)
        rmdir(dir)
    }

    @Test func aPeerCannotClaimAnotherDevicesIdentity() async throws {
        // Connected from peerA's public address, it distributes someone else's identity.
        let victim = LEAddress(BluetoothAddress(rawValue: 0xC0DE_0000_0001), type: .random)
        let (fake, _) = world(SMPConfiguration(identityResolvingKey: 7, identityAddress: victim))
        let host = try await HCIHost.open(transport: fake, options: HostOptions())
        let link = try await host.connect(to: peerA, timeout: .seconds(2))
        let result = try await link.pair()
        #expect(result.peerIdentityAddress == nil && result.peerIdentityResolvingKey == nil, "the claim is dropped")
        #expect(link.peerIdentity == peerA)
        await host.close()
    }

    @Test("Identity takeover: an impostor behind an RPA of its own cannot claim a bonded identity")
    func anImpostorCannotTakeABondedIdentity() async throws {
        var template = Array("/tmp/hcigatt-takeover-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        let store = BondStore(directory: dir)
        let victim = SecurityRulesTests.victim
        try store.save(SecurityRulesTests.bond(victim, irk: SecurityRulesTests.irkV))
        func files() throws -> [String: [UInt8]] {
            var out: [String: [UInt8]] = [:]
            guard let d = opendir(dir) else { return out }
            defer { closedir(d) }
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name.hasPrefix(".") { continue }
                out[name] = try store.readBytes(path: dir + "/" + name)
            }
            return out
        }
        let before = try files()
        // The impostor: an IRK of its own, an RPA made with it, the victim's identity claimed.
        let from = try SecurityRulesTests.rpa(SecurityRulesTests.irkX)
        let impostor = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput, identityResolvingKey: SecurityRulesTests.irkX,
                                                                    identityAddress: victim), address: from)
        let fake = impostor.controller()
        let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: store))
        var events = host.pairingEvents.makeAsyncIterator()
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, peer: from, role: .peripheral))
        let link = try #require(await incoming.next())
        // It pairs and encrypts with the new key (our LTK reply, then Encryption Change).
        #expect(await impostor.pairAndEncrypt(fake))
        guard case .failed(_, let error) = await events.next() else {
            Issue.record("the pairing stood")
            await host.close()
            return
        }
        #expect(error.message.contains("refused") && error.message.contains("\(victim)"), "\(error)")
        #expect(await eventually { fake.commands.contains(.disconnect) }, "the impostor's link goes")
        #expect(link.peerIdentity != victim)
        #expect(try files() == before, "the victim's bond is byte for byte as it was")
        // The victim, from a new RPA made with its own IRK: still recognised.
        let real = try SecurityRulesTests.rpa(SecurityRulesTests.irkV, 0x2A_0001)
        fake.injectEvent(connectionCompleteEvent(handle: 0x42, peer: real, role: .peripheral))
        #expect(await incoming.next()?.peerIdentity == victim, "IRK_V still resolves the victim")
        await host.close()
        _ = try? store.remove(victim)
        rmdir(dir)
    }

    /// Our host as peripheral with a bond store holding a Just Works bond of `peerA`, and a
    /// central on the far side pairing as `central` says.
    func bondedPeripheral(_ central: Central, allowsRepairing: Bool = false, bondFile: String? = nil)
        async throws -> (HCIHost, BondStore, String, FakeControllerTransport, LEConnection) {
        var template = Array("/tmp/hcigatt-repair-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        let store = BondStore(directory: dir)
        try store.save(Bond(identity: peerA, result: SMPPairingResult(method: .justWorks, secureConnections: false, authenticated: false,
                                                                      keySize: 16, bonded: true, peerLTK: SMPLongTermKey(key: 77)), created: 0))
        if let bondFile {
            let fd = open(dir + "/F0F1F2F3F401-public.bond", O_WRONLY | O_TRUNC)
            _ = bondFile.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        let fake = central.controller()
        let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: store, allowsRepairing: allowsRepairing))
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        let link = try #require(await incoming.next())
        return (host, store, dir, fake, link)
    }

    func cleanUp(_ store: BondStore, _ dir: String) {
        _ = try? store.remove(peerA)
        unlink(dir + "/F0F1F2F3F401-public.bond")
        rmdir(dir)
    }

    @Test("Re-pairing over a Just Works bond: refused without MITM unless allowed; the old bond stays")
    func justWorksOverAJustWorksBondIsRefused() async throws {
        let impostor = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput))
        let (host, store, dir, fake, _) = try await bondedPeripheral(impostor)
        let before = try store.readBytes(path: dir + "/F0F1F2F3F401-public.bond")
        impostor.run(impostor.machine.withLock { $0.start(now: 0) }, fake)
        #expect(await eventually { !impostor.failures.isEmpty })
        #expect(impostor.failures.first?.reason == .authenticationRequirements, "\(impostor.failures)")
        #expect(try store.readBytes(path: dir + "/F0F1F2F3F401-public.bond") == before, "the bond is as it was")
        await host.close()
        cleanUp(store, dir)
    }

    @Test("Re-pairing over a bond after our own Security Request: its Pairing Request is checked as any other")
    func ourSecurityRequestOpensNoWayAroundTheBond() async throws {
        let impostor = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput))
        let (host, store, dir, fake, link) = try await bondedPeripheral(impostor)
        let before = try store.readBytes(path: dir + "/F0F1F2F3F401-public.bond")
        // We ask (Security Request); the impostor answers with a Just Works Pairing Request
        // instead of encrypting with the bond.
        let asked = Task { () -> HostError? in
            do throws(HostError) { _ = try await link.pair(); return nil } catch { return error }
        }
        #expect(await eventually { impostor.outcomes.withLock { $0.contains { if case .securityRequested = $0 { true } else { false } } } })
        impostor.run(impostor.machine.withLock { $0.start(now: 0) }, fake)
        #expect(await eventually { !impostor.failures.isEmpty })
        #expect(impostor.failures.first?.reason == .authenticationRequirements, "\(impostor.failures)")
        let refusal = await asked.value
        #expect(refusal != nil, "our pair() fails with it")
        #expect(refusal?.message.contains("the device is bonded here, and pairing again over a bond must be authenticated") == true,
                "the refusal says why: \(String(describing: refusal))")
        #expect(try store.readBytes(path: dir + "/F0F1F2F3F401-public.bond") == before, "the bond is as it was")
        await host.close()
        cleanUp(store, dir)
    }

    @Test("A Security Request over a bond that has no key for us as central: the pairing must meet the bond")
    func aSecurityRequestOverABondWithoutOurKeyIsCheckedToo() async throws {
        var template = Array("/tmp/hcigatt-secreq-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        let store = BondStore(directory: dir)
        // A legacy bond made while we were the peripheral: only our LTK, none for a central.
        try store.save(Bond(identity: peerA, result: SMPPairingResult(method: .justWorks, secureConnections: false, authenticated: false,
                                                                      keySize: 16, bonded: true, localLTK: SMPLongTermKey(key: 5, ediv: 1, rand: 2)),
                            created: 0))
        let path = dir + "/F0F1F2F3F401-public.bond"
        let before = try store.readBytes(path: path)
        let (fake, peer) = world(SMPConfiguration(ioCapability: .noInputNoOutput))
        let host = try await HCIHost.open(transport: fake, options: HostOptions(bondStore: store))
        var events = host.pairingEvents.makeAsyncIterator()
        _ = try await host.connect(to: peerA, timeout: .seconds(2))
        // The device (or one with its address) asks for security: Just Works is all it has.
        peer.run(peer.machine.withLock { $0.requestSecurity(now: 0) }, fake)
        guard case .failed(_, let error)? = await events.next() else {
            Issue.record("the pairing over the bond went ahead")
            await host.close()
            return
        }
        #expect(error.kind == .pairingFailed(.authenticationRequirements), "\(error)")
        #expect(try store.readBytes(path: path) == before, "the bond is as it was")
        await host.close()
        _ = try? store.remove(peerA)
        rmdir(dir)
    }

    @Test("A second pair() with settings of its own keeps the callers already waiting on the link")
    func aSecondPairWithSettingsKeepsTheFirstCaller() async throws {
        let central = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput))
        let fake = central.controller()
        let host = try await HCIHost.open(transport: fake, options: HostOptions())
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        let link = try #require(await incoming.next())
        final class Answers: Sendable { let list = Mutex<[Bool]>([]) }
        let box = Answers()
        // The first asks (Security Request) and waits; the second asks with settings of its own
        // (as the stack's own pairing does) before the central answers.
        let first = Task {
            do throws(HostError) { _ = try await link.pair() } catch { box.list.withLock { $0.append(false) }; return }
            box.list.withLock { $0.append(true) }
        }
        #expect(await eventually { central.outcomes.withLock { $0.contains { if case .securityRequested = $0 { true } else { false } } } })
        let second = Task {
            do throws(HostError) { _ = try await link.pair(configuration: SMPConfiguration(ioCapability: .noInputNoOutput)) } catch {
                box.list.withLock { $0.append(false) }
                return
            }
            box.list.withLock { $0.append(true) }
        }
        try await Task.sleep(for: .milliseconds(50))
        // It pairs and encrypts with the new key (our LTK reply, then Encryption Change).
        #expect(await central.pairAndEncrypt(fake))
        #expect(await eventually { box.list.withLock { $0.count } == 2 }, "both callers are answered")
        #expect(box.list.withLock { $0 } == [true, true])
        await host.close()
        _ = (first, second)
    }

    @Test func reParingAllowedReplacesTheBondOnceItIsComplete() async throws {
        let central = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput))
        let (host, store, dir, fake, _) = try await bondedPeripheral(central, allowsRepairing: true)
        var events = host.pairingEvents.makeAsyncIterator()
        // It pairs and encrypts with the new key (our LTK reply, then Encryption Change).
        #expect(await central.pairAndEncrypt(fake))
        guard case .paired(_, let r)? = await events.next() else {
            Issue.record("not paired")
            await host.close()
            cleanUp(store, dir)
            return
        }
        #expect(r.method == .justWorks && r.secureConnections)
        #expect(await eventually { (try? store.bond(for: peerA))?.secureConnections == true }, "the new bond replaced the old")
        await host.close()
        cleanUp(store, dir)
    }

    @Test("An unreadable bond is not \"no bond\": a pairing over it is refused and the file named")
    func anUnreadableBondStopsThePairing() async throws {
        let central = Central(passkey: 0, config: SMPConfiguration(ioCapability: .noInputNoOutput))
        let (host, store, dir, fake, _) = try await bondedPeripheral(central, allowsRepairing: true, bondFile: "version=1\ngarbage\n")
        var events = host.pairingEvents.makeAsyncIterator()
        central.run(central.machine.withLock { $0.start(now: 0) }, fake)
        #expect(await eventually { !central.failures.isEmpty })
        #expect(central.failures.first?.reason == .unspecifiedReason)
        guard case .failed(_, let error)? = await events.next() else {
            Issue.record("no failure event")
            await host.close()
            return
        }
        #expect(error.kind == .bondStore && error.message.contains("F0F1F2F3F401-public.bond"), "\(error)")
        #expect(try store.readBytes(path: dir + "/F0F1F2F3F401-public.bond") == Array("version=1\ngarbage\n".utf8), "left as it was")
        await host.close()
        cleanUp(store, dir)
    }
}
