// ATT PDU parameter structs (Core Vol 3 Part F §3.4). Each encodes the whole PDU,
// opcode included. Fixed-size PDUs are one struct used for both parsing and sending.
// Variable-length PDUs have an owning generic encoder here (`Bytes`/`Handles` is usually
// `[UInt8]`/`[UInt16]`; any collection works, e.g. a slice of an attribute database) and a
// concrete parsed view in ATTViews.swift (`ATTWriteRequestView`, ...).

/// ATT_ERROR_RSP. Core Vol 3 Part F §3.4.1.1.
public struct ATTErrorResponse: Hashable, Sendable, WireEncodable {
    /// The opcode of the request that failed.
    public var requestOpcode: ATTOpcode
    /// The attribute handle.
    public var handle: UInt16
    /// Why it failed.
    public var error: ATTErrorCode
    /// A value with these fields.
    @inlinable
    public init(requestOpcode: ATTOpcode, handle: UInt16, error: ATTErrorCode) {
        self.requestOpcode = requestOpcode
        self.handle = handle
        self.error = error
    }
    @inlinable public var encodedLength: Int { 5 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.errorResponse.rawValue)
        try w.u8(requestOpcode.rawValue)
        try w.u16(handle)
        try w.u8(error.rawValue)
    }
}

/// ATT_EXCHANGE_MTU_REQ. Core Vol 3 Part F §3.4.2.1.
public struct ATTExchangeMTURequest: Hashable, Sendable, WireEncodable {
    /// The client's receive MTU.
    public var clientRxMTU: UInt16
    /// A value with these fields.
    @inlinable public init(clientRxMTU: UInt16) { self.clientRxMTU = clientRxMTU }
    @inlinable public var encodedLength: Int { 3 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.exchangeMTURequest.rawValue)
        try w.u16(clientRxMTU)
    }
}

/// ATT_EXCHANGE_MTU_RSP. Core Vol 3 Part F §3.4.2.2.
public struct ATTExchangeMTUResponse: Hashable, Sendable, WireEncodable {
    /// The server's receive MTU.
    public var serverRxMTU: UInt16
    /// A value with these fields.
    @inlinable public init(serverRxMTU: UInt16) { self.serverRxMTU = serverRxMTU }
    @inlinable public var encodedLength: Int { 3 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.exchangeMTUResponse.rawValue)
        try w.u16(serverRxMTU)
    }
}

/// ATT_FIND_INFORMATION_REQ. Core Vol 3 Part F §3.4.3.1.
public struct ATTFindInformationRequest: Hashable, Sendable, WireEncodable {
    /// The first handle of the range.
    public var startHandle: UInt16
    /// The last handle of the range.
    public var endHandle: UInt16
    /// A value with these fields.
    @inlinable public init(startHandle: UInt16, endHandle: UInt16) {
        self.startHandle = startHandle
        self.endHandle = endHandle
    }
    @inlinable public var encodedLength: Int { 5 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.findInformationRequest.rawValue)
        try w.u16(startHandle)
        try w.u16(endHandle)
    }
}

/// ATT_FIND_BY_TYPE_VALUE_REQ. Core Vol 3 Part F §3.4.3.3.
public struct ATTFindByTypeValueRequest<Bytes: Collection<UInt8>>: WireEncodable {
    /// The first handle of the range.
    public var startHandle: UInt16
    /// The last handle of the range.
    public var endHandle: UInt16
    /// A 16-bit UUID (this PDU has no 128-bit form).
    public var attributeType: UInt16
    /// The attribute value.
    public var value: Bytes
    /// A value with these fields.
    @inlinable public init(startHandle: UInt16, endHandle: UInt16, attributeType: UInt16, value: Bytes) {
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.attributeType = attributeType
        self.value = value
    }
    @inlinable public var encodedLength: Int { 7 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.findByTypeValueRequest.rawValue)
        try w.u16(startHandle)
        try w.u16(endHandle)
        try w.u16(attributeType)
        try w.bytes(value)
    }
}

/// ATT_READ_BY_TYPE_REQ. Core Vol 3 Part F §3.4.4.1. The type is sent as 2 bytes
/// when it has a 16-bit form, else as 16 bytes (ATT has no 32-bit UUID form).
public struct ATTReadByTypeRequest: Hashable, Sendable, WireEncodable {
    /// The first handle of the range.
    public var startHandle: UInt16
    /// The last handle of the range.
    public var endHandle: UInt16
    /// The attribute type looked for.
    public var attributeType: BluetoothUUID
    /// A value with these fields.
    @inlinable public init(startHandle: UInt16, endHandle: UInt16, attributeType: BluetoothUUID) {
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.attributeType = attributeType
    }
    @inlinable public var encodedLength: Int { 5 &+ attributeType.attWidth }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readByTypeRequest.rawValue)
        try w.u16(startHandle)
        try w.u16(endHandle)
        try attributeType.write(&w, width: attributeType.attWidth)
    }
}

/// ATT_READ_BY_GROUP_TYPE_REQ. Core Vol 3 Part F §3.4.4.9. Same layout as Read By Type.
public struct ATTReadByGroupTypeRequest: Hashable, Sendable, WireEncodable {
    /// The first handle of the range.
    public var startHandle: UInt16
    /// The last handle of the range.
    public var endHandle: UInt16
    /// The group type looked for (primary or secondary service).
    public var attributeGroupType: BluetoothUUID
    /// A value with these fields.
    @inlinable public init(startHandle: UInt16, endHandle: UInt16, attributeGroupType: BluetoothUUID) {
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.attributeGroupType = attributeGroupType
    }
    @inlinable public var encodedLength: Int { 5 &+ attributeGroupType.attWidth }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readByGroupTypeRequest.rawValue)
        try w.u16(startHandle)
        try w.u16(endHandle)
        try attributeGroupType.write(&w, width: attributeGroupType.attWidth)
    }
}

extension BluetoothUUID {
    /// Width of this UUID in ATT: 2 for a 16-bit alias, else 16.
    @inlinable var attWidth: Int { uuid16 != nil ? 2 : 16 }
}

/// ATT_READ_REQ. Core Vol 3 Part F §3.4.4.3.
public struct ATTReadRequest: Hashable, Sendable, WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// A value with these fields.
    @inlinable public init(handle: UInt16) { self.handle = handle }
    @inlinable public var encodedLength: Int { 3 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readRequest.rawValue)
        try w.u16(handle)
    }
}

/// ATT_READ_RSP. Core Vol 3 Part F §3.4.4.4.
public struct ATTReadResponse<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute value.
    public var value: Bytes
    /// A value with these fields.
    @inlinable public init(value: Bytes) { self.value = value }
    @inlinable public var encodedLength: Int { 1 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readResponse.rawValue)
        try w.bytes(value)
    }
}

/// ATT_READ_BLOB_REQ. Core Vol 3 Part F §3.4.4.5.
public struct ATTReadBlobRequest: Hashable, Sendable, WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The offset into the attribute value.
    public var offset: UInt16
    /// A value with these fields.
    @inlinable public init(handle: UInt16, offset: UInt16) {
        self.handle = handle
        self.offset = offset
    }
    @inlinable public var encodedLength: Int { 5 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readBlobRequest.rawValue)
        try w.u16(handle)
        try w.u16(offset)
    }
}

/// ATT_READ_BLOB_RSP. Core Vol 3 Part F §3.4.4.6.
public struct ATTReadBlobResponse<Bytes: Collection<UInt8>>: WireEncodable {
    /// This part of the value.
    public var partValue: Bytes
    /// A value with these fields.
    @inlinable public init(partValue: Bytes) { self.partValue = partValue }
    @inlinable public var encodedLength: Int { 1 &+ partValue.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readBlobResponse.rawValue)
        try w.bytes(partValue)
    }
}

/// A list of little-endian 16-bit handles viewed in place (Set Of Handles).
/// Valid while the parsed buffer is alive. An odd trailing byte is not part of the list.
public struct ATTHandleList: RandomAccessCollection {
    /// The handles' bytes (a view).
    public let bytes: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    /// 0.
    @inlinable public var startIndex: Int { 0 }
    /// The number of handles.
    @inlinable public var endIndex: Int { bytes.count >> 1 }
    /// Handle `i`.
    @inlinable public subscript(i: Int) -> UInt16 {
        precondition(i >= 0 && i < endIndex, "handle index out of range")
        return UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: i &* 2, as: UInt16.self))
    }
}

/// ATT_READ_MULTIPLE_REQ. Core Vol 3 Part F §3.4.4.7. At least two handles.
public struct ATTReadMultipleRequest<Handles: Collection<UInt16>>: WireEncodable {
    /// The handles to read.
    public var handles: Handles
    /// A value with these fields.
    @inlinable public init(handles: Handles) { self.handles = handles }
    @inlinable public var encodedLength: Int { 1 &+ 2 &* handles.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        guard handles.count >= 2 else { throw WireError(.valueOutOfRange, at: w.count, "Read Multiple needs at least two handles") }
        try w.u8(ATTOpcode.readMultipleRequest.rawValue)
        for h in handles { try w.u16(h) }
    }
}

/// ATT_READ_MULTIPLE_RSP. Core Vol 3 Part F §3.4.4.8: the values concatenated
/// (their boundaries are known only to the client that asked).
public struct ATTReadMultipleResponse<Bytes: Collection<UInt8>>: WireEncodable {
    /// The values, concatenated.
    public var values: Bytes
    /// A value with these fields.
    @inlinable public init(values: Bytes) { self.values = values }
    @inlinable public var encodedLength: Int { 1 &+ values.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readMultipleResponse.rawValue)
        try w.bytes(values)
    }
}

/// ATT_READ_MULTIPLE_VARIABLE_REQ. Core Vol 3 Part F §3.4.4.11. At least two handles.
public struct ATTReadMultipleVariableRequest<Handles: Collection<UInt16>>: WireEncodable {
    /// The handles to read.
    public var handles: Handles
    /// A value with these fields.
    @inlinable public init(handles: Handles) { self.handles = handles }
    @inlinable public var encodedLength: Int { 1 &+ 2 &* handles.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        guard handles.count >= 2 else {
            throw WireError(.valueOutOfRange, at: w.count, "Read Multiple Variable needs at least two handles")
        }
        try w.u8(ATTOpcode.readMultipleVariableRequest.rawValue)
        for h in handles { try w.u16(h) }
    }
}

/// ATT_WRITE_REQ. Core Vol 3 Part F §3.4.5.1.
public struct ATTWriteRequest<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: Bytes) {
        self.handle = handle
        self.value = value
    }
    @inlinable public var encodedLength: Int { 3 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.writeRequest.rawValue)
        try w.u16(handle)
        try w.bytes(value)
    }
}

/// ATT_WRITE_RSP (no parameters). Core Vol 3 Part F §3.4.5.2.
public struct ATTWriteResponse: Hashable, Sendable, WireEncodable {
    /// The PDU (it has no parameters).
    @inlinable public init() {}
    @inlinable public var encodedLength: Int { 1 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) { try w.u8(ATTOpcode.writeResponse.rawValue) }
}

/// ATT_WRITE_CMD. Core Vol 3 Part F §3.4.5.3.
public struct ATTWriteCommand<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: Bytes) {
        self.handle = handle
        self.value = value
    }
    @inlinable public var encodedLength: Int { 3 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.writeCommand.rawValue)
        try w.u16(handle)
        try w.bytes(value)
    }
}

/// ATT_SIGNED_WRITE_CMD: handle, value, then a 12-byte authentication signature.
/// Core Vol 3 Part F §3.4.5.4.
public struct ATTSignedWriteCommand<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: Bytes
    /// Exactly 12 bytes (``ATT/signatureLength``).
    public var signature: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: Bytes, signature: Bytes) {
        self.handle = handle
        self.value = value
        self.signature = signature
    }
    @inlinable public var encodedLength: Int { 3 &+ value.count &+ signature.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        guard signature.count == ATT.signatureLength else {
            throw WireError(.valueOutOfRange, at: w.count, "authentication signature must be 12 bytes")
        }
        try w.u8(ATTOpcode.signedWriteCommand.rawValue)
        try w.u16(handle)
        try w.bytes(value)
        try w.bytes(signature)
    }
}

/// A parsed ATT_SIGNED_WRITE_CMD: the handle and one view over value + signature
/// (kept as one slice so ``ATTPDU`` stays small). Valid while the parsed buffer is alive.
/// Build outgoing commands with ``ATTSignedWriteCommand``.
public struct ATTSignedWriteCommandView {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value followed by the 12-byte authentication signature.
    public var valueAndSignature: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, valueAndSignature: UnsafeRawBufferPointer) {
        self.handle = handle
        self.valueAndSignature = valueAndSignature
    }
    @inlinable var valueCount: Int { Swift.max(0, valueAndSignature.count &- ATT.signatureLength) }
    /// The attribute value.
    @inlinable public var value: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: valueAndSignature[0 ..< valueCount])
    }
    /// The authentication signature (12 bytes in a parsed PDU).
    @inlinable public var signature: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: valueAndSignature[valueCount ..< valueAndSignature.count])
    }
    /// The owning-encoder form (copies nothing; encodes from the views).
    @inlinable public var command: ATTSignedWriteCommand<UnsafeRawBufferPointer> {
        ATTSignedWriteCommand(handle: handle, value: value, signature: signature)
    }
}

/// ATT_PREPARE_WRITE_REQ. Core Vol 3 Part F §3.4.6.1.
public struct ATTPrepareWriteRequest<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The offset into the attribute value.
    public var offset: UInt16
    /// This part of the value.
    public var partValue: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, offset: UInt16, partValue: Bytes) {
        self.handle = handle
        self.offset = offset
        self.partValue = partValue
    }
    @inlinable public var encodedLength: Int { 5 &+ partValue.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.prepareWriteRequest.rawValue)
        try w.u16(handle)
        try w.u16(offset)
        try w.bytes(partValue)
    }
}

/// ATT_PREPARE_WRITE_RSP (echoes the request). Core Vol 3 Part F §3.4.6.2.
public struct ATTPrepareWriteResponse<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The offset into the attribute value.
    public var offset: UInt16
    /// This part of the value.
    public var partValue: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, offset: UInt16, partValue: Bytes) {
        self.handle = handle
        self.offset = offset
        self.partValue = partValue
    }
    @inlinable public var encodedLength: Int { 5 &+ partValue.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.prepareWriteResponse.rawValue)
        try w.u16(handle)
        try w.u16(offset)
        try w.bytes(partValue)
    }
}

/// ATT_EXECUTE_WRITE_REQ. Core Vol 3 Part F §3.4.6.3.
public struct ATTExecuteWriteRequest: Hashable, Sendable, WireEncodable {
    /// Execute or cancel the prepared writes.
    public var flags: ATTExecuteWriteFlags
    /// A value with these fields.
    @inlinable public init(flags: ATTExecuteWriteFlags) { self.flags = flags }
    @inlinable public var encodedLength: Int { 2 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.executeWriteRequest.rawValue)
        try w.u8(flags.rawValue)
    }
}

/// ATT_EXECUTE_WRITE_RSP (no parameters). Core Vol 3 Part F §3.4.6.4.
public struct ATTExecuteWriteResponse: Hashable, Sendable, WireEncodable {
    /// The PDU (it has no parameters).
    @inlinable public init() {}
    @inlinable public var encodedLength: Int { 1 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.executeWriteResponse.rawValue)
    }
}

/// ATT_HANDLE_VALUE_NTF. Core Vol 3 Part F §3.4.7.1.
public struct ATTHandleValueNotification<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: Bytes) {
        self.handle = handle
        self.value = value
    }
    @inlinable public var encodedLength: Int { 3 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.handleValueNotification.rawValue)
        try w.u16(handle)
        try w.bytes(value)
    }
}

/// ATT_HANDLE_VALUE_IND. Core Vol 3 Part F §3.4.7.2.
public struct ATTHandleValueIndication<Bytes: Collection<UInt8>>: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: Bytes
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: Bytes) {
        self.handle = handle
        self.value = value
    }
    @inlinable public var encodedLength: Int { 3 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.handleValueIndication.rawValue)
        try w.u16(handle)
        try w.bytes(value)
    }
}

/// ATT_HANDLE_VALUE_CFM (no parameters). Core Vol 3 Part F §3.4.7.3.
public struct ATTHandleValueConfirmation: Hashable, Sendable, WireEncodable {
    /// The PDU (it has no parameters).
    @inlinable public init() {}
    @inlinable public var encodedLength: Int { 1 }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.handleValueConfirmation.rawValue)
    }
}

extension ATTFindByTypeValueRequest: Sendable where Bytes: Sendable {}
extension ATTReadResponse: Sendable where Bytes: Sendable {}
extension ATTReadBlobResponse: Sendable where Bytes: Sendable {}
extension ATTReadMultipleRequest: Sendable where Handles: Sendable {}
extension ATTReadMultipleResponse: Sendable where Bytes: Sendable {}
extension ATTReadMultipleVariableRequest: Sendable where Handles: Sendable {}
extension ATTWriteRequest: Sendable where Bytes: Sendable {}
extension ATTWriteCommand: Sendable where Bytes: Sendable {}
extension ATTSignedWriteCommand: Sendable where Bytes: Sendable {}
extension ATTPrepareWriteRequest: Sendable where Bytes: Sendable {}
extension ATTPrepareWriteResponse: Sendable where Bytes: Sendable {}
extension ATTHandleValueNotification: Sendable where Bytes: Sendable {}
extension ATTHandleValueIndication: Sendable where Bytes: Sendable {}
