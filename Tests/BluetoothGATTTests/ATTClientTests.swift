import BluetoothWire
import Testing
@testable import BluetoothGATT

/// The sans-I/O ATT client driven directly: time and PDUs are inputs.
@Suite struct ATTClientTests {
    func sent(_ actions: [ATTClientAction]) -> [[UInt8]] {
        actions.compactMap { if case .send(let p) = $0 { p } else { nil } }
    }

    func completions(_ actions: [ATTClientAction]) -> [(ATTRequestID, Result<ATTResponse, GATTError>)] {
        actions.compactMap { if case .complete(let id, let r) = $0 { (id, r) } else { nil } }
    }

    @Test("GATT/CL/GAR/BV-01-C (part): One request outstanding, the others queued in order") func oneOutstandingRequestOthersQueuedInOrder() throws {
        var c = ATTClient()
        let (a, a1) = c.submit(.read(handle: 3), now: 0)
        let (b, b1) = c.submit(.read(handle: 4), now: 1)
        #expect(sent(a1) == [[0x0A, 0x03, 0x00]])
        #expect(sent(b1).isEmpty)
        #expect(c.queuedCount == 1)
        #expect(c.nextDeadline == 30_000_000_000)
        // A Write Command goes out at once, even with a request outstanding.
        let command = try c.writeCommand(handle: 9, value: [1])
        #expect(sent(command) == [[0x52, 9, 0, 1]])
        let r1 = c.receive([0x0B, 0xAA], now: 2)
        #expect(completions(r1).map(\.0) == [a])
        #expect(sent(r1) == [[0x0A, 0x04, 0x00]])
        let r2 = c.receive([0x0B, 0xBB], now: 3)
        #expect(completions(r2).map(\.0) == [b])
        if case .success(.read(let v)) = completions(r2).first?.1 { #expect(v == [0xBB]) } else { Issue.record("no read") }
        #expect(c.requestsSent == 2)
        #expect(c.nextDeadline == nil)
    }

    @Test("GATT/CL/GAC/BV-01-C (part): Exchange MTU takes the minimum, at least 23") func exchangeMTUUsesTheMinimumAndAtLeast23() {
        var c = ATTClient(maximumMTU: 517)
        _ = c.submit(.exchangeMTU(clientRxMTU: 517), now: 0)
        let a = c.receive([0x03, 0xF7, 0x00], now: 1) // server 247
        #expect(c.mtu == 247)
        #expect(a.contains { if case .mtuChanged(247) = $0 { true } else { false } })
        var d = ATTClient(maximumMTU: 517)
        _ = d.submit(.exchangeMTU(clientRxMTU: 517), now: 0)
        _ = d.receive([0x03, 0x10, 0x00], now: 1) // server claims 16: invalid, stays 23
        #expect(d.mtu == 23)
        #expect(d.mtuExchanged)
    }

    @Test("GATT/CL/GAR/BI-04-C: Insufficient Authentication is a typed error with opcode and handle") func errorResponseIsTypedWithNameOpcodeAndHandle() {
        var c = ATTClient()
        let (id, _) = c.submit(.read(handle: 0x0021), now: 0)
        let a = c.receive([0x01, 0x0A, 0x21, 0x00, 0x05], now: 1)
        guard case .failure(let e)? = completions(a).first(where: { $0.0 == id })?.1 else {
            Issue.record("no failure")
            return
        }
        #expect(e == .attError(.insufficientAuthentication, request: .readRequest, handle: 0x0021))
        #expect(e.description.contains("Insufficient Authentication"))
        #expect(e.description.contains("ATT_READ_REQ"))
        #expect(e.description.contains("0x0021"))
        #expect(c.deadReason == nil)
    }

    @Test("GATT/CL/GAT/BV-01-C (ATT part): The transaction timeout ends the bearer") func transactionTimeoutKillsTheBearer() {
        var c = ATTClient(transactionTimeout: .milliseconds(100))
        let (a, _) = c.submit(.read(handle: 1), now: 0)
        let (b, _) = c.submit(.read(handle: 2), now: 0)
        #expect(c.timerFired(now: 99_999_999).isEmpty)
        let t = c.timerFired(now: 100_000_000)
        let failed = completions(t)
        #expect(failed.map(\.0) == [a, b])
        let expected = GATTError.transactionTimeout(request: .readRequest, timeout: .milliseconds(100))
        for (_, r) in failed {
            if case .failure(let e) = r { #expect(e == expected) } else { Issue.record("succeeded") }
        }
        #expect(expected.description.contains("timeout"))
        #expect(c.deadReason == expected)
        // Later requests fail with the same error; nothing more is sent, not even a late response.
        let (_, later) = c.submit(.read(handle: 3), now: 200_000_000)
        #expect(sent(later).isEmpty)
        if case .failure(let e)? = completions(later).first?.1 { #expect(e == expected) } else { Issue.record("later succeeded") }
        #expect(c.receive([0x0B, 0x01], now: 300_000_000).isEmpty)
        #expect(c.nextDeadline == nil)
    }

    @Test func malformedResponseFailsOnlyThatRequest() {
        var c = ATTClient()
        let (a, _) = c.submit(.readByGroupType(start: 1, end: 0xFFFF, type: BluetoothUUID(0x2800)), now: 0)
        let (b, _) = c.submit(.read(handle: 1), now: 0)
        // Length 6, but 5 bytes of data.
        let r = c.receive([0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00], now: 1)
        guard case .failure(.malformedResponse(let op, _))? = completions(r).first(where: { $0.0 == a })?.1 else {
            Issue.record("not malformed")
            return
        }
        #expect(op == .readByGroupTypeRequest)
        #expect(sent(r) == [[0x0A, 0x01, 0x00]])
        let r2 = c.receive([0x0B, 0x42], now: 2)
        #expect(completions(r2).first?.0 == b)
        #expect(c.deadReason == nil)
        // A response of the wrong kind: also that request only.
        let (d, _) = c.submit(.read(handle: 1), now: 3)
        let r3 = c.receive([0x13], now: 4)
        guard case .failure(.malformedResponse)? = completions(r3).first(where: { $0.0 == d })?.1 else {
            Issue.record("wrong kind accepted")
            return
        }
        #expect(c.deadReason == nil)
    }

    @Test func unsolicitedResponseKillsTheBearer() {
        var c = ATTClient()
        let a = c.receive([0x0B, 0x01], now: 0)
        guard case .failed(.protocolViolation(let detail))? = a.last else {
            Issue.record("not fatal")
            return
        }
        #expect(detail.contains("ATT_READ_RSP"))
        #expect(c.deadReason != nil)
    }

    @Test("GATT/CL/GAI/BV-01-C (part): Indications are confirmed only when asked") func indicationsConfirmedOnlyWhenAsked() {
        var c = ATTClient()
        let a = c.receive([0x1D, 0x05, 0x00, 0x01, 0x02], now: 0)
        #expect(sent(a).isEmpty)
        guard case .indication(5, [1, 2])? = a.first else {
            Issue.record("no indication")
            return
        }
        #expect(c.unconfirmedIndications == 1)
        #expect(sent(c.confirmIndication()) == [[0x1E]])
        #expect(c.unconfirmedIndications == 0)
        let n = c.receive([0x1B, 0x05, 0x00, 0x09], now: 1)
        guard case .notification(5, [9])? = n.first else {
            Issue.record("no notification")
            return
        }
        let m = c.receive([0x23, 0x05, 0x00, 0x01, 0x00, 0x07, 0x06, 0x00, 0x02, 0x00, 0x08, 0x09], now: 2)
        #expect(m.count == 2)
    }

    @Test("Requests to a client-only bearer: Request Not Supported with handle 0x0000") func peerRequestsAreAnsweredRequestNotSupported() {
        var c = ATTClient(maximumMTU: 100)
        #expect(sent(c.receive([0x0A, 0x03, 0x00], now: 0)) == [[0x01, 0x0A, 0x00, 0x00, 0x06]], "Request Not Supported names handle 0x0000")
        // Exchange MTU from the peer: answered, and the MTU applies.
        #expect(sent(c.receive([0x02, 0x40, 0x00], now: 0)) == [[0x03, 100, 0]])
        #expect(c.mtu == 64)
        // Unknown command: ignored; malformed notification: reported.
        #expect(sent(c.receive([0x7F, 1], now: 0)).isEmpty)
        let bad = c.receive([0x1B, 0x01], now: 0)
        guard case .peerFault? = bad.first else {
            Issue.record("not reported")
            return
        }
        #expect(c.peerFaults == 2)
    }

    @Test func tooLongRequestFailsWithoutSending() {
        var c = ATTClient()
        let (_, a) = c.submit(.write(handle: 1, value: [UInt8](repeating: 0, count: 30)), now: 0)
        #expect(sent(a).isEmpty)
        guard case .failure(.invalidRequest)? = completions(a).first?.1 else {
            Issue.record("accepted")
            return
        }
        #expect(c.deadReason == nil)
    }

    @Test func bearerClosedFailsEverythingWithTheReason() {
        var c = ATTClient()
        _ = c.submit(.read(handle: 1), now: 0)
        _ = c.submit(.read(handle: 2), now: 0)
        let reason = ATTBearerClosed(reason: .remoteUserTerminatedConnection, message: "peer left")
        let a = c.bearerClosed(reason)
        #expect(completions(a).count == 2)
        for (_, r) in completions(a) {
            if case .failure(let e) = r { #expect(e == .bearerClosed(reason)) } else { Issue.record("succeeded") }
        }
    }
}
