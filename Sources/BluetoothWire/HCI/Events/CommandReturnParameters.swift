// Typed return parameters of the commands hcigatt sends (Core Vol 4 Part E §7.3–§7.8).

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
