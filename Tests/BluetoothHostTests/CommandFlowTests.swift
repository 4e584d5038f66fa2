import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

@Suite struct CommandFlowTests {
    let t1 = CommandToken(rawValue: 1), t2 = CommandToken(rawValue: 2), t3 = CommandToken(rawValue: 3)

    @Test func oneCreditAtStartThenCreditsFromTheController() {
        var flow = HCICommandFlow()
        #expect(flow.submit(h4(ResetCommand()), opcode: .reset, token: t1, now: 0).sentOpcodes == [.reset])
        // No credit left: the second command waits.
        #expect(flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 0).isEmpty)
        #expect(flow.queuedCount == 1)
        // Reset completes and grants 1 credit: the queued command goes out.
        let actions = withEvent(commandComplete(.reset, credits: 1)) { flow.handleEvent($0, now: 10) }
        #expect(actions.completions.count == 1)
        #expect(actions.completions.first?.0 == t1)
        #expect(actions.sentOpcodes == [.readBDADDR])
    }

    @Test func twoOutstandingDifferentOpcodesMatchedByOpcode() {
        var flow = HCICommandFlow()
        _ = withEvent(commandComplete(.nop, credits: 2, [])) { flow.handleEvent($0, now: 0) }
        #expect(flow.credits == 2)
        #expect(flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t1, now: 0).sentOpcodes == [.readBDADDR])
        #expect(flow.submit(h4(LEReadLocalSupportedFeaturesCommand()), opcode: .leReadLocalSupportedFeatures,
                            token: t2, now: 0).sentOpcodes == [.leReadLocalSupportedFeatures])
        #expect(flow.outstandingCount == 2)
        // Answers arrive in the other order.
        let a = withEvent(commandComplete(.leReadLocalSupportedFeatures, credits: 1, [0, 1, 0, 0, 0, 0, 0, 0, 0])) {
            flow.handleEvent($0, now: 1)
        }
        #expect(a.completions.map(\.0) == [t2])
        if case .success(let r) = a.completions.first?.1 {
            #expect(r.returnParameters == [0, 1, 0, 0, 0, 0, 0, 0, 0])
            #expect(r.status == .success)
        } else { Issue.record("expected success") }
        let b = withEvent(commandComplete(.readBDADDR, credits: 1, [0, 1, 2, 3, 4, 5, 6])) { flow.handleEvent($0, now: 2) }
        #expect(b.completions.map(\.0) == [t1])
        #expect(flow.isIdle)
    }

    @Test func sameOpcodeWaitsForTheFirstToBeAnswered() {
        var flow = HCICommandFlow()
        _ = withEvent(commandComplete(.nop, credits: 5, [])) { flow.handleEvent($0, now: 0) }
        #expect(flow.submit(h4(ReadLocalVersionInformationCommand()), opcode: .readLocalVersionInformation, token: t1, now: 0).sentOpcodes == [.readLocalVersionInformation])
        #expect(flow.submit(h4(ReadLocalVersionInformationCommand()), opcode: .readLocalVersionInformation, token: t2, now: 0).isEmpty)
        let a = withEvent(commandComplete(.readLocalVersionInformation, credits: 5, [0, 1, 2, 3, 4, 5, 6, 7, 8])) { flow.handleEvent($0, now: 1) }
        #expect(a.completions.map(\.0) == [t1])
        #expect(a.sentOpcodes == [.readLocalVersionInformation])
    }

    @Test func commandStatusCompletesTheCommandAndReturnsCredits() {
        var flow = HCICommandFlow()
        _ = flow.submit(h4(LECreateConnectionCancelCommand()), opcode: .leCreateConnectionCancel, token: t1, now: 0)
        _ = flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 0)
        let actions = withEvent(commandStatus(.leCreateConnectionCancel)) { flow.handleEvent($0, now: 1) }
        guard case .success(let r) = actions.completions.first?.1 else { Issue.record("expected success"); return }
        #expect(r.isCommandStatus)
        #expect(r.returnParameters.isEmpty)
        #expect(actions.sentOpcodes == [.readBDADDR])
    }

    @Test func failedStatusIsATypedErrorWithTheName() {
        var flow = HCICommandFlow()
        _ = flow.submit(h4(LESetScanEnableCommand(enable: true)), opcode: .leSetScanEnable, token: t1, now: 0)
        let a = withEvent(commandComplete(.leSetScanEnable, [0x0C])) { flow.handleEvent($0, now: 1) }
        guard case .failure(let e) = a.completions.first?.1 else { Issue.record("expected failure"); return }
        #expect(e.kind == .commandFailed(.commandDisallowed))
        #expect(e.message == "HCI_LE_Set_Scan_Enable (0x200C) failed: Command Disallowed (0x0C)")
        _ = flow.submit(h4(LECreateConnectionCancelCommand()), opcode: .leCreateConnectionCancel, token: t2, now: 1)
        let b = withEvent(commandStatus(.leCreateConnectionCancel, status: .unknownHCICommand)) { flow.handleEvent($0, now: 2) }
        guard case .failure(let e2) = b.completions.first?.1 else { Issue.record("expected failure"); return }
        #expect(e2.kind == .commandFailed(.unknownHCICommand))
        #expect(e2.message.contains("Unknown HCI Command"))
    }

    @Test func timeoutFailsTheCommandAndFreesTheQueue() {
        var flow = HCICommandFlow()
        let setPHY = h4(LESetPHYCommand(connectionHandle: 1, txPHYs: .le1M, rxPHYs: .le1M))
        _ = flow.submit(setPHY, opcode: .leSetPHY, token: t1, now: 0)
        _ = flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 0)
        #expect(flow.nextDeadline == 5 * second)
        #expect(flow.timerFired(now: 5 * second - 1).isEmpty)
        let actions = flow.timerFired(now: 5 * second)
        guard case .failure(let e) = actions.completions.first?.1 else { Issue.record("expected timeout"); return }
        #expect(actions.completions.first?.0 == t1)
        #expect(e.kind == .commandTimeout)
        #expect(e.message == "controller did not answer HCI_LE_Set_PHY (0x2032) within 5 s")
        // The slot is free: the queued command went out and has its own deadline.
        #expect(actions.sentOpcodes == [.readBDADDR])
        #expect(flow.nextDeadline == 10 * second)
        #expect(flow.timeouts == 1)
    }

    @Test func perCommandTimeoutOverride() {
        var flow = HCICommandFlow(defaultTimeout: 5 * second)
        _ = flow.submit(h4(LEReadBufferSizeV2Command()), opcode: .leReadBufferSizeV2, token: t1, now: 100, timeout: second / 2)
        #expect(flow.nextDeadline == 100 + second / 2)
        let a = flow.timerFired(now: 100 + second / 2)
        guard case .failure(let e) = a.completions.first?.1 else { Issue.record("expected timeout"); return }
        #expect(e.message.hasSuffix("within 500 ms"))
    }

    @Test func nopOnlyReturnsCredits() {
        var flow = HCICommandFlow()
        _ = flow.submit(h4(ResetCommand()), opcode: .reset, token: t1, now: 0)
        // Controller with 0 credits after the reset completes: nothing can go out...
        _ = withEvent(commandComplete(.reset, credits: 0)) { flow.handleEvent($0, now: 1) }
        #expect(flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 1).isEmpty)
        // ...until a NOP returns credits. The NOP completes nothing.
        let a = withEvent(commandComplete(.nop, credits: 1, [])) { flow.handleEvent($0, now: 2) }
        #expect(a.completions.isEmpty)
        #expect(a.sentOpcodes == [.readBDADDR])
        #expect(flow.unmatchedAnswers == 0)
    }

    @Test func zeroCreditsWithoutNOPDoesNotWedgeForever() {
        var flow = HCICommandFlow()
        _ = flow.submit(h4(ResetCommand()), opcode: .reset, token: t1, now: 0)
        _ = withEvent(commandComplete(.reset, credits: 0)) { flow.handleEvent($0, now: 1) }
        _ = flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 1)
        #expect(flow.nextDeadline == 1 + 5 * second)
        #expect(flow.timerFired(now: 1 + 5 * second).sentOpcodes == [.readBDADDR])
    }

    @Test func unmatchedAnswerIsCountedAndIgnored() {
        var flow = HCICommandFlow()
        let a = withEvent(commandComplete(.readBDADDR, credits: 1, [0, 1, 2, 3, 4, 5, 6])) { flow.handleEvent($0, now: 0) }
        #expect(a.isEmpty)
        #expect(flow.unmatchedAnswers == 1)
    }

    @Test func failAllCompletesQueuedAndOutstanding() {
        var flow = HCICommandFlow()
        _ = flow.submit(h4(ResetCommand()), opcode: .reset, token: t1, now: 0)
        _ = flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 0)
        let a = flow.failAll(HostError(.transportClosed, "closed"))
        #expect(Set(a.completions.map(\.0)) == [t1, t2])
        #expect(flow.isIdle)
        #expect(flow.nextDeadline == nil)
    }

    @Test func cancelRemovesAQueuedCommand() {
        var flow = HCICommandFlow()
        _ = flow.submit(h4(ResetCommand()), opcode: .reset, token: t1, now: 0)
        _ = flow.submit(h4(ReadBDADDRCommand()), opcode: .readBDADDR, token: t2, now: 0)
        #expect(flow.cancel(t2, error: HostError(.cancelled, "x")).completions.map(\.0) == [t2])
        #expect(flow.cancel(t1, error: HostError(.cancelled, "x")).isEmpty)  // already sent
        let a = withEvent(commandComplete(.reset)) { flow.handleEvent($0, now: 1) }
        #expect(a.sentOpcodes.isEmpty)
    }
}
