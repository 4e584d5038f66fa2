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

// MARK: - Return parameter types (Core Vol 4 Part E §7.3–§7.8)

/// Return parameters of commands that return only Status (HCI_Reset and most setters).
public struct HCIStatusReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// The event parameters as given.
    public init(status: HCIErrorCode) { self.status = status }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
    }
    public var encodedLength: Int { 1 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u8(status.rawValue) }
    public var fieldTitle: String { "Status return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status))] }
}

/// Status and Connection_Handle: HCI_LE_Set_Data_Length, HCI_LE_Long_Term_Key_Request_Reply /
/// _Negative_Reply, HCI_LE_Remote_Connection_Parameter_Request_Reply / _Negative_Reply.
public struct HCIConnectionHandleReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The event parameters as given.
    public init(status: HCIErrorCode, connectionHandle: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        connectionHandle = try r.u16("Connection_Handle")
    }
    public var encodedLength: Int { 3 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
    }
    public var fieldTitle: String { "Status and Connection_Handle return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("connection_handle", .u(connectionHandle))] }
}

/// HCI_Read_Local_Version_Information return parameters (Core Vol 4 Part E §7.4.1).
public struct HCIReadLocalVersionInformationReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// HCI_Version.
    public var hciVersion: HCICoreVersion
    /// HCI_Subversion (called HCI_Revision before Core 5.3).
    public var hciSubversion: UInt16
    /// LMP_Version.
    public var lmpVersion: HCICoreVersion
    /// Company_Identifier of the controller's manufacturer (Assigned Numbers).
    public var companyIdentifier: UInt16
    /// LMP_Subversion.
    public var lmpSubversion: UInt16

    /// The event parameters as given.
    public init(status: HCIErrorCode, hciVersion: HCICoreVersion, hciSubversion: UInt16, lmpVersion: HCICoreVersion, companyIdentifier: UInt16, lmpSubversion: UInt16) {
        self.status = status
        self.hciVersion = hciVersion
        self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion
        self.companyIdentifier = companyIdentifier
        self.lmpSubversion = lmpSubversion
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        hciVersion = HCICoreVersion(rawValue: try r.u8("HCI_Version"))
        hciSubversion = try r.u16("HCI_Subversion")
        lmpVersion = HCICoreVersion(rawValue: try r.u8("LMP_Version"))
        companyIdentifier = try r.u16("Company_Identifier")
        lmpSubversion = try r.u16("LMP_Subversion")
    }
    public var encodedLength: Int { 9 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u8(hciVersion.rawValue)
        try w.u16(hciSubversion)
        try w.u8(lmpVersion.rawValue)
        try w.u16(companyIdentifier)
        try w.u16(lmpSubversion)
    }
    public var fieldTitle: String { "HCI_Read_Local_Version_Information return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("hci_version", .code(hciVersion, hciVersion.name)),
         Field("hci_subversion", .u(hciSubversion)),
         Field("lmp_version", .code(lmpVersion, lmpVersion.name)),
         Field("company_identifier", .u(companyIdentifier)),
         Field("lmp_subversion", .u(lmpSubversion))]
    }
}

/// HCI_Read_BD_ADDR return parameters (Core Vol 4 Part E §7.4.6).
public struct HCIReadBDADDRReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// BD_ADDR.
    public var bdAddr: BluetoothAddress
    /// The event parameters as given.
    public init(status: HCIErrorCode, bdAddr: BluetoothAddress) {
        self.status = status
        self.bdAddr = bdAddr
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        bdAddr = try BluetoothAddress.read(&r)
    }
    public var encodedLength: Int { 7 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try bdAddr.write(&w)
    }
    public var fieldTitle: String { "HCI_Read_BD_ADDR return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("bd_addr", .address(bdAddr))] }
}

/// HCI_Read_Local_Supported_Commands return parameters (Core Vol 4 Part E §7.4.2, §6.27):
/// a 64-octet bit mask of supported commands.
public struct HCIReadLocalSupportedCommandsReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Supported_Commands: exactly 64 octets.
    public var supportedCommands: [UInt8]

    /// The event parameters as given.
    public init(status: HCIErrorCode, supportedCommands: [UInt8]) {
        self.status = status
        self.supportedCommands = supportedCommands
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        supportedCommands = Array(try r.bytes(64, "Supported_Commands"))
    }

    /// Whether bit `bit` (0...7) of octet `octet` (0...63) is set, as numbered in Core Vol 4
    /// Part E §6.27 (e.g. HCI_LE_Set_Extended_Advertising_Parameters is octet 36 bit 1).
    public func supports(octet: Int, bit: Int) -> Bool {
        guard octet >= 0, octet < supportedCommands.count, bit >= 0, bit < 8 else { return false }
        return supportedCommands[octet] & (1 << UInt8(bit)) != 0
    }

    public var encodedLength: Int { 65 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard supportedCommands.count == 64 else {
            throw WireError(.valueOutOfRange, at: w.count, "Supported_Commands must be 64 octets")
        }
        try w.u8(status.rawValue)
        try w.bytes(supportedCommands)
    }
    public var fieldTitle: String { "HCI_Read_Local_Supported_Commands return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("supported_commands", .bytes(supportedCommands))] }
}

/// HCI_Read_Local_Supported_Features return parameters (Core Vol 4 Part E §7.4.3):
/// the LMP features page 0 bit mask (Core Vol 2 Part C §3.3).
public struct HCIReadLocalSupportedFeaturesReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// LMP_Features.
    public var lmpFeatures: UInt64
    /// The event parameters as given.
    public init(status: HCIErrorCode, lmpFeatures: UInt64) {
        self.status = status
        self.lmpFeatures = lmpFeatures
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        lmpFeatures = try r.u64("LMP_Features")
    }
    /// Bit 38: LE Supported (Controller).
    public var leSupportedController: Bool { lmpFeatures & (1 << 38) != 0 }
    /// Bit 37: BR/EDR Not Supported.
    public var brEDRNotSupported: Bool { lmpFeatures & (1 << 37) != 0 }
    public var encodedLength: Int { 9 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u64(lmpFeatures)
    }
    public var fieldTitle: String { "HCI_Read_Local_Supported_Features return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("lmp_features", .text("0x" + Hex.pad(lmpFeatures, 16))),
         Field("le_supported_controller", .bool(leSupportedController)),
         Field("br_edr_not_supported", .bool(brEDRNotSupported))]
    }
}

/// HCI_Read_Buffer_Size return parameters (Core Vol 4 Part E §7.4.5).
public struct HCIReadBufferSizeReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// ACL_Data_Packet_Length.
    public var aclDataPacketLength: UInt16
    /// Synchronous_Data_Packet_Length.
    public var synchronousDataPacketLength: UInt8
    /// Total_Num_ACL_Data_Packets.
    public var totalNumACLDataPackets: UInt16
    /// Total_Num_Synchronous_Data_Packets.
    public var totalNumSynchronousDataPackets: UInt16
    /// The event parameters as given.
    public init(status: HCIErrorCode, aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8, totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16) {
        self.status = status
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        aclDataPacketLength = try r.u16("ACL_Data_Packet_Length")
        synchronousDataPacketLength = try r.u8("Synchronous_Data_Packet_Length")
        totalNumACLDataPackets = try r.u16("Total_Num_ACL_Data_Packets")
        totalNumSynchronousDataPackets = try r.u16("Total_Num_Synchronous_Data_Packets")
    }
    public var encodedLength: Int { 8 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(aclDataPacketLength)
        try w.u8(synchronousDataPacketLength)
        try w.u16(totalNumACLDataPackets)
        try w.u16(totalNumSynchronousDataPackets)
    }
    public var fieldTitle: String { "HCI_Read_Buffer_Size return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("acl_data_packet_length", .u(aclDataPacketLength)),
         Field("synchronous_data_packet_length", .u(synchronousDataPacketLength)),
         Field("total_num_acl_data_packets", .u(totalNumACLDataPackets)),
         Field("total_num_synchronous_data_packets", .u(totalNumSynchronousDataPackets))]
    }
}

/// HCI_Read_RSSI return parameters (Core Vol 4 Part E §7.5.4).
public struct HCIReadRSSIReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// RSSI in dBm (LE: absolute receiver signal strength).
    public var rssi: Int8
    /// The event parameters as given.
    public init(status: HCIErrorCode, connectionHandle: UInt16, rssi: Int8) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.rssi = rssi
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        connectionHandle = try r.u16("Handle")
        rssi = try r.i8("RSSI")
    }
    public var encodedLength: Int { 4 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.i8(rssi)
    }
    public var fieldTitle: String { "HCI_Read_RSSI return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)), Field("handle", .u(connectionHandle)), Field("rssi", .i(rssi))]
    }
}

/// HCI_LE_Read_Buffer_Size [v1] return parameters (Core Vol 4 Part E §7.8.2).
public struct LEReadBufferSizeV1Return: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// 0 means: use the shared BR/EDR buffers (HCI_Read_Buffer_Size).
    public var leACLDataPacketLength: UInt16
    /// Total_Num_LE_ACL_Data_Packets: LE ACL buffers.
    public var totalNumLEACLDataPackets: UInt8
    /// The event parameters as given.
    public init(status: HCIErrorCode, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) {
        self.status = status
        self.leACLDataPacketLength = leACLDataPacketLength
        self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        leACLDataPacketLength = try r.u16("LE_ACL_Data_Packet_Length")
        totalNumLEACLDataPackets = try r.u8("Total_Num_LE_ACL_Data_Packets")
    }
    public var encodedLength: Int { 4 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(leACLDataPacketLength)
        try w.u8(totalNumLEACLDataPackets)
    }
    public var fieldTitle: String { "HCI_LE_Read_Buffer_Size [v1] return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("le_acl_data_packet_length", .u(leACLDataPacketLength)),
         Field("total_num_le_acl_data_packets", .u(totalNumLEACLDataPackets))]
    }
}

/// HCI_LE_Read_Buffer_Size [v2] return parameters (Core Vol 4 Part E §7.8.2).
public struct LEReadBufferSizeV2Return: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// LE_ACL_Data_Packet_Length.
    public var leACLDataPacketLength: UInt16
    /// Total_Num_LE_ACL_Data_Packets: LE ACL buffers.
    public var totalNumLEACLDataPackets: UInt8
    /// ISO_Data_Packet_Length.
    public var isoDataPacketLength: UInt16
    /// Total_Num_ISO_Data_Packets.
    public var totalNumISODataPackets: UInt8
    /// The event parameters as given.
    public init(status: HCIErrorCode, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8, isoDataPacketLength: UInt16, totalNumISODataPackets: UInt8) {
        self.status = status
        self.leACLDataPacketLength = leACLDataPacketLength
        self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
        self.isoDataPacketLength = isoDataPacketLength
        self.totalNumISODataPackets = totalNumISODataPackets
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        leACLDataPacketLength = try r.u16("LE_ACL_Data_Packet_Length")
        totalNumLEACLDataPackets = try r.u8("Total_Num_LE_ACL_Data_Packets")
        isoDataPacketLength = try r.u16("ISO_Data_Packet_Length")
        totalNumISODataPackets = try r.u8("Total_Num_ISO_Data_Packets")
    }
    public var encodedLength: Int { 7 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(leACLDataPacketLength)
        try w.u8(totalNumLEACLDataPackets)
        try w.u16(isoDataPacketLength)
        try w.u8(totalNumISODataPackets)
    }
    public var fieldTitle: String { "HCI_LE_Read_Buffer_Size [v2] return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("le_acl_data_packet_length", .u(leACLDataPacketLength)),
         Field("total_num_le_acl_data_packets", .u(totalNumLEACLDataPackets)),
         Field("iso_data_packet_length", .u(isoDataPacketLength)),
         Field("total_num_iso_data_packets", .u(totalNumISODataPackets))]
    }
}

/// HCI_LE_Read_Local_Supported_Features return parameters (Core Vol 4 Part E §7.8.3).
public struct LEReadLocalSupportedFeaturesReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// The LE features.
    public var leFeatures: LEFeatures
    /// The event parameters as given.
    public init(status: HCIErrorCode, leFeatures: LEFeatures) {
        self.status = status
        self.leFeatures = leFeatures
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        leFeatures = LEFeatures(rawValue: try r.u64("LE_Features"))
    }
    public var encodedLength: Int { 9 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u64(leFeatures.rawValue)
    }
    public var fieldTitle: String { "HCI_LE_Read_Local_Supported_Features return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("le_features", leFeatures.fieldValue)] }
}

/// HCI_LE_Read_Advertising_Physical_Channel_Tx_Power return parameters (§7.8.6).
public struct LEReadAdvertisingPhysicalChannelTxPowerReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// TX_Power_Level.
    public var txPowerLevel: Int8
    /// The event parameters as given.
    public init(status: HCIErrorCode, txPowerLevel: Int8) {
        self.status = status
        self.txPowerLevel = txPowerLevel
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        txPowerLevel = try r.i8("TX_Power_Level")
    }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.i8(txPowerLevel)
    }
    public var fieldTitle: String { "HCI_LE_Read_Advertising_Physical_Channel_Tx_Power return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("tx_power_level", .i(txPowerLevel))] }
}

/// HCI_LE_Read_Filter_Accept_List_Size return parameters (§7.8.14).
public struct LEReadFilterAcceptListSizeReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Filter_Accept_List_Size.
    public var filterAcceptListSize: UInt8
    /// The event parameters as given.
    public init(status: HCIErrorCode, filterAcceptListSize: UInt8) {
        self.status = status
        self.filterAcceptListSize = filterAcceptListSize
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        filterAcceptListSize = try r.u8("Filter_Accept_List_Size")
    }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u8(filterAcceptListSize)
    }
    public var fieldTitle: String { "HCI_LE_Read_Filter_Accept_List_Size return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("filter_accept_list_size", .u(filterAcceptListSize))] }
}

/// HCI_LE_Rand return parameters (§7.8.23).
public struct LERandReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Random_Number.
    public var randomNumber: UInt64
    /// The event parameters as given.
    public init(status: HCIErrorCode, randomNumber: UInt64) {
        self.status = status
        self.randomNumber = randomNumber
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        randomNumber = try r.u64("Random_Number")
    }
    public var encodedLength: Int { 9 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u64(randomNumber)
    }
    public var fieldTitle: String { "HCI_LE_Rand return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("random_number", .text("0x" + Hex.pad(randomNumber, 16)))] }
}

/// HCI_LE_Read_Supported_States return parameters (§7.8.27).
public struct LEReadSupportedStatesReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// LE_States.
    public var leStates: UInt64
    /// The event parameters as given.
    public init(status: HCIErrorCode, leStates: UInt64) {
        self.status = status
        self.leStates = leStates
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        leStates = try r.u64("LE_States")
    }
    public var encodedLength: Int { 9 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u64(leStates)
    }
    public var fieldTitle: String { "HCI_LE_Read_Supported_States return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("le_states", .text("0x" + Hex.pad(leStates, 16)))] }
}

/// HCI_LE_Read_Suggested_Default_Data_Length return parameters (§7.8.34).
public struct LEReadSuggestedDefaultDataLengthReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Suggested_Max_TX_Octets.
    public var suggestedMaxTxOctets: UInt16
    /// Suggested_Max_TX_Time.
    public var suggestedMaxTxTime: UInt16
    /// The event parameters as given.
    public init(status: HCIErrorCode, suggestedMaxTxOctets: UInt16, suggestedMaxTxTime: UInt16) {
        self.status = status
        self.suggestedMaxTxOctets = suggestedMaxTxOctets
        self.suggestedMaxTxTime = suggestedMaxTxTime
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        suggestedMaxTxOctets = try r.u16("Suggested_Max_TX_Octets")
        suggestedMaxTxTime = try r.u16("Suggested_Max_TX_Time")
    }
    public var encodedLength: Int { 5 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(suggestedMaxTxOctets)
        try w.u16(suggestedMaxTxTime)
    }
    public var fieldTitle: String { "HCI_LE_Read_Suggested_Default_Data_Length return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("suggested_max_tx_octets", .u(suggestedMaxTxOctets)),
         Field("suggested_max_tx_time", .u(suggestedMaxTxTime))]
    }
}

/// HCI_LE_Read_Maximum_Data_Length return parameters (§7.8.46).
public struct LEReadMaximumDataLengthReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Supported_Max_TX_Octets.
    public var supportedMaxTxOctets: UInt16
    /// Supported_Max_TX_Time.
    public var supportedMaxTxTime: UInt16
    /// Supported_Max_RX_Octets.
    public var supportedMaxRxOctets: UInt16
    /// Supported_Max_RX_Time.
    public var supportedMaxRxTime: UInt16
    /// The event parameters as given.
    public init(status: HCIErrorCode, supportedMaxTxOctets: UInt16, supportedMaxTxTime: UInt16, supportedMaxRxOctets: UInt16, supportedMaxRxTime: UInt16) {
        self.status = status
        self.supportedMaxTxOctets = supportedMaxTxOctets
        self.supportedMaxTxTime = supportedMaxTxTime
        self.supportedMaxRxOctets = supportedMaxRxOctets
        self.supportedMaxRxTime = supportedMaxRxTime
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        supportedMaxTxOctets = try r.u16("Supported_Max_TX_Octets")
        supportedMaxTxTime = try r.u16("Supported_Max_TX_Time")
        supportedMaxRxOctets = try r.u16("Supported_Max_RX_Octets")
        supportedMaxRxTime = try r.u16("Supported_Max_RX_Time")
    }
    public var encodedLength: Int { 9 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(supportedMaxTxOctets)
        try w.u16(supportedMaxTxTime)
        try w.u16(supportedMaxRxOctets)
        try w.u16(supportedMaxRxTime)
    }
    public var fieldTitle: String { "HCI_LE_Read_Maximum_Data_Length return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("supported_max_tx_octets", .u(supportedMaxTxOctets)),
         Field("supported_max_tx_time", .u(supportedMaxTxTime)),
         Field("supported_max_rx_octets", .u(supportedMaxRxOctets)),
         Field("supported_max_rx_time", .u(supportedMaxRxTime))]
    }
}

/// HCI_LE_Read_PHY return parameters (§7.8.47).
public struct LEReadPHYReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The transmitter PHY.
    public var txPHY: LEPHY
    /// The receiver PHY.
    public var rxPHY: LEPHY
    /// The event parameters as given.
    public init(status: HCIErrorCode, connectionHandle: UInt16, txPHY: LEPHY, rxPHY: LEPHY) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.txPHY = txPHY
        self.rxPHY = rxPHY
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        connectionHandle = try r.u16("Connection_Handle")
        txPHY = LEPHY(rawValue: try r.u8("TX_PHY"))
        rxPHY = LEPHY(rawValue: try r.u8("RX_PHY"))
    }
    public var encodedLength: Int { 5 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(txPHY.rawValue)
        try w.u8(rxPHY.rawValue)
    }
    public var fieldTitle: String { "HCI_LE_Read_PHY return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("tx_phy", .code(txPHY, txPHY.name)),
         Field("rx_phy", .code(rxPHY, rxPHY.name))]
    }
}

/// HCI_LE_Set_Extended_Advertising_Parameters return parameters (§7.8.53).
public struct LESetExtendedAdvertisingParametersReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Selected_TX_Power in dBm.
    public var selectedTxPower: Int8
    /// The event parameters as given.
    public init(status: HCIErrorCode, selectedTxPower: Int8) {
        self.status = status
        self.selectedTxPower = selectedTxPower
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        selectedTxPower = try r.i8("Selected_TX_Power")
    }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.i8(selectedTxPower)
    }
    public var fieldTitle: String { "HCI_LE_Set_Extended_Advertising_Parameters return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("selected_tx_power", .i(selectedTxPower))] }
}

/// HCI_LE_Read_Maximum_Advertising_Data_Length return parameters (§7.8.57).
public struct LEReadMaximumAdvertisingDataLengthReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Max_Advertising_Data_Length.
    public var maxAdvertisingDataLength: UInt16
    /// The event parameters as given.
    public init(status: HCIErrorCode, maxAdvertisingDataLength: UInt16) {
        self.status = status
        self.maxAdvertisingDataLength = maxAdvertisingDataLength
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        maxAdvertisingDataLength = try r.u16("Max_Advertising_Data_Length")
    }
    public var encodedLength: Int { 3 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(maxAdvertisingDataLength)
    }
    public var fieldTitle: String { "HCI_LE_Read_Maximum_Advertising_Data_Length return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("max_advertising_data_length", .u(maxAdvertisingDataLength))] }
}

/// HCI_LE_Read_Number_of_Supported_Advertising_Sets return parameters (§7.8.58).
public struct LEReadNumberOfSupportedAdvertisingSetsReturn: HCICommandReturnParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Num_Supported_Advertising_Sets.
    public var numSupportedAdvertisingSets: UInt8
    /// The event parameters as given.
    public init(status: HCIErrorCode, numSupportedAdvertisingSets: UInt8) {
        self.status = status
        self.numSupportedAdvertisingSets = numSupportedAdvertisingSets
    }
    public init(reading r: inout ByteReader) throws(WireError) {
        status = HCIErrorCode(rawValue: try r.u8("Status"))
        numSupportedAdvertisingSets = try r.u8("Num_Supported_Advertising_Sets")
    }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u8(numSupportedAdvertisingSets)
    }
    public var fieldTitle: String { "HCI_LE_Read_Number_of_Supported_Advertising_Sets return parameters" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("status", .status(status)), Field("num_supported_advertising_sets", .u(numSupportedAdvertisingSets))] }
}

// MARK: - LE features

/// The LE Link Layer feature bit mask (Core Vol 6 Part B §4.6), as returned by
/// HCI_LE_Read_Local_Supported_Features and HCI_LE_Read_Remote_Features_Complete.
public struct LEFeatures: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// The feature at bit `bit` (0...63; anything else is no feature).
    @inlinable public init(bit: Int) { self.rawValue = bit >= 0 && bit < 64 ? 1 << UInt64(bit) : 0 }

    /// LE Encryption (bit 0).
    public static let leEncryption = LEFeatures(bit: 0)
    /// Connection Parameters Request Procedure (bit 1).
    public static let connectionParametersRequestProcedure = LEFeatures(bit: 1)
    /// Extended Reject Indication (bit 2).
    public static let extendedRejectIndication = LEFeatures(bit: 2)
    /// Peripheral Initiated Features Exchange (bit 3).
    public static let peripheralInitiatedFeaturesExchange = LEFeatures(bit: 3)
    /// LE Ping (bit 4).
    public static let lePing = LEFeatures(bit: 4)
    /// LE Data Packet Length Extension (bit 5).
    public static let leDataPacketLengthExtension = LEFeatures(bit: 5)
    /// LL Privacy (bit 6).
    public static let llPrivacy = LEFeatures(bit: 6)
    /// Extended Scanner Filter Policies (bit 7).
    public static let extendedScannerFilterPolicies = LEFeatures(bit: 7)
    /// LE 2M PHY (bit 8).
    public static let le2MPHY = LEFeatures(bit: 8)
    /// Stable Modulation Index Transmitter (bit 9).
    public static let stableModulationIndexTransmitter = LEFeatures(bit: 9)
    /// Stable Modulation Index Receiver (bit 10).
    public static let stableModulationIndexReceiver = LEFeatures(bit: 10)
    /// LE Coded PHY (bit 11).
    public static let leCodedPHY = LEFeatures(bit: 11)
    /// LE Extended Advertising (bit 12).
    public static let leExtendedAdvertising = LEFeatures(bit: 12)
    /// LE Periodic Advertising (bit 13).
    public static let lePeriodicAdvertising = LEFeatures(bit: 13)
    /// Channel Selection Algorithm 2 (bit 14).
    public static let channelSelectionAlgorithm2 = LEFeatures(bit: 14)
    /// LE Power Class 1 (bit 15).
    public static let lePowerClass1 = LEFeatures(bit: 15)
    /// Minimum Number Of Used Channels Procedure (bit 16).
    public static let minimumNumberOfUsedChannelsProcedure = LEFeatures(bit: 16)
    /// Connection CTE Request (bit 17).
    public static let connectionCTERequest = LEFeatures(bit: 17)
    /// Connection CTE Response (bit 18).
    public static let connectionCTEResponse = LEFeatures(bit: 18)
    /// Connectionless CTE Transmitter (bit 19).
    public static let connectionlessCTETransmitter = LEFeatures(bit: 19)
    /// Connectionless CTE Receiver (bit 20).
    public static let connectionlessCTEReceiver = LEFeatures(bit: 20)
    /// Antenna Switching During CTE Transmission (bit 21).
    public static let antennaSwitchingDuringCTETransmission = LEFeatures(bit: 21)
    /// Antenna Switching During CTE Reception (bit 22).
    public static let antennaSwitchingDuringCTEReception = LEFeatures(bit: 22)
    /// Receiving Constant Tone Extensions (bit 23).
    public static let receivingConstantToneExtensions = LEFeatures(bit: 23)
    /// Periodic Advertising Sync Transfer Sender (bit 24).
    public static let periodicAdvertisingSyncTransferSender = LEFeatures(bit: 24)
    /// Periodic Advertising Sync Transfer Recipient (bit 25).
    public static let periodicAdvertisingSyncTransferRecipient = LEFeatures(bit: 25)
    /// Sleep Clock Accuracy Updates (bit 26).
    public static let sleepClockAccuracyUpdates = LEFeatures(bit: 26)
    /// Remote Public Key Validation (bit 27).
    public static let remotePublicKeyValidation = LEFeatures(bit: 27)
    /// Connected Isochronous Stream Central (bit 28).
    public static let connectedIsochronousStreamCentral = LEFeatures(bit: 28)
    /// Connected Isochronous Stream Peripheral (bit 29).
    public static let connectedIsochronousStreamPeripheral = LEFeatures(bit: 29)
    /// Isochronous Broadcaster (bit 30).
    public static let isochronousBroadcaster = LEFeatures(bit: 30)
    /// Synchronized Receiver (bit 31).
    public static let synchronizedReceiver = LEFeatures(bit: 31)
    /// Connected Isochronous Stream Host Support (bit 32).
    public static let connectedIsochronousStreamHostSupport = LEFeatures(bit: 32)
    /// LE Power Control Request (bit 33).
    public static let lePowerControlRequest = LEFeatures(bit: 33)
    /// LE Power Control Request 2 (bit 34).
    public static let lePowerControlRequest2 = LEFeatures(bit: 34)
    /// LE Path Loss Monitoring (bit 35).
    public static let lePathLossMonitoring = LEFeatures(bit: 35)
    /// Periodic Advertising ADI Support (bit 36).
    public static let periodicAdvertisingADISupport = LEFeatures(bit: 36)
    /// Connection Subrating (bit 37).
    public static let connectionSubrating = LEFeatures(bit: 37)
    /// Connection Subrating Host Support (bit 38).
    public static let connectionSubratingHostSupport = LEFeatures(bit: 38)
    /// Channel Classification (bit 39).
    public static let channelClassification = LEFeatures(bit: 39)
    /// Advertising Coding Selection (bit 40).
    public static let advertisingCodingSelection = LEFeatures(bit: 40)
    /// Advertising Coding Selection Host Support (bit 41).
    public static let advertisingCodingSelectionHostSupport = LEFeatures(bit: 41)
    /// Periodic Advertising With Responses Advertiser (bit 43).
    public static let periodicAdvertisingWithResponsesAdvertiser = LEFeatures(bit: 43)
    /// Periodic Advertising With Responses Scanner (bit 44).
    public static let periodicAdvertisingWithResponsesScanner = LEFeatures(bit: 44)

    /// The Core Specification name of feature bit `bit`; nil for reserved bits.
    public static func name(ofBit bit: Int) -> String? {
        switch bit {
        case 0: "LE Encryption"
        case 1: "Connection Parameters Request procedure"
        case 2: "Extended Reject Indication"
        case 3: "Peripheral-initiated Features Exchange"
        case 4: "LE Ping"
        case 5: "LE Data Packet Length Extension"
        case 6: "LL Privacy"
        case 7: "Extended Scanner Filter Policies"
        case 8: "LE 2M PHY"
        case 9: "Stable Modulation Index - Transmitter"
        case 10: "Stable Modulation Index - Receiver"
        case 11: "LE Coded PHY"
        case 12: "LE Extended Advertising"
        case 13: "LE Periodic Advertising"
        case 14: "Channel Selection Algorithm #2"
        case 15: "LE Power Class 1"
        case 16: "Minimum Number of Used Channels procedure"
        case 17: "Connection CTE Request"
        case 18: "Connection CTE Response"
        case 19: "Connectionless CTE Transmitter"
        case 20: "Connectionless CTE Receiver"
        case 21: "Antenna Switching During CTE Transmission (AoD)"
        case 22: "Antenna Switching During CTE Reception (AoA)"
        case 23: "Receiving Constant Tone Extensions"
        case 24: "Periodic Advertising Sync Transfer - Sender"
        case 25: "Periodic Advertising Sync Transfer - Recipient"
        case 26: "Sleep Clock Accuracy Updates"
        case 27: "Remote Public Key Validation"
        case 28: "Connected Isochronous Stream - Central"
        case 29: "Connected Isochronous Stream - Peripheral"
        case 30: "Isochronous Broadcaster"
        case 31: "Synchronized Receiver"
        case 32: "Connected Isochronous Stream (Host Support)"
        case 33: "LE Power Control Request"
        case 34: "LE Power Control Request (bit 2)"
        case 35: "LE Path Loss Monitoring"
        case 36: "Periodic Advertising ADI support"
        case 37: "Connection Subrating"
        case 38: "Connection Subrating (Host Support)"
        case 39: "Channel Classification"
        case 40: "Advertising Coding Selection"
        case 41: "Advertising Coding Selection (Host Support)"
        case 43: "Periodic Advertising with Responses - Advertiser"
        case 44: "Periodic Advertising with Responses - Scanner"
        default: nil
        }
    }

    /// Names of the set bits, lowest first ("bit N" for reserved ones).
    public var names: [String] {
        (0..<64).compactMap { bit in
            rawValue & (1 << UInt64(bit)) != 0 ? (Self.name(ofBit: bit) ?? "bit \(bit)") : nil
        }
    }

    var fieldValue: FieldValue {
        .object([Field("value", .text("0x" + Hex.pad(rawValue, 16))),
                 Field("features", .list(names.map { .text($0) }))])
    }

    public var description: String { "0x\(Hex.pad(rawValue, 16)) [\(names.joined(separator: ", "))]" }
}
