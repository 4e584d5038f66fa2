// Parsed (view) forms of the variable-length ATT PDUs: concrete, non-generic structs so
// `ATTPDU(parsing:)` needs no generic metadata at run time. Byte fields are slices of the
// parsed buffer, valid only while it is alive. Re-encoding a view copies its bytes; to build
// a PDU for sending use the owning generic form (e.g. `ATTWriteRequest(handle:value: [UInt8])`).

/// A parsed ATT FindByTypeValueRequest (view). Core Vol 3 Part F §3.4.3.3.
public struct ATTFindByTypeValueRequestView: WireEncodable {
    /// The first handle of the range.
    public var startHandle: UInt16
    /// The last handle of the range.
    public var endHandle: UInt16
    /// The 16-bit attribute type.
    public var attributeType: UInt16
    /// The attribute value.
    public var value: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(startHandle: UInt16, endHandle: UInt16, attributeType: UInt16, value: UnsafeRawBufferPointer) {
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

/// A parsed ATT ReadResponse (view). Core Vol 3 Part F §3.4.4.4.
public struct ATTReadResponseView: WireEncodable {
    /// The attribute value.
    public var value: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(value: UnsafeRawBufferPointer) {
        self.value = value
    }
    @inlinable public var encodedLength: Int { 1 &+ value.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readResponse.rawValue)
        try w.bytes(value)
    }
}

/// A parsed ATT ReadBlobResponse (view). Core Vol 3 Part F §3.4.4.6.
public struct ATTReadBlobResponseView: WireEncodable {
    /// This part of the value.
    public var partValue: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(partValue: UnsafeRawBufferPointer) {
        self.partValue = partValue
    }
    @inlinable public var encodedLength: Int { 1 &+ partValue.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readBlobResponse.rawValue)
        try w.bytes(partValue)
    }
}

/// A parsed ATT ReadMultipleRequest (view). Core Vol 3 Part F §3.4.4.7.
public struct ATTReadMultipleRequestView: WireEncodable {
    /// The handles to read.
    public var handles: ATTHandleList
    /// A value with these fields.
    @inlinable public init(handles: ATTHandleList) {
        self.handles = handles
    }
    @inlinable public var encodedLength: Int { 1 &+ handles.bytes.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readMultipleRequest.rawValue)
        try w.bytes(handles.bytes)
    }
}

/// A parsed ATT ReadMultipleResponse (view). Core Vol 3 Part F §3.4.4.8.
public struct ATTReadMultipleResponseView: WireEncodable {
    /// The values, concatenated (a view).
    public var values: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(values: UnsafeRawBufferPointer) {
        self.values = values
    }
    @inlinable public var encodedLength: Int { 1 &+ values.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readMultipleResponse.rawValue)
        try w.bytes(values)
    }
}

/// A parsed ATT ReadMultipleVariableRequest (view). Core Vol 3 Part F §3.4.4.11.
public struct ATTReadMultipleVariableRequestView: WireEncodable {
    /// The handles to read.
    public var handles: ATTHandleList
    /// A value with these fields.
    @inlinable public init(handles: ATTHandleList) {
        self.handles = handles
    }
    @inlinable public var encodedLength: Int { 1 &+ handles.bytes.count }
    @inlinable public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ATTOpcode.readMultipleVariableRequest.rawValue)
        try w.bytes(handles.bytes)
    }
}

/// A parsed ATT WriteRequest (view). Core Vol 3 Part F §3.4.5.1.
public struct ATTWriteRequestView: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: UnsafeRawBufferPointer) {
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

/// A parsed ATT WriteCommand (view). Core Vol 3 Part F §3.4.5.3.
public struct ATTWriteCommandView: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: UnsafeRawBufferPointer) {
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

/// A parsed ATT PrepareWriteRequest (view). Core Vol 3 Part F §3.4.6.1.
public struct ATTPrepareWriteRequestView: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The offset into the attribute value.
    public var offset: UInt16
    /// This part of the value.
    public var partValue: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, offset: UInt16, partValue: UnsafeRawBufferPointer) {
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

/// A parsed ATT PrepareWriteResponse (view). Core Vol 3 Part F §3.4.6.2.
public struct ATTPrepareWriteResponseView: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The offset into the attribute value.
    public var offset: UInt16
    /// This part of the value.
    public var partValue: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, offset: UInt16, partValue: UnsafeRawBufferPointer) {
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

/// A parsed ATT HandleValueNotification (view). Core Vol 3 Part F §3.4.7.1.
public struct ATTHandleValueNotificationView: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: UnsafeRawBufferPointer) {
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

/// A parsed ATT HandleValueIndication (view). Core Vol 3 Part F §3.4.7.2.
public struct ATTHandleValueIndicationView: WireEncodable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute value.
    public var value: UnsafeRawBufferPointer
    /// A value with these fields.
    @inlinable public init(handle: UInt16, value: UnsafeRawBufferPointer) {
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
