import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

/// Signaling C-frame payload: code, identifier, length, data.
func signalingPayload(_ code: UInt8, _ id: UInt8, _ data: [UInt8]) -> [UInt8] {
    [code, id, UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data
}

extension [ConnectionAction] {
    var commands: [HCIOpcode] {
        compactMap { if case .sendCommand(let c, _) = $0 { type(of: c).opcode } else { nil } }
    }
    var l2capFrames: [(UInt16, [UInt8])] {
        compactMap { if case .sendL2CAP(let h, let f) = $0 { (h, f) } else { nil } }
    }
    var connectedIDs: [UInt64] {
        compactMap { if case .connected(let id, _) = $0 { id.rawValue } else { nil } }
    }
    var failures: [(UInt64, HostError)] {
        compactMap { if case .connectFailed(let id, let e) = $0 { (id.rawValue, e) } else { nil } }
    }
    var closed: [(UInt16, HCIErrorCode)] {
        compactMap { if case .linkClosed(let s, let r) = $0 { (s.handle, r) } else { nil } }
    }
}

@Suite struct LEConnectionManagerTests {
    let ok = Result<CommandReturn, HostError>.success(CommandReturn(opcode: .leCreateConnection, status: .success,
                                                                     returnParameters: [], isCommandStatus: true))

    func feed(_ m: inout LEConnectionManager, _ event: [UInt8], now: UInt64 = 0) -> [ConnectionAction] {
        withEvent(event) { m.handle($0, now: now) }
    }

    /// What the manager answers itself (nothing for a frame it routes to the credit channels).
    func signaling(_ m: inout LEConnectionManager, _ handle: UInt16, _ payload: [UInt8]) -> [ConnectionAction] {
        payload.withUnsafeBytes { if case .handled(let a) = m.receivedSignaling(handle: handle, payload: $0) { a } else { [] } }
    }

    /// The code of the command routed to the credit channels, nil when it was not routed.
    func routedCode(_ m: inout LEConnectionManager, _ handle: UInt16, _ payload: [UInt8]) -> L2CAPSignalingCode? {
        payload.withUnsafeBytes { if case .creditChannels(let c) = m.receivedSignaling(handle: handle, payload: $0) { c.code } else { nil } }
    }

    /// A manager with a central link on `handle`.
    func connected(_ handle: UInt16 = 0x40, role: LEConnectionRole = .central) -> LEConnectionManager {
        var m = LEConnectionManager()
        if role == .central {
            _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: 5 * second, now: 0)
            _ = m.commandAnswered(.createConnection, ok, now: 0)
        }
        let a = feed(&m, connectionCompleteEvent(handle: handle, role: role))
        // A link we created: connected, then LE Read Remote Features.
        #expect(m.link(handle) != nil && a.count == (role == .central ? 2 : 1))
        return m
    }

    @Test("GAP/CONN/DCEP/BV-03-C (part): Direct connection establishment") func connectSendsCreateConnectionAndCompletes() throws {
        var m = LEConnectionManager()
        var a = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: 5 * second, now: 0)
        #expect(a.commands == [.leCreateConnection])
        guard case .sendCommand(let c, .createConnection) = a[0], let create = c as? LECreateConnectionCommand else {
            Issue.record("expected LE Create Connection"); return
        }
        #expect(create.peerAddress == peerA.address && create.peerAddressType == .public)
        #expect(create.connection.intervalMin == 24 && create.connection.supervisionTimeout == 400)
        #expect(m.nextDeadline == 5 * second)
        #expect(m.commandAnswered(.createConnection, ok, now: 1).isEmpty)
        a = feed(&m, connectionCompleteEvent(handle: 0x40), now: 2)
        #expect(a.connectedIDs == [1])
        #expect(a.commands == [.leReadRemoteFeatures])
        #expect(m.link(0x40)?.peer == peerA && m.link(0x40)?.role == .central)
        #expect(m.nextDeadline == nil && !m.isConnecting)
    }

    @Test func aConnectionHandleAbove0x0EFFFailsTheAttemptAndOpensNoLink() {
        var m = LEConnectionManager()
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: 5 * second, now: 0)
        _ = m.commandAnswered(.createConnection, ok, now: 0)
        let a = feed(&m, connectionCompleteEvent(handle: 0x0F00))
        #expect(a.failures.map(\.0) == [1])
        #expect(a.failures.first?.1.message.contains("above 0x0EFF") == true)
        #expect(m.linkHandles.isEmpty && !m.isConnecting)
        #expect(feed(&m, connectionCompleteEvent(handle: 0xFFFF, role: .peripheral)).isEmpty)
        #expect(m.statistics.invalidConnectionHandles == 2)
    }

    @Test func aRepeatedConnectionCompleteLeavesTheLinkAsItIs() {
        var m = connected(0x40)
        let a = feed(&m, connectionCompleteEvent(handle: 0x40, peer: peerB, role: .peripheral))
        #expect(a.isEmpty && m.link(0x40)?.peer == peerA)
        #expect(feed(&m, connectionCompleteEvent(handle: 0x40)).isEmpty)
        #expect(m.statistics.unknownHandleEvents == 2)
    }

    @Test func aFailedPeripheralCompletionDoesNotEndAConnectAttempt() {
        var m = LEConnectionManager()
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: 5 * second, now: 0)
        _ = m.commandAnswered(.createConnection, ok, now: 0)
        // Directed advertising timed out (0x3C): about our advertising, not the create.
        #expect(feed(&m, connectionCompleteEvent(status: .advertisingTimeout, handle: 0, role: .peripheral)).isEmpty)
        #expect(m.isConnecting)
        #expect(feed(&m, connectionCompleteEvent(handle: 0x40)).connectedIDs == [1])
    }

    @Test func extendedCreateWhenTheControllerHasIt() {
        var info = ControllerInfo()
        #expect(!LEConnectionManager.supportsExtendedCreate(info))
        info.supportedCommands[37] |= 1 << 7
        #expect(LEConnectionManager.supportsExtendedCreate(info))
        var m = LEConnectionManager(useExtendedCreate: true)
        let a = m.connect(ConnectRequestID(rawValue: 1), to: peerB, timeout: second, now: 0)
        #expect(a.commands == [.leExtendedCreateConnection])
        // Completion arrives as the enhanced event.
        let e = eventBytes(LEEnhancedConnectionComplete(
            status: .success, connectionHandle: 0x41, role: .central, peerAddress: peerB,
            localResolvablePrivateAddress: .zero, peerResolvablePrivateAddress: .zero, connectionInterval: 24,
            peripheralLatency: 0, supervisionTimeout: 400, centralClockAccuracy: LEClockAccuracy(rawValue: 0)))
        #expect(feed(&m, e).connectedIDs == [1])
    }

    @Test func createRefusedFailsTheRequest() {
        var m = LEConnectionManager()
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: second, now: 0)
        let a = m.commandAnswered(.createConnection, .failure(.commandFailed(.leCreateConnection, .commandDisallowed)), now: 1)
        #expect(a.failures.map { $0.1.kind } == [.commandFailed(.commandDisallowed)])
        #expect(!m.isConnecting)
    }

    @Test func failedCompletionNamesTheStatus() {
        var m = LEConnectionManager()
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: second, now: 0)
        let a = feed(&m, connectionCompleteEvent(status: .synchronizationTimeout, handle: 0))
        #expect(a.failures.first?.1.kind == .connectFailed(.synchronizationTimeout))
        #expect(a.failures.first?.1.message == "cannot connect to \(peerA): Connection Failed to be Established / Synchronization Timeout (0x3E)")
    }

    @Test func timeoutCancelsThenTheUnknownConnectionCompletionEndsTheAttempt() {
        var m = LEConnectionManager()
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: second, now: 0)
        _ = m.commandAnswered(.createConnection, ok, now: 0)
        #expect(m.timerFired(now: second - 1).isEmpty)
        var a = m.timerFired(now: second)
        #expect(a.commands == [.leCreateConnectionCancel])
        #expect(a.failures.isEmpty)
        _ = m.commandAnswered(.createConnectionCancel, ok, now: second + 1)
        a = feed(&m, connectionCompleteEvent(status: .unknownConnectionIdentifier, handle: 0), now: second + 2)
        #expect(a.failures.count == 1)
        #expect(a.failures.first?.1.kind == .connectTimeout)
        #expect(a.failures.first?.1.message == "no connection to \(peerA) within 1 s")
        #expect(!m.isConnecting && !m.staleCreate)
        // The next attempt goes straight to Create Connection.
        #expect(m.connect(ConnectRequestID(rawValue: 2), to: peerA, timeout: second, now: 3 * second).commands == [.leCreateConnection])
    }

    @Test func cancelWithNoCompletionRecoversForTheNextAttempt() {
        var m = LEConnectionManager(cancelGracePeriod: second)
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: second, now: 0)
        _ = m.timerFired(now: second)
        #expect(m.nextDeadline == 2 * second)
        let a = m.timerFired(now: 2 * second)
        #expect(a.failures.first?.1.kind == .connectTimeout)
        #expect(a.failures.first?.1.message.contains("did not confirm LE Create Connection Cancel") == true)
        #expect(m.staleCreate && !m.isConnecting)
        // Next attempt clears first: Cancel, then (cancel refused: nothing pending) Create.
        var b = m.connect(ConnectRequestID(rawValue: 2), to: peerB, timeout: 5 * second, now: 3 * second)
        #expect(b.commands == [.leCreateConnectionCancel])
        b = m.commandAnswered(.createConnectionCancel, .failure(.commandFailed(.leCreateConnectionCancel, .commandDisallowed)),
                              now: 3 * second)
        #expect(b.commands == [.leCreateConnection])
        b = feed(&m, connectionCompleteEvent(handle: 0x42, peer: peerB), now: 4 * second)
        #expect(b.connectedIDs == [2])
    }

    @Test func clearingAbsorbsTheOldCompletionAndDisconnectsAnOrphanLink() {
        var m = LEConnectionManager(cancelGracePeriod: second)
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: second, now: 0)
        _ = m.timerFired(now: second)
        _ = m.timerFired(now: 2 * second)
        _ = m.connect(ConnectRequestID(rawValue: 2), to: peerB, timeout: 5 * second, now: 3 * second)
        #expect(m.commandAnswered(.createConnectionCancel, ok, now: 3 * second).isEmpty)
        // The old create did connect after all: disconnect it, then send ours.
        let a = feed(&m, connectionCompleteEvent(handle: 0x45, peer: peerA), now: 3 * second + 1)
        #expect(a.commands == [.disconnect, .leCreateConnection])
        #expect(m.statistics.orphanConnections == 1)
        // The grace timer alone also moves on when the old completion never comes.
        var m2 = LEConnectionManager(cancelGracePeriod: second)
        _ = m2.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: second, now: 0)
        _ = m2.timerFired(now: second)
        _ = m2.timerFired(now: 2 * second)
        _ = m2.connect(ConnectRequestID(rawValue: 2), to: peerB, timeout: 5 * second, now: 3 * second)
        _ = m2.commandAnswered(.createConnectionCancel, ok, now: 3 * second)
        #expect(m2.timerFired(now: 4 * second).commands == [.leCreateConnection])
    }

    @Test func oneCreateAtATimeOthersWaitTheirTurnBeforeTheirTimeoutStarts() {
        var m = LEConnectionManager()
        #expect(m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: 5 * second, now: 0).commands == [.leCreateConnection])
        #expect(m.connect(ConnectRequestID(rawValue: 2), to: peerB, timeout: second, now: 0).isEmpty)
        #expect(m.nextDeadline == 5 * second)
        // #2 waits past its own timeout without failing: its clock has not started.
        #expect(m.timerFired(now: 2 * second).isEmpty)
        // #1 completes, #2 starts and gets its full second from now.
        let a = feed(&m, connectionCompleteEvent(handle: 0x40), now: 3 * second)
        #expect(a.connectedIDs == [1] && a.commands == [.leReadRemoteFeatures, .leCreateConnection])
        #expect(m.nextDeadline == 4 * second)
        let b = feed(&m, connectionCompleteEvent(handle: 0x41, peer: peerB), now: 3 * second + second / 2)
        #expect(b.connectedIDs == [2])
        #expect(m.linkHandles == [0x40, 0x41])
        // A third times out a second after its create was sent, then is cancelled.
        #expect(m.connect(ConnectRequestID(rawValue: 3), to: peerB, timeout: second, now: 4 * second).commands == [.leCreateConnection])
        #expect(m.timerFired(now: 5 * second).commands == [.leCreateConnectionCancel])
    }

    @Test func cancelledByTheCallerWhileWaitingOrCreating() {
        var m = LEConnectionManager()
        _ = m.connect(ConnectRequestID(rawValue: 1), to: peerA, timeout: 5 * second, now: 0)
        _ = m.connect(ConnectRequestID(rawValue: 2), to: peerB, timeout: 5 * second, now: 0)
        #expect(m.cancelConnect(ConnectRequestID(rawValue: 2), now: 1).failures.map { $0.1.kind } == [.cancelled])
        #expect(m.cancelConnect(ConnectRequestID(rawValue: 1), now: 1).commands == [.leCreateConnectionCancel])
        // The link came up anyway: the caller is gone, so it is disconnected.
        let a = feed(&m, connectionCompleteEvent(handle: 0x40), now: 2)
        #expect(a.failures.map { $0.1.kind } == [.cancelled])
        #expect(a.commands == [.disconnect])
    }

    @Test("GAP/CONN/TERM/BV-01-C (part): Disconnect with our reason; the peer's reasons") func disconnectWithReasonAndPeerReasons() {
        var m = connected(0x40)
        let a = m.disconnect(0x40, reason: .remoteUserTerminatedConnection)
        guard case .sendCommand(let c, .disconnect(handle: 0x40)) = a.first, let d = c as? DisconnectCommand else {
            Issue.record("expected HCI_Disconnect"); return
        }
        #expect(d.reason == .remoteUserTerminatedConnection)
        #expect(m.disconnect(0x40).isEmpty)  // already on its way
        let b = feed(&m, disconnectionCompleteEvent(handle: 0x40, reason: .connectionTerminatedByLocalHost))
        #expect(b.closed.map(\.1) == [.connectionTerminatedByLocalHost])
        #expect(m.link(0x40) == nil)
        #expect(HostError.disconnected(.connectionTerminatedByLocalHost).message
                == "disconnected by this host: Connection Terminated By Local Host (0x16)")
        // Peer and controller reasons, by name.
        var p = connected(0x41)
        let c2 = feed(&p, disconnectionCompleteEvent(handle: 0x41, reason: .remoteUserTerminatedConnection))
        #expect(c2.closed.map(\.1) == [.remoteUserTerminatedConnection])
        #expect(HostError.disconnected(.remoteUserTerminatedConnection).message
                == "disconnected by the peer: Remote User Terminated Connection (0x13)")
        #expect(HostError.disconnected(.connectionTimeout).message == "link lost (supervision timeout): Connection Timeout (0x08)")
        #expect(HostError.disconnected(.connectionTerminatedDueToMICFailure).message
                == "disconnected: Connection Terminated due to MIC Failure (0x3D)")
        // Unknown handle: nothing.
        #expect(feed(&p, disconnectionCompleteEvent(handle: 0x99, reason: .connectionTimeout)).isEmpty)
        #expect(p.statistics.unknownHandleEvents == 1)
    }

    @Test func disconnectRefusedKeepsTheLinkOrClosesAVanishedOne() {
        var m = connected(0x40)
        _ = m.disconnect(0x40)
        let a = m.commandAnswered(.disconnect(handle: 0x40), .failure(.commandFailed(.disconnect, .commandDisallowed)), now: 0)
        guard case .disconnectFailed(0x40, let e) = a.first else { Issue.record("expected disconnectFailed"); return }
        #expect(e.kind == .commandFailed(.commandDisallowed))
        #expect(m.link(0x40) != nil)
        _ = m.disconnect(0x40)
        let b = m.commandAnswered(.disconnect(handle: 0x40), .failure(.commandFailed(.disconnect, .unknownConnectionIdentifier)), now: 0)
        #expect(b.closed.map(\.1) == [.unknownConnectionIdentifier])
    }

    struct ParamCase: Sendable, CustomStringConvertible {
        var min: UInt16, max: UInt16, latency: UInt16, timeout: UInt16, accept: Bool
        var description: String { "\(min)-\(max) lat \(latency) to \(timeout): \(accept)" }
    }

    static let paramCases: [ParamCase] = [
        ParamCase(min: 6, max: 3200, latency: 0, timeout: 3200, accept: true),
        ParamCase(min: 24, max: 40, latency: 0, timeout: 400, accept: true),
        ParamCase(min: 5, max: 40, latency: 0, timeout: 400, accept: false),      // min below 7.5 ms
        ParamCase(min: 6, max: 3201, latency: 0, timeout: 3200, accept: false),   // max above 4 s
        ParamCase(min: 40, max: 24, latency: 0, timeout: 400, accept: false),     // min > max
        ParamCase(min: 24, max: 40, latency: 499, timeout: 3200, accept: false),  // 3200*4 = 12800 ≤ 500*40
        ParamCase(min: 6, max: 6, latency: 499, timeout: 3200, accept: true),     // 12800 > 500*6
        ParamCase(min: 6, max: 6, latency: 500, timeout: 3200, accept: false),    // latency over 499
        ParamCase(min: 24, max: 40, latency: 0, timeout: 9, accept: false),       // timeout below 100 ms
        ParamCase(min: 24, max: 40, latency: 0, timeout: 3201, accept: false),    // timeout above 32 s
        ParamCase(min: 80, max: 80, latency: 4, timeout: 100, accept: false),     // 400 == 5*80: not greater
        ParamCase(min: 80, max: 80, latency: 4, timeout: 101, accept: true),
    ]

    @Test("L2CAP/LE/CPU/BV-02-C, BI-01-C; GAP/CONN/CPUP/BV-04-C, BV-05-C (part): Parameter update requests accepted or rejected", arguments: paramCases)
    func parameterUpdateRequestAcceptedOrRejected(_ c: ParamCase) {
        var m = connected(0x40)
        let a = signaling(&m, 0x40, signalingPayload(0x12, 7, le16(c.min) + le16(c.max) + le16(c.latency) + le16(c.timeout)))
        let frames = a.l2capFrames
        #expect(frames.count == 1)
        // Response on CID 5 with the same identifier, result 0 accepted / 1 rejected.
        #expect(frames.first?.1 == [6, 0, 5, 0] + signalingPayload(0x13, 7, le16(c.accept ? 0 : 1)))
        if c.accept {
            #expect(a.commands == [.leConnectionUpdate])
            if case .sendCommand(let cmd, _) = a.last, let u = cmd as? LEConnectionUpdateCommand {
                #expect(u.connectionHandle == 0x40 && u.connection.intervalMin == c.min && u.connection.intervalMax == c.max)
                #expect(u.connection.maxLatency == c.latency && u.connection.supervisionTimeout == c.timeout)
            }
        } else {
            #expect(a.commands.isEmpty)
        }
        // The LL procedure's event gets the same verdict.
        let e = eventBytes(LERemoteConnectionParameterRequest(connectionHandle: 0x40, intervalMin: c.min, intervalMax: c.max,
                                                              maxLatency: c.latency, timeout: c.timeout))
        let r = feed(&m, e)
        #expect(r.commands == [c.accept ? .leRemoteConnectionParameterRequestReply : .leRemoteConnectionParameterRequestNegativeReply])
        if case .sendCommand(let cmd, _) = r.first, let n = cmd as? LERemoteConnectionParameterRequestNegativeReplyCommand {
            #expect(n.reason == .unacceptableConnectionParameters)
        }
    }

    static let wished = L2CAPConnectionParameters(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 400)

    @Test("L2CAP/LE/CPU/BV-01-C: as peripheral, parameters are asked for with Connection Parameter Update Request")
    func aPeripheralAsksTheCentralOverL2CAP() throws {
        var m = connected(0x40, role: .peripheral)
        let a = try m.updateParameters(0x40, Self.wished, now: 0)
        #expect(a.commands.isEmpty, "no LE Connection Update from the peripheral")
        let request = try #require(a.l2capFrames.first?.1)
        let id = request[5]
        #expect(request == [12, 0, 5, 0] + signalingPayload(0x12, id, le16(24) + le16(40) + le16(0) + le16(400)))
        #expect(throws: HostError.self, "one request at a time") { _ = try m.updateParameters(0x40, Self.wished, now: 0) }
        // Accepted: nothing yet; the central's update ends it.
        #expect(signaling(&m, 0x40, signalingPayload(0x13, id, le16(0))).isEmpty)
        let done = feed(&m, eventBytes(LEConnectionUpdateComplete(status: .success, connectionHandle: 0x40, connectionInterval: 40,
                                                                  peripheralLatency: 0, supervisionTimeout: 400)))
        guard case .parametersUpdated(0x40, .success(let state))? = done.last else {
            Issue.record("\(done)")
            return
        }
        #expect(state.interval == 40 && state.supervisionTimeout == 400)
        #expect(m.nextDeadline == nil, "nothing left pending")
        // A response nobody asked for is counted, not acted on.
        #expect(signaling(&m, 0x40, signalingPayload(0x13, id, le16(0))).isEmpty && m.statistics.unmatchedSignalingResponses == 1)
    }

    @Test("L2CAP/LE/CPU/BV-01-C (refused): rejected, not understood or never answered: the update fails with why")
    func aPeripheralsRequestRefusedOrUnansweredFails() throws {
        for answer in ["rejected", "reject command", "nothing"] {
            var m = connected(0x40, role: .peripheral)
            let id = try #require(try m.updateParameters(0x40, Self.wished, now: 5).l2capFrames.first?.1[5])
            let out: [ConnectionAction]
            switch answer {
            case "rejected": out = signaling(&m, 0x40, signalingPayload(0x13, id, le16(1)))
            case "reject command": out = signaling(&m, 0x40, signalingPayload(0x01, id, [0, 0]))
            default:
                #expect(m.nextDeadline == 5 + LEConnectionManager.parameterRequestTimeout)
                #expect(m.timerFired(now: 4 + LEConnectionManager.parameterRequestTimeout).isEmpty)
                out = m.timerFired(now: 5 + LEConnectionManager.parameterRequestTimeout)
            }
            guard case .parametersUpdated(0x40, .failure(let e))? = out.first, out.count == 1 else {
                Issue.record("\(answer): \(out)")
                continue
            }
            #expect(e.message.contains(answer == "nothing" ? "did not happen" : "central"), "\(answer): \(e)")
            #expect(try !m.updateParameters(0x40, Self.wished, now: 6).isEmpty, "\(answer): another request may follow")
        }
    }

    @Test("L2CAP/LE/CPU/BI-02-C: A parameter update request to a peripheral is rejected") func parameterUpdateRequestToAPeripheralIsRejectedAsNotUnderstood() {
        var m = connected(0x40, role: .peripheral)
        let a = signaling(&m, 0x40, signalingPayload(0x12, 3, le16(24) + le16(40) + le16(0) + le16(400)))
        #expect(a.l2capFrames.first?.1 == [6, 0, 5, 0] + signalingPayload(0x01, 3, [0, 0]))
    }

    @Test("A signaling command over our MTUsig (23) gets Command Reject, Signaling MTU Exceeded")
    func aCommandOverTheSignalingMTUIsRejected() {
        var m = connected(0x40)
        let long = signalingPayload(0x14, 9, [UInt8](repeating: 0x41, count: 26))
        let a = signaling(&m, 0x40, long)
        #expect(a.l2capFrames.first?.1 == [8, 0, 5, 0] + signalingPayload(0x01, 9, [0x01, 0x00] + le16(23)))
        #expect(routedCode(&m, 0x40, long) == nil, "not handed to the channels")
        // A long Command Reject is dropped, not answered.
        #expect(signaling(&m, 0x40, signalingPayload(0x01, 9, [UInt8](repeating: 0, count: 26))).isEmpty)
        // Within the MTU, a command is read as ever (ECRED with five CIDs, 22 octets: not understood).
        let ecred = signalingPayload(0x17, 4, le16(0x80) + le16(100) + le16(100) + le16(5) + (0x40 ..< 0x45).flatMap { le16($0) })
        #expect(ecred.count == 22)
        #expect(signaling(&m, 0x40, ecred).l2capFrames.first?.1 == [6, 0, 5, 0] + signalingPayload(0x01, 4, [0, 0]))
    }

    @Test("L2CAP/LE/REJ/BI-02-C (part): Unknown signaling codes get Command Reject") func unknownSignalingCodesGetCommandReject() {
        var m = connected(0x40)
        // Echo request (BR/EDR only) and a reserved code.
        for code: UInt8 in [0x08, 0x7F] {
            let a = signaling(&m, 0x40, signalingPayload(code, 9, [1, 2, 3]))
            #expect(a.l2capFrames.first?.1 == [6, 0, 5, 0] + signalingPayload(0x01, 9, [0, 0]))
        }
        #expect(m.statistics.rejectedSignaling == 2)
        // A malformed request with a readable identifier is rejected too; a malformed reject is not answered.
        #expect(signaling(&m, 0x40, signalingPayload(0x12, 4, [1, 2])).l2capFrames.count == 1)
        #expect(signaling(&m, 0x40, [0x01, 4, 9, 0]).isEmpty)
        #expect(m.statistics.malformedSignaling == 2)
    }

    @Test func creditChannelCommandsGoToTheirMachineOthersAreAnsweredHere() {
        var m = connected(0x40)
        // LE Credit Based Connection Request, Flow Control Credit, Disconnection Request: routed.
        #expect(routedCode(&m, 0x40, signalingPayload(0x14, 2, le16(0x80) + le16(0x40) + le16(100) + le16(100) + le16(5)))
                == .leCreditBasedConnectionRequest)
        #expect(routedCode(&m, 0x40, signalingPayload(0x16, 3, le16(0x40) + le16(1))) == .flowControlCreditIndication)
        #expect(routedCode(&m, 0x40, signalingPayload(0x06, 4, le16(0x40) + le16(0x41))) == .disconnectionRequest)
        // Enhanced credit-based channels are not offered: their requests (0x17, 0x19) get Command
        // Reject, not understood (L2CAP/LE/REJ/BI-02-C).
        let a = signaling(&m, 0x40, signalingPayload(0x17, 5, le16(0x80) + le16(100) + le16(100) + le16(5) + le16(0x40) + le16(0x41)))
        #expect(a.l2capFrames.first?.1 == [6, 0, 5, 0] + signalingPayload(0x01, 5, [0, 0]))
        let b = signaling(&m, 0x40, signalingPayload(0x19, 6, le16(100) + le16(100) + le16(0x40)))
        #expect(b.l2capFrames.first?.1 == [6, 0, 5, 0] + signalingPayload(0x01, 6, [0, 0]))
        #expect(m.statistics.unmatchedSignalingResponses == 0)
    }

    @Test("L2CAP/COS/CED/BI-29-C (part): Responses reach the channels only for their requests") func responsesReachTheChannelsOnlyForTheirRequests() {
        var m = connected(0x40)
        guard let id = m.allocateSignalingIdentifier(handle: 0x40) else { Issue.record("no link"); return }
        #expect(id == 1)
        #expect(m.allocateSignalingIdentifier(handle: 0x41) == nil, "no such link")
        let response = signalingPayload(0x15, id, le16(0x40) + le16(100) + le16(100) + le16(5) + le16(0))
        #expect(routedCode(&m, 0x40, response) == .leCreditBasedConnectionResponse)
        // The same identifier again, one never used, a reject of nothing: counted, not routed.
        #expect(routedCode(&m, 0x40, response) == nil)
        #expect(routedCode(&m, 0x40, signalingPayload(0x07, 77, le16(0x40) + le16(0x41))) == nil)
        #expect(routedCode(&m, 0x40, signalingPayload(0x01, 78, [0, 0])) == nil)
        // A Command Reject of a request the channels sent is theirs.
        guard let next = m.allocateSignalingIdentifier(handle: 0x40) else { return }
        #expect(routedCode(&m, 0x40, signalingPayload(0x01, next, [0, 0])) == .commandReject)
        // An indication's identifier is the link's next one but awaits nothing: a reject of it
        // is not the channels'.
        guard let indication = m.allocateSignalingIdentifier(handle: 0x40, awaitingResponse: false) else { return }
        #expect(indication == next + 1)
        #expect(routedCode(&m, 0x40, signalingPayload(0x01, indication, [0, 0])) == nil)
        // Answers to requests this host never sends.
        _ = signaling(&m, 0x40, signalingPayload(0x13, 9, le16(0)))
        #expect(m.statistics.unmatchedSignalingResponses == 5)
    }

    @Test func identifiersOfUnansweredRequestsComeBackWhenTheyExpire() {
        // A peer that answers nothing: 255 requests hold every identifier; one expiring frees
        // its own, and the next request gets that one, not one still awaited.
        var m = connected(0x40)
        var ids: Set<UInt8> = []
        for _ in 0 ..< 255 { if let id = m.allocateSignalingIdentifier(handle: 0x40) { ids.insert(id) } }
        #expect(ids.count == 255)
        m.releaseSignalingIdentifier(handle: 0x40, 77)
        #expect(m.allocateSignalingIdentifier(handle: 0x40) == 77)
        // A late answer to an expired request is stray.
        m.releaseSignalingIdentifier(handle: 0x40, 78)
        #expect(routedCode(&m, 0x40, signalingPayload(0x15, 78, le16(0x40) + le16(100) + le16(100) + le16(5) + le16(0))) == nil)
    }

    @Test("GAP/BOND/NBON/BV-03-C (part): Without a Security Manager a Pairing Request is refused") func smpPairingRequestIsRefusedOthersIgnored() {
        var m = connected(0x40)
        let req: [UInt8] = [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07]
        let a = req.withUnsafeBytes { m.receivedSMP(handle: 0x40, payload: $0) }
        #expect(a.l2capFrames.first?.1 == [2, 0, 6, 0, 0x05, 0x05])
        let sec: [UInt8] = [0x0B, 0x01]
        #expect(sec.withUnsafeBytes { m.receivedSMP(handle: 0x40, payload: $0) }.isEmpty)
        #expect(m.statistics.pairingRequestsRefused == 1 && m.statistics.smpIgnored == 1)
    }

    @Test func linkUpdatesAreRecorded() {
        var m = connected(0x40)
        _ = feed(&m, eventBytes(LEConnectionUpdateComplete(status: .success, connectionHandle: 0x40, connectionInterval: 6,
                                                           peripheralLatency: 2, supervisionTimeout: 300)))
        _ = feed(&m, eventBytes(LEDataLengthChange(connectionHandle: 0x40, maxTxOctets: 251, maxTxTime: 2120,
                                                   maxRxOctets: 251, maxRxTime: 2120)))
        let a = feed(&m, eventBytes(LEPHYUpdateComplete(status: .success, connectionHandle: 0x40, txPHY: .le2M, rxPHY: .le2M)))
        guard case .linkUpdated(let s) = a.first else { Issue.record("expected linkUpdated"); return }
        #expect(s.interval == 6 && s.latency == 2 && s.supervisionTimeout == 300)
        #expect(s.maxTxOctets == 251 && s.maxRxOctets == 251 && s.txPHY == .le2M && s.rxPHY == .le2M)
        #expect(m.link(0x40) == s)
        var t = s
        t.interval = 9
        #expect(t.description.hasPrefix("handle 0x0040 Central, interval 11.25 ms"))
        #expect(s.description == "handle 0x0040 Central, interval 7.5 ms, latency 2, timeout 3000 ms, LE 2M/LE 2M, 251/251 octets")
    }

    @Test func remoteFeaturesAreReadAndRecorded() {
        var m = connected(0x40)
        #expect(m.link(0x40)?.remoteFeatures == nil)
        let features = LEFeatures(rawValue: 0x0000_0000_0000_0121)
        let a = feed(&m, eventBytes(LEReadRemoteFeaturesComplete(status: .success, connectionHandle: 0x40, leFeatures: features)))
        guard case .linkUpdated(let s) = a.first else { Issue.record("expected linkUpdated"); return }
        #expect(s.remoteFeatures == features)
        // A failed read leaves it unknown.
        var n = connected(0x41)
        #expect(feed(&n, eventBytes(LEReadRemoteFeaturesComplete(status: .unsupportedRemoteFeature, connectionHandle: 0x41,
                                                                  leFeatures: LEFeatures(rawValue: 0)))).isEmpty)
        #expect(n.link(0x41)?.remoteFeatures == nil)
    }

    @Test func connectionUpdateOnRequestWithinTheSpecLimits() throws {
        var m = connected(0x40)
        let a = try m.updateParameters(0x40, L2CAPConnectionParameters(intervalMin: 6, intervalMax: 12, peripheralLatency: 0,
                                                                      timeoutMultiplier: 100), now: 0)
        #expect(a.commands == [.leConnectionUpdate])
        #expect(throws: HostError.self) {
            _ = try m.updateParameters(0x40, L2CAPConnectionParameters(intervalMin: 12, intervalMax: 6, peripheralLatency: 0,
                                                                      timeoutMultiplier: 100), now: 0)
        }
        #expect(throws: HostError.self) {
            _ = try m.updateParameters(0x99, L2CAPConnectionParameters(intervalMin: 6, intervalMax: 12, peripheralLatency: 0,
                                                                      timeoutMultiplier: 100), now: 0)
        }
    }

    @Test("GAP/CONN/CPUP/BV-06-C (part): Connection update ends with the event or the refusal") func connectionUpdateProcedureEndsWithTheEventOrTheRefusal() throws {
        var m = connected(0x40)
        _ = try m.updateParameters(0x40, L2CAPConnectionParameters(intervalMin: 6, intervalMax: 12, peripheralLatency: 1,
                                                                  timeoutMultiplier: 100), now: 0)
        // Success: the link's new parameters, then the procedure's result with the same state.
        var a = feed(&m, eventBytes(LEConnectionUpdateComplete(status: .success, connectionHandle: 0x40, connectionInterval: 12,
                                                               peripheralLatency: 1, supervisionTimeout: 100)))
        guard a.count == 2, case .linkUpdated(let s) = a[0], case .parametersUpdated(0x40, .success(let t)) = a[1] else {
            Issue.record("expected linkUpdated + parametersUpdated, got \(a)"); return
        }
        #expect(s == t && t.interval == 12 && t.latency == 1 && t.supervisionTimeout == 100)
        // The procedure failed in the link layer: the status, the link unchanged.
        a = feed(&m, eventBytes(LEConnectionUpdateComplete(status: .unsupportedRemoteFeature, connectionHandle: 0x40,
                                                           connectionInterval: 0, peripheralLatency: 0, supervisionTimeout: 0)))
        guard a.count == 1, case .parametersUpdated(0x40, .failure(let e)) = a[0] else {
            Issue.record("expected a failed parametersUpdated, got \(a)"); return
        }
        #expect(e.kind == .commandFailed(.unsupportedRemoteFeature))
        #expect(m.link(0x40)?.interval == 12)
        // The controller refused the command (Command Status error): no event will come.
        a = m.commandAnswered(.connectionUpdate(handle: 0x40), .failure(HostError(.commandFailed(.commandDisallowed), "Command Disallowed")), now: 0)
        guard case .parametersUpdated(0x40, .failure(let r))? = a.first else { Issue.record("expected the refusal"); return }
        #expect(r.kind == .commandFailed(.commandDisallowed) && r.message.hasPrefix("LE Connection Update refused"))
        // A completion for a link we do not have is counted, not acted on.
        a = feed(&m, eventBytes(LEConnectionUpdateComplete(status: .success, connectionHandle: 0x99, connectionInterval: 12,
                                                           peripheralLatency: 0, supervisionTimeout: 100)))
        #expect(a.isEmpty && m.statistics.unknownHandleEvents == 1)
    }

    // MARK: PHY and data length

    func phyUpdateComplete(_ status: UInt8 = 0, handle: UInt16 = 0x40, tx: UInt8, rx: UInt8) -> [UInt8] {
        [0x3E, 0x06, 0x0C, status, UInt8(handle & 0xFF), UInt8(handle >> 8), tx, rx]
    }

    var phyResults: (([ConnectionAction]) -> [Result<LELinkState, HostError>]) {
        { $0.compactMap { if case .phyUpdated(_, let r) = $0 { r } else { nil } } }
    }

    @Test("LE Set PHY: its LE PHY Update Complete ends the request, changed or not; one at a time")
    func phyRequestEndsWithTheUpdate() throws {
        var m = connected()
        var a = try m.setPHY(0x40, tx: .le2M, rx: .le2M, now: 0)
        #expect(a.commands == [.leSetPHY])
        #expect(m.nextDeadline == LEConnectionManager.phyUpdateTimeout)
        #expect(throws: HostError.self) { _ = try m.setPHY(0x40, tx: .le1M, rx: .le1M, now: 0) }
        #expect(m.commandAnswered(.setPHY(handle: 0x40), ok, now: 1).isEmpty, "Command Status: the update follows")
        a = feed(&m, phyUpdateComplete(tx: 2, rx: 2))
        let state = try #require(try phyResults(a).first?.get())
        #expect(state.txPHY == .le2M && state.rxPHY == .le2M && m.link(0x40)?.txPHY == .le2M)
        #expect(a.contains { if case .linkUpdated = $0 { true } else { false } })
        // Unchanged is an answer too; a peer's own update only updates the link.
        _ = try m.setPHY(0x40, tx: .le2M, rx: .le2M, now: 0)
        #expect(try phyResults(feed(&m, phyUpdateComplete(tx: 2, rx: 2))).first?.get().txPHY == .le2M)
        a = feed(&m, phyUpdateComplete(tx: 1, rx: 2))
        #expect(phyResults(a).isEmpty && m.link(0x40)?.txPHY == .le1M)
        #expect(m.nextDeadline == nil)
    }

    @Test("A PHY request refused, failed by status, or never reported ends with the error; the link stays")
    func phyRequestFailures() throws {
        var m = connected()
        _ = try m.setPHY(0x40, tx: .leCoded, rx: .leCoded, now: 0)
        let refused = Result<CommandReturn, HostError>.failure(HostError(.commandFailed(.unsupportedFeatureOrParameterValue), "unsupported"))
        var a = m.commandAnswered(.setPHY(handle: 0x40), refused, now: 1)
        #expect(phyResults(a).first.map { if case .failure(let e) = $0 { e.message.hasPrefix("LE Set PHY refused") } else { false } } == true)
        _ = try m.setPHY(0x40, tx: .le2M, rx: .le2M, now: 0)
        a = feed(&m, phyUpdateComplete(0x1A, tx: 1, rx: 1))   // Unsupported Remote Feature
        #expect(phyResults(a).count == 1 && m.link(0x40)?.txPHY == .le1M)
        _ = try m.setPHY(0x40, tx: .le2M, rx: .le2M, now: 10)
        #expect(m.timerFired(now: 10 + LEConnectionManager.phyUpdateTimeout - 1).isEmpty)
        a = m.timerFired(now: 10 + LEConnectionManager.phyUpdateTimeout)
        #expect(phyResults(a).count == 1 && m.link(0x40) != nil)
        #expect(throws: HostError.self) { _ = try m.setPHY(0x99, tx: .le2M, rx: .le2M, now: 0) }
        #expect(throws: HostError.self) { _ = try m.setPHY(0x40, tx: [], rx: .le2M, now: 0) }
    }

    @Test("LE Set Data Length: the limits checked, its answer ends the request, Data Length Change updates the link")
    func dataLength() throws {
        var m = connected()
        #expect(throws: HostError.self) { _ = try m.setDataLength(0x40, txOctets: 252, txTime: 2120) }
        #expect(throws: HostError.self) { _ = try m.setDataLength(0x40, txOctets: 251, txTime: 327) }
        let a = try m.setDataLength(0x40, txOctets: 251, txTime: 2120)
        #expect(a.commands == [.leSetDataLength])
        let done = m.commandAnswered(.setDataLength(handle: 0x40), ok, now: 1)
        #expect(done.contains { if case .dataLengthSet(0x40, .success) = $0 { true } else { false } })
        _ = feed(&m, [0x3E, 0x0B, 0x07, 0x40, 0x00, 0xFB, 0x00, 0x48, 0x08, 0xFB, 0x00, 0x48, 0x08])
        let link = try #require(m.link(0x40))
        #expect(link.maxTxOctets == 251 && link.maxRxTime == 2120)
    }
}
