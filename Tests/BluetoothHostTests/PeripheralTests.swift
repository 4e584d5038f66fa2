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
        guard case .started(.success) = done.first else { Issue.record("not started: \(done)"); return a }
        #expect(a.isAdvertising)
        return a
    }

    @Test func startSendsParametersDataScanResponseEnableInOrder() throws {
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
        var r = a.peripheralLinkOpened()
        #expect(r.opcodes == [.leSetAdvertisingEnable])
        for p in r.purposes { _ = a.commandAnswered(p, commandOK) }
        #expect(a.isAdvertising && a.restarts == 1)
        // The second central reaches the maximum (2): stay off.
        r = a.peripheralLinkOpened()
        #expect(r.isEmpty && !a.isAdvertising)
        // One leaves: advertise again.
        r = a.peripheralLinkClosed()
        #expect(r.opcodes == [.leSetAdvertisingEnable])
        #expect(a.peripheralLinks == 1)
    }

    @Test func aRefusedRestartIsRetriedAtTheNextDisconnection() throws {
        var a = try running()
        let r = a.peripheralLinkOpened()
        let refused = Result<CommandReturn, HostError>.failure(HostError(.commandFailed(.commandDisallowed), "disallowed"))
        for p in r.purposes { _ = a.commandAnswered(p, refused) }
        #expect(!a.isAdvertising)
        #expect(a.peripheralLinkClosed().opcodes == [.leSetAdvertisingEnable])
    }

    @Test func aFailedSetupFailsTheStartAndLeavesItIdle() throws {
        var a = Advertiser()
        let actions = try a.start(config)
        let refused = Result<CommandReturn, HostError>.failure(HostError(.commandFailed(.invalidHCICommandParameters), "bad"))
        let done = a.commandAnswered(actions.purposes[0], refused)
        guard case .started(.failure(let e)) = done.first else { Issue.record("\(done)"); return }
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
        guard case .started(.failure(let e)) = r.first else { Issue.record("\(r)"); return }
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
        #expect(a.peripheralLinkOpened().isEmpty, "no restart once stopped")
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

/// The peripheral side of the host at run time, against a fake controller.
@Suite struct PeripheralRuntimeTests {
    /// A controller that answers every command and lets the test inject connections.
    func controller(_ model: FakeControllerModel = .init()) -> FakeControllerTransport {
        FakeControllerTransport(model: model, onCommand: { _, _ in })
    }

    @Test func incomingLinksAreStreamedWithRoleAndAdvertisingRestarts() async throws {
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
