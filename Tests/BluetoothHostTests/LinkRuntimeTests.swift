import FakeController
import BluetoothWire
import Testing
@testable import BluetoothHost

/// The LinkRuntime's own rules, without a controller.
@Suite struct LinkRuntimeTests {
    @Test func aHeldDisconnectGoesWhenTheDataLeftOrItsTimeIsUp() {
        var links = LinkRuntime()
        links.deferDisconnect(0x41, reason: .remoteUserTerminatedConnection, now: 0)
        links.deferDisconnect(0x40, reason: .authenticationFailure, now: 0)
        #expect(links.hasDeferredDisconnects && links.nextDeadline == LinkRuntime.disconnectHold)
        var queued: [UInt16: Int] = [0x40: 2, 0x41: 1]
        #expect(links.disconnectsDue(now: 1, queued: { queued[$0] ?? 0 }).isEmpty, "both links still have data queued")
        queued[0x41] = 0
        let first = links.disconnectsDue(now: 2, queued: { queued[$0] ?? 0 })
        #expect(first.map(\.handle) == [0x41] && first.first?.reason == .remoteUserTerminatedConnection)
        let late = links.disconnectsDue(now: LinkRuntime.disconnectHold, queued: { queued[$0] ?? 0 })
        #expect(late.map(\.handle) == [0x40] && late.first?.reason == .authenticationFailure, "at most the hold, data or not")
        #expect(!links.hasDeferredDisconnects && links.nextDeadline == nil)
    }

    @Test func closingFailsEveryConnectStillWaiting() async {
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<LEConnection, HostError>, Never>) in
            var links = LinkRuntime()
            _ = links.connect(ConnectRequestID(rawValue: 1), to: peerA, parameters: LEConnectParameters(), timeout: 1_000_000_000, now: 0, c)
            #expect(!links.awaitsNoConnection)
            links.closeAll(.hostClosed)
            #expect(links.awaitsNoConnection && links.isEmpty)
        }
        guard case .failure(let e) = result else {
            Issue.record("connected")
            return
        }
        #expect(e.kind == HostError.hostClosed.kind)
    }
}
