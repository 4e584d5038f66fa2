import Testing
@testable import BluetoothWire

/// The payload struct inside a parsed event (nil for unknown codes).
func payload(of e: HCIEvent) -> (any HCIEventParameters)? {
    switch e {
    case .commandComplete(let v): v
    case .commandStatus(let v): v
    case .disconnectionComplete(let v): v
    case .encryptionChange(let v): v
    case .encryptionKeyRefreshComplete(let v): v
    case .numberOfCompletedPackets(let v): v
    case .hardwareError(let v): v
    case .dataBufferOverflow(let v): v
    case .readRemoteVersionInformationComplete(let v): v
    case .leMeta(let m): m.payload
    case .unknown: nil
    }
}

enum Samples {
    static let peer = LEAddress(BluetoothAddress("C3:44:55:66:77:88")!, type: .random)

    static var events: [any HCIEventParameters] { [
        HCICommandStatus(status: .commandDisallowed, numHCICommandPackets: 1, commandOpcode: .leSetPHY),
        HCIDisconnectionComplete(status: .success, connectionHandle: 0x0EFF, reason: .connectionTimeout),
        HCIEncryptionChange(status: .success, connectionHandle: 1, encryptionEnabled: .off),
        HCIEncryptionChange(status: .pINOrKeyMissing, connectionHandle: 2, encryptionEnabled: .on, encryptionKeySize: 7),
        HCIEncryptionKeyRefreshComplete(status: .success, connectionHandle: 3),
        HCIHardwareError(hardwareCode: 0x42),
        HCIDataBufferOverflow(linkType: .acl),
        HCIReadRemoteVersionInformationComplete(status: .success, connectionHandle: 4, version: 12, companyIdentifier: 0x0059, subversion: 0x1234),
        HCINumberOfCompletedPackets.Owned([HCICompletedPackets(connectionHandle: 1, numCompletedPackets: 2)]),
        HCINumberOfCompletedPackets.Owned([]),
        HCICommandComplete.Owned(numHCICommandPackets: 1, commandOpcode: .leRand, returnParameters: h("00 01 02 03 04 05 06 07 08")),
        LEConnectionComplete(status: .success, connectionHandle: 0x10, role: .peripheral, peerAddress: peer,
                             connectionInterval: 0x0C80, peripheralLatency: 0x01F3, supervisionTimeout: 0x0C80,
                             centralClockAccuracy: LEClockAccuracy(rawValue: 5)),
        LEConnectionUpdateComplete(status: .success, connectionHandle: 0x10, connectionInterval: 40, peripheralLatency: 0, supervisionTimeout: 500),
        LEReadRemoteFeaturesComplete(status: .success, connectionHandle: 0x10, leFeatures: [.leEncryption, .lePing, .le2MPHY]),
        LELongTermKeyRequest(connectionHandle: 0x10, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0xBEEF),
        LERemoteConnectionParameterRequest(connectionHandle: 0x10, intervalMin: 6, intervalMax: 12, maxLatency: 0, timeout: 100),
        LEDataLengthChange(connectionHandle: 0x10, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120),
        LEEnhancedConnectionComplete(status: .success, connectionHandle: 0x11, role: .central, peerAddress: peer,
                                     localResolvablePrivateAddress: .zero, peerResolvablePrivateAddress: .zero,
                                     connectionInterval: 24, peripheralLatency: 0, supervisionTimeout: 72,
                                     centralClockAccuracy: LEClockAccuracy(rawValue: 1)),
        LEPHYUpdateComplete(status: .success, connectionHandle: 0x10, txPHY: .le2M, rxPHY: .leCoded),
        LEScanTimeout(),
        LEAdvertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 1, connectionHandle: 0, numCompletedExtendedAdvertisingEvents: 9),
        LEChannelSelectionAlgorithm(connectionHandle: 0x10, channelSelectionAlgorithm: .algorithm2),
        LEAdvertisingReportEvent.Owned([.init(eventType: .advNonconnInd, address: peer, data: Array(repeating: 7, count: 31), rssi: -1)]),
        LEDirectedAdvertisingReportEvent.Owned([
            LEDirectedAdvertisingReport(eventType: .advDirectInd, address: peer,
                                        directAddress: LEAddress(BluetoothAddress("7A:00:00:00:00:01")!, type: .random), rssi: -50),
            LEDirectedAdvertisingReport(eventType: .advDirectInd, address: LEAddress(.zero, type: .public),
                                        directAddress: LEAddress(BluetoothAddress("7A:00:00:00:00:02")!, type: .random), rssi: 127),
        ]),
        LEExtendedAdvertisingReportEvent.Owned([
            .init(eventType: LEExtendedAdvertisingEventType(dataStatus: .incompleteTruncated),
                  address: LEAddress(.zero, type: .anonymous), rssi: -100, data: []),
        ]),
    ] }

    static var returns: [(HCIOpcode, any HCICommandReturnParameters)] { [
        (.reset, HCIStatusReturn(status: .success)),
        (.leSetScanEnable, HCIStatusReturn(status: .commandDisallowed)),
        (.leSetDataLength, HCIConnectionHandleReturn(status: .success, connectionHandle: 0x40)),
        (.leLongTermKeyRequestReply, HCIConnectionHandleReturn(status: .success, connectionHandle: 0x41)),
        (.leLongTermKeyRequestNegativeReply, HCIConnectionHandleReturn(status: .success, connectionHandle: 0x42)),
        (.leRemoteConnectionParameterRequestReply, HCIConnectionHandleReturn(status: .success, connectionHandle: 0x43)),
        (.leRemoteConnectionParameterRequestNegativeReply, HCIConnectionHandleReturn(status: .success, connectionHandle: 0x44)),
        (.readLocalVersionInformation, HCIReadLocalVersionInformationReturn(status: .success, hciVersion: HCICoreVersion(rawValue: 11), hciSubversion: 0x1F21,
                                                                             lmpVersion: HCICoreVersion(rawValue: 11), companyIdentifier: 0x0002, lmpSubversion: 0x1F21)),
        (.readLocalSupportedCommands, HCIReadLocalSupportedCommandsReturn(status: .success, supportedCommands: (0..<64).map { UInt8($0) })),
        (.readLocalSupportedFeatures, HCIReadLocalSupportedFeaturesReturn(status: .success, lmpFeatures: 0x875B_1FD8_7E8F_FFFF)),
        (.readBufferSize, HCIReadBufferSizeReturn(status: .success, aclDataPacketLength: 1021, synchronousDataPacketLength: 96, totalNumACLDataPackets: 4, totalNumSynchronousDataPackets: 6)),
        (.readBDADDR, HCIReadBDADDRReturn(status: .success, bdAddr: BluetoothAddress("00:1A:7D:DA:71:13")!)),
        (.readRSSI, HCIReadRSSIReturn(status: .success, connectionHandle: 0x40, rssi: -67)),
        (.leReadBufferSizeV1, LEReadBufferSizeV1Return(status: .success, leACLDataPacketLength: 251, totalNumLEACLDataPackets: 8)),
        (.leReadBufferSizeV2, LEReadBufferSizeV2Return(status: .success, leACLDataPacketLength: 251, totalNumLEACLDataPackets: 8, isoDataPacketLength: 300, totalNumISODataPackets: 4)),
        (.leReadLocalSupportedFeatures, LEReadLocalSupportedFeaturesReturn(status: .success, leFeatures: LEFeatures(rawValue: 0x0000_0000_0001_79FF))),
        (.leReadAdvertisingPhysicalChannelTxPower, LEReadAdvertisingPhysicalChannelTxPowerReturn(status: .success, txPowerLevel: -3)),
        (.leReadFilterAcceptListSize, LEReadFilterAcceptListSizeReturn(status: .success, filterAcceptListSize: 16)),
        (.leRand, LERandReturn(status: .success, randomNumber: 0xDEAD_BEEF_0BAD_F00D)),
        (.leReadSupportedStates, LEReadSupportedStatesReturn(status: .success, leStates: 0x0000_03FF_FFFF_FFFF)),
        (.leReadSuggestedDefaultDataLength, LEReadSuggestedDefaultDataLengthReturn(status: .success, suggestedMaxTxOctets: 27, suggestedMaxTxTime: 328)),
        (.leReadMaximumDataLength, LEReadMaximumDataLengthReturn(status: .success, supportedMaxTxOctets: 251, supportedMaxTxTime: 17040, supportedMaxRxOctets: 251, supportedMaxRxTime: 17040)),
        (.leReadPHY, LEReadPHYReturn(status: .success, connectionHandle: 0x40, txPHY: .le2M, rxPHY: .le1M)),
        (.leSetExtendedAdvertisingParameters, LESetExtendedAdvertisingParametersReturn(status: .success, selectedTxPower: -7)),
        (.leReadMaximumAdvertisingDataLength, LEReadMaximumAdvertisingDataLengthReturn(status: .success, maxAdvertisingDataLength: 1650)),
        (.leReadNumberOfSupportedAdvertisingSets, LEReadNumberOfSupportedAdvertisingSetsReturn(status: .success, numSupportedAdvertisingSets: 12)),
    ] }
}

@Suite struct HCIEventRoundTripTests {
    @Test func everyEventRoundTrips() throws {
        for value in Samples.events {
            let bytes = try value.encoded()
            #expect(bytes.count == value.encodedLength)
            let (title, again, fields, parsedEqual) = try withEvent(bytes) { e -> (String, [UInt8], [Field], Bool?) in
                let p = payload(of: e)
                var equal: Bool? = nil
                if let a = value as? any Hashable, let b = p as? any Hashable {
                    equal = AnyHashable(a) == AnyHashable(b)
                }
                var fields = e.fields
                if case .leMeta = e { fields.removeFirst() } // subevent_code
                return (e.fieldTitle, try e.encoded(), fields, equal)
            }
            #expect(title == value.fieldTitle)
            #expect(again == bytes, "\(value.fieldTitle)")
            #expect(fields == value.fields, "\(value.fieldTitle)")
            #expect(parsedEqual != false, "\(value.fieldTitle)")
            expectEveryPrefixThrows(bytes)
        }
    }

    func checkReturn<T: HCICommandReturnParameters>(_ opcode: HCIOpcode, _ value: T) throws {
        let event = try HCICommandComplete.Owned(numHCICommandPackets: 2, commandOpcode: opcode, returning: value)
        let bytes = try event.encoded()
        #expect(bytes.count == 5 + value.encodedLength)
        let (typed, decoded, fields) = try commandComplete(bytes) { cc in
            (try cc.returnParameters(as: T.self), try cc.decodedReturn.value?.encoded(), cc.fields)
        }
        #expect(try typed.encoded() == value.encoded(), "\(T.self)")
        #expect(decoded == (try value.encoded()), "\(T.self) decoded by opcode")
        #expect(field(fields, "return_parameters") == .object(value.fields))
        #expect(try withBytes(value.encoded()) { buf in try T(parsing: buf).encoded() } == value.encoded())
        // Every shorter return-parameter list: the generic event parses, typed decoding throws truncated.
        let rp = try value.encoded()
        for n in 0..<rp.count {
            let short = try HCICommandComplete.Owned(numHCICommandPackets: 1, commandOpcode: opcode, returnParameters: Array(rp[0..<n])).encoded()
            let err = try commandComplete(short) { cc -> WireError? in
                do throws(WireError) { _ = try cc.returnParameters(as: T.self); return nil } catch { return error }
            }
            #expect(err?.code == .truncated, "\(T.self) with \(n) bytes")
        }
    }

    @Test func everyTypedReturnRoundTrips() throws {
        for (opcode, value) in Samples.returns {
            try checkReturn(opcode, value)
        }
    }

    @Test func supportedCommandsAccessor() throws {
        var mask = [UInt8](repeating: 0, count: 64)
        mask[5] = 0x80   // HCI_Reset: octet 5 bit 7
        mask[36] = 0x02  // HCI_LE_Set_Extended_Advertising_Parameters: octet 36 bit 1
        let v = HCIReadLocalSupportedCommandsReturn(status: .success, supportedCommands: mask)
        #expect(v.supports(octet: 5, bit: 7) && v.supports(octet: 36, bit: 1))
        #expect(!v.supports(octet: 5, bit: 6) && !v.supports(octet: 64, bit: 0) && !v.supports(octet: -1, bit: 0) && !v.supports(octet: 0, bit: 8))
        var bad = v
        bad.supportedCommands.removeLast()
        #expect(throws: WireError.self) { try bad.encoded() }
    }

    @Test func encodersRejectOutOfRangeValues() {
        let peer = Samples.peer
        #expect(throws: WireError.self) {
            try LEAdvertisingReportEvent.Owned([.init(eventType: .advInd, address: peer, data: Array(repeating: 0, count: 32), rssi: 0)]).encoded()
        }
        #expect(throws: WireError.self) { try LEAdvertisingReportEvent.Owned([]).encoded() }
        #expect(throws: WireError.self) {
            try LEExtendedAdvertisingReportEvent.Owned(Array(repeating: .init(eventType: .init(), address: peer, rssi: 0, data: []), count: 11)).encoded()
        }
        // Too much data for one event (255-byte parameter limit).
        #expect(throws: WireError.self) {
            try LEAdvertisingReportEvent.Owned(Array(repeating: .init(eventType: .advInd, address: peer, data: Array(repeating: 0, count: 31), rssi: 0), count: 7)).encoded()
        }
        #expect(throws: WireError.self) {
            try HCICommandComplete.Owned(numHCICommandPackets: 1, commandOpcode: .reset, returnParameters: Array(repeating: 0, count: 253)).encoded()
        }
    }
}

@Suite struct HCIEventMalformedTests {
    func parseError(_ bytes: [UInt8]) -> WireError? { wireError(bytes) { buf in try HCIEvent(parsing: buf) } }

    @Test func truncationAtEveryLength() {
        for v in [Vectors.resetComplete, Vectors.readBDADDRComplete, Vectors.readLocalVersionComplete,
                  Vectors.commandStatusLECreateConnection, Vectors.disconnectionComplete,
                  Vectors.numberOfCompletedPackets, Vectors.advertisingReport, Vectors.advertisingReport2,
                  Vectors.leConnectionComplete, h("08 04 00 40 00 01"), h("59 05 00 40 00 01 10"),
                  h("FF 03 01 02 03"), h("3E 03 7F AA BB")] {
            expectEveryPrefixThrows(v)
        }
        #expect(parseError([]) == WireError(.truncated, at: 0, ""))
        #expect(parseError([0x0E]) == WireError(.truncated, at: 1, ""))
    }

    @Test func parameterLengthMismatch() {
        // One byte more than announced, and one announced byte fewer than present.
        #expect(parseError(Vectors.disconnectionComplete + [0]) == WireError(.invalidLength, at: 1, ""))
        var shorter = Vectors.disconnectionComplete
        shorter[1] = 3
        #expect(parseError(shorter) == WireError(.invalidLength, at: 1, ""))
        var longer = Vectors.advertisingReport
        longer[1] = 0x2B
        #expect(parseError(longer)?.code == .invalidLength)
    }

    /// Sets the Parameter_Total_Length to the bytes present.
    func fixLength(_ b: [UInt8]) -> [UInt8] {
        var b = b
        b[1] = UInt8(b.count - 2)
        return b
    }

    @Test func fixedEventsRejectExtraParameters() {
        #expect(parseError(fixLength(Vectors.disconnectionComplete + [0]))?.code == .trailingBytes)
        #expect(parseError(fixLength(h("08 04 00 40 00 01 10")))?.code == .trailingBytes) // v1 with a key size
        #expect(parseError(fixLength(Vectors.leConnectionComplete + [0]))?.code == .trailingBytes)
        #expect(parseError(h("3E 02 11 00"))?.code == .trailingBytes) // scan timeout has no parameters
        #expect(parseError(h("0F 03 00 01 0D"))?.code == .truncated)
    }

    @Test func advertisingReportStructure() {
        // Num_Reports claims 2 but only one report is present.
        var overrun = Vectors.advertisingReport
        overrun[3] = 2
        #expect(parseError(overrun)?.code == .truncated)
        // Num_Reports 0 and 26.
        var zero = Vectors.advertisingReport
        zero[3] = 0
        #expect(parseError(zero) == WireError(.invalidValue, at: 3, ""))
        var many = Vectors.advertisingReport
        many[3] = 26
        #expect(parseError(many)?.code == .invalidValue)
        // Data_Length beyond the bytes present.
        var long = Vectors.advertisingReport
        long[12] = 0x1F
        #expect(parseError(long)?.code == .truncated)
        // Data_Length > 31 even though the bytes are there.
        let big = fixLength(h("3E 00 02 01 00 00 01 02 03 04 05 06 20") + Array(repeating: 0, count: 32) + [0xC4])
        #expect(parseError(big) == WireError(.invalidLength, at: 12, ""))
        // Bytes after the last report.
        #expect(parseError(fixLength(Vectors.advertisingReport + [0]))?.code == .trailingBytes)
        // Second report cut short (first report complete, length consistent).
        let cut = fixLength(Array(Vectors.advertisingReport2.dropLast(2)))
        #expect(parseError(cut)?.code == .truncated)
    }

    @Test func extendedAndDirectedReportStructure() throws {
        let ext = try LEExtendedAdvertisingReportEvent.Owned([
            .init(eventType: .init(legacy: true), address: Samples.peer, rssi: -1, data: [1, 2, 3]),
        ]).encoded()
        var overrun = ext
        overrun[3] = 2
        #expect(parseError(overrun)?.code == .truncated)
        var zero = ext
        zero[3] = 0
        #expect(parseError(zero)?.code == .invalidValue)
        var eleven = ext
        eleven[3] = 11
        #expect(parseError(eleven)?.code == .invalidValue)
        var dataLong = ext
        dataLong[ext.count - 4] = 4 // Data_Length 3 → 4
        #expect(parseError(dataLong)?.code == .truncated)
        #expect(parseError(fixLength(ext + [9]))?.code == .trailingBytes)

        let dir = try LEDirectedAdvertisingReportEvent.Owned([
            LEDirectedAdvertisingReport(eventType: .advDirectInd, address: Samples.peer, directAddress: Samples.peer, rssi: -20),
        ]).encoded()
        var dOverrun = dir
        dOverrun[3] = 2
        #expect(parseError(dOverrun)?.code == .truncated)
        #expect(parseError(fixLength(dir + [0]))?.code == .trailingBytes)
        var dZero = dir
        dZero[3] = 0
        #expect(parseError(dZero)?.code == .invalidValue)
    }

    @Test func numberOfCompletedPacketsCountMismatch() {
        var more = Vectors.numberOfCompletedPackets
        more[2] = 3
        #expect(parseError(more) == WireError(.invalidLength, at: 2, ""))
        var fewer = Vectors.numberOfCompletedPackets
        fewer[2] = 1
        #expect(parseError(fewer)?.code == .invalidLength)
    }

    @Test func randomBytesNeverTrapAndReencodeExactly() throws {
        var rng = SplitMix64(seed: 0x5EED)
        let codes: [UInt8] = [0x0E, 0x0F, 0x05, 0x08, 0x59, 0x30, 0x13, 0x10, 0x1A, 0x0C, 0x3E, 0x3E, 0x3E]
        let subs: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0A, 0x0B, 0x0C, 0x0D, 0x11, 0x12, 0x14, 0x29]
        for _ in 0..<3000 {
            let n = Int(rng.next() % 64)
            var b = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            b.insert(codes[Int(rng.next() % UInt64(codes.count))], at: 0)
            b.insert(UInt8(n), at: 1)
            if b[0] == 0x3E, b.count > 2 { b[2] = subs[Int(rng.next() % UInt64(subs.count))] }
            if b[0] == 0x3E, b.count > 3, rng.next() % 2 == 0 { b[3] = 1 }
            do {
                let again = try withEvent(b) { e -> [UInt8] in
                    _ = e.fields
                    return try e.encoded()
                }
                #expect(again == b)
            } catch is WireError {}
        }
    }
}

