/// HCI_Command_Complete (Core Vol 4 Part E §7.7.14), as a view: the return parameters
/// point into the parsed buffer and are valid only while it is alive.
///
/// The generic event always parses (a NOP Command Complete has no return parameters);
/// decode the return parameters with ``returnParameters(as:)`` or ``decodedReturn``.
public struct HCICommandComplete: HCIEventParameters {
    /// Num_HCI_Command_Packets: commands the controller takes now.
    public let numHCICommandPackets: UInt8
    /// Command_Opcode.
    public let commandOpcode: HCIOpcode
    /// Return_Parameters: everything after Command_Opcode.
    public let returnParameters: UnsafeRawBufferPointer

    /// Offset of the return parameters within the event packet (code, length, num, opcode).
    public static let returnParametersOffset = 5

    /// The event parameters as given.
    @inlinable
    public init(numHCICommandPackets: UInt8, commandOpcode: HCIOpcode, returnParameters: UnsafeRawBufferPointer) {
        self.numHCICommandPackets = numHCICommandPackets
        self.commandOpcode = commandOpcode
        self.returnParameters = returnParameters
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let n = try r.u8("Num_HCI_Command_Packets")
        let o = try r.u16("Command_Opcode")
        self.init(numHCICommandPackets: n, commandOpcode: HCIOpcode(rawValue: o), returnParameters: r.rest())
    }

    /// The first return parameter, which is Status for every command that has return
    /// parameters; nil when there are none (e.g. NOP).
    @inlinable
    public var status: HCIErrorCode? {
        guard returnParameters.count >= 1 else { return nil }
        return HCIErrorCode(rawValue: returnParameters.load(fromByteOffset: 0, as: UInt8.self))
    }

    /// Decodes the return parameters as `type`. Throws `.truncated` when they are too short
    /// and `.trailingBytes` when too long. Error offsets refer to the whole event packet.
    /// Does not check that `type` belongs to `commandOpcode`.
    public func returnParameters<T: HCICommandReturnParameters>(as type: T.Type) throws(WireError) -> T {
        var r = ByteReader(returnParameters, baseOffset: Self.returnParametersOffset)
        let value = try T(reading: &r)
        try r.expectEnd("unexpected bytes after the return parameters")
        return value
    }

    /// The return parameters decoded by opcode, for display and dispatch.
    public var decodedReturn: HCICommandReturn { HCICommandReturn(opcode: commandOpcode, returnParameters: self) }

    /// The HCI event code.
    public var eventCode: HCIEventCode { .commandComplete }
    public var parameterLength: Int { 3 &+ returnParameters.count }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(numHCICommandPackets)
        try w.u16(commandOpcode.rawValue)
        try w.bytes(returnParameters)
    }

    public var fieldTitle: String { "HCI_Command_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("num_hci_command_packets", .u(numHCICommandPackets)),
         Field("command_opcode", .opcode(commandOpcode)),
         Field("return_parameters", decodedReturn.fieldValue)]
    }

    /// An owned Command Complete for encoding (e.g. by a simulated controller).
    public struct Owned: HCIEventParameters, Hashable, Sendable {
        /// Num_HCI_Command_Packets: commands the controller takes now.
        public var numHCICommandPackets: UInt8
        /// Command_Opcode.
        public var commandOpcode: HCIOpcode
        /// Return_Parameters.
        public var returnParameters: [UInt8]

        /// The event parameters as given.
        public init(numHCICommandPackets: UInt8, commandOpcode: HCIOpcode, returnParameters: [UInt8]) {
            self.numHCICommandPackets = numHCICommandPackets
            self.commandOpcode = commandOpcode
            self.returnParameters = returnParameters
        }

        /// Builds the event from typed return parameters.
        public init(numHCICommandPackets: UInt8, commandOpcode: HCIOpcode, returning value: some HCICommandReturnParameters) throws(WireError) {
            self.init(numHCICommandPackets: numHCICommandPackets, commandOpcode: commandOpcode, returnParameters: try value.encoded())
        }

        /// The HCI event code.
        public var eventCode: HCIEventCode { .commandComplete }
        public var parameterLength: Int { 3 &+ returnParameters.count }
        public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
            try w.u8(numHCICommandPackets)
            try w.u16(commandOpcode.rawValue)
            try w.bytes(returnParameters)
        }
        public var fieldTitle: String { "HCI_Command_Complete" }
        /// The decoded fields, for the text and JSON renderers.
        public var fields: [Field] {
            returnParameters.withUnsafeBytes {
                HCICommandComplete(numHCICommandPackets: numHCICommandPackets, commandOpcode: commandOpcode, returnParameters: $0).fields
            }
        }
    }
}

/// Typed return parameters of one command (the bytes after Command_Opcode in
/// HCI_Command_Complete). Encoding writes just those bytes.
public protocol HCICommandReturnParameters: WireEncodable, FieldDescribable {
    /// Reads the return parameters (the caller checks that nothing is left).
    init(reading r: inout ByteReader) throws(WireError)
}

extension HCICommandReturnParameters {
    /// Parses exactly these return-parameter bytes.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        try self.init(reading: &r)
        try r.expectEnd("unexpected bytes after the return parameters")
    }
}

/// Return parameters decoded according to the Command Complete's opcode.
public enum HCICommandReturn {
    /// No return parameters (e.g. the NOP opcode 0x0000 that only returns credits).
    case none
    case status(HCIStatusReturn)
    case connectionHandle(HCIConnectionHandleReturn)
    case readLocalVersionInformation(HCIReadLocalVersionInformationReturn)
    case readLocalSupportedCommands(HCIReadLocalSupportedCommandsReturn)
    case readLocalSupportedFeatures(HCIReadLocalSupportedFeaturesReturn)
    case readBufferSize(HCIReadBufferSizeReturn)
    case readBDADDR(HCIReadBDADDRReturn)
    case readRSSI(HCIReadRSSIReturn)
    case leReadBufferSizeV1(LEReadBufferSizeV1Return)
    case leReadBufferSizeV2(LEReadBufferSizeV2Return)
    case leReadLocalSupportedFeatures(LEReadLocalSupportedFeaturesReturn)
    case leReadAdvertisingPhysicalChannelTxPower(LEReadAdvertisingPhysicalChannelTxPowerReturn)
    case leReadFilterAcceptListSize(LEReadFilterAcceptListSizeReturn)
    case leRand(LERandReturn)
    case leReadSupportedStates(LEReadSupportedStatesReturn)
    case leReadSuggestedDefaultDataLength(LEReadSuggestedDefaultDataLengthReturn)
    case leReadMaximumDataLength(LEReadMaximumDataLengthReturn)
    case leReadPHY(LEReadPHYReturn)
    case leSetExtendedAdvertisingParameters(LESetExtendedAdvertisingParametersReturn)
    case leReadMaximumAdvertisingDataLength(LEReadMaximumAdvertisingDataLengthReturn)
    case leReadNumberOfSupportedAdvertisingSets(LEReadNumberOfSupportedAdvertisingSetsReturn)
    /// An opcode whose return parameters this library does not know.
    case unknown(UnsafeRawBufferPointer)
    /// Known opcode, but the bytes do not fit its layout.
    case malformed(WireError, UnsafeRawBufferPointer)

    /// Commands whose only return parameter is Status.
    static func isStatusOnly(_ o: HCIOpcode) -> Bool {
        switch o {
        case .reset, .setEventMask, .setEventMaskPage2, .writeLEHostSupport, .setControllerToHostFlowControl,
             .hostBufferSize, .leSetEventMask, .leSetRandomAddress, .leSetAdvertisingParameters,
             .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable, .leSetScanParameters,
             .leSetScanEnable, .leCreateConnectionCancel, .leClearFilterAcceptList,
             .leAddDeviceToFilterAcceptList, .leRemoveDeviceFromFilterAcceptList,
             .leWriteSuggestedDefaultDataLength, .leSetDefaultPHY, .leSetAdvertisingSetRandomAddress,
             .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable,
             .leRemoveAdvertisingSet, .leClearAdvertisingSets, .leSetExtendedScanParameters,
             .leSetExtendedScanEnable:
            true
        default:
            false
        }
    }

    /// Commands whose return parameters are Status and Connection_Handle.
    static func isStatusAndHandle(_ o: HCIOpcode) -> Bool {
        switch o {
        case .leSetDataLength, .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply,
             .leRemoteConnectionParameterRequestReply, .leRemoteConnectionParameterRequestNegativeReply:
            true
        default:
            false
        }
    }

    init(opcode: HCIOpcode, returnParameters cc: HCICommandComplete) {
        let bytes = cc.returnParameters
        if bytes.isEmpty && opcode == .nop { self = .none; return }
        do throws(WireError) {
            if Self.isStatusOnly(opcode) { self = .status(try cc.returnParameters(as: HCIStatusReturn.self)); return }
            if Self.isStatusAndHandle(opcode) { self = .connectionHandle(try cc.returnParameters(as: HCIConnectionHandleReturn.self)); return }
            switch opcode {
            case .readLocalVersionInformation: self = .readLocalVersionInformation(try cc.returnParameters(as: HCIReadLocalVersionInformationReturn.self))
            case .readLocalSupportedCommands: self = .readLocalSupportedCommands(try cc.returnParameters(as: HCIReadLocalSupportedCommandsReturn.self))
            case .readLocalSupportedFeatures: self = .readLocalSupportedFeatures(try cc.returnParameters(as: HCIReadLocalSupportedFeaturesReturn.self))
            case .readBufferSize: self = .readBufferSize(try cc.returnParameters(as: HCIReadBufferSizeReturn.self))
            case .readBDADDR: self = .readBDADDR(try cc.returnParameters(as: HCIReadBDADDRReturn.self))
            case .readRSSI: self = .readRSSI(try cc.returnParameters(as: HCIReadRSSIReturn.self))
            case .leReadBufferSizeV1: self = .leReadBufferSizeV1(try cc.returnParameters(as: LEReadBufferSizeV1Return.self))
            case .leReadBufferSizeV2: self = .leReadBufferSizeV2(try cc.returnParameters(as: LEReadBufferSizeV2Return.self))
            case .leReadLocalSupportedFeatures: self = .leReadLocalSupportedFeatures(try cc.returnParameters(as: LEReadLocalSupportedFeaturesReturn.self))
            case .leReadAdvertisingPhysicalChannelTxPower: self = .leReadAdvertisingPhysicalChannelTxPower(try cc.returnParameters(as: LEReadAdvertisingPhysicalChannelTxPowerReturn.self))
            case .leReadFilterAcceptListSize: self = .leReadFilterAcceptListSize(try cc.returnParameters(as: LEReadFilterAcceptListSizeReturn.self))
            case .leRand: self = .leRand(try cc.returnParameters(as: LERandReturn.self))
            case .leReadSupportedStates: self = .leReadSupportedStates(try cc.returnParameters(as: LEReadSupportedStatesReturn.self))
            case .leReadSuggestedDefaultDataLength: self = .leReadSuggestedDefaultDataLength(try cc.returnParameters(as: LEReadSuggestedDefaultDataLengthReturn.self))
            case .leReadMaximumDataLength: self = .leReadMaximumDataLength(try cc.returnParameters(as: LEReadMaximumDataLengthReturn.self))
            case .leReadPHY: self = .leReadPHY(try cc.returnParameters(as: LEReadPHYReturn.self))
            case .leSetExtendedAdvertisingParameters: self = .leSetExtendedAdvertisingParameters(try cc.returnParameters(as: LESetExtendedAdvertisingParametersReturn.self))
            case .leReadMaximumAdvertisingDataLength: self = .leReadMaximumAdvertisingDataLength(try cc.returnParameters(as: LEReadMaximumAdvertisingDataLengthReturn.self))
            case .leReadNumberOfSupportedAdvertisingSets: self = .leReadNumberOfSupportedAdvertisingSets(try cc.returnParameters(as: LEReadNumberOfSupportedAdvertisingSetsReturn.self))
            default: self = bytes.isEmpty ? .none : .unknown(bytes)
            }
        } catch {
            // A failed command may return only its Status.
            if bytes.count == 1, let s = cc.status, !s.isSuccess {
                self = .status(HCIStatusReturn(status: s))
            } else {
                self = .malformed(error, bytes)
            }
        }
    }

    /// The decoded value, nil for `.none`, `.unknown` and `.malformed`.
    public var value: (any HCICommandReturnParameters)? {
        switch self {
        case .none, .unknown, .malformed: nil
        case .status(let v): v
        case .connectionHandle(let v): v
        case .readLocalVersionInformation(let v): v
        case .readLocalSupportedCommands(let v): v
        case .readLocalSupportedFeatures(let v): v
        case .readBufferSize(let v): v
        case .readBDADDR(let v): v
        case .readRSSI(let v): v
        case .leReadBufferSizeV1(let v): v
        case .leReadBufferSizeV2(let v): v
        case .leReadLocalSupportedFeatures(let v): v
        case .leReadAdvertisingPhysicalChannelTxPower(let v): v
        case .leReadFilterAcceptListSize(let v): v
        case .leRand(let v): v
        case .leReadSupportedStates(let v): v
        case .leReadSuggestedDefaultDataLength(let v): v
        case .leReadMaximumDataLength(let v): v
        case .leReadPHY(let v): v
        case .leSetExtendedAdvertisingParameters(let v): v
        case .leReadMaximumAdvertisingDataLength(let v): v
        case .leReadNumberOfSupportedAdvertisingSets(let v): v
        }
    }

    /// For display: an object of named fields, raw bytes, or the error.
    public var fieldValue: FieldValue {
        switch self {
        case .none: .list([])
        case .unknown(let b): .bytes(b)
        case .malformed(let e, let b):
            .object([Field("error", .text(e.description)), Field("bytes", .bytes(b))])
        default: .object(value?.fields ?? [])
        }
    }
}
