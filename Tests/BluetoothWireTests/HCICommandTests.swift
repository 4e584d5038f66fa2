import Testing
@testable import BluetoothWire

func parseCommand(_ bytes: [UInt8]) throws -> HCICommand {
    try withBytes(bytes) { buf in try HCICommand(parsing: buf) }
}

@Suite struct HCICommandTests {
    static let peer = BluetoothAddress("00:1B:DC:07:32:EF")!
    static let key: [UInt8] = Array(0x10 ... 0x1F)
    static let conn = LEConnectionParameterRange(intervalMin: 0x0018, intervalMax: 0x0028, maxLatency: 0,
                                                 supervisionTimeout: 0x002A, minCELength: 0, maxCELength: 0)

    /// One value of every command case (several for the variable-length ones).
    static let samples: [HCICommand] = [
        .disconnect(DisconnectCommand(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)),
        .setEventMask(SetEventMaskCommand(eventMask: .leHost)),
        .reset,
        .setControllerToHostFlowControl(SetControllerToHostFlowControlCommand(flowControlEnable: .acl)),
        .hostBufferSize(HostBufferSizeCommand(aclDataPacketLength: 1021, synchronousDataPacketLength: 64,
                                              totalNumACLDataPackets: 8, totalNumSynchronousDataPackets: 2)),
        .readLocalVersionInformation,
        .readLocalSupportedCommands,
        .readLocalSupportedFeatures,
        .readBDADDR,
        .readRSSI(ReadRSSICommand(connectionHandle: 0x0EFF)),
        .leSetEventMask(LESetEventMaskCommand(leEventMask: [.connectionComplete, .advertisingReport, .longTermKeyRequest])),
        .leReadBufferSizeV1,
        .leReadLocalSupportedFeatures,
        .leSetRandomAddress(LESetRandomAddressCommand(randomAddress: BluetoothAddress("C1:22:33:44:55:66")!)),
        .leSetAdvertisingParameters(LESetAdvertisingParametersCommand(
            advertisingIntervalMin: 0x00A0, advertisingIntervalMax: 0x00F0, advertisingType: .connectableDirectedLowDutyCycle,
            ownAddressType: .random, peerAddressType: .random, peerAddress: peer,
            advertisingChannelMap: [.channel37, .channel39], advertisingFilterPolicy: .filterBoth)),
        .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: h("02 01 06 03 03 0d 18"))),
        .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: [])),
        .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: [UInt8](repeating: 0xEE, count: 31))),
        .leSetScanResponseData(LESetScanResponseDataCommand(scanResponseData: h("05 09 74 65 73 74"))),
        .leSetAdvertisingEnable(LESetAdvertisingEnableCommand(advertisingEnable: true)),
        .leSetScanParameters(LESetScanParametersCommand(scanType: .active, scanInterval: 0x10, scanWindow: 0x10)),
        .leSetScanEnable(LESetScanEnableCommand(enable: true, filterDuplicates: true)),
        .leCreateConnection(LECreateConnectionCommand(scanInterval: 0x0060, scanWindow: 0x0030, peerAddressType: .public,
                                                      peerAddress: peer, connection: conn)),
        .leCreateConnectionCancel,
        .leConnectionUpdate(LEConnectionUpdateCommand(connectionHandle: 1, connection: LEConnectionParameterRange(
            intervalMin: 6, intervalMax: 0x0C80, maxLatency: 0x01F3, supervisionTimeout: 0x0C80, minCELength: 1, maxCELength: 2))),
        .leReadRemoteFeatures(LEReadRemoteFeaturesCommand(connectionHandle: 2)),
        .leEnableEncryption(LEEnableEncryptionCommand(connectionHandle: 3, randomNumber: 0x0102_0304_0506_0708,
                                                      encryptedDiversifier: 0xBEEF, longTermKey: key)),
        .leLongTermKeyRequestReply(LELongTermKeyRequestReplyCommand(connectionHandle: 4, longTermKey: key)),
        .leLongTermKeyRequestNegativeReply(LELongTermKeyRequestNegativeReplyCommand(connectionHandle: 5)),
        .leRemoteConnectionParameterRequestReply(LERemoteConnectionParameterRequestReplyCommand(connectionHandle: 6, connection: conn)),
        .leRemoteConnectionParameterRequestNegativeReply(LERemoteConnectionParameterRequestNegativeReplyCommand(connectionHandle: 7)),
        .leSetDataLength(LESetDataLengthCommand(connectionHandle: 8, txOctets: 251, txTime: 2120)),
        .leSetPHY(LESetPHYCommand(connectionHandle: 9, allPHYs: .noReceivePreference, txPHYs: [.le2M, .le1M], rxPHYs: .leCoded,
                                  phyOptions: .s8)),
        .leSetExtendedAdvertisingParameters(LESetExtendedAdvertisingParametersCommand(
            advertisingHandle: 1, advertisingEventProperties: [.connectable, .includeTxPower],
            primaryAdvertisingIntervalMin: 0x0000A0, primaryAdvertisingIntervalMax: 0xFFFFFF,
            primaryAdvertisingChannelMap: .all, ownAddressType: .resolvableOrRandom, peerAddressType: .random,
            peerAddress: peer, advertisingFilterPolicy: .filterScanRequests, advertisingTxPower: -20,
            primaryAdvertisingPHY: .leCoded, secondaryAdvertisingMaxSkip: 3, secondaryAdvertisingPHY: .le2M,
            advertisingSID: 0x0F, scanRequestNotificationEnable: true)),
        .leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand(advertisingHandle: 1, advertisingData: h("02 01 06"))),
        .leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand(
            advertisingHandle: 2, operation: .firstFragment, fragmentPreference: .mayFragment,
            advertisingData: [UInt8](repeating: 0x5A, count: 251))),
        .leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand(advertisingHandle: 3, operation: .unchangedData,
                                                                          advertisingData: [])),
        .leSetExtendedScanResponseData(LESetExtendedScanResponseDataCommand(advertisingHandle: 1, scanResponseData: h("03 19 c1 03"))),
        .leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand(enable: true, sets: [
            LEExtendedAdvertisingSet(advertisingHandle: 1),
            LEExtendedAdvertisingSet(advertisingHandle: 2, duration: 500, maxExtendedAdvertisingEvents: 10),
        ])),
        .leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand(enable: false, sets: [])),
        .leSetExtendedScanParameters(LESetExtendedScanParametersCommand(
            le1M: LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x12, scanWindow: 0x12))),
        .leSetExtendedScanParameters(LESetExtendedScanParametersCommand(
            ownAddressType: .random, scanningFilterPolicy: .extendedFiltered,
            le1M: LEExtendedScanPHYParameters(scanType: .passive, scanInterval: 0x100, scanWindow: 0x50),
            leCoded: LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x300, scanWindow: 0x150))),
        .leSetExtendedScanParameters(LESetExtendedScanParametersCommand(
            le1M: nil, leCoded: LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x300, scanWindow: 0x150))),
        .leSetExtendedScanEnable(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .enabledResetEachPeriod,
                                                                duration: 100, period: 2)),
        .leExtendedCreateConnection(LEExtendedCreateConnectionCommand(
            peerAddressType: .random, peerAddress: peer,
            le1M: LEExtendedCreateConnectionPHYParameters(scanInterval: 0x60, scanWindow: 0x60, connection: conn))),
        .leExtendedCreateConnection(LEExtendedCreateConnectionCommand(
            initiatorFilterPolicy: .filterAcceptList, ownAddressType: .random, peerAddressType: .public, peerAddress: .zero,
            le1M: LEExtendedCreateConnectionPHYParameters(scanInterval: 0x60, scanWindow: 0x30, connection: conn),
            le2M: LEExtendedCreateConnectionPHYParameters(scanInterval: 0, scanWindow: 0, connection: conn),
            leCoded: LEExtendedCreateConnectionPHYParameters(scanInterval: 0x120, scanWindow: 0x90, connection: conn))),
        .leReadBufferSizeV2,
        .unknown(HCIOpcode(rawValue: 0xFC01), h("aa bb")),
        .unknown(.leRand, []),
    ]

    // MARK: Known vectors

    @Test func knownVectors() throws {
        let vectors: [(HCICommand, String)] = [
            (.reset, "03 0c 00"),
            (.leSetScanEnable(LESetScanEnableCommand(enable: true, filterDuplicates: true)), "0c 20 02 01 01"),
            (.leSetScanParameters(LESetScanParametersCommand(scanType: .active, scanInterval: 0x10, scanWindow: 0x10)),
             "0b 20 07 01 10 00 10 00 00 00"),
            (.disconnect(DisconnectCommand(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)),
             "06 04 03 40 00 13"),
            (.leCreateConnection(LECreateConnectionCommand(scanInterval: 0x0060, scanWindow: 0x0030, peerAddressType: .public,
                                                           peerAddress: Self.peer, connection: Self.conn)),
             "0d 20 19 60 00 30 00 00 00 ef 32 07 dc 1b 00 00 18 00 28 00 00 00 2a 00 00 00 00 00"),
            (.leSetEventMask(LESetEventMaskCommand(leEventMask: .default)), "01 20 08 1f 00 00 00 00 00 00 00"),
            (.setEventMask(SetEventMaskCommand(eventMask: .default)), "01 0c 08 ff ff ff ff ff 1f 00 00"),
            (.leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: h("02 01 06"))),
             "08 20 20 03 02 01 06" + String(repeating: " 00", count: 28)),
            (.leSetAdvertisingEnable(LESetAdvertisingEnableCommand(advertisingEnable: true)), "0a 20 01 01"),
            (.readBDADDR, "09 10 00"),
            (.leReadBufferSizeV2, "60 20 00"),
            (.leSetExtendedScanParameters(LESetExtendedScanParametersCommand(
                le1M: LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x12, scanWindow: 0x12))),
             "41 20 08 00 00 01 01 12 00 12 00"),
            (.leSetExtendedScanEnable(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .enabled)),
             "42 20 06 01 01 00 00 00 00"),
            (.leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand(enable: true, sets: [
                LEExtendedAdvertisingSet(advertisingHandle: 1, duration: 0x0102, maxExtendedAdvertisingEvents: 3)])),
             "39 20 06 01 01 01 02 01 03"),
            (.leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand(advertisingHandle: 0, advertisingData: h("02 01 06"))),
             "37 20 07 00 03 01 03 02 01 06"),
            (.leLongTermKeyRequestNegativeReply(LELongTermKeyRequestNegativeReplyCommand(connectionHandle: 0x0EFF)), "1b 20 02 ff 0e"),
            (.leSetPHY(LESetPHYCommand(connectionHandle: 1, txPHYs: .le2M, rxPHYs: .le2M)), "32 20 07 01 00 00 02 02 00 00"),
            (.setControllerToHostFlowControl(SetControllerToHostFlowControlCommand(flowControlEnable: .acl)), "31 0c 01 01"),
            (.hostBufferSize(HostBufferSizeCommand(aclDataPacketLength: 0x03FD, totalNumACLDataPackets: 8)),
             "33 0c 07 fd 03 00 08 00 00 00"),
            (.leSetExtendedAdvertisingParameters(LESetExtendedAdvertisingParametersCommand(
                advertisingHandle: 0, advertisingEventProperties: .legacyConnectableScannable,
                primaryAdvertisingIntervalMin: 0xA0, primaryAdvertisingIntervalMax: 0xA0)),
             "36 20 19 00 13 00 a0 00 00 a0 00 00 07 00 00 00 00 00 00 00 00 00 7f 01 00 01 00 00"),
        ]
        for (command, hex) in vectors {
            #expect(try encode(command) == h(hex), "\(command.fieldTitle)")
            #expect(try parseCommand(h(hex)) == command, "\(command.fieldTitle)")
        }
    }

    @Test func structsEncodeLikeTheEnum() throws {
        #expect(try encode(ResetCommand()) == h("03 0c 00"))
        #expect(try encode(LECreateConnectionCancelCommand()) == h("0e 20 00"))
        #expect(try encode(ReadLocalVersionInformationCommand()) == h("01 10 00"))
        #expect(try encode(ReadLocalSupportedCommandsCommand()) == h("02 10 00"))
        #expect(try encode(ReadLocalSupportedFeaturesCommand()) == h("03 10 00"))
        #expect(try encode(ReadBDADDRCommand()) == h("09 10 00"))
        #expect(try encode(LEReadBufferSizeV1Command()) == h("02 20 00"))
        #expect(try encode(LEReadBufferSizeV2Command()) == h("60 20 00"))
        #expect(try encode(LEReadLocalSupportedFeaturesCommand()) == h("03 20 00"))
        // Data length and PHY (Core Vol 4 Part E §7.8.34, .35, .46-.48).
        #expect(try encode(LEReadSuggestedDefaultDataLengthCommand()) == h("23 20 00"))
        #expect(try encode(LEWriteSuggestedDefaultDataLengthCommand(suggestedMaxTxOctets: 251, suggestedMaxTxTime: 2120)) == h("24 20 04 fb 00 48 08"))
        #expect(try encode(LEReadMaximumDataLengthCommand()) == h("2f 20 00"))
        #expect(try encode(LEReadPHYCommand(connectionHandle: 0x0040)) == h("30 20 02 40 00"))
        #expect(try encode(LESetDefaultPHYCommand(txPHYs: [.le1M, .le2M], rxPHYs: [.le1M, .le2M, .leCoded])) == h("31 20 03 00 03 07"))
        var w = try withBytes(h("fb 00 48 08")) { buf in var r = ByteReader(buf); return try LEWriteSuggestedDefaultDataLengthCommand(parameters: &r) }
        #expect(w.suggestedMaxTxOctets == 251 && w.suggestedMaxTxTime == 2120)
        w = LEWriteSuggestedDefaultDataLengthCommand(suggestedMaxTxOctets: 27, suggestedMaxTxTime: 328)
        #expect(w.parameterFields.count == 2)
        let phys = try withBytes(h("01 02 04")) { buf in var r = ByteReader(buf); return try LESetDefaultPHYCommand(parameters: &r) }
        #expect(phys.allPHYs == .noTransmitPreference && phys.txPHYs == .le2M && phys.rxPHYs == .leCoded)
        #expect(try LESetScanEnableCommand(enable: false).encodedH4() == h("01 0c 20 02 00 00"))
        #expect(try HCICommand.reset.encodedH4() == h("01 03 0c 00"))

        // Typed parse of one struct checks the opcode.
        let d = try withBytes(h("06 04 03 40 00 13")) { buf in try DisconnectCommand(parsing: buf) }
        #expect(d == DisconnectCommand(connectionHandle: 0x40))
        #expect(wireError(h("06 04 03 40 00 13")) { buf in try ReadRSSICommand(parsing: buf) }?.code == .unexpectedOpcode)
        #expect(wireError(h("03 0c 01 00")) { buf in try ResetCommand(parsing: buf) }?.code == .trailingBytes)
    }

    // MARK: Round trips

    @Test func everyCommandRoundTrips() throws {
        for command in Self.samples {
            let bytes = try encode(command)
            #expect(bytes.count == command.encodedLength, "\(command.fieldTitle)")
            #expect(Int(bytes[2]) == bytes.count - 3)
            #expect(UInt16(bytes[0]) | UInt16(bytes[1]) << 8 == command.opcode.rawValue)
            let back = try parseCommand(bytes)
            #expect(back == command, "\(command.fieldTitle)")
            #expect(try encode(back) == bytes, "\(command.fieldTitle)")
            if let typed = command.command {
                #expect(typed.encodedLength == bytes.count)
            }
        }
    }

    @Test func everyKnownOpcodeIsCovered() {
        // Each case of HCICommand appears in the samples (unknown included).
        var titles = Set<String>()
        for c in Self.samples { titles.insert(c.fieldTitle) }
        #expect(titles.count >= 40)
    }

    // MARK: Malformed input

    @Test func truncatedAtEveryLength() throws {
        for command in Self.samples {
            let bytes = try encode(command)
            for n in 0 ..< bytes.count {
                let e = wireError(Array(bytes[0 ..< n])) { buf in try HCICommand(parsing: buf) }
                #expect(e?.code == (n < 3 ? .truncated : .invalidLength), "\(command.fieldTitle) prefix \(n)")
            }
        }
    }

    @Test func parameterLengthByteDisagreeingWithCommand() throws {
        for command in Self.samples {
            if case .unknown = command { continue }
            let bytes = try encode(command)
            // Consistent header, one parameter byte missing.
            if bytes.count > 3 {
                var short = Array(bytes.dropLast())
                short[2] &-= 1
                #expect(wireError(short) { buf in try HCICommand(parsing: buf) } != nil, "\(command.fieldTitle) short")
            }
            // Consistent header, one extra parameter byte (when the length byte has room).
            guard bytes[2] < 255 else { continue }
            var long = bytes + [0x00]
            long[2] &+= 1
            let e = wireError(long) { buf in try HCICommand(parsing: buf) }
            #expect(e?.code == .trailingBytes, "\(command.fieldTitle) long")
            // Header says one more byte than present.
            var lying = bytes
            lying[2] &+= 1
            #expect(wireError(lying) { buf in try HCICommand(parsing: buf) } == WireError(.invalidLength, at: 3, ""))
        }
    }

    @Test func badValuesRejectedWhenParsing() {
        // Connection handle above 0x0EFF.
        #expect(wireError(h("06 04 03 00 0f 13")) { buf in try HCICommand(parsing: buf) } == WireError(.invalidValue, at: 3, ""))
        // Enable flags other than 0/1.
        #expect(wireError(h("0c 20 02 02 00")) { buf in try HCICommand(parsing: buf) } == WireError(.invalidValue, at: 3, ""))
        #expect(wireError(h("0c 20 02 01 02")) { buf in try HCICommand(parsing: buf) } == WireError(.invalidValue, at: 4, ""))
        // Legacy advertising data length above 31.
        let ad = h("08 20 20 20") + [UInt8](repeating: 0, count: 31)
        #expect(wireError(ad) { buf in try HCICommand(parsing: buf) } == WireError(.invalidLength, at: 3, ""))
        // Reserved PHY bits: 2M in Scanning_PHYs, bit 3 in Initiating_PHYs.
        #expect(wireError(h("41 20 08 00 00 02 01 12 00 12 00")) { buf in try HCICommand(parsing: buf) }
            == WireError(.invalidValue, at: 5, ""))
        var ext = h("43 20 1a 00 00 00 00 00 00 00 00 00 09") + [UInt8](repeating: 0, count: 16)
        ext[2] = UInt8(ext.count - 3)
        #expect(wireError(ext) { buf in try HCICommand(parsing: buf) } == WireError(.invalidValue, at: 12, ""))
        // No PHY at all parses (the controller rejects it), with no blocks.
        let none = try? parseCommand(h("41 20 03 00 00 00"))
        #expect(none == .leSetExtendedScanParameters(LESetExtendedScanParametersCommand(le1M: nil)))
        // Num_Sets larger than the sets present.
        #expect(wireError(h("39 20 06 01 02 01 00 00 00")) { buf in try HCICommand(parsing: buf) }
            == WireError(.invalidLength, at: 4, ""))
        // Extended advertising data length byte larger than the data.
        #expect(wireError(h("37 20 06 00 03 01 03 02 01")) { buf in try HCICommand(parsing: buf) }?.code == .truncated)
    }

    @Test func badValuesRejectedWhenEncoding() {
        let cases: [HCICommand] = [
            .disconnect(DisconnectCommand(connectionHandle: 0x0F00)),
            .readRSSI(ReadRSSICommand(connectionHandle: 0xFFFF)),
            .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: [UInt8](repeating: 0, count: 32))),
            .leSetScanResponseData(LESetScanResponseDataCommand(scanResponseData: [UInt8](repeating: 0, count: 32))),
            .leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand(advertisingHandle: 0,
                                                                              advertisingData: [UInt8](repeating: 0, count: 252))),
            .leEnableEncryption(LEEnableEncryptionCommand(connectionHandle: 1, longTermKey: [1, 2, 3])),
            .leLongTermKeyRequestReply(LELongTermKeyRequestReplyCommand(connectionHandle: 1, longTermKey: Self.key + [0])),
            .leSetExtendedAdvertisingParameters(LESetExtendedAdvertisingParametersCommand(
                advertisingHandle: 0, advertisingEventProperties: [], primaryAdvertisingIntervalMin: 0x100_0000,
                primaryAdvertisingIntervalMax: 0)),
            .leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand(
                enable: true, sets: Array(repeating: LEExtendedAdvertisingSet(advertisingHandle: 0), count: 64))),
            .unknown(HCIOpcode(rawValue: 0xFC00), [UInt8](repeating: 0, count: 256)),
        ]
        for c in cases {
            var failure: WireError?
            do throws(WireError) { _ = try c.encoded() } catch { failure = error }
            #expect(failure?.code == .valueOutOfRange, "\(c.fieldTitle)")
        }
    }

    @Test func unknownOpcodesKeepTheirParameters() throws {
        let c = try parseCommand(h("01 fc 02 aa bb"))
        #expect(c == .unknown(HCIOpcode(rawValue: 0xFC01), h("aa bb")))
        #expect(c.fieldTitle == "HCI_Command")
        #expect(c.fields.last == Field("parameters", .bytes(h("aa bb"))))
        // A known opcode this parser does not decode is also kept raw.
        #expect(try parseCommand(h("18 20 00")) == .unknown(.leRand, []))
    }

    // MARK: Descriptions

    @Test func fieldsUseSpecNamesAndUnits() throws {
        let scan = try parseCommand(h("0b 20 07 01 10 00 10 00 00 00"))
        #expect(scan.fieldTitle == "HCI_LE_Set_Scan_Parameters")
        #expect(scan.fields.contains(Field("le_scan_type", .named(1, "active"))))
        #expect(scan.fields.contains(Field("le_scan_interval", .named(16, "10 ms"))))
        #expect(scan.fields.contains(Field("parameter_total_length", .uint(7))))

        let create = try parseCommand(try encode(Self.samples[22]))
        #expect(create.fieldTitle == "HCI_LE_Create_Connection")
        #expect(create.fields.contains(Field("peer_address", .text("00:1B:DC:07:32:EF"))))
        #expect(create.fields.contains(Field("le_scan_window", .named(0x30, "30 ms"))))
        #expect(create.fields.contains(Field("connection_interval_min", .named(0x18, "30 ms"))))
        #expect(create.fields.contains(Field("supervision_timeout", .named(0x2A, "420 ms"))))

        let disconnect = try parseCommand(h("06 04 03 40 00 13"))
        #expect(disconnect.fields.contains(Field("reason", .named(0x13, "Remote User Terminated Connection"))))

        #expect(HCIParam.slots(1) == .named(1, "0.625 ms"))
        #expect(HCIParam.connectionInterval(6) == .named(6, "7.5 ms"))
        #expect(LEPHYSet([.le1M, .leCoded]).description == "1M|Coded")
        #expect(LEAdvertisingEventProperties.legacyConnectableScannable.description == "connectable|scannable|legacy")

        // Every sample describes itself without crashing and names its opcode.
        for c in Self.samples {
            #expect(c.fields.first?.name == "opcode")
        }
    }
}

@Suite struct HCICommandStructFieldsTests {
    @Test func structsDescribeThemselvesLikeTheEnum() throws {
        let c = LESetScanEnableCommand(enable: true, filterDuplicates: false)
        #expect(c.fieldTitle == "HCI_LE_Set_Scan_Enable")
        #expect(c.fields == HCICommand.leSetScanEnable(c).fields)
        #expect(c.fields.contains(Field("le_scan_enable", .bool(true))))
        #expect(ResetCommand().fields == HCICommand.reset.fields)
        #expect(HCICommand.reset.fields.last == Field("parameter_total_length", .uint(0)))
    }
}
