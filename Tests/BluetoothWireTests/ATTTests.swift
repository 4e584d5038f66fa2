import Testing
@testable import BluetoothWire

private func parseATT<R>(_ bytes: [UInt8], _ body: (ATTPDU) throws -> R) throws -> R {
    try withBytes(bytes) { buf in try body(try ATTPDU(parsing: buf)) }
}

/// Encodes `value`, parses the bytes as an ATTPDU with the expected opcode, re-encodes the
/// parsed view and checks the bytes are identical. Returns the fields of the parsed PDU.
@discardableResult
private func attRoundTrip(_ value: some WireEncodable, _ opcode: ATTOpcode,
                          sourceLocation: SourceLocation = #_sourceLocation) throws -> [Field] {
    let bytes = try value.encoded()
    #expect(bytes.count == value.encodedLength, sourceLocation: sourceLocation)
    #expect(bytes.first == opcode.rawValue, sourceLocation: sourceLocation)
    let (again, op, fields) = try parseATT(bytes) { pdu in (try pdu.encoded(), pdu.opcode, pdu.fields) }
    #expect(again == bytes, sourceLocation: sourceLocation)
    #expect(op == opcode, sourceLocation: sourceLocation)
    return fields
}

@Suite struct ATTTests {
    @Test func handleValueNotificationHotPathVector() throws {
        let (handle, value) = try parseATT(h("1B 2A 00 00 6C 01 00 FF")) { pdu -> (UInt16, [UInt8]) in
            guard case .handleValueNotification(let n) = pdu else { return (0, []) }
            return (n.handle, Array(n.value))
        }
        #expect(handle == 0x002A)
        #expect(value == h("00 6C 01 00 FF"))
        #expect(try encode(ATTHandleValueNotification(handle: 0x2A, value: value)) == h("1B 2A 00 00 6C 01 00 FF"))
        #expect(MemoryLayout<ATTPDU>.size <= 25)
    }

    @Test func exchangeMTUVector() throws {
        let mtu = try parseATT(h("02 05 02")) { pdu -> UInt16? in
            guard case .exchangeMTURequest(let r) = pdu else { return nil }
            return r.clientRxMTU
        }
        #expect(mtu == 517)
        #expect(try encode(ATTExchangeMTURequest(clientRxMTU: 517)) == h("02 05 02"))
        #expect(try encode(ATTExchangeMTUResponse(serverRxMTU: 247)) == h("03 F7 00"))
    }

    @Test func errorResponseVector() throws {
        let e = try parseATT(h("01 08 01 00 0A")) { pdu -> ATTErrorResponse? in
            guard case .errorResponse(let e) = pdu else { return nil }
            return e
        }
        #expect(e == ATTErrorResponse(requestOpcode: .readByTypeRequest, handle: 1, error: .attributeNotFound))
        let fields = try parseATT(h("01 08 01 00 0A")) { $0.fields }
        #expect(fields.contains(Field("error_code", .named(0x0A, "Attribute Not Found"))))
        #expect(fields.contains(Field("request_opcode_in_error", .named(0x08, "ATT_READ_BY_TYPE_REQ"))))
        #expect(ATTErrorCode(rawValue: 0xFD).name == "Client Characteristic Configuration Descriptor Improperly Configured")
        #expect(ATTErrorCode.application(3).isApplicationError && ATTErrorCode.application(3).rawValue == 0x83)
        #expect(ATTErrorCode(rawValue: 0x14).name == nil)
    }

    @Test func readByGroupTypeResponseVector() throws {
        let entries = try parseATT(h("11 06 01 00 05 00 00 18 06 00 09 00 01 18")) { pdu -> [(UInt16, UInt16, BluetoothUUID)] in
            guard case .readByGroupTypeResponse(let r) = pdu else { return [] }
            #expect(r.valueLength == 2)
            return try r.map { ($0.handle, $0.endGroupHandle, try BluetoothUUID(wire: $0.value)) }
        }
        #expect(entries.count == 2)
        #expect(entries[0] == (1, 5, BluetoothUUID(0x1800)))
        #expect(entries[1] == (6, 9, BluetoothUUID(0x1801)))
        var b = ATTReadByGroupTypeResponseBuilder(mtu: 23)
        let ok1 = b.append(handle: 1, endGroupHandle: 5, value: [0x00, 0x18])
        #expect(ok1)
        let ok2 = b.append(handle: 6, endGroupHandle: 9, value: [0x01, 0x18])
        #expect(ok2)
        #expect(try encode(b) == h("11 06 01 00 05 00 00 18 06 00 09 00 01 18"))
        let fields = try parseATT(h("11 06 01 00 05 00 00 18 06 00 09 00 01 18")) { $0.fields }
        guard case .list(let list)? = fields.first(where: { $0.name == "attribute_data_list" })?.value,
              case .object(let first)? = list.first else { Issue.record("no list"); return }
        #expect(first.contains(Field("attribute_value", .text("1800"))))
    }

    @Test func readByTypeResponseTenEntries() throws {
        var b = ATTReadByTypeResponseBuilder(mtu: 185)
        for i in 0 ..< 10 {
            let ok = b.append(handle: UInt16(0x10 + i), value: [UInt8(i), 0x02, 0x03, 0x2A, 0x00])
            #expect(ok)
        }
        let bytes = try encode(b)
        #expect(bytes.count == 2 + 10 * 7)
        let entries = try parseATT(bytes) { pdu -> [(UInt16, [UInt8])] in
            guard case .readByTypeResponse(let r) = pdu else { return [] }
            var out: [(UInt16, [UInt8])] = []
            var it = r.makeIterator()
            while let e = it.next() { out.append((e.handle, Array(e.value))) }
            return out
        }
        #expect(entries.count == 10)
        #expect(entries[9].0 == 0x19 && entries[9].1 == [9, 2, 3, 0x2A, 0])
    }

    @Test func buildersRespectMTUAndElementShape() throws {
        // Read By Type: 2 + 4n ≤ 23 → 5 entries of 2-byte values.
        var rbt = ATTReadByTypeResponseBuilder()
        var n = 0
        while rbt.append(handle: UInt16(n + 1), value: [1, 2]) { n += 1 }
        #expect(n == 5 && rbt.encodedLength <= 23)
        var rbt2 = ATTReadByTypeResponseBuilder()
        let ok3 = rbt2.append(handle: 1, value: [1, 2])
        #expect(ok3)
        let differentLength = rbt2.append(handle: 2, value: [1, 2, 3])
        #expect(!differentLength) // different length stops the list
        // A long first value is truncated to ATT_MTU - 4.
        var rbt3 = ATTReadByTypeResponseBuilder()
        let ok4 = rbt3.append(handle: 1, value: [UInt8](repeating: 7, count: 40))
        #expect(ok4)
        #expect(rbt3.encodedLength == 23 && rbt3.length == 21)
        #expect(throws: WireError.self) { try ATTReadByTypeResponseBuilder().encoded() }

        var fi = ATTFindInformationResponseBuilder()
        let ok5 = fi.append(handle: 1, type: BluetoothUUID(0x2800))
        #expect(ok5)
        let ok6 = fi.append(handle: 2, type: BluetoothUUID("F000AA00-0451-4000-B000-000000000000")!)
        #expect(!ok6)
        let ok7 = fi.append(handle: 3, type: BluetoothUUID(0x2803))
        #expect(ok7)
        #expect(try encode(fi) == h("05 01 01 00 00 28 03 00 03 28"))
        var fi128 = ATTFindInformationResponseBuilder()
        let u = BluetoothUUID("F000AA00-0451-4000-B000-000000000000")!
        let ok8 = fi128.append(handle: 0x20, type: u)
        #expect(ok8)
        let second128 = fi128.append(handle: 0x21, type: u)
        #expect(!second128) // 2 + 18 + 18 > 23
        let parsed = try parseATT(try encode(fi128)) { pdu -> [ATTFindInformationResponse.Element] in
            guard case .findInformationResponse(let r) = pdu else { return [] }
            #expect(r.format == .uuid128)
            return Array(r)
        }
        #expect(parsed == [.init(handle: 0x20, type: u)])

        var fbtv = ATTFindByTypeValueResponseBuilder()
        var k = 0
        while fbtv.append(foundHandle: UInt16(k), groupEndHandle: UInt16(k + 1)) { k += 1 }
        #expect(k == 5) // 1 + 4 * 5 = 21 ≤ 23

        var rmv = ATTReadMultipleVariableResponseBuilder()
        let ok9 = rmv.append(value: [UInt8](repeating: 1, count: 10))
        #expect(ok9)
        let tooLong = rmv.append(value: [UInt8](repeating: 2, count: 10))
        #expect(!tooLong) // 1 + 12 + 12 > 23
        let ok10 = rmv.append(value: [UInt8](repeating: 2, count: 10), allowTruncation: true)
        #expect(ok10)
        #expect(rmv.isTruncated && rmv.encodedLength == 23)
        let tuples = try parseATT(try encode(rmv)) { pdu -> [(UInt16, Int, Bool)] in
            guard case .readMultipleVariableResponse(let r) = pdu else { return [] }
            return r.map { ($0.valueLength, $0.value.count, $0.isTruncated) }
        }
        #expect(tuples.count == 2 && tuples[1] == (10, 8, true) && tuples[0] == (10, 10, false))

        var mhvn = ATTMultipleHandleValueNotificationBuilder()
        let ok11 = mhvn.append(handle: 3, value: [1, 2, 3])
        #expect(ok11)
        let ok12 = mhvn.append(handle: 7, value: [])
        #expect(ok12)
        let ok13 = mhvn.append(handle: 9, value: [UInt8](repeating: 0, count: 12))
        #expect(!ok13)
        #expect(try encode(mhvn) == h("23 03 00 03 00 01 02 03 07 00 00 00"))

        var group = ATTReadByGroupTypeResponseBuilder()
        let ok14 = group.append(handle: 1, endGroupHandle: 9, value: [UInt8](repeating: 0xAB, count: 16))
        #expect(ok14)
        let secondGroup = group.append(handle: 10, endGroupHandle: 12, value: [UInt8](repeating: 0xAB, count: 16))
        #expect(group.length == 4 + 16 && !secondGroup)
    }

    @Test func everyPDURoundTrips() throws {
        let u128 = BluetoothUUID("F000AA00-0451-4000-B000-000000000000")!
        try attRoundTrip(ATTErrorResponse(requestOpcode: .writeRequest, handle: 0x0C, error: .writeNotPermitted), .errorResponse)
        try attRoundTrip(ATTExchangeMTURequest(clientRxMTU: 517), .exchangeMTURequest)
        try attRoundTrip(ATTExchangeMTUResponse(serverRxMTU: 23), .exchangeMTUResponse)
        try attRoundTrip(ATTFindInformationRequest(startHandle: 1, endHandle: 0xFFFF), .findInformationRequest)
        var fi = ATTFindInformationResponseBuilder()
        _ = fi.append(handle: 1, type: BluetoothUUID(0x2800))
        let fiFields = try attRoundTrip(fi, .findInformationResponse)
        #expect(fiFields.contains(Field("information_data", .list([.object([
            Field("handle", .named(1, "0x0001")), Field("uuid", .text("2800"))])]))))
        try attRoundTrip(ATTFindByTypeValueRequest(startHandle: 1, endHandle: 0xFFFF, attributeType: 0x2800, value: [0x0D, 0x18]),
                         .findByTypeValueRequest)
        var fbtv = ATTFindByTypeValueResponseBuilder()
        _ = fbtv.append(foundHandle: 0x10, groupEndHandle: 0x20)
        try attRoundTrip(fbtv, .findByTypeValueResponse)
        try attRoundTrip(ATTReadByTypeRequest(startHandle: 1, endHandle: 0xFFFF, attributeType: BluetoothUUID(0x2803)),
                         .readByTypeRequest)
        let rbt128 = try attRoundTrip(ATTReadByTypeRequest(startHandle: 1, endHandle: 5, attributeType: u128), .readByTypeRequest)
        #expect(rbt128.contains(Field("attribute_type", .text(u128.uuidString))))
        #expect(try encode(ATTReadByTypeRequest(startHandle: 1, endHandle: 5, attributeType: BluetoothUUID(uuid32: 0x12345678))).count == 21)
        var rbt = ATTReadByTypeResponseBuilder()
        _ = rbt.append(handle: 3, value: [0x02, 0x03, 0x00, 0x00, 0x2A])
        try attRoundTrip(rbt, .readByTypeResponse)
        try attRoundTrip(ATTReadRequest(handle: 3), .readRequest)
        try attRoundTrip(ATTReadResponse(value: [UInt8]("hcigatt".utf8)), .readResponse)
        try attRoundTrip(ATTReadResponse(value: [UInt8]()), .readResponse)
        try attRoundTrip(ATTReadBlobRequest(handle: 3, offset: 22), .readBlobRequest)
        try attRoundTrip(ATTReadBlobResponse(partValue: [1, 2, 3]), .readBlobResponse)
        let rm = try attRoundTrip(ATTReadMultipleRequest(handles: [3, 5, 7]), .readMultipleRequest)
        #expect(rm.contains(Field("set_of_handles", .list([.named(3, "0x0003"), .named(5, "0x0005"), .named(7, "0x0007")]))))
        try attRoundTrip(ATTReadMultipleResponse(values: [1, 2, 3, 4]), .readMultipleResponse)
        try attRoundTrip(ATTReadByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, attributeGroupType: BluetoothUUID(0x2800)),
                         .readByGroupTypeRequest)
        var group = ATTReadByGroupTypeResponseBuilder(mtu: 64)
        _ = group.append(handle: 1, endGroupHandle: 9, value: [UInt8](repeating: 0xAB, count: 16))
        try attRoundTrip(group, .readByGroupTypeResponse)
        try attRoundTrip(ATTReadMultipleVariableRequest(handles: [1, 2]), .readMultipleVariableRequest)
        var rmv = ATTReadMultipleVariableResponseBuilder()
        _ = rmv.append(value: [9])
        _ = rmv.append(value: [])
        try attRoundTrip(rmv, .readMultipleVariableResponse)
        try attRoundTrip(ATTWriteRequest(handle: 0x0E, value: [0x01, 0x00]), .writeRequest)
        try attRoundTrip(ATTWriteResponse(), .writeResponse)
        try attRoundTrip(ATTWriteCommand(handle: 0x0E, value: [0x02, 0x00]), .writeCommand)
        let signed = try attRoundTrip(ATTSignedWriteCommand(handle: 0x0E, value: [0xAA], signature: [UInt8](1 ... 12)),
                                      .signedWriteCommand)
        #expect(signed.contains(Field("authentication_signature", .bytes([UInt8](1 ... 12)))))
        #expect(signed.contains(Field("attribute_value", .bytes([0xAA]))))
        try attRoundTrip(ATTPrepareWriteRequest(handle: 5, offset: 18, partValue: [1, 2]), .prepareWriteRequest)
        try attRoundTrip(ATTPrepareWriteResponse(handle: 5, offset: 18, partValue: [1, 2]), .prepareWriteResponse)
        try attRoundTrip(ATTExecuteWriteRequest(flags: .write), .executeWriteRequest)
        try attRoundTrip(ATTExecuteWriteRequest(flags: .cancel), .executeWriteRequest)
        try attRoundTrip(ATTExecuteWriteResponse(), .executeWriteResponse)
        try attRoundTrip(ATTHandleValueNotification(handle: 0x2A, value: [0x00, 0x6C]), .handleValueNotification)
        try attRoundTrip(ATTHandleValueIndication(handle: 0x2B, value: [0x01]), .handleValueIndication)
        try attRoundTrip(ATTHandleValueConfirmation(), .handleValueConfirmation)
        var mhvn = ATTMultipleHandleValueNotificationBuilder()
        _ = mhvn.append(handle: 1, value: [1])
        _ = mhvn.append(handle: 2, value: [2, 2])
        try attRoundTrip(mhvn, .multipleHandleValueNotification)

        // Unknown opcodes are kept raw.
        let unknown = try parseATT(h("3F 01 02")) { pdu -> (ATTOpcode, [UInt8])? in
            guard case .unknown(let op, let p) = pdu else { return nil }
            return (op, Array(p))
        }
        #expect(unknown?.0 == ATTOpcode(rawValue: 0x3F) && unknown?.1 == [1, 2])
    }

    @Test func encodersRejectInvalidValues() {
        #expect(throws: WireError.self) { try ATTSignedWriteCommand(handle: 1, value: [1], signature: [1, 2]).encoded() }
        #expect(throws: WireError.self) { try ATTReadMultipleRequest(handles: [1]).encoded() }
        #expect(throws: WireError.self) { try ATTReadMultipleVariableRequest(handles: [UInt16]()).encoded() }
    }

    @Test func opcodeFlags() {
        #expect(ATTOpcode.writeCommand.isCommand && !ATTOpcode.writeCommand.hasAuthenticationSignature)
        #expect(ATTOpcode.signedWriteCommand.isCommand && ATTOpcode.signedWriteCommand.hasAuthenticationSignature)
        #expect(ATTOpcode.signedWriteCommand.method == ATTOpcode.writeRequest.rawValue)
        #expect(ATTOpcode.readByTypeRequest.name == "ATT_READ_BY_TYPE_REQ")
    }

    @Test func truncatedAtEveryLength() {
        let valid = [
            h("01 08 01 00 0A"), h("02 05 02"), h("03 17 00"), h("04 01 00 FF FF"), h("05 01 01 00 00 28"),
            h("06 01 00 FF FF 00 28 0D 18"), h("07 01 00 05 00"), h("08 01 00 FF FF 03 28"), h("09 04 03 00 AA BB"),
            h("0A 03 00"), h("0C 03 00 16 00"), h("0E 01 00 02 00"), h("10 01 00 FF FF 00 28"),
            h("11 06 01 00 05 00 00 18"), h("12 0E 00 01"), h("16 05 00 12 00 01"), h("17 05 00 12 00"),
            h("18 01"), h("1B 2A 00"), h("1D 2B 00 01"), h("20 01 00 02 00"), h("21 01 00 09"),
            h("23 01 00 01 00 01"), h("52 0E 00"), h("D2 0E 00 01 02 03 04 05 06 07 08 09 0A 0B 0C"),
        ]
        for v in valid {
            #expect(wireError(v) { try ATTPDU(parsing: $0) } == nil, "\(v)")
            for n in 0 ..< v.count {
                // Some prefixes are themselves valid PDUs (variable-length values); none may crash,
                // and the fixed-size ones must throw.
                _ = wireError(Array(v.prefix(n))) { try ATTPDU(parsing: $0) }
            }
        }
        let fixed = [h("01 08 01 00 0A"), h("02 05 02"), h("04 01 00 FF FF"), h("0A 03 00"), h("0C 03 00 16 00"),
                     h("08 01 00 FF FF 03 28"), h("18 01"), h("1B 2A 00"), h("12 0E 00"), h("16 05 00 12 00"),
                     h("D2 0E 00 01 02 03 04 05 06 07 08 09 0A 0B 0C"), h("05 01 01 00 00 28"), h("09 04 03 00 AA BB")]
        for v in fixed {
            for n in 0 ..< v.count {
                #expect(wireError(Array(v.prefix(n))) { try ATTPDU(parsing: $0) } != nil, "prefix \(n) of \(v)")
            }
        }
    }

    @Test func malformedTable() {
        let table: [([UInt8], WireError.Code)] = [
            (h("01 08 01 00 0A 00"), .trailingBytes),
            (h("02 05 02 00"), .trailingBytes),
            (h("13 00"), .trailingBytes),
            (h("1E 00"), .trailingBytes),
            (h("05 03 01 00 00 28"), .invalidValue),              // format 3
            (h("05 01"), .invalidLength),                          // empty information data
            (h("05 01 01 00 00 28 02"), .invalidLength),           // partial pair
            (h("05 02 01 00 00 28"), .invalidLength),              // 128-bit format with 16-bit pair
            (h("07"), .invalidLength),                             // empty handles list
            (h("07 01 00 05 00 06"), .invalidLength),
            (h("08 01 00 FF FF 00 28 00 00"), .invalidLength),     // 4-byte UUID not allowed
            (h("10 01 00 FF FF 00"), .invalidLength),
            (h("09 01 03 00"), .invalidLength),                    // element length below 2
            (h("09 00"), .invalidLength),
            (h("09 04"), .invalidLength),                          // empty list
            (h("09 04 03 00 AA BB 04 00 CC"), .invalidLength),     // not a whole number of elements
            (h("11 03 01 00 05"), .invalidLength),                 // element length below 4
            (h("11 06 01 00 05 00 00 18 06 00"), .invalidLength),
            (h("11 06"), .invalidLength),
            (h("0E 01 00"), .invalidLength),                       // one handle
            (h("0E 01 00 02 00 03"), .invalidLength),              // odd
            (h("20 01 00"), .invalidLength),
            (h("21"), .invalidLength),                             // empty tuple list
            (h("21 01 00 09 05"), .truncated),                     // dangling half length field
            (h("23"), .invalidLength),
            (h("23 01 00 05 00 01"), .invalidLength),              // tuple longer than the bytes
            (h("23 01 00 01 00 01 02 00"), .truncated),            // partial tuple header
            (h("D2 0E 00 01 02 03 04 05 06 07 08 09 0A 0B"), .truncated), // signature too short
        ]
        for (bytes, code) in table {
            #expect(wireError(bytes) { try ATTPDU(parsing: $0) }?.code == code, "\(bytes)")
        }
    }

    @Test func handMadeInvalidViewsIterateSafely() throws {
        try withBytes(h("01 02 03")) { buf in
            #expect(Array(ATTReadByTypeResponse(length: 0, attributeDataList: buf)).isEmpty)
            #expect(Array(ATTReadByTypeResponse(length: 2, attributeDataList: buf)).count == 1)
            #expect(Array(ATTReadByGroupTypeResponse(length: 1, attributeDataList: buf)).isEmpty)
            #expect(Array(ATTFindInformationResponse(format: ATTFindInformationFormat(rawValue: 9), informationData: buf)).isEmpty)
            #expect(Array(ATTMultipleHandleValueNotification(handleLengthValueTupleList: buf)).isEmpty)
            #expect(ATTHandleList(bytes: buf).count == 1)
        }
    }
}
