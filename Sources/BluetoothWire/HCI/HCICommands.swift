/// An HCI command with its parameters (Core Vol 4 Part E §5.4.1, §7).
///
/// Conforming structs encode the whole command packet — OpCode (u16 LE),
/// Parameter_Total_Length (u8), parameters — WITHOUT the H4 indicator; use
/// ``encodedH4()`` / ``H4Packet`` for a byte-stream transport.
/// Encoding is not the hot path: variable data is owned as `[UInt8]`.
public protocol HCICommandEncodable: WireEncodable, FieldDescribable, Sendable, Equatable {
    /// The command's opcode (OGF and OCF).
    static var opcode: HCIOpcode { get }
    /// Parameter_Total_Length: bytes after the 3-byte command header.
    var parameterLength: Int { get }
    /// Appends the parameters (not the header).
    func encodeParameters(into writer: inout ByteWriter) throws(WireError)
    /// Reads the parameters from a reader over exactly the parameter bytes
    /// (its offsets count from the start of the command packet). The caller checks
    /// that nothing is left over.
    init(parameters reader: inout ByteReader) throws(WireError)
    /// The parameters for display, named like the spec in snake_case.
    var parameterFields: [Field] { get }
}

/// A command whose only parameter is a connection handle (HCI_Read_RSSI, HCI_LE_Read_PHY,
/// HCI_LE_Read_Remote_Features...): the encoding, decoding and display are shared.
public protocol HCIConnectionHandleCommand: HCICommandEncodable {
    /// The handle of the link.
    var connectionHandle: UInt16 { get set }
    /// The command for `connectionHandle`.
    init(connectionHandle: UInt16)
    /// The parameter's name for display (the spec's: Connection_Handle, or Handle).
    static var handleFieldName: String { get }
}

extension HCIConnectionHandleCommand {
    /// Connection_Handle, the name most commands give it.
    public static var handleFieldName: String { "connection_handle" }
    public var parameterLength: Int { 2 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try HCIParam.writeHandle(connectionHandle, &w) }
    public init(parameters r: inout ByteReader) throws(WireError) { self.init(connectionHandle: try HCIParam.readHandle(&r)) }
    public var parameterFields: [Field] { [Field(Self.handleFieldName, HCIParam.uint(connectionHandle))] }
}

extension HCICommandEncodable {
    public var encodedLength: Int { 3 + parameterLength }

    public func encode(into writer: inout ByteWriter) throws(WireError) {
        guard let length = UInt8(exactly: parameterLength) else {
            throw WireError(.valueOutOfRange, at: writer.count &+ 2, "HCI command parameters longer than 255 bytes")
        }
        try writer.u16(Self.opcode.rawValue)
        try writer.u8(length)
        try encodeParameters(into: &writer)
    }

    /// The command packet preceded by the H4 command indicator 0x01.
    public func encodedH4() throws(WireError) -> [UInt8] {
        try H4Packet(.command, self).encoded()
    }

    public var fieldTitle: String { Self.opcode.name ?? "HCI_Command" }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        HCICommand.headerFields(Self.opcode, parameterLength: parameterLength) + parameterFields
    }

    /// Parses a whole command packet (header + parameters, no H4 indicator) that must
    /// carry this command's opcode (`.unexpectedOpcode` otherwise).
    public init(parsing packet: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(packet)
        let opcode = try r.u16("OpCode")
        guard opcode == Self.opcode.rawValue else {
            throw WireError(.unexpectedOpcode, at: 0, "not the expected HCI command opcode")
        }
        var p = try HCICommand.parameterReader(&r)
        self = try Self(parameters: &p)
        try p.expectEnd("HCI command parameters longer than the command defines")
    }
}

/// A command without parameters.
public protocol HCIParameterlessCommand: HCICommandEncodable {
    init()
}

extension HCIParameterlessCommand {
    public var parameterLength: Int { 0 }
    public func encodeParameters(into writer: inout ByteWriter) throws(WireError) {}
    public init(parameters reader: inout ByteReader) throws(WireError) { self.init() }
    public var parameterFields: [Field] { [] }
}

/// Any HCI command packet, parsed (Core Vol 4 Part E §7): one case per command this
/// library knows, `.unknown` for the rest. Parsing copies variable-length parameters
/// into arrays (for display and tests; not the hot path).
public enum HCICommand: Sendable, Equatable {
    // Link Control (§7.1)
    case disconnect(DisconnectCommand)
    // Controller & Baseband (§7.3)
    case setEventMask(SetEventMaskCommand)
    case reset
    case setControllerToHostFlowControl(SetControllerToHostFlowControlCommand)
    case hostBufferSize(HostBufferSizeCommand)
    // Informational (§7.4)
    case readLocalVersionInformation
    case readLocalSupportedCommands
    case readLocalSupportedFeatures
    case readBDADDR
    // Status (§7.5)
    case readRSSI(ReadRSSICommand)
    // LE Controller (§7.8)
    case leSetEventMask(LESetEventMaskCommand)
    case leReadBufferSizeV1
    case leReadLocalSupportedFeatures
    case leSetRandomAddress(LESetRandomAddressCommand)
    case leSetAdvertisingParameters(LESetAdvertisingParametersCommand)
    case leSetAdvertisingData(LESetAdvertisingDataCommand)
    case leSetScanResponseData(LESetScanResponseDataCommand)
    case leSetAdvertisingEnable(LESetAdvertisingEnableCommand)
    case leSetScanParameters(LESetScanParametersCommand)
    case leSetScanEnable(LESetScanEnableCommand)
    case leCreateConnection(LECreateConnectionCommand)
    case leCreateConnectionCancel
    case leConnectionUpdate(LEConnectionUpdateCommand)
    case leReadRemoteFeatures(LEReadRemoteFeaturesCommand)
    case leEnableEncryption(LEEnableEncryptionCommand)
    case leLongTermKeyRequestReply(LELongTermKeyRequestReplyCommand)
    case leLongTermKeyRequestNegativeReply(LELongTermKeyRequestNegativeReplyCommand)
    case leRemoteConnectionParameterRequestReply(LERemoteConnectionParameterRequestReplyCommand)
    case leRemoteConnectionParameterRequestNegativeReply(LERemoteConnectionParameterRequestNegativeReplyCommand)
    case leSetDataLength(LESetDataLengthCommand)
    case leSetPHY(LESetPHYCommand)
    case leSetExtendedAdvertisingParameters(LESetExtendedAdvertisingParametersCommand)
    case leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand)
    case leSetExtendedScanResponseData(LESetExtendedScanResponseDataCommand)
    case leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand)
    case leSetExtendedScanParameters(LESetExtendedScanParametersCommand)
    case leSetExtendedScanEnable(LESetExtendedScanEnableCommand)
    case leExtendedCreateConnection(LEExtendedCreateConnectionCommand)
    case leReadBufferSizeV2
    /// A command this library does not decode: opcode and raw parameters (≤ 255 bytes).
    case unknown(HCIOpcode, [UInt8])

    /// Reads Parameter_Total_Length and returns a reader over exactly the parameters.
    /// The length must equal the bytes present (`.invalidLength` otherwise).
    @usableFromInline
    static func parameterReader(_ r: inout ByteReader) throws(WireError) -> ByteReader {
        let length = Int(try r.u8("Parameter_Total_Length"))
        guard r.remaining == length else {
            throw r.error(.invalidLength, "Parameter_Total_Length does not match the bytes present")
        }
        return try r.subReader(length, "parameters")
    }

    @inline(__always)
    static func read<C: HCICommandEncodable>(_ type: C.Type, _ r: inout ByteReader) throws(WireError) -> C {
        let c = try C(parameters: &r)
        try r.expectEnd("HCI command parameters longer than the command defines")
        return c
    }

    @inline(__always)
    static func none(_ r: inout ByteReader) throws(WireError) {
        try r.expectEnd("parameters given to a command that takes none")
    }

    /// Parses one command packet: OpCode, Parameter_Total_Length, parameters
    /// (no H4 indicator). Parameter_Total_Length must match the bytes present; each
    /// known command's parameters must be exactly as long as the command defines.
    public init(parsing packet: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(packet)
        let opcode = HCIOpcode(rawValue: try r.u16("OpCode"))
        var p = try HCICommand.parameterReader(&r)
        switch opcode {
        case .disconnect: self = .disconnect(try Self.read(DisconnectCommand.self, &p))
        case .setEventMask: self = .setEventMask(try Self.read(SetEventMaskCommand.self, &p))
        case .reset: try Self.none(&p); self = .reset
        case .setControllerToHostFlowControl:
            self = .setControllerToHostFlowControl(try Self.read(SetControllerToHostFlowControlCommand.self, &p))
        case .hostBufferSize: self = .hostBufferSize(try Self.read(HostBufferSizeCommand.self, &p))
        case .readLocalVersionInformation: try Self.none(&p); self = .readLocalVersionInformation
        case .readLocalSupportedCommands: try Self.none(&p); self = .readLocalSupportedCommands
        case .readLocalSupportedFeatures: try Self.none(&p); self = .readLocalSupportedFeatures
        case .readBDADDR: try Self.none(&p); self = .readBDADDR
        case .readRSSI: self = .readRSSI(try Self.read(ReadRSSICommand.self, &p))
        case .leSetEventMask: self = .leSetEventMask(try Self.read(LESetEventMaskCommand.self, &p))
        case .leReadBufferSizeV1: try Self.none(&p); self = .leReadBufferSizeV1
        case .leReadLocalSupportedFeatures: try Self.none(&p); self = .leReadLocalSupportedFeatures
        case .leSetRandomAddress: self = .leSetRandomAddress(try Self.read(LESetRandomAddressCommand.self, &p))
        case .leSetAdvertisingParameters:
            self = .leSetAdvertisingParameters(try Self.read(LESetAdvertisingParametersCommand.self, &p))
        case .leSetAdvertisingData: self = .leSetAdvertisingData(try Self.read(LESetAdvertisingDataCommand.self, &p))
        case .leSetScanResponseData: self = .leSetScanResponseData(try Self.read(LESetScanResponseDataCommand.self, &p))
        case .leSetAdvertisingEnable: self = .leSetAdvertisingEnable(try Self.read(LESetAdvertisingEnableCommand.self, &p))
        case .leSetScanParameters: self = .leSetScanParameters(try Self.read(LESetScanParametersCommand.self, &p))
        case .leSetScanEnable: self = .leSetScanEnable(try Self.read(LESetScanEnableCommand.self, &p))
        case .leCreateConnection: self = .leCreateConnection(try Self.read(LECreateConnectionCommand.self, &p))
        case .leCreateConnectionCancel: try Self.none(&p); self = .leCreateConnectionCancel
        case .leConnectionUpdate: self = .leConnectionUpdate(try Self.read(LEConnectionUpdateCommand.self, &p))
        case .leReadRemoteFeatures: self = .leReadRemoteFeatures(try Self.read(LEReadRemoteFeaturesCommand.self, &p))
        case .leEnableEncryption: self = .leEnableEncryption(try Self.read(LEEnableEncryptionCommand.self, &p))
        case .leLongTermKeyRequestReply:
            self = .leLongTermKeyRequestReply(try Self.read(LELongTermKeyRequestReplyCommand.self, &p))
        case .leLongTermKeyRequestNegativeReply:
            self = .leLongTermKeyRequestNegativeReply(try Self.read(LELongTermKeyRequestNegativeReplyCommand.self, &p))
        case .leRemoteConnectionParameterRequestReply:
            self = .leRemoteConnectionParameterRequestReply(
                try Self.read(LERemoteConnectionParameterRequestReplyCommand.self, &p))
        case .leRemoteConnectionParameterRequestNegativeReply:
            self = .leRemoteConnectionParameterRequestNegativeReply(
                try Self.read(LERemoteConnectionParameterRequestNegativeReplyCommand.self, &p))
        case .leSetDataLength: self = .leSetDataLength(try Self.read(LESetDataLengthCommand.self, &p))
        case .leSetPHY: self = .leSetPHY(try Self.read(LESetPHYCommand.self, &p))
        case .leSetExtendedAdvertisingParameters:
            self = .leSetExtendedAdvertisingParameters(try Self.read(LESetExtendedAdvertisingParametersCommand.self, &p))
        case .leSetExtendedAdvertisingData:
            self = .leSetExtendedAdvertisingData(try Self.read(LESetExtendedAdvertisingDataCommand.self, &p))
        case .leSetExtendedScanResponseData:
            self = .leSetExtendedScanResponseData(try Self.read(LESetExtendedScanResponseDataCommand.self, &p))
        case .leSetExtendedAdvertisingEnable:
            self = .leSetExtendedAdvertisingEnable(try Self.read(LESetExtendedAdvertisingEnableCommand.self, &p))
        case .leSetExtendedScanParameters:
            self = .leSetExtendedScanParameters(try Self.read(LESetExtendedScanParametersCommand.self, &p))
        case .leSetExtendedScanEnable: self = .leSetExtendedScanEnable(try Self.read(LESetExtendedScanEnableCommand.self, &p))
        case .leExtendedCreateConnection:
            self = .leExtendedCreateConnection(try Self.read(LEExtendedCreateConnectionCommand.self, &p))
        case .leReadBufferSizeV2: try Self.none(&p); self = .leReadBufferSizeV2
        default: self = .unknown(opcode, Array(p.rest()))
        }
    }

    /// The opcode of the command in the packet.
    public var opcode: HCIOpcode {
        switch self {
        case .disconnect: .disconnect
        case .setEventMask: .setEventMask
        case .reset: .reset
        case .setControllerToHostFlowControl: .setControllerToHostFlowControl
        case .hostBufferSize: .hostBufferSize
        case .readLocalVersionInformation: .readLocalVersionInformation
        case .readLocalSupportedCommands: .readLocalSupportedCommands
        case .readLocalSupportedFeatures: .readLocalSupportedFeatures
        case .readBDADDR: .readBDADDR
        case .readRSSI: .readRSSI
        case .leSetEventMask: .leSetEventMask
        case .leReadBufferSizeV1: .leReadBufferSizeV1
        case .leReadLocalSupportedFeatures: .leReadLocalSupportedFeatures
        case .leSetRandomAddress: .leSetRandomAddress
        case .leSetAdvertisingParameters: .leSetAdvertisingParameters
        case .leSetAdvertisingData: .leSetAdvertisingData
        case .leSetScanResponseData: .leSetScanResponseData
        case .leSetAdvertisingEnable: .leSetAdvertisingEnable
        case .leSetScanParameters: .leSetScanParameters
        case .leSetScanEnable: .leSetScanEnable
        case .leCreateConnection: .leCreateConnection
        case .leCreateConnectionCancel: .leCreateConnectionCancel
        case .leConnectionUpdate: .leConnectionUpdate
        case .leReadRemoteFeatures: .leReadRemoteFeatures
        case .leEnableEncryption: .leEnableEncryption
        case .leLongTermKeyRequestReply: .leLongTermKeyRequestReply
        case .leLongTermKeyRequestNegativeReply: .leLongTermKeyRequestNegativeReply
        case .leRemoteConnectionParameterRequestReply: .leRemoteConnectionParameterRequestReply
        case .leRemoteConnectionParameterRequestNegativeReply: .leRemoteConnectionParameterRequestNegativeReply
        case .leSetDataLength: .leSetDataLength
        case .leSetPHY: .leSetPHY
        case .leSetExtendedAdvertisingParameters: .leSetExtendedAdvertisingParameters
        case .leSetExtendedAdvertisingData: .leSetExtendedAdvertisingData
        case .leSetExtendedScanResponseData: .leSetExtendedScanResponseData
        case .leSetExtendedAdvertisingEnable: .leSetExtendedAdvertisingEnable
        case .leSetExtendedScanParameters: .leSetExtendedScanParameters
        case .leSetExtendedScanEnable: .leSetExtendedScanEnable
        case .leExtendedCreateConnection: .leExtendedCreateConnection
        case .leReadBufferSizeV2: .leReadBufferSizeV2
        case .unknown(let opcode, _): opcode
        }
    }

    /// The typed command, or nil for parameterless and unknown commands.
    public var command: (any HCICommandEncodable)? {
        switch self {
        case .disconnect(let c): c
        case .setEventMask(let c): c
        case .setControllerToHostFlowControl(let c): c
        case .hostBufferSize(let c): c
        case .readRSSI(let c): c
        case .leSetEventMask(let c): c
        case .leSetRandomAddress(let c): c
        case .leSetAdvertisingParameters(let c): c
        case .leSetAdvertisingData(let c): c
        case .leSetScanResponseData(let c): c
        case .leSetAdvertisingEnable(let c): c
        case .leSetScanParameters(let c): c
        case .leSetScanEnable(let c): c
        case .leCreateConnection(let c): c
        case .leConnectionUpdate(let c): c
        case .leReadRemoteFeatures(let c): c
        case .leEnableEncryption(let c): c
        case .leLongTermKeyRequestReply(let c): c
        case .leLongTermKeyRequestNegativeReply(let c): c
        case .leRemoteConnectionParameterRequestReply(let c): c
        case .leRemoteConnectionParameterRequestNegativeReply(let c): c
        case .leSetDataLength(let c): c
        case .leSetPHY(let c): c
        case .leSetExtendedAdvertisingParameters(let c): c
        case .leSetExtendedAdvertisingData(let c): c
        case .leSetExtendedScanResponseData(let c): c
        case .leSetExtendedAdvertisingEnable(let c): c
        case .leSetExtendedScanParameters(let c): c
        case .leSetExtendedScanEnable(let c): c
        case .leExtendedCreateConnection(let c): c
        case .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures,
             .readBDADDR, .leReadBufferSizeV1, .leReadLocalSupportedFeatures, .leCreateConnectionCancel,
             .leReadBufferSizeV2, .unknown:
            nil
        }
    }
}

extension HCICommand: WireEncodable {
    public var encodedLength: Int {
        if let c = command { return c.encodedLength }
        if case .unknown(_, let parameters) = self { return 3 + parameters.count }
        return 3
    }

    public func encode(into writer: inout ByteWriter) throws(WireError) {
        if let c = command { return try c.encode(into: &writer) }
        var parameters: [UInt8] = []
        if case .unknown(_, let p) = self { parameters = p }
        guard let length = UInt8(exactly: parameters.count) else {
            throw WireError(.valueOutOfRange, at: writer.count &+ 2, "HCI command parameters longer than 255 bytes")
        }
        try writer.u16(opcode.rawValue)
        try writer.u8(length)
        try writer.bytes(parameters)
    }

    /// The command packet preceded by the H4 command indicator 0x01.
    public func encodedH4() throws(WireError) -> [UInt8] {
        try H4Packet(.command, self).encoded()
    }
}

extension HCICommand: FieldDescribable {
    public var fieldTitle: String { opcode.name ?? "HCI_Command" }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        if let c = command { return c.fields }
        var parameters: [UInt8] = []
        if case .unknown(_, let p) = self { parameters = p }
        var out = Self.headerFields(opcode, parameterLength: parameters.count)
        if case .unknown = self { out.append(Field("parameters", .bytes(parameters))) }
        return out
    }

    static func headerFields(_ opcode: HCIOpcode, parameterLength: Int) -> [Field] {
        [
            Field("opcode", .named(UInt64(opcode.rawValue), opcode.name ?? "0x\(Hex.pad(opcode.rawValue, 4))")),
            Field("ogf", .uint(UInt64(opcode.ogf))),
            Field("ocf", .uint(UInt64(opcode.ocf))),
            Field("parameter_total_length", .uint(UInt64(parameterLength))),
        ]
    }
}

// MARK: - Shared parameter helpers

/// Reading, writing and describing the parameter kinds many commands share.
enum HCIParam {
    /// Connection_Handle: 12 bits, Range 0x0000 to 0x0EFF (Core Vol 4 Part E §7.1.6).
    @inline(__always)
    static func readHandle(_ r: inout ByteReader) throws(WireError) -> UInt16 {
        let at = r.offset
        let h = try r.u16("Connection_Handle")
        guard h <= hciMaximumConnectionHandle else {
            throw WireError(.invalidValue, at: at, "connection handle above 0x0EFF")
        }
        return h
    }

    @inline(__always)
    static func writeHandle(_ h: UInt16, _ w: inout ByteWriter) throws(WireError) {
        guard h <= hciMaximumConnectionHandle else {
            throw WireError(.valueOutOfRange, at: w.count, "connection handle above 0x0EFF")
        }
        try w.u16(h)
    }

    /// A one-byte 0x00/0x01 flag; other values are reserved and rejected.
    @inline(__always)
    static func readBool(_ r: inout ByteReader, _ field: StaticString) throws(WireError) -> Bool {
        let at = r.offset
        switch try r.u8(field) {
        case 0: return false
        case 1: return true
        default: throw WireError(.invalidValue, at: at, field)
        }
    }

    /// 16 bytes (keys), kept in wire order.
    @inline(__always)
    static func read16Bytes(_ r: inout ByteReader, _ field: StaticString) throws(WireError) -> [UInt8] {
        Array(try r.bytes(16, field))
    }

    @inline(__always)
    static func write16Bytes(_ b: [UInt8], _ w: inout ByteWriter) throws(WireError) {
        guard b.count == 16 else { throw WireError(.valueOutOfRange, at: w.count, "key must be 16 bytes") }
        try w.bytes(b)
    }

    static func uint(_ v: some BinaryInteger) -> FieldValue { .uint(UInt64(v)) }

    static func named<T: RawRepresentable & CustomStringConvertible>(_ v: T) -> FieldValue where T.RawValue: BinaryInteger {
        .named(UInt64(v.rawValue), v.description)
    }

    static func error(_ v: HCIErrorCode) -> FieldValue {
        .named(UInt64(v.rawValue), v.name ?? "Reserved")
    }

    static func address(_ a: BluetoothAddress) -> FieldValue { .text(a.description) }

    static func addressType(_ t: LEAddressType) -> FieldValue { .named(UInt64(t.rawValue), t.description) }

    /// A time value given in units of `unitMicroseconds`, shown as "N (x ms)".
    static func time(_ v: some BinaryInteger, unitMicroseconds: UInt64) -> FieldValue {
        let us = UInt64(v) &* unitMicroseconds
        let ms = us / 1000
        let frac = us % 1000
        var text = "\(ms)"
        if frac != 0 {
            var digits = String(frac + 1000).dropFirst() // three digits with leading zeros
            while digits.last == "0" { digits.removeLast() }
            text += "." + digits
        }
        return .named(UInt64(v), text + " ms")
    }

    /// 0.625 ms units (scan/advertising intervals and windows).
    static func slots(_ v: some BinaryInteger) -> FieldValue { time(v, unitMicroseconds: 625) }
    /// 1.25 ms units (connection intervals).
    static func connectionInterval(_ v: some BinaryInteger) -> FieldValue { time(v, unitMicroseconds: 1250) }
    /// 10 ms units (supervision timeout, extended scan duration).
    static func tenMilliseconds(_ v: some BinaryInteger) -> FieldValue { time(v, unitMicroseconds: 10_000) }

    static func bitNames(_ value: UInt64, _ names: [String]) -> String {
        if value == 0 { return "none" }
        var parts: [String] = []
        for bit in 0 ..< 64 where value & (1 << UInt64(bit)) != 0 {
            parts.append(bit < names.count ? names[bit] : "bit\(bit)")
        }
        return parts.joined(separator: "|")
    }
}
