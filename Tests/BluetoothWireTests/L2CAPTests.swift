import Testing
@testable import BluetoothWire

/// Parses a signaling command, re-encodes it and checks bytes and fields survive.
private func signalingRoundTrip(_ command: L2CAPSignalingCommand) throws -> L2CAPSignalingCommand {
    let bytes = try command.encoded()
    #expect(bytes.count == command.encodedLength)
    let (again, fields) = try withBytes(bytes) { buf in
        let parsed = try L2CAPSignalingCommand(parsing: buf)
        return (try parsed.encoded(), parsed.fields)
    }
    #expect(again == bytes)
    #expect(fields == command.fields)
    return command
}

@Suite struct L2CAPTests {
    @Test func basicFrameCarriesATTNotification() throws {
        let frame = h("08 00 04 00 1B 2A 00 00 6C 01 00 FF")
        let (cid, payload) = try withBytes(frame) { buf in
            let f = try L2CAPBasicFrame(parsing: buf)
            return (f.channelID, Array(f.payload))
        }
        #expect(cid == .att)
        #expect(payload == h("1B 2A 00 00 6C 01 00 FF"))
        let built = try encode(L2CAPFrame(channelID: .att, bytes: payload))
        #expect(built == frame)
        let nested = try encode(L2CAPFrame(channelID: .att, payload: ATTExchangeMTURequest(clientRxMTU: 517)))
        #expect(nested == h("03 00 04 00 02 05 02"))
    }

    @Test func basicFrameLengthMustMatchExactly() {
        #expect(wireError(h("03 00 04 00 02 05")) { try L2CAPBasicFrame(parsing: $0) }?.code == .invalidLength)
        #expect(wireError(h("03 00 04 00 02 05 02 00")) { try L2CAPBasicFrame(parsing: $0) }?.code == .invalidLength)
        #expect(wireError(h("FF FF 04 00")) { try L2CAPBasicFrame(parsing: $0) }?.code == .invalidLength)
        let full = h("03 00 04 00 02 05 02")
        for n in 0 ..< full.count {
            #expect(wireError(Array(full.prefix(n))) { try L2CAPBasicFrame(parsing: $0) } != nil)
        }
        // An empty payload is a valid frame.
        #expect(wireError(h("00 00 05 00")) { try L2CAPBasicFrame(parsing: $0) } == nil)
        #expect(L2CAPChannelID(0x0040).isLEDynamic && L2CAPChannelID(0x007F).isLEDynamic)
        #expect(!L2CAPChannelID(0x0080).isLEDynamic && !L2CAPChannelID.att.isLEDynamic)
    }

    @Test func connectionParameterUpdateRequestFullFrame() throws {
        // L2CAP length 12, CID 5; code 0x12, id 1, length 8; 7.5-15 ms, latency 0, 5 s.
        let frame = h("0C 00 05 00 12 01 08 00 06 00 0C 00 00 00 F4 01")
        let (cid, cmd) = try withBytes(frame) { buf in
            let f = try L2CAPBasicFrame(parsing: buf)
            return (f.channelID, try L2CAPSignalingCommand(parsing: f.payload))
        }
        #expect(cid == .leSignaling)
        guard case .connectionParameterUpdateRequest(let id, let p) = cmd else {
            Issue.record("wrong case \(cmd)")
            return
        }
        #expect(id == 1)
        #expect(p == L2CAPConnectionParameters(intervalMin: 6, intervalMax: 12, peripheralLatency: 0, timeoutMultiplier: 500))
        #expect(p.isWithinSpecRanges)
        #expect(try encode(L2CAPFrame(channelID: .leSignaling, payload: cmd)) == frame)
        #expect(cmd.fieldTitle == "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ")
        #expect(cmd.fields.contains(Field("timeout_multiplier", .uint(500))))
    }

    @Test func knownVectors() throws {
        // Connection parameter update response: rejected.
        let rsp = try withBytes(h("13 01 02 00 01 00")) { try L2CAPSignalingCommand(parsing: $0) }
        guard case .connectionParameterUpdateResponse(1, let result) = rsp else { Issue.record("\(rsp)"); return }
        #expect(result == .rejected)
        // Command reject, not understood.
        let rej = try withBytes(h("01 07 02 00 00 00")) { try L2CAPSignalingCommand(parsing: $0) }
        guard case .commandReject(7, .commandNotUnderstood) = rej else { Issue.record("\(rej)"); return }
        // LE credit based connection request: SPSM 0x0080, SCID 0x0040, MTU 512, MPS 247, 10 credits.
        let req = try withBytes(h("14 02 0A 00 80 00 40 00 00 02 F7 00 0A 00")) { try L2CAPSignalingCommand(parsing: $0) }
        guard case .leCreditBasedConnectionRequest(2, let p) = req else { Issue.record("\(req)"); return }
        #expect(p == L2CAPLECreditBasedConnectionRequest(spsm: 0x80, sourceCID: L2CAPChannelID(0x40), mtu: 512, mps: 247, initialCredits: 10))
        // Unknown code (BR/EDR echo request) is kept raw.
        let echo = try withBytes(h("08 03 02 00 AA BB")) { buf -> (L2CAPSignalingCode, [UInt8]) in
            guard case .unknown(let code, _, let data) = try L2CAPSignalingCommand(parsing: buf) else { return (.commandReject, []) }
            return (code, Array(data))
        }
        #expect(echo.0 == .echoRequest && echo.1 == [0xAA, 0xBB])
    }

    @Test func everyCommandRoundTrips() throws {
        let commands: [L2CAPSignalingCommand] = [
            .commandReject(identifier: 1, reason: .commandNotUnderstood),
            .commandReject(identifier: 2, reason: .signalingMTUExceeded(actualMTU: 23)),
            .commandReject(identifier: 3, reason: .invalidCID(localCID: L2CAPChannelID(0x40), remoteCID: L2CAPChannelID(0x41))),
            .commandReject(identifier: 4, reason: .reserved(0x1234)),
            .disconnectionRequest(identifier: 5, destinationCID: L2CAPChannelID(0x40), sourceCID: L2CAPChannelID(0x41)),
            .disconnectionResponse(identifier: 5, destinationCID: L2CAPChannelID(0x40), sourceCID: L2CAPChannelID(0x41)),
            .connectionParameterUpdateRequest(identifier: 6, L2CAPConnectionParameters(
                intervalMin: 24, intervalMax: 40, peripheralLatency: 4, timeoutMultiplier: 600)),
            .connectionParameterUpdateResponse(identifier: 6, result: .accepted),
            .leCreditBasedConnectionRequest(identifier: 7, L2CAPLECreditBasedConnectionRequest(
                spsm: 0x25, sourceCID: L2CAPChannelID(0x42), mtu: 100, mps: 50, initialCredits: 3)),
            .leCreditBasedConnectionResponse(identifier: 7, L2CAPLECreditBasedConnectionResponse(
                destinationCID: L2CAPChannelID(0x43), mtu: 200, mps: 60, initialCredits: 5, result: .successful)),
            .leCreditBasedConnectionResponse(identifier: 8, L2CAPLECreditBasedConnectionResponse(
                destinationCID: .null, mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported)),
            .flowControlCreditIndication(identifier: 9, cid: L2CAPChannelID(0x40), credits: 8),
            .creditBasedConnectionRequest(identifier: 10, L2CAPCreditBasedConnectionRequest(
                spsm: 0x27, mtu: 64, mps: 64, initialCredits: 2, sourceCIDs: [L2CAPChannelID(0x40), L2CAPChannelID(0x41)])),
            .creditBasedConnectionResponse(identifier: 10, L2CAPCreditBasedConnectionResponse(
                mtu: 64, mps: 64, initialCredits: 2, result: .successful,
                destinationCIDs: [L2CAPChannelID(0x50), L2CAPChannelID(0x51), .null])),
            .creditBasedConnectionResponse(identifier: 11, L2CAPCreditBasedConnectionResponse(
                mtu: 0, mps: 0, initialCredits: 0, result: .insufficientAuthentication, destinationCIDs: [])),
            .creditBasedReconfigureRequest(identifier: 12, L2CAPCreditBasedReconfigureRequest(
                mtu: 128, mps: 64, destinationCIDs: [L2CAPChannelID(0x40)])),
            .creditBasedReconfigureResponse(identifier: 12, result: .mtuReductionNotAllowed),
        ]
        for c in commands { _ = try signalingRoundTrip(c) }
        let raw = h("0A 04 02 00 02 00")
        let again = try withBytes(raw) { try L2CAPSignalingCommand(parsing: $0).encoded() }
        #expect(again == raw)
    }

    @Test func malformedSignalingCommands() {
        let vectors = [
            h("12 01 08 00 06 00 0C 00 00 00 F4 01"),
            h("14 02 0A 00 80 00 40 00 00 02 F7 00 0A 00"),
            h("17 02 0A 00 80 00 40 00 40 00 02 00 40 00"),
            h("01 07 06 00 02 00 40 00 41 00"),
        ]
        for v in vectors {
            #expect(wireError(v) { try L2CAPSignalingCommand(parsing: $0) } == nil)
            for n in 0 ..< v.count {
                #expect(wireError(Array(v.prefix(n))) { try L2CAPSignalingCommand(parsing: $0) } != nil, "prefix \(n) of \(v)")
            }
        }
        let table: [([UInt8], WireError.Code)] = [
            (h("12 00 08 00 06 00 0C 00 00 00 F4 01"), .invalidValue),   // identifier 0 in a request
            (h("12 01 09 00 06 00 0C 00 00 00 F4 01"), .invalidLength),  // length beyond the bytes
            (h("12 01 08 00 06 00 0C 00 00 00 F4 01 00"), .trailingBytes), // byte after the command
            (h("12 01 06 00 06 00 0C 00 00 00"), .truncated),            // length too short for the fields
            (h("13 01 04 00 00 00 00 00"), .trailingBytes),              // data longer than the response
            (h("01 01 04 00 02 00 40 00"), .truncated),                  // invalid CID reject missing remote CID
            (h("17 02 0B 00 80 00 40 00 40 00 02 00 40 00 41"), .invalidLength), // odd CID list
            (h("17 02 08 00 80 00 40 00 40 00 02 00"), .invalidLength),  // no CIDs in a request
            (h("19 03 10 00 40 00 40 00 40 00 41 00 42 00 43 00 44 00 45 00"), .invalidLength), // six CIDs
        ]
        for (bytes, code) in table {
            #expect(wireError(bytes) { try L2CAPSignalingCommand(parsing: $0) }?.code == code, "\(bytes)")
        }
        // Identifier 0 is tolerated in responses.
        #expect(wireError(h("13 00 02 00 00 00")) { try L2CAPSignalingCommand(parsing: $0) } == nil)
    }

    @Test func channelIDListCapacity() {
        var l = L2CAPChannelIDList()
        for i in 0 ..< 5 {
            let ok = l.append(L2CAPChannelID(UInt16(0x40 + i)))
            #expect(ok)
        }
        let sixth = l.append(L2CAPChannelID(0x45))
        #expect(!sixth)
        #expect(l.count == 5 && l[4] == L2CAPChannelID(0x44))
        #expect(L2CAPChannelIDList((0 ..< 6).map { L2CAPChannelID(UInt16($0)) }) == nil)
    }
}
