/// Any Attribute Protocol PDU, parsed from the payload of an L2CAP frame on CID 0x0004.
/// Core Vol 3 Part F §3.3-3.4.
///
/// A view: byte payloads are `UnsafeRawBufferPointer` slices of the parsed buffer and are
/// valid only while the caller's buffer is alive. Parsing does not allocate. Fixed-size PDUs
/// must be exact (`.trailingBytes` otherwise); list responses are validated here so their
/// iterators cannot fail. Unknown opcodes are returned as `.unknown`, never an error.
public enum ATTPDU {
    case errorResponse(ATTErrorResponse)
    case exchangeMTURequest(ATTExchangeMTURequest)
    case exchangeMTUResponse(ATTExchangeMTUResponse)
    case findInformationRequest(ATTFindInformationRequest)
    case findInformationResponse(ATTFindInformationResponse)
    case findByTypeValueRequest(ATTFindByTypeValueRequestView)
    case findByTypeValueResponse(ATTFindByTypeValueResponse)
    case readByTypeRequest(ATTReadByTypeRequest)
    case readByTypeResponse(ATTReadByTypeResponse)
    case readRequest(ATTReadRequest)
    case readResponse(ATTReadResponseView)
    case readBlobRequest(ATTReadBlobRequest)
    case readBlobResponse(ATTReadBlobResponseView)
    case readMultipleRequest(ATTReadMultipleRequestView)
    case readMultipleResponse(ATTReadMultipleResponseView)
    case readByGroupTypeRequest(ATTReadByGroupTypeRequest)
    case readByGroupTypeResponse(ATTReadByGroupTypeResponse)
    case readMultipleVariableRequest(ATTReadMultipleVariableRequestView)
    case readMultipleVariableResponse(ATTReadMultipleVariableResponse)
    case writeRequest(ATTWriteRequestView)
    case writeResponse
    case writeCommand(ATTWriteCommandView)
    case signedWriteCommand(ATTSignedWriteCommandView)
    case prepareWriteRequest(ATTPrepareWriteRequestView)
    case prepareWriteResponse(ATTPrepareWriteResponseView)
    case executeWriteRequest(ATTExecuteWriteRequest)
    case executeWriteResponse
    case handleValueNotification(ATTHandleValueNotificationView)
    case handleValueIndication(ATTHandleValueIndicationView)
    case handleValueConfirmation
    case multipleHandleValueNotification(ATTMultipleHandleValueNotification)
    /// An opcode this parser does not know: the parameters after the opcode byte, as a view.
    case unknown(opcode: ATTOpcode, parameters: UnsafeRawBufferPointer)

    /// Parses one ATT PDU (opcode byte first) that fills `bytes` exactly.
    ///
    /// Notifications, indications and well-formed Read By Type responses are decoded inline
    /// (small enough to inline into the caller's module); everything else, including every
    /// error report, goes through ``parseGeneral(_:)``.
    @inlinable @inline(__always)
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        if bytes.count >= 3, let base = bytes.baseAddress {
            let op = base.load(as: UInt8.self)
            if op == 0x1B || op == 0x1D {
                let handle = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 1, as: UInt16.self))
                let value = UnsafeRawBufferPointer(start: base + 3, count: bytes.count &- 3)
                self = op == 0x1B
                    ? .handleValueNotification(ATTHandleValueNotificationView(handle: handle, value: value))
                    : .handleValueIndication(ATTHandleValueIndicationView(handle: handle, value: value))
                return
            }
            if op == 0x09 {
                let length = base.load(fromByteOffset: 1, as: UInt8.self)
                let listCount = bytes.count &- 2
                if length >= 2, listCount % Int(length) == 0 {
                    self = .readByTypeResponse(ATTReadByTypeResponse(
                        length: length, attributeDataList: UnsafeRawBufferPointer(start: base + 2, count: listCount)))
                    return
                }
            }
        }
        self = try ATTPDU.parseGeneral(bytes)
    }

    /// The full parser for every opcode (compiled in this module, not inlined).
    @usableFromInline
    static func parseGeneral(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> ATTPDU {
        let pdu: ATTPDU
        var r = ByteReader(bytes)
        let opcode = try r.u8("ATT opcode")
        switch opcode {
        case 0x1B:
            let handle = try r.u16("attribute handle")
            pdu = .handleValueNotification(ATTHandleValueNotificationView(handle: handle, value: r.rest()))
        case 0x1D:
            let handle = try r.u16("attribute handle")
            pdu = .handleValueIndication(ATTHandleValueIndicationView(handle: handle, value: r.rest()))
        case 0x52:
            let handle = try r.u16("attribute handle")
            pdu = .writeCommand(ATTWriteCommandView(handle: handle, value: r.rest()))
        case 0x12:
            let handle = try r.u16("attribute handle")
            pdu = .writeRequest(ATTWriteRequestView(handle: handle, value: r.rest()))
        case 0x0B:
            pdu = .readResponse(ATTReadResponseView(value: r.rest()))
        case 0x01:
            let req = ATTOpcode(rawValue: try r.u8("request opcode in error"))
            let handle = try r.u16("attribute handle in error")
            let code = ATTErrorCode(rawValue: try r.u8("error code"))
            try r.expectEnd()
            pdu = .errorResponse(ATTErrorResponse(requestOpcode: req, handle: handle, error: code))
        case 0x02:
            let mtu = try r.u16("client Rx MTU")
            try r.expectEnd()
            pdu = .exchangeMTURequest(ATTExchangeMTURequest(clientRxMTU: mtu))
        case 0x03:
            let mtu = try r.u16("server Rx MTU")
            try r.expectEnd()
            pdu = .exchangeMTUResponse(ATTExchangeMTUResponse(serverRxMTU: mtu))
        case 0x04:
            let start = try r.u16("starting handle"), end = try r.u16("ending handle")
            try r.expectEnd()
            pdu = .findInformationRequest(ATTFindInformationRequest(startHandle: start, endHandle: end))
        case 0x05:
            pdu = .findInformationResponse(try ATTFindInformationResponse(validating: &r))
        case 0x06:
            let start = try r.u16("starting handle"), end = try r.u16("ending handle")
            let type = try r.u16("attribute type")
            pdu = .findByTypeValueRequest(ATTFindByTypeValueRequestView(
                startHandle: start, endHandle: end, attributeType: type, value: r.rest()))
        case 0x07:
            pdu = .findByTypeValueResponse(try ATTFindByTypeValueResponse(validating: &r))
        case 0x08:
            let start = try r.u16("starting handle"), end = try r.u16("ending handle")
            let type = try ATTPDU.readATTUUID(&r)
            pdu = .readByTypeRequest(ATTReadByTypeRequest(startHandle: start, endHandle: end, attributeType: type))
        case 0x09:
            pdu = .readByTypeResponse(try ATTReadByTypeResponse(validating: &r))
        case 0x0A:
            let handle = try r.u16("attribute handle")
            try r.expectEnd()
            pdu = .readRequest(ATTReadRequest(handle: handle))
        case 0x0C:
            let handle = try r.u16("attribute handle"), offset = try r.u16("value offset")
            try r.expectEnd()
            pdu = .readBlobRequest(ATTReadBlobRequest(handle: handle, offset: offset))
        case 0x0D:
            pdu = .readBlobResponse(ATTReadBlobResponseView(partValue: r.rest()))
        case 0x0E:
            pdu = .readMultipleRequest(ATTReadMultipleRequestView(handles: try ATTPDU.readHandleSet(&r)))
        case 0x0F:
            pdu = .readMultipleResponse(ATTReadMultipleResponseView(values: r.rest()))
        case 0x10:
            let start = try r.u16("starting handle"), end = try r.u16("ending handle")
            let type = try ATTPDU.readATTUUID(&r)
            pdu = .readByGroupTypeRequest(ATTReadByGroupTypeRequest(
                startHandle: start, endHandle: end, attributeGroupType: type))
        case 0x11:
            pdu = .readByGroupTypeResponse(try ATTReadByGroupTypeResponse(validating: &r))
        case 0x13:
            try r.expectEnd()
            pdu = .writeResponse
        case 0x16:
            let handle = try r.u16("attribute handle"), offset = try r.u16("value offset")
            pdu = .prepareWriteRequest(ATTPrepareWriteRequestView(handle: handle, offset: offset, partValue: r.rest()))
        case 0x17:
            let handle = try r.u16("attribute handle"), offset = try r.u16("value offset")
            pdu = .prepareWriteResponse(ATTPrepareWriteResponseView(handle: handle, offset: offset, partValue: r.rest()))
        case 0x18:
            let flags = ATTExecuteWriteFlags(rawValue: try r.u8("flags"))
            try r.expectEnd()
            pdu = .executeWriteRequest(ATTExecuteWriteRequest(flags: flags))
        case 0x19:
            try r.expectEnd()
            pdu = .executeWriteResponse
        case 0x1E:
            try r.expectEnd()
            pdu = .handleValueConfirmation
        case 0x20:
            pdu = .readMultipleVariableRequest(ATTReadMultipleVariableRequestView(handles: try ATTPDU.readHandleSet(&r)))
        case 0x21:
            pdu = .readMultipleVariableResponse(try ATTReadMultipleVariableResponse(validating: &r))
        case 0x23:
            pdu = .multipleHandleValueNotification(try ATTMultipleHandleValueNotification(validating: &r))
        case 0xD2:
            let handle = try r.u16("attribute handle")
            guard r.remaining >= ATT.signatureLength else {
                throw r.error(.truncated, "authentication signature (12 bytes) missing")
            }
            pdu = .signedWriteCommand(ATTSignedWriteCommandView(handle: handle, valueAndSignature: r.rest()))
        default:
            pdu = .unknown(opcode: ATTOpcode(rawValue: opcode), parameters: r.rest())
        }
        return pdu
    }

    /// Reads the rest as a 2- or 16-byte UUID (ATT has no 32-bit form).
    @inlinable
    static func readATTUUID(_ r: inout ByteReader) throws(WireError) -> BluetoothUUID {
        let n = r.remaining
        guard n == 2 || n == 16 else { throw r.error(.invalidLength, "attribute type must be a 2- or 16-byte UUID") }
        return try BluetoothUUID.read(&r, width: n)
    }

    /// Reads the rest as a Set Of Handles: at least two, even length.
    @inlinable
    static func readHandleSet(_ r: inout ByteReader) throws(WireError) -> ATTHandleList {
        guard r.remaining >= 4 else { throw r.error(.invalidLength, "Set Of Handles needs at least two handles") }
        guard r.remaining & 1 == 0 else { throw r.error(.invalidLength, "Set Of Handles has an odd length") }
        return ATTHandleList(bytes: r.rest())
    }

    /// The opcode this PDU is sent with.
    @inlinable
    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: .errorResponse
        case .exchangeMTURequest: .exchangeMTURequest
        case .exchangeMTUResponse: .exchangeMTUResponse
        case .findInformationRequest: .findInformationRequest
        case .findInformationResponse: .findInformationResponse
        case .findByTypeValueRequest: .findByTypeValueRequest
        case .findByTypeValueResponse: .findByTypeValueResponse
        case .readByTypeRequest: .readByTypeRequest
        case .readByTypeResponse: .readByTypeResponse
        case .readRequest: .readRequest
        case .readResponse: .readResponse
        case .readBlobRequest: .readBlobRequest
        case .readBlobResponse: .readBlobResponse
        case .readMultipleRequest: .readMultipleRequest
        case .readMultipleResponse: .readMultipleResponse
        case .readByGroupTypeRequest: .readByGroupTypeRequest
        case .readByGroupTypeResponse: .readByGroupTypeResponse
        case .readMultipleVariableRequest: .readMultipleVariableRequest
        case .readMultipleVariableResponse: .readMultipleVariableResponse
        case .writeRequest: .writeRequest
        case .writeResponse: .writeResponse
        case .writeCommand: .writeCommand
        case .signedWriteCommand: .signedWriteCommand
        case .prepareWriteRequest: .prepareWriteRequest
        case .prepareWriteResponse: .prepareWriteResponse
        case .executeWriteRequest: .executeWriteRequest
        case .executeWriteResponse: .executeWriteResponse
        case .handleValueNotification: .handleValueNotification
        case .handleValueIndication: .handleValueIndication
        case .handleValueConfirmation: .handleValueConfirmation
        case .multipleHandleValueNotification: .multipleHandleValueNotification
        case .unknown(let op, _): op
        }
    }
}

/// Re-encodes a parsed PDU (copying its views); for building new PDUs use the owning
/// payload types and builders directly.
extension ATTPDU: WireEncodable {
    public var encodedLength: Int {
        switch self {
        case .errorResponse(let p): p.encodedLength
        case .exchangeMTURequest(let p): p.encodedLength
        case .exchangeMTUResponse(let p): p.encodedLength
        case .findInformationRequest(let p): p.encodedLength
        case .findInformationResponse(let p): p.encodedLength
        case .findByTypeValueRequest(let p): p.encodedLength
        case .findByTypeValueResponse(let p): p.encodedLength
        case .readByTypeRequest(let p): p.encodedLength
        case .readByTypeResponse(let p): p.encodedLength
        case .readRequest(let p): p.encodedLength
        case .readResponse(let p): p.encodedLength
        case .readBlobRequest(let p): p.encodedLength
        case .readBlobResponse(let p): p.encodedLength
        case .readMultipleRequest(let p): p.encodedLength
        case .readMultipleResponse(let p): p.encodedLength
        case .readByGroupTypeRequest(let p): p.encodedLength
        case .readByGroupTypeResponse(let p): p.encodedLength
        case .readMultipleVariableRequest(let p): p.encodedLength
        case .readMultipleVariableResponse(let p): p.encodedLength
        case .writeRequest(let p): p.encodedLength
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation: 1
        case .writeCommand(let p): p.encodedLength
        case .signedWriteCommand(let p): p.command.encodedLength
        case .prepareWriteRequest(let p): p.encodedLength
        case .prepareWriteResponse(let p): p.encodedLength
        case .executeWriteRequest(let p): p.encodedLength
        case .handleValueNotification(let p): p.encodedLength
        case .handleValueIndication(let p): p.encodedLength
        case .multipleHandleValueNotification(let p): p.encodedLength
        case .unknown(_, let parameters): 1 + parameters.count
        }
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        switch self {
        case .errorResponse(let p): try p.encode(into: &w)
        case .exchangeMTURequest(let p): try p.encode(into: &w)
        case .exchangeMTUResponse(let p): try p.encode(into: &w)
        case .findInformationRequest(let p): try p.encode(into: &w)
        case .findInformationResponse(let p): try p.encode(into: &w)
        case .findByTypeValueRequest(let p): try p.encode(into: &w)
        case .findByTypeValueResponse(let p): try p.encode(into: &w)
        case .readByTypeRequest(let p): try p.encode(into: &w)
        case .readByTypeResponse(let p): try p.encode(into: &w)
        case .readRequest(let p): try p.encode(into: &w)
        case .readResponse(let p): try p.encode(into: &w)
        case .readBlobRequest(let p): try p.encode(into: &w)
        case .readBlobResponse(let p): try p.encode(into: &w)
        case .readMultipleRequest(let p): try p.encode(into: &w)
        case .readMultipleResponse(let p): try p.encode(into: &w)
        case .readByGroupTypeRequest(let p): try p.encode(into: &w)
        case .readByGroupTypeResponse(let p): try p.encode(into: &w)
        case .readMultipleVariableRequest(let p): try p.encode(into: &w)
        case .readMultipleVariableResponse(let p): try p.encode(into: &w)
        case .writeRequest(let p): try p.encode(into: &w)
        case .writeResponse: try ATTWriteResponse().encode(into: &w)
        case .writeCommand(let p): try p.encode(into: &w)
        case .signedWriteCommand(let p): try p.command.encode(into: &w)
        case .prepareWriteRequest(let p): try p.encode(into: &w)
        case .prepareWriteResponse(let p): try p.encode(into: &w)
        case .executeWriteRequest(let p): try p.encode(into: &w)
        case .executeWriteResponse: try ATTExecuteWriteResponse().encode(into: &w)
        case .handleValueNotification(let p): try p.encode(into: &w)
        case .handleValueIndication(let p): try p.encode(into: &w)
        case .handleValueConfirmation: try ATTHandleValueConfirmation().encode(into: &w)
        case .multipleHandleValueNotification(let p): try p.encode(into: &w)
        case .unknown(let op, let parameters):
            try w.u8(op.rawValue)
            try w.bytes(parameters)
        }
    }
}

extension ATTPDU: FieldDescribable {
    public var fieldTitle: String { opcode.description }

    /// The decoded fields, for the text and JSON renderers (the tree of ``describe(into:)``).
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// Writes the fields to `s`: straight into an output buffer for `replay --packets`
    /// (no tree, no strings built), or into a ``FieldTree``.
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.named("opcode", UInt64(opcode.rawValue), opcode.description)
        switch self {
        case .errorResponse(let p):
            s.named("request_opcode_in_error", UInt64(p.requestOpcode.rawValue), p.requestOpcode.description)
            Self.handle(&s, "attribute_handle_in_error", p.handle)
            s.named("error_code", UInt64(p.error.rawValue), p.error.description)
        case .exchangeMTURequest(let p):
            s.uint("client_rx_mtu", UInt64(p.clientRxMTU))
        case .exchangeMTUResponse(let p):
            s.uint("server_rx_mtu", UInt64(p.serverRxMTU))
        case .findInformationRequest(let p):
            Self.handle(&s, "starting_handle", p.startHandle)
            Self.handle(&s, "ending_handle", p.endHandle)
        case .findInformationResponse(let p):
            if let name = p.format.name { s.named("format", UInt64(p.format.rawValue), name) } else { s.uint("format", UInt64(p.format.rawValue)) }
            s.beginList("information_data", count: p.reduce(0) { n, _ in n + 1 })
            for e in p {
                s.beginObject("")
                Self.handle(&s, "handle", e.handle)
                s.uuid("uuid", e.type)
                s.end()
            }
            s.end()
        case .findByTypeValueRequest(let p):
            Self.handle(&s, "starting_handle", p.startHandle)
            Self.handle(&s, "ending_handle", p.endHandle)
            s.uuid("attribute_type", BluetoothUUID(p.attributeType))
            s.bytes("attribute_value", p.value)
        case .findByTypeValueResponse(let p):
            s.beginList("handles_information_list", count: p.reduce(0) { n, _ in n + 1 })
            for e in p {
                s.beginObject("")
                Self.handle(&s, "found_attribute_handle", e.foundHandle)
                Self.handle(&s, "group_end_handle", e.groupEndHandle)
                s.end()
            }
            s.end()
        case .readByTypeRequest(let p):
            Self.handle(&s, "starting_handle", p.startHandle)
            Self.handle(&s, "ending_handle", p.endHandle)
            s.uuid("attribute_type", p.attributeType)
        case .readByTypeResponse(let p):
            s.uint("length", UInt64(p.length))
            s.beginList("attribute_data_list", count: p.reduce(0) { n, _ in n + 1 })
            for e in p {
                s.beginObject("")
                Self.handle(&s, "attribute_handle", e.handle)
                s.bytes("attribute_value", e.value)
                s.end()
            }
            s.end()
        case .readRequest(let p):
            Self.handle(&s, "attribute_handle", p.handle)
        case .readResponse(let p):
            s.bytes("attribute_value", p.value)
        case .readBlobRequest(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.uint("value_offset", UInt64(p.offset))
        case .readBlobResponse(let p):
            s.bytes("part_attribute_value", p.partValue)
        case .readMultipleRequest(let p):
            s.beginList("set_of_handles", count: p.handles.count)
            for h in p.handles { Self.handle(&s, "", h) }
            s.end()
        case .readMultipleResponse(let p):
            s.bytes("set_of_values", p.values)
        case .readByGroupTypeRequest(let p):
            Self.handle(&s, "starting_handle", p.startHandle)
            Self.handle(&s, "ending_handle", p.endHandle)
            s.uuid("attribute_group_type", p.attributeGroupType)
        case .readByGroupTypeResponse(let p):
            s.uint("length", UInt64(p.length))
            s.beginList("attribute_data_list", count: p.reduce(0) { n, _ in n + 1 })
            for e in p {
                s.beginObject("")
                Self.handle(&s, "attribute_handle", e.handle)
                Self.handle(&s, "end_group_handle", e.endGroupHandle)
                if e.value.count == 2 || e.value.count == 16, let id = try? BluetoothUUID(wire: e.value) {
                    s.uuid("attribute_value", id)
                } else {
                    s.bytes("attribute_value", e.value)
                }
                s.end()
            }
            s.end()
        case .readMultipleVariableRequest(let p):
            s.beginList("set_of_handles", count: p.handles.count)
            for h in p.handles { Self.handle(&s, "", h) }
            s.end()
        case .readMultipleVariableResponse(let p):
            s.beginList("length_value_tuple_list", count: p.reduce(0) { n, _ in n + 1 })
            for e in p {
                s.beginObject("")
                s.uint("value_length", UInt64(e.valueLength))
                s.bytes("attribute_value", e.value)
                s.bool("truncated", e.isTruncated)
                s.end()
            }
            s.end()
        case .writeRequest(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.bytes("attribute_value", p.value)
        case .writeCommand(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.bytes("attribute_value", p.value)
        case .signedWriteCommand(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.bytes("attribute_value", p.value)
            s.bytes("authentication_signature", p.signature)
        case .prepareWriteRequest(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.uint("value_offset", UInt64(p.offset))
            s.bytes("part_attribute_value", p.partValue)
        case .prepareWriteResponse(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.uint("value_offset", UInt64(p.offset))
            s.bytes("part_attribute_value", p.partValue)
        case .executeWriteRequest(let p):
            if let name = p.flags.name { s.named("flags", UInt64(p.flags.rawValue), name) } else { s.uint("flags", UInt64(p.flags.rawValue)) }
        case .handleValueNotification(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.bytes("attribute_value", p.value)
        case .handleValueIndication(let p):
            Self.handle(&s, "attribute_handle", p.handle)
            s.bytes("attribute_value", p.value)
        case .multipleHandleValueNotification(let p):
            s.beginList("handle_length_value_tuple_list", count: p.reduce(0) { n, _ in n + 1 })
            for e in p {
                s.beginObject("")
                Self.handle(&s, "attribute_handle", e.handle)
                s.uint("length", UInt64(e.value.count))
                s.bytes("attribute_value", e.value)
                s.end()
            }
            s.end()
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case .unknown(_, let parameters):
            s.bytes("parameters", parameters)
        }
    }

    /// An attribute handle: the number, named "0x002A" (spelled without building a String).
    static func handle<S: FieldSink & ~Copyable>(_ s: inout S, _ name: FieldName, _ v: UInt16) {
        let digits: StaticString = "0123456789ABCDEF"
        let d = UnsafeRawPointer(digits.utf8Start)
        func digit(_ shift: UInt16) -> UInt8 { d.load(fromByteOffset: Int((v >> shift) & 0xF), as: UInt8.self) }
        var label: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0x30, 0x78, digit(12), digit(8), digit(4), digit(0))
        withUnsafeBytes(of: &label) { s.named(name, UInt64(v), utf8: $0) }
    }
}
