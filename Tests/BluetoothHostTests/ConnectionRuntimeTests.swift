import FakeController
import Testing
@testable import BluetoothHost
import BluetoothTransport
import BluetoothWire
import Synchronization

/// Collects what an ATT bearer built on an LEConnection sees.
final class ATTRecorder: Sendable {
    struct State {
        var pdus: [[UInt8]] = []
        var closed: [(HCIErrorCode?, String)] = []
    }
    let state = Mutex(State())
    var pdus: [[UInt8]] { state.withLock { $0.pdus } }
    var closed: [(HCIErrorCode?, String)] { state.withLock { $0.closed } }

    func start(_ conn: LEConnection) {
        conn.startATT(received: { pdu in self.state.withLock { $0.pdus.append(Array(pdu)) } },
                      closed: { r, m in self.state.withLock { $0.closed.append((r, m)) } })
    }
}

/// A fake controller that completes LE Create Connection with handle 0x40 and answers
/// HCI_Disconnect with Disconnection Complete 0x16.
func connectingController(model: FakeControllerModel = .init(), handle: UInt16 = 0x40,
                          onACL: (@Sendable ([UInt8], FakeControllerTransport) -> Void)? = nil) -> FakeControllerTransport {
    FakeControllerTransport(model: model, onCommand: { opcode, fake in
        switch opcode {
        case .leCreateConnection, .leExtendedCreateConnection:
            fake.injectEvent(connectionCompleteEvent(handle: handle))
        case .disconnect:
            fake.injectEvent(disconnectionCompleteEvent(handle: handle, reason: .connectionTerminatedByLocalHost))
        default:
            break
        }
    }, onACL: onACL)
}

@Suite struct ConnectionRuntimeTests {
    @Test func connectSendAndReceiveATT() async throws {
        let fake = connectingController()
        let host = try await HCIHost.open(transport: fake)
        let conn = try await host.connect(to: peerA, timeout: .seconds(2))
        #expect(conn.address == peerA && conn.handle == 0x40 && conn.role == .central)
        #expect(conn.isConnected && conn.maximumATTMTU == 517)
        #expect(fake.commands.contains(.leCreateConnection))
        // ATT before the bearer starts is buffered, then delivered first, in order.
        fake.injectACL(handle: 0x40, l2capFrameBytes(cid: 4, [0x1B, 0x03, 0x00, 0xAA]))
        #expect(await eventually { host.statistics.aclPacketsIn == 1 })
        let rec = ATTRecorder()
        rec.start(conn)
        fake.injectACL(handle: 0x40, l2capFrameBytes(cid: 4, [0x1D, 0x05, 0x00, 0xBB]))
        #expect(await eventually { rec.pdus.count == 2 })
        #expect(rec.pdus == [[0x1B, 0x03, 0x00, 0xAA], [0x1D, 0x05, 0x00, 0xBB]])
        // Send: one ACL packet, PB 0b00, CID 4.
        try conn.sendATT([0x02, 0x05, 0x02])
        #expect(await eventually { fake.acl.count == 1 })
        #expect(fake.acl.first == [0x02, 0x40, 0x00, 7, 0, 3, 0, 4, 0, 0x02, 0x05, 0x02])
        await host.close()
        #expect(rec.closed.count == 1 && rec.closed.first?.0 == nil)
    }

    @Test func longPDUIsFragmentedToTheControllerBufferAndReassembledInbound() async throws {
        var model = FakeControllerModel()
        model.leACLLength = 27
        let fake = connectingController(model: model)
        let host = try await HCIHost.open(transport: fake)
        let conn = try await host.connect(to: peerA)
        let rec = ATTRecorder()
        rec.start(conn)
        let pdu = [UInt8(0x52), 0x10, 0x00] + [UInt8](repeating: 0x5A, count: 97)  // 100 bytes → 104-byte frame
        try conn.sendATT(pdu)
        #expect(await eventually { fake.acl.count == 4 })
        let parts = fake.acl.map(aclParts)
        #expect(parts.map(\.1) == [0b00, 0b01, 0b01, 0b01])
        #expect(parts.map { $0.2.count } == [27, 27, 27, 23])
        #expect(parts.flatMap(\.2) == l2capFrameBytes(cid: 4, pdu))
        // Inbound: the same frame in three fragments.
        let frame = l2capFrameBytes(cid: 4, [0x1B, 0x03, 0x00] + [UInt8](repeating: 7, count: 60))
        fake.injectACL(handle: 0x40, pb: 0b10, Array(frame[0 ..< 27]))
        fake.injectACL(handle: 0x40, pb: 0b01, Array(frame[27 ..< 54]))
        fake.injectACL(handle: 0x40, pb: 0b01, Array(frame[54...]))
        #expect(await eventually { rec.pdus.count == 1 })
        #expect(rec.pdus.first == Array(frame[4...]))
        // A stray continuation is counted, not fatal.
        fake.injectACL(handle: 0x40, pb: 0b01, [1, 2, 3])
        #expect(await eventually { host.statistics.l2capErrors == 1 })
        #expect(host.statistics.lastL2CAPError == "link 0x0040: continuing ACL fragment (3 bytes) without a start")
        await host.close()
    }

    @Test func peerDisconnectClosesTheBearerWithTheReasonAndFailsSends() async throws {
        let fake = connectingController()
        let host = try await HCIHost.open(transport: fake)
        let conn = try await host.connect(to: peerA)
        let rec = ATTRecorder()
        rec.start(conn)
        fake.injectEvent(disconnectionCompleteEvent(handle: 0x40, reason: .remoteUserTerminatedConnection))
        #expect(await eventually { !rec.closed.isEmpty })
        #expect(rec.closed.first?.0 == .remoteUserTerminatedConnection)
        #expect(rec.closed.first?.1 == "disconnected by the peer: Remote User Terminated Connection (0x13)")
        #expect(conn.disconnectReason == .remoteUserTerminatedConnection && !conn.isConnected)
        do {
            try conn.sendATT([0x0A, 0x01, 0x00])
            Issue.record("expected the send to fail")
        } catch {
            #expect(error.kind == .disconnected(.remoteUserTerminatedConnection))
        }
        await conn.disconnect()  // already down: returns at once
        #expect(host.statistics.links == 0)
        await host.close()
        #expect(rec.closed.count == 1)  // called once
    }

    @Test("GAP/CONN/TERM/BV-01-C: Terminate Connection procedure") func localDisconnectWithReason() async throws {
        let fake = connectingController()
        let host = try await HCIHost.open(transport: fake)
        let conn = try await host.connect(to: peerA)
        await conn.disconnect(reason: .remoteUserTerminatedConnection)
        #expect(conn.disconnectReason == .connectionTerminatedByLocalHost)
        // A bearer started after the link is down hears about it at once.
        let rec = ATTRecorder()
        rec.start(conn)
        #expect(await eventually { rec.closed.count == 1 })
        #expect(rec.closed.first?.0 == .connectionTerminatedByLocalHost)
        #expect(rec.closed.first?.1 == "disconnected by this host: Connection Terminated By Local Host (0x16)")
        let packet = fake.commandPackets.first { opcodeOf($0) == .disconnect }
        #expect(packet == h4(DisconnectCommand(connectionHandle: 0x40, reason: .remoteUserTerminatedConnection)))
        await host.close()
    }

    @Test func connectTimeoutCancelsInTheController() async throws {
        // The controller never connects; it answers the cancel with Connection Complete 0x02.
        let fake = FakeControllerTransport(onCommand: { opcode, fake in
            if opcode == .leCreateConnectionCancel {
                fake.injectEvent(connectionCompleteEvent(status: .unknownConnectionIdentifier, handle: 0))
            }
        })
        let host = try await HCIHost.open(transport: fake)
        do {
            _ = try await host.connect(to: peerB, timeout: .milliseconds(100))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.kind == .connectTimeout)
            #expect(error.message == "no connection to \(peerB) within 100 ms")
        }
        #expect(fake.commands.suffix(2) == [.leCreateConnection, .leCreateConnectionCancel])
        await host.close()
    }

    @Test func pendingConnectFailsWhenTheControllerGoesAway() async throws {
        let fake = FakeControllerTransport()
        let host = try await HCIHost.open(transport: fake)
        let attempt = Task { () -> HostError? in
            do { _ = try await host.connect(to: peerA, timeout: .seconds(30)); return nil } catch { return error as? HostError }
        }
        #expect(await eventually { fake.commands.contains(.leCreateConnection) })
        fake.closeController()
        #expect(await attempt.value?.kind == .transportClosed)
    }

    @Test("GAP/CONN/CPUP/BV-04-C, L2CAP/LE/CPU/BV-02-C: Valid parameters from the peripheral, central responds") func peerParameterRequestAnsweredOverACL() async throws {
        let fake = connectingController()
        let host = try await HCIHost.open(transport: fake)
        _ = try await host.connect(to: peerA)
        // L2CAP Connection Parameter Update Request, identifier 5: 15-30 ms, latency 0, 4 s.
        fake.injectACL(handle: 0x40, l2capFrameBytes(cid: 5, signalingPayload(0x12, 5, le16(12) + le16(24) + le16(0) + le16(400))))
        #expect(await eventually { fake.commands.contains(.leConnectionUpdate) })
        #expect(fake.acl.first.map { aclParts($0).2 } == l2capFrameBytes(cid: 5, signalingPayload(0x13, 5, le16(0))))
        // An unknown code gets Command Reject.
        fake.injectACL(handle: 0x40, l2capFrameBytes(cid: 5, signalingPayload(0x08, 6, [])))
        #expect(await eventually { fake.acl.count == 2 })
        #expect(aclParts(fake.acl[1]).2 == l2capFrameBytes(cid: 5, signalingPayload(0x01, 6, [0, 0])))
        // The update completes: the link's parameters follow.
        fake.injectEvent(eventBytes(LEConnectionUpdateComplete(status: .success, connectionHandle: 0x40, connectionInterval: 24,
                                                               peripheralLatency: 0, supervisionTimeout: 400)))
        #expect(await eventually { host.statistics.connection.parameterRequestsAccepted == 1 })
        await host.close()
    }

    @Test("GAP/CONN/CPUP/BV-06-C: Connection update by the central") func connectionUpdateOnRequestReturnsTheParametersInForce() async throws {
        let fake = FakeControllerTransport(onCommand: { opcode, fake in
            switch opcode {
            case .leCreateConnection: fake.injectEvent(connectionCompleteEvent(handle: 0x40))
            case .leConnectionUpdate:
                fake.injectEvent(eventBytes(LEConnectionUpdateComplete(status: .success, connectionHandle: 0x40, connectionInterval: 40,
                                                                       peripheralLatency: 2, supervisionTimeout: 600)))
            default: break
            }
        })
        let host = try await HCIHost.open(transport: fake)
        let conn = try await host.connect(to: peerA)
        let state = try await conn.updateParameters(L2CAPConnectionParameters(intervalMin: 40, intervalMax: 40,
                                                                              peripheralLatency: 2, timeoutMultiplier: 600))
        #expect(state.interval == 40 && state.latency == 2 && state.supervisionTimeout == 600)
        #expect(conn.parameters == state)
        guard let packet = fake.commandPackets.last(where: { opcodeOf($0) == .leConnectionUpdate }) else {
            Issue.record("no LE Connection Update sent"); return
        }
        // Handle 0x0040, interval 40...40, latency 2, timeout 600 (Core Vol 4 Part E §7.8.18).
        #expect(Array(packet[4 ..< 14]) == le16(0x40) + le16(40) + le16(40) + le16(2) + le16(600))
        // Outside the spec's limits: refused before anything is sent.
        do {
            _ = try await conn.updateParameters(L2CAPConnectionParameters(intervalMin: 40, intervalMax: 40,
                                                                          peripheralLatency: 0, timeoutMultiplier: 10))
            Issue.record("expected a refusal")
        } catch {
            #expect(error.kind == .notSupported)
        }
        await host.close()
    }

    @Test func pendingConnectionUpdateFailsWhenTheLinkDrops() async throws {
        let fake = connectingController()
        let host = try await HCIHost.open(transport: fake)
        let conn = try await host.connect(to: peerA)
        let update = Task { () -> HostError? in
            do {
                _ = try await conn.updateParameters(L2CAPConnectionParameters(intervalMin: 24, intervalMax: 40,
                                                                              peripheralLatency: 0, timeoutMultiplier: 400))
                return nil
            } catch { return error as? HostError }
        }
        #expect(await eventually { fake.commands.contains(.leConnectionUpdate) })
        fake.injectEvent(disconnectionCompleteEvent(handle: 0x40, reason: .connectionTimeout))
        let error = await update.value
        #expect(error?.kind == .disconnected(.connectionTimeout))
        await host.close()
    }

    @Test func twoLinksAndScanningWhileConnected() async throws {
        let next = Atomic<UInt16>(0x40)
        let fake = FakeControllerTransport(onCommand: { opcode, fake in
            switch opcode {
            case .leCreateConnection:
                let h = next.wrappingAdd(1, ordering: .relaxed).oldValue
                fake.injectEvent(connectionCompleteEvent(handle: h, peer: h == 0x40 ? peerA : peerB))
            case .leSetExtendedScanEnable:
                let t = LEExtendedAdvertisingEventType(connectable: true, scannable: false, legacy: true)
                fake.injectEvent(extendedReportEvent([.init(eventType: t, address: addr(9), rssi: -50, data: ad(name: "Other"))]))
            default: break
            }
        })
        let host = try await HCIHost.open(transport: fake)
        async let a = host.connect(to: peerA)
        async let b = host.connect(to: peerB)
        let (ca, cb) = try await (a, b)
        #expect(Set([ca.handle, cb.handle]) == [0x40, 0x41])
        // Statistics are published by the driver after it resumes the callers.
        #expect(await eventually { host.statistics.links == 2 })
        var seen = false
        for try await e in host.scan(ScanConfiguration()) {
            if case .discovered = e { seen = true; break }
        }
        #expect(seen)
        try ca.sendATT([0x0A, 0x01, 0x00])
        try cb.sendATT([0x0A, 0x02, 0x00])
        #expect(await eventually { fake.acl.count == 2 })
        #expect(Set(fake.acl.map { aclParts($0).0 }) == [0x40, 0x41])
        await host.close()
        #expect(!ca.isConnected && !cb.isConnected)
    }
}

