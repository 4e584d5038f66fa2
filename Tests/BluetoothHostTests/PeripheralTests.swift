import FakeController
import BluetoothTransport
import BluetoothWire
import Synchronization
import Testing
@testable import BluetoothHost

let commandOK = Result<CommandReturn, HostError>.success(
    CommandReturn(opcode: .leSetAdvertisingEnable, status: .success, returnParameters: [0]))

extension [AdvertisingAction] {
    var opcodes: [HCIOpcode] { compactMap { if case .send(let c, _) = $0 { type(of: c).opcode } else { nil } } }
    var purposes: [AdvertisingCommandPurpose] { compactMap { if case .send(_, let p) = $0 { p } else { nil } } }
}

/// Legacy advertising as a peripheral: the sans-I/O advertiser.
@Suite struct AdvertiserTests {
    let config = AdvertisingConfiguration(advertisingData: [2, 1, 6], scanResponseData: [3, 9, 0x41, 0x42], maximumConnections: 2)

    /// An advertiser that has started (every setup command answered).
    func running() throws -> Advertiser {
        var a = Advertiser()
        let actions = try a.start(config)
        #expect(actions.opcodes == [.leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable])
        var done: [AdvertisingAction] = []
        for p in actions.purposes { done += a.commandAnswered(p, commandOK) }
        guard case .started(_, .success) = done.first else { Issue.record("not started: \(done)"); return a }
        #expect(a.isAdvertising)
        return a
    }

    @Test("GAP/DISC/GENM/BV-04-C (part): Advertising parameters, data, scan response, enable in order") func startSendsParametersDataScanResponseEnableInOrder() throws {
        var a = Advertiser()
        let actions = try a.start(config)
        guard case .send(let p, _) = actions[0], let params = p as? LESetAdvertisingParametersCommand else {
            Issue.record("no parameters"); return
        }
        #expect(params.advertisingType == .connectableUndirected && params.ownAddressType == .public)
        #expect(params.advertisingIntervalMin == 160 && params.advertisingIntervalMax == 240)  // 100 ms, 150 ms
        #expect(!a.isAdvertising, "not before the enable is answered")
        _ = try running()
    }

    @Test func restartsAfterEachConnectionUpToTheMaximumAndAfterADisconnection() throws {
        var a = try running()
        // The controller stopped advertising for the first central: enable again.
        var r = a.peripheralLinkOpened(handle: 1)
        #expect(r.opcodes == [.leSetAdvertisingEnable])
        for p in r.purposes { _ = a.commandAnswered(p, commandOK) }
        #expect(a.isAdvertising && a.restarts == 1)
        // The second central reaches the maximum (2): stay off.
        r = a.peripheralLinkOpened(handle: 2)
        #expect(r.isEmpty && !a.isAdvertising)
        // One leaves: advertise again.
        r = a.peripheralLinkClosed(handle: 1)
        #expect(r.opcodes == [.leSetAdvertisingEnable])
        #expect(a.peripheralLinks == 1)
    }

    @Test func aRefusedRestartIsRetriedAtTheNextDisconnection() throws {
        var a = try running()
        let r = a.peripheralLinkOpened(handle: 1)
        let refused = Result<CommandReturn, HostError>.failure(HostError(.commandFailed(.commandDisallowed), "disallowed"))
        for p in r.purposes { _ = a.commandAnswered(p, refused) }
        #expect(!a.isAdvertising)
        #expect(a.peripheralLinkClosed(handle: 1).opcodes == [.leSetAdvertisingEnable])
    }

    @Test func aFailedSetupFailsTheStartAndLeavesItIdle() throws {
        var a = Advertiser()
        let actions = try a.start(config)
        let refused = Result<CommandReturn, HostError>.failure(HostError(.commandFailed(.invalidHCICommandParameters), "bad"))
        let done = a.commandAnswered(actions.purposes[0], refused)
        guard case .started(_, .failure(let e)) = done.first else { Issue.record("\(done)"); return }
        #expect(e.message.hasPrefix("cannot start advertising"))
        // The later steps were already queued: a disable makes sure nothing advertises.
        #expect(done.opcodes == [.leSetAdvertisingEnable])
        #expect(!a.isActive)
        // Answers to the rest of the old setup are ignored.
        #expect(a.commandAnswered(actions.purposes[3], commandOK).isEmpty)
    }

    @Test func stopDuringAStartEndsTheStartCancelled() throws {
        var a = Advertiser()
        let setup = try a.start(config)
        let r = a.stop()
        guard case .started(_, .failure(let e)) = r.first else { Issue.record("\(r)"); return }
        #expect(e.kind == .cancelled)
        #expect(r.opcodes == [.leSetAdvertisingEnable])
        // The old setup's answers change nothing; the disable's ends the stop.
        for p in setup.purposes { #expect(a.commandAnswered(p, commandOK).isEmpty) }
        guard case .stopped = a.commandAnswered(r.purposes[0], commandOK).first else { Issue.record("not stopped"); return }
        #expect(!a.isActive)
    }

    @Test func stopDisablesAndReports() throws {
        var a = try running()
        let r = a.stop()
        #expect(r.opcodes == [.leSetAdvertisingEnable])
        guard case .send(let c, let p) = r[0], let e = c as? LESetAdvertisingEnableCommand else { return }
        #expect(!e.advertisingEnable)
        guard case .stopped = a.commandAnswered(p, commandOK).first else { Issue.record("not stopped"); return }
        #expect(!a.isActive)
        #expect(a.peripheralLinkOpened(handle: 1).isEmpty, "no restart once stopped")
    }

    @Test func configurationsThatCannotWorkAreRefusedWithTheReason() {
        var a = Advertiser()
        let long = AdvertisingConfiguration(advertisingData: [UInt8](repeating: 0, count: 32))
        #expect(throws: HostError.self) { try a.start(long) }
        let fast = AdvertisingConfiguration(advertisingData: [], interval: .milliseconds(10) ... .milliseconds(10))
        #expect(throws: HostError.self) { try a.start(fast) }
        let notStatic = AdvertisingConfiguration(advertisingData: [], ownAddress: .randomStatic(BluetoothAddress(rawValue: 0x0011_2233_4455)))
        #expect(throws: HostError.self) { try a.start(notStatic) }
        var g = SystemRandomNumberGenerator()
        let ok = AdvertisingConfiguration(advertisingData: [], connectable: false, ownAddress: .randomStatic(.randomStatic(using: &g)))
        let actions = (try? a.start(ok)) ?? []
        #expect(actions.opcodes.first == .leSetRandomAddress)
        guard case .send(let c, _) = actions[1], let p = c as? LESetAdvertisingParametersCommand else { return }
        #expect(p.ownAddressType == .random && p.advertisingType == .nonConnectableUndirected)
    }

    @Test func randomStaticAddressesHaveTheTopTwoBitsSet() {
        var g = SystemRandomNumberGenerator()
        for _ in 0 ..< 100 { #expect(BluetoothAddress.randomStatic(using: &g).rawValue >> 46 == 3) }
    }
}

func answered(_ opcode: HCIOpcode, _ parameters: [UInt8] = [0]) -> Result<CommandReturn, HostError> {
    .success(CommandReturn(opcode: opcode, status: .success, returnParameters: parameters))
}

/// Extended advertising sets (Core Vol 4 Part E §7.8.53–7.8.60), sans-I/O.
@Suite struct ExtendedAdvertiserTests {
    let caps = AdvertisingCapabilities(extendedCommands: true, sets: 4, maximumDataLength: 1650)

    /// Answers every send in `actions` (parameters with a Selected_TX_Power) and returns what followed.
    func answerAll(_ a: inout Advertiser, _ actions: [AdvertisingAction]) -> [AdvertisingAction] {
        var out: [AdvertisingAction] = []
        for case .send(let c, let p) in actions {
            let op = type(of: c).opcode
            out += a.commandAnswered(p, answered(op, op == .leSetExtendedAdvertisingParameters ? [0, 0xFC] : [0]))
        }
        return out
    }

    @Test func dataThatFitsGoesOutAsLegacyPDUsThroughTheExtendedCommands() throws {
        var a = Advertiser(capabilities: caps)
        let c = AdvertisingConfiguration(advertisingData: [2, 1, 6], scanResponseData: [3, 9, 0x41, 0x42])
        let actions = try a.start(c)
        #expect(actions.opcodes == [.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
                                    .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable])
        guard case .send(let p, _) = actions[0], let params = p as? LESetExtendedAdvertisingParametersCommand else { return }
        #expect(params.advertisingEventProperties == [.legacy, .connectable, .scannable])
        #expect(params.primaryAdvertisingIntervalMin == 160 && params.primaryAdvertisingIntervalMax == 240)
        #expect(params.advertisingTxPower == 0x7F, "no preference")
        let done = answerAll(&a, actions)
        guard case .started(0, .success(let info)) = done.first else { Issue.record("\(done)"); return }
        #expect(info.extendedCommands && info.legacyPDUs && info.selectedTxPower == -4)
    }

    @Test func longDataIsFragmentedInto251ByteOperations() throws {
        var a = Advertiser(capabilities: caps)
        let data = (0 ..< 600).map { UInt8(truncatingIfNeeded: $0) }
        let actions = try a.start(AdvertisingConfiguration(advertisingData: data, txPower: -10))
        #expect(actions.opcodes == [.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
                                    .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingEnable])
        guard case .send(let p, _) = actions[0], let params = p as? LESetExtendedAdvertisingParametersCommand else { return }
        #expect(params.advertisingEventProperties == [.connectable, .includeTxPower], "connectable, not scannable")
        #expect(params.advertisingTxPower == -10)
        let parts = actions.compactMap { if case .send(let c, _) = $0 { c as? LESetExtendedAdvertisingDataCommand } else { nil } }
        #expect(parts.map(\.operation) == [.firstFragment, .intermediateFragment, .lastFragment])
        #expect(parts.map(\.advertisingData.count) == [251, 251, 98])
        #expect(parts.flatMap(\.advertisingData) == data)
        // Every fragment encodes (at most 251 bytes each).
        for part in parts { #expect(throws: Never.self) { _ = try part.encodedH4() } }
    }

    @Test func aRandomStaticAddressIsSetOnTheSetAfterItsParameters() throws {
        var a = Advertiser(capabilities: caps)
        var g = SystemRandomNumberGenerator()
        let address = BluetoothAddress.randomStatic(using: &g)
        let actions = try a.start(AdvertisingConfiguration(advertisingData: [], connectable: false, ownAddress: .randomStatic(address), advertisingSet: 2))
        #expect(actions.opcodes.prefix(2) == [.leSetExtendedAdvertisingParameters, .leSetAdvertisingSetRandomAddress])
        guard case .send(let c, _) = actions[1], let r = c as? LESetAdvertisingSetRandomAddressCommand else { return }
        #expect(r.advertisingHandle == 2 && r.randomAddress == address)
        guard case .send(let p, _) = actions[0], let params = p as? LESetExtendedAdvertisingParametersCommand else { return }
        #expect(params.ownAddressType == .random && params.advertisingEventProperties == [.legacy] && params.advertisingSID == 2)
    }

    @Test func twoSetsRunAtOnceAndEachRestartsAfterItsOwnConnection() throws {
        var a = Advertiser(capabilities: caps)
        _ = answerAll(&a, try a.start(AdvertisingConfiguration(advertisingData: [2, 1, 6], maximumConnections: 1)))
        _ = answerAll(&a, try a.start(AdvertisingConfiguration(advertisingData: [2, 1, 6], maximumConnections: 2, advertisingSet: 1)))
        #expect(a.isAdvertising(0) && a.isAdvertising(1))
        // A central connects through set 1: the link first, then Advertising Set Terminated.
        #expect(a.peripheralLinkOpened(handle: 0x40).isEmpty, "which set is not known yet")
        let r = a.advertisingSetTerminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 1, connectionHandle: 0x40, numCompletedExtendedAdvertisingEvents: 3))
        #expect(r.opcodes == [.leSetExtendedAdvertisingEnable])
        guard case .send(let c, _) = r.first, let e = c as? LESetExtendedAdvertisingEnableCommand else { return }
        #expect(e.enable && e.sets.map(\.advertisingHandle) == [1])
        #expect(a.isAdvertising(0), "set 0 was not touched")
        // Set 0 takes one central only.
        _ = a.peripheralLinkOpened(handle: 0x41)
        #expect(a.advertisingSetTerminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 0, connectionHandle: 0x41, numCompletedExtendedAdvertisingEvents: 1)).isEmpty)
        #expect(!a.isAdvertising(0))
        // Its central leaves: set 0 advertises again.
        let back = a.peripheralLinkClosed(handle: 0x41)
        guard case .send(let c2, _) = back.first, let e2 = c2 as? LESetExtendedAdvertisingEnableCommand else { Issue.record("\(back)"); return }
        #expect(e2.sets.map(\.advertisingHandle) == [0])
        // A set that ended for its duration stays off.
        _ = a.advertisingSetTerminated(LEAdvertisingSetTerminated(status: HCIErrorCode(rawValue: 0x3C), advertisingHandle: 1, connectionHandle: 0, numCompletedExtendedAdvertisingEvents: 9))
        #expect(!a.isAdvertising(1))
    }

    @Test func stoppingOneSetDisablesAndRemovesOnlyIt() throws {
        var a = Advertiser(capabilities: caps)
        _ = answerAll(&a, try a.start(AdvertisingConfiguration(advertisingData: [])))
        _ = answerAll(&a, try a.start(AdvertisingConfiguration(advertisingData: [], advertisingSet: 3)))
        let r = a.stop(3)
        #expect(r.opcodes == [.leSetExtendedAdvertisingEnable, .leRemoveAdvertisingSet])
        let done = answerAll(&a, r)
        guard case .stopped(3) = done.first, done.count == 1 else { Issue.record("\(done)"); return }
        #expect(a.isAdvertising(0) && !a.isAdvertising(3) && a.pendingSets(nil) == [0])
        // Stopping all: one disable for every set.
        guard case .send(let c, _) = a.stop().first, let e = c as? LESetExtendedAdvertisingEnableCommand else { return }
        #expect(!e.enable && e.sets.map(\.advertisingHandle) == [0])
    }

    @Test func configurationsTheControllerCannotRunAreRefusedWithTheReason() {
        var a = Advertiser(capabilities: caps)
        let both = AdvertisingConfiguration(advertisingData: [UInt8](repeating: 0, count: 40), scanResponseData: [2, 9, 0x41])
        #expect { try a.start(both) } throws: { ($0 as? HostError)?.message.contains("no scan response") == true }
        let noSet = AdvertisingConfiguration(advertisingData: [], advertisingSet: 4)
        #expect { try a.start(noSet) } throws: { ($0 as? HostError)?.message.contains("does not exist") == true }
        let huge = AdvertisingConfiguration(advertisingData: [UInt8](repeating: 0, count: 1651))
        #expect { try a.start(huge) } throws: { ($0 as? HostError)?.message.contains("at most 1650") == true }
        let hot = AdvertisingConfiguration(advertisingData: [], txPower: 21)
        #expect(throws: HostError.self) { try a.start(hot) }
        // Legacy PDUs asked for: 31 bytes, even on this controller.
        let legacyLong = AdvertisingConfiguration(advertisingData: [UInt8](repeating: 0, count: 32), pdus: .legacy)
        #expect { try a.start(legacyLong) } throws: { ($0 as? HostError)?.message.contains("at most 31") == true }
        // A controller before Bluetooth 5 has one set and no extended PDUs.
        var old = Advertiser()
        #expect { try old.start(AdvertisingConfiguration(advertisingData: [], pdus: .extended)) } throws: { ($0 as? HostError)?.kind == .notSupported }
        #expect { try old.start(AdvertisingConfiguration(advertisingData: [], advertisingSet: 1)) } throws: { ($0 as? HostError)?.kind == .notSupported }
    }

    @Test func theInitializerReadsTheAdvertisingLimitsWhenTheControllerHasExtendedAdvertising() {
        var model = FakeControllerModel()
        model.supportedCommandBits += FakeControllerModel.extendedAdvertisingBits
        let (result, sent) = runInit(model)
        guard case .success(let info) = result else { Issue.record("\(result)"); return }
        #expect(sent.contains(.leReadMaximumAdvertisingDataLength) && sent.contains(.leReadNumberOfSupportedAdvertisingSets))
        #expect(info.maximumAdvertisingDataLength == 1650 && info.advertisingSets == 4)
        #expect(AdvertisingCapabilities(info) == AdvertisingCapabilities(extendedCommands: true, sets: 4, maximumDataLength: 1650))
        // Without the commands: legacy.
        let (plain, plainSent) = runInit(FakeControllerModel())
        #expect(!plainSent.contains(.leReadMaximumAdvertisingDataLength))
        if case .success(let i) = plain { #expect(AdvertisingCapabilities(i) == .legacy) }
    }
}

/// The peripheral side of the host at run time, against a fake controller.
@Suite struct PeripheralRuntimeTests {
    /// A controller that answers every command and lets the test inject connections.
    func controller(_ model: FakeControllerModel = .init()) -> FakeControllerTransport {
        FakeControllerTransport(model: model, onCommand: { _, _ in })
    }

    @Test("GAP/CONN/UCON/BV-02-C (part): Incoming links streamed with their role; advertising restarts") func incomingLinksAreStreamedWithRoleAndAdvertisingRestarts() async throws {
        let fake = controller()
        let host = try await HCIHost.open(transport: fake)
        try await host.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 1, 6], maximumConnections: 2))
        #expect(fake.commands.filter { $0 == .leSetAdvertisingEnable }.count == 1)
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, peer: peerB, role: .peripheral))
        let link = await incoming.next()
        #expect(link?.role == .peripheral && link?.address == peerB && link?.handle == 0x41)
        #expect(link?.security == .unencrypted)
        // The controller stopped advertising for that central: the host enabled it again.
        #expect(await eventually { fake.commands.filter { $0 == .leSetAdvertisingEnable }.count == 2 })
        await host.close()
        #expect(await incoming.next() == nil, "the stream ends with the host")
    }

    @Test func extendedSetsRestartAfterAdvertisingSetTerminated() async throws {
        var model = FakeControllerModel()
        model.supportedCommandBits += FakeControllerModel.extendedAdvertisingBits
        let fake = controller(model)
        let host = try await HCIHost.open(transport: fake)
        #expect(host.advertisingCapabilities.extendedCommands)
        let info = try await host.startAdvertising(AdvertisingConfiguration(advertisingData: [UInt8](repeating: 0, count: 100), connectable: true, advertisingSet: 1))
        #expect(!info.legacyPDUs && info.selectedTxPower == 5)
        #expect(!fake.commands.contains(.leSetAdvertisingEnable), "no legacy command once extended ones are used")
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, peer: peerB, role: .peripheral))
        fake.injectEvent(advertisingSetTerminatedEvent(set: 1, handle: 0x41))
        #expect(await incoming.next()?.handle == 0x41)
        #expect(await eventually { fake.commands.filter { $0 == .leSetExtendedAdvertisingEnable }.count == 2 })
        await host.stopAdvertising(set: 1)
        #expect(fake.commands.suffix(2) == [.leSetExtendedAdvertisingEnable, .leRemoveAdvertisingSet])
        await host.close()
    }

    @Test func aFullSendQueueHoldsSendersBackUntilTheControllerTakesData() async throws {
        var model = FakeControllerModel()
        model.leACLCount = 1
        let fake = FakeControllerTransport(model: model, completesPackets: false)
        let host = try await HCIHost.open(transport: fake)
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        guard let link = await incoming.next() else { Issue.record("no link"); return }
        // The controller takes nothing (no Number Of Completed Packets): the queue fills.
        let pdu = [UInt8](repeating: 0x1B, count: 500)
        var sent = 0
        while link.hasRoom(forATT: pdu.count) {
            try link.sendATT(pdu)
            sent += 1
        }
        #expect(sent >= LEConnection.maximumQueuedBytes / 504)
        #expect { try link.sendATT(pdu) } throws: { ($0 as? HostError)?.kind == .sendQueueFull }
        let waited = Task { await link.waitForRoom(forATT: pdu.count) }
        // The controller frees buffers: two frames (three fragments each) leave.
        for _ in 0 ..< 7 { fake.injectEvent(nocpEvent([(0x41, 1)])) }
        await waited.value
        #expect(link.hasRoom(forATT: pdu.count))
        #expect(await eventually { fake.acl.count == 8 }, "one packet per free buffer")
        // A waiter on a full queue is released when the link goes down.
        while link.hasRoom(forATT: pdu.count) { try link.sendATT(pdu) }
        let released = Task { await link.waitForRoom(forATT: pdu.count) }
        fake.injectEvent(disconnectionCompleteEvent(handle: 0x41, reason: .remoteUserTerminatedConnection))
        await released.value
        #expect(!link.isConnected)
        await host.close()
    }

    @Test func attPDUsGoToTheClientOrTheServerSideByDirection() async throws {
        let fake = controller()
        let host = try await HCIHost.open(transport: fake)
        var incoming = host.incomingConnections.makeAsyncIterator()
        fake.injectEvent(connectionCompleteEvent(handle: 0x41, role: .peripheral))
        guard let link = await incoming.next() else { Issue.record("no link"); return }
        // Before anyone listens: a request and a notification wait.
        fake.injectACL(handle: 0x41, l2capFrameBytes(cid: 4, [0x0A, 0x03, 0x00]))
        fake.injectACL(handle: 0x41, l2capFrameBytes(cid: 4, [0x1B, 0x03, 0x00, 0x01]))
        #expect(await eventually { host.statistics.aclPacketsIn == 2 })
        let server = ATTRecorder(), client = ATTRecorder()
        link.startATT(role: .server, received: { p in server.state.withLock { $0.pdus.append(Array(p)) } },
                      closed: { r, m in server.state.withLock { $0.closed.append((r, m)) } })
        client.start(link)
        #expect(await eventually { server.pdus.count == 1 && client.pdus.count == 1 })
        fake.injectACL(handle: 0x41, l2capFrameBytes(cid: 4, [0x52, 0x03, 0x00, 0x07]))   // command → server
        fake.injectACL(handle: 0x41, l2capFrameBytes(cid: 4, [0x0B, 0x01]))               // response → client
        fake.injectACL(handle: 0x41, l2capFrameBytes(cid: 4, [0x1E]))                     // confirmation → server
        #expect(await eventually { server.pdus.count == 3 && client.pdus.count == 2 })
        #expect(server.pdus == [[0x0A, 0x03, 0x00], [0x52, 0x03, 0x00, 0x07], [0x1E]])
        #expect(client.pdus == [[0x1B, 0x03, 0x00, 0x01], [0x0B, 0x01]])
        // The shared MTU: one side records it, the other reads it.
        #expect(link.attMTU == 23)
        link.noteATTMTU(247)
        #expect(link.attMTU == 247)
        await host.close()
        #expect(server.closed.count == 1 && client.closed.count == 1)
    }

    @Test func aControllerReportingAHandleAbove0x0EFFCannotCrashTheHost() async throws {
        let fake = FakeControllerTransport(onCommand: { opcode, fake in
            if opcode == .leCreateConnection { fake.injectEvent(connectionCompleteEvent(handle: 0x0F00)) }
        })
        let host = try await HCIHost.open(transport: fake)
        do {
            _ = try await host.connect(to: peerA, timeout: .seconds(2))
            Issue.record("connected on an invalid handle")
        } catch {
            #expect(error.message.contains("above 0x0EFF"))
        }
        // A peripheral link with such a handle is not handed out either; data for it is dropped.
        fake.injectEvent(connectionCompleteEvent(handle: 0x1000, role: .peripheral))
        fake.injectACL(handle: 0x0EFF, l2capFrameBytes(cid: 4, [0x0A, 0x01, 0x00]))
        #expect(await eventually { host.statistics.connection.invalidConnectionHandles == 2 })
        #expect(host.statistics.links == 0)
        await host.close()
    }
}

/// HCI_LE_Advertising_Set_Terminated as an event packet (no H4 indicator).
func advertisingSetTerminatedEvent(set: UInt8, handle: UInt16, status: UInt8 = 0) -> [UInt8] {
    [0x3E, 6, 0x12, status, set, UInt8(handle & 0xFF), UInt8(handle >> 8), 1]
}
