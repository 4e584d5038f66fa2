/// An HCI event code (Core Vol 4 Part E §7.7). Open set: unknown codes are kept as is.
public struct HCIEventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Inquiry Complete event (0x01).
    public static let inquiryComplete = HCIEventCode(rawValue: 0x01)
    /// Inquiry Result event (0x02).
    public static let inquiryResult = HCIEventCode(rawValue: 0x02)
    /// Connection Complete event (0x03).
    public static let connectionComplete = HCIEventCode(rawValue: 0x03)
    /// Connection Request event (0x04).
    public static let connectionRequest = HCIEventCode(rawValue: 0x04)
    /// Disconnection Complete event (0x05).
    public static let disconnectionComplete = HCIEventCode(rawValue: 0x05)
    /// Authentication Complete event (0x06).
    public static let authenticationComplete = HCIEventCode(rawValue: 0x06)
    /// Remote Name Request Complete event (0x07).
    public static let remoteNameRequestComplete = HCIEventCode(rawValue: 0x07)
    /// HCI_Encryption_Change [v1].
    public static let encryptionChangeV1 = HCIEventCode(rawValue: 0x08)
    /// Change Connection Link Key Complete event (0x09).
    public static let changeConnectionLinkKeyComplete = HCIEventCode(rawValue: 0x09)
    /// Link Key Type Changed event (0x0A).
    public static let linkKeyTypeChanged = HCIEventCode(rawValue: 0x0A)
    /// Read Remote Supported Features Complete event (0x0B).
    public static let readRemoteSupportedFeaturesComplete = HCIEventCode(rawValue: 0x0B)
    /// Read Remote Version Information Complete event (0x0C).
    public static let readRemoteVersionInformationComplete = HCIEventCode(rawValue: 0x0C)
    /// QoS Setup Complete event (0x0D).
    public static let qosSetupComplete = HCIEventCode(rawValue: 0x0D)
    /// Command Complete event (0x0E).
    public static let commandComplete = HCIEventCode(rawValue: 0x0E)
    /// Command Status event (0x0F).
    public static let commandStatus = HCIEventCode(rawValue: 0x0F)
    /// Hardware Error event (0x10).
    public static let hardwareError = HCIEventCode(rawValue: 0x10)
    /// Flush Occurred event (0x11).
    public static let flushOccurred = HCIEventCode(rawValue: 0x11)
    /// Role Change event (0x12).
    public static let roleChange = HCIEventCode(rawValue: 0x12)
    /// Number Of Completed Packets event (0x13).
    public static let numberOfCompletedPackets = HCIEventCode(rawValue: 0x13)
    /// Mode Change event (0x14).
    public static let modeChange = HCIEventCode(rawValue: 0x14)
    /// Return Link Keys event (0x15).
    public static let returnLinkKeys = HCIEventCode(rawValue: 0x15)
    /// PIN Code Request event (0x16).
    public static let pinCodeRequest = HCIEventCode(rawValue: 0x16)
    /// Link Key Request event (0x17).
    public static let linkKeyRequest = HCIEventCode(rawValue: 0x17)
    /// Link Key Notification event (0x18).
    public static let linkKeyNotification = HCIEventCode(rawValue: 0x18)
    /// Loopback Command event (0x19).
    public static let loopbackCommand = HCIEventCode(rawValue: 0x19)
    /// Data Buffer Overflow event (0x1A).
    public static let dataBufferOverflow = HCIEventCode(rawValue: 0x1A)
    /// Max Slots Change event (0x1B).
    public static let maxSlotsChange = HCIEventCode(rawValue: 0x1B)
    /// Read Clock Offset Complete event (0x1C).
    public static let readClockOffsetComplete = HCIEventCode(rawValue: 0x1C)
    /// Connection Packet Type Changed event (0x1D).
    public static let connectionPacketTypeChanged = HCIEventCode(rawValue: 0x1D)
    /// QoS Violation event (0x1E).
    public static let qosViolation = HCIEventCode(rawValue: 0x1E)
    /// Page Scan Repetition Mode Change event (0x20).
    public static let pageScanRepetitionModeChange = HCIEventCode(rawValue: 0x20)
    /// Flow Specification Complete event (0x21).
    public static let flowSpecificationComplete = HCIEventCode(rawValue: 0x21)
    /// Inquiry Result With RSSI event (0x22).
    public static let inquiryResultWithRSSI = HCIEventCode(rawValue: 0x22)
    /// Read Remote Extended Features Complete event (0x23).
    public static let readRemoteExtendedFeaturesComplete = HCIEventCode(rawValue: 0x23)
    /// Synchronous Connection Complete event (0x2C).
    public static let synchronousConnectionComplete = HCIEventCode(rawValue: 0x2C)
    /// Synchronous Connection Changed event (0x2D).
    public static let synchronousConnectionChanged = HCIEventCode(rawValue: 0x2D)
    /// Sniff Subrating event (0x2E).
    public static let sniffSubrating = HCIEventCode(rawValue: 0x2E)
    /// Extended Inquiry Result event (0x2F).
    public static let extendedInquiryResult = HCIEventCode(rawValue: 0x2F)
    /// Encryption Key Refresh Complete event (0x30).
    public static let encryptionKeyRefreshComplete = HCIEventCode(rawValue: 0x30)
    /// IO Capability Request event (0x31).
    public static let ioCapabilityRequest = HCIEventCode(rawValue: 0x31)
    /// IO Capability Response event (0x32).
    public static let ioCapabilityResponse = HCIEventCode(rawValue: 0x32)
    /// User Confirmation Request event (0x33).
    public static let userConfirmationRequest = HCIEventCode(rawValue: 0x33)
    /// User Passkey Request event (0x34).
    public static let userPasskeyRequest = HCIEventCode(rawValue: 0x34)
    /// Remote OOB Data Request event (0x35).
    public static let remoteOOBDataRequest = HCIEventCode(rawValue: 0x35)
    /// Simple Pairing Complete event (0x36).
    public static let simplePairingComplete = HCIEventCode(rawValue: 0x36)
    /// Link Supervision Timeout Changed event (0x38).
    public static let linkSupervisionTimeoutChanged = HCIEventCode(rawValue: 0x38)
    /// Enhanced Flush Complete event (0x39).
    public static let enhancedFlushComplete = HCIEventCode(rawValue: 0x39)
    /// User Passkey Notification event (0x3B).
    public static let userPasskeyNotification = HCIEventCode(rawValue: 0x3B)
    /// Keypress Notification event (0x3C).
    public static let keypressNotification = HCIEventCode(rawValue: 0x3C)
    /// Remote Host Supported Features Notification event (0x3D).
    public static let remoteHostSupportedFeaturesNotification = HCIEventCode(rawValue: 0x3D)
    /// LE Meta event (0x3E).
    public static let leMeta = HCIEventCode(rawValue: 0x3E)
    /// Number Of Completed Data Blocks event (0x48).
    public static let numberOfCompletedDataBlocks = HCIEventCode(rawValue: 0x48)
    /// Authenticated Payload Timeout Expired event (0x57).
    public static let authenticatedPayloadTimeoutExpired = HCIEventCode(rawValue: 0x57)
    /// HCI_Encryption_Change [v2] (adds Encryption_Key_Size).
    public static let encryptionChangeV2 = HCIEventCode(rawValue: 0x59)
    /// Vendor Specific event (0xFF).
    public static let vendorSpecific = HCIEventCode(rawValue: 0xFF)

    /// The Core Specification name, e.g. "HCI_Command_Complete"; nil when unknown.
    public var name: String? {
        switch rawValue {
        case 0x01: "HCI_Inquiry_Complete"
        case 0x02: "HCI_Inquiry_Result"
        case 0x03: "HCI_Connection_Complete"
        case 0x04: "HCI_Connection_Request"
        case 0x05: "HCI_Disconnection_Complete"
        case 0x06: "HCI_Authentication_Complete"
        case 0x07: "HCI_Remote_Name_Request_Complete"
        case 0x08: "HCI_Encryption_Change [v1]"
        case 0x09: "HCI_Change_Connection_Link_Key_Complete"
        case 0x0A: "HCI_Link_Key_Type_Changed"
        case 0x0B: "HCI_Read_Remote_Supported_Features_Complete"
        case 0x0C: "HCI_Read_Remote_Version_Information_Complete"
        case 0x0D: "HCI_QoS_Setup_Complete"
        case 0x0E: "HCI_Command_Complete"
        case 0x0F: "HCI_Command_Status"
        case 0x10: "HCI_Hardware_Error"
        case 0x11: "HCI_Flush_Occurred"
        case 0x12: "HCI_Role_Change"
        case 0x13: "HCI_Number_Of_Completed_Packets"
        case 0x14: "HCI_Mode_Change"
        case 0x15: "HCI_Return_Link_Keys"
        case 0x16: "HCI_PIN_Code_Request"
        case 0x17: "HCI_Link_Key_Request"
        case 0x18: "HCI_Link_Key_Notification"
        case 0x19: "HCI_Loopback_Command"
        case 0x1A: "HCI_Data_Buffer_Overflow"
        case 0x1B: "HCI_Max_Slots_Change"
        case 0x1C: "HCI_Read_Clock_Offset_Complete"
        case 0x1D: "HCI_Connection_Packet_Type_Changed"
        case 0x1E: "HCI_QoS_Violation"
        case 0x20: "HCI_Page_Scan_Repetition_Mode_Change"
        case 0x21: "HCI_Flow_Specification_Complete"
        case 0x22: "HCI_Inquiry_Result_with_RSSI"
        case 0x23: "HCI_Read_Remote_Extended_Features_Complete"
        case 0x2C: "HCI_Synchronous_Connection_Complete"
        case 0x2D: "HCI_Synchronous_Connection_Changed"
        case 0x2E: "HCI_Sniff_Subrating"
        case 0x2F: "HCI_Extended_Inquiry_Result"
        case 0x30: "HCI_Encryption_Key_Refresh_Complete"
        case 0x31: "HCI_IO_Capability_Request"
        case 0x32: "HCI_IO_Capability_Response"
        case 0x33: "HCI_User_Confirmation_Request"
        case 0x34: "HCI_User_Passkey_Request"
        case 0x35: "HCI_Remote_OOB_Data_Request"
        case 0x36: "HCI_Simple_Pairing_Complete"
        case 0x38: "HCI_Link_Supervision_Timeout_Changed"
        case 0x39: "HCI_Enhanced_Flush_Complete"
        case 0x3B: "HCI_User_Passkey_Notification"
        case 0x3C: "HCI_Keypress_Notification"
        case 0x3D: "HCI_Remote_Host_Supported_Features_Notification"
        case 0x3E: "HCI_LE_Meta"
        case 0x48: "HCI_Number_Of_Completed_Data_Blocks"
        case 0x57: "HCI_Authenticated_Payload_Timeout_Expired"
        case 0x59: "HCI_Encryption_Change [v2]"
        case 0xFF: "Vendor_Specific"
        default: nil
        }
    }

    public var description: String { name ?? "event 0x\(Hex.pad(rawValue, 2))" }
}

/// An LE Meta event subevent code (Core Vol 4 Part E §7.7.65). Open set.
public struct LEMetaSubeventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LE Connection Complete subevent (0x01).
    public static let connectionComplete = LEMetaSubeventCode(rawValue: 0x01)
    /// LE Advertising Report subevent (0x02).
    public static let advertisingReport = LEMetaSubeventCode(rawValue: 0x02)
    /// LE Connection Update Complete subevent (0x03).
    public static let connectionUpdateComplete = LEMetaSubeventCode(rawValue: 0x03)
    /// LE Read Remote Features Complete subevent (0x04).
    public static let readRemoteFeaturesComplete = LEMetaSubeventCode(rawValue: 0x04)
    /// LE Long Term Key Request subevent (0x05).
    public static let longTermKeyRequest = LEMetaSubeventCode(rawValue: 0x05)
    /// LE Remote Connection Parameter Request subevent (0x06).
    public static let remoteConnectionParameterRequest = LEMetaSubeventCode(rawValue: 0x06)
    /// LE Data Length Change subevent (0x07).
    public static let dataLengthChange = LEMetaSubeventCode(rawValue: 0x07)
    /// LE Read Local P-256 Public Key Complete subevent (0x08).
    public static let readLocalP256PublicKeyComplete = LEMetaSubeventCode(rawValue: 0x08)
    /// LE Generate DH Key Complete subevent (0x09).
    public static let generateDHKeyComplete = LEMetaSubeventCode(rawValue: 0x09)
    /// LE Enhanced Connection Complete [v1] subevent (0x0A).
    public static let enhancedConnectionCompleteV1 = LEMetaSubeventCode(rawValue: 0x0A)
    /// LE Directed Advertising Report subevent (0x0B).
    public static let directedAdvertisingReport = LEMetaSubeventCode(rawValue: 0x0B)
    /// LE PHY Update Complete subevent (0x0C).
    public static let phyUpdateComplete = LEMetaSubeventCode(rawValue: 0x0C)
    /// LE Extended Advertising Report subevent (0x0D).
    public static let extendedAdvertisingReport = LEMetaSubeventCode(rawValue: 0x0D)
    /// LE Periodic Advertising Sync Established [v1] subevent (0x0E).
    public static let periodicAdvertisingSyncEstablishedV1 = LEMetaSubeventCode(rawValue: 0x0E)
    /// LE Periodic Advertising Report [v1] subevent (0x0F).
    public static let periodicAdvertisingReportV1 = LEMetaSubeventCode(rawValue: 0x0F)
    /// LE Periodic Advertising Sync Lost subevent (0x10).
    public static let periodicAdvertisingSyncLost = LEMetaSubeventCode(rawValue: 0x10)
    /// LE Scan Timeout subevent (0x11).
    public static let scanTimeout = LEMetaSubeventCode(rawValue: 0x11)
    /// LE Advertising Set Terminated subevent (0x12).
    public static let advertisingSetTerminated = LEMetaSubeventCode(rawValue: 0x12)
    /// LE Scan Request Received subevent (0x13).
    public static let scanRequestReceived = LEMetaSubeventCode(rawValue: 0x13)
    /// LE Channel Selection Algorithm subevent (0x14).
    public static let channelSelectionAlgorithm = LEMetaSubeventCode(rawValue: 0x14)
    /// LE Enhanced Connection Complete [v2] subevent (0x29).
    public static let enhancedConnectionCompleteV2 = LEMetaSubeventCode(rawValue: 0x29)

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x01: "HCI_LE_Connection_Complete"
        case 0x02: "HCI_LE_Advertising_Report"
        case 0x03: "HCI_LE_Connection_Update_Complete"
        case 0x04: "HCI_LE_Read_Remote_Features_Complete"
        case 0x05: "HCI_LE_Long_Term_Key_Request"
        case 0x06: "HCI_LE_Remote_Connection_Parameter_Request"
        case 0x07: "HCI_LE_Data_Length_Change"
        case 0x08: "HCI_LE_Read_Local_P-256_Public_Key_Complete"
        case 0x09: "HCI_LE_Generate_DHKey_Complete"
        case 0x0A: "HCI_LE_Enhanced_Connection_Complete [v1]"
        case 0x0B: "HCI_LE_Directed_Advertising_Report"
        case 0x0C: "HCI_LE_PHY_Update_Complete"
        case 0x0D: "HCI_LE_Extended_Advertising_Report"
        case 0x0E: "HCI_LE_Periodic_Advertising_Sync_Established [v1]"
        case 0x0F: "HCI_LE_Periodic_Advertising_Report [v1]"
        case 0x10: "HCI_LE_Periodic_Advertising_Sync_Lost"
        case 0x11: "HCI_LE_Scan_Timeout"
        case 0x12: "HCI_LE_Advertising_Set_Terminated"
        case 0x13: "HCI_LE_Scan_Request_Received"
        case 0x14: "HCI_LE_Channel_Selection_Algorithm"
        case 0x15: "HCI_LE_Connectionless_IQ_Report"
        case 0x16: "HCI_LE_Connection_IQ_Report"
        case 0x17: "HCI_LE_CTE_Request_Failed"
        case 0x18: "HCI_LE_Periodic_Advertising_Sync_Transfer_Received [v1]"
        case 0x19: "HCI_LE_CIS_Established [v1]"
        case 0x1A: "HCI_LE_CIS_Request"
        case 0x1B: "HCI_LE_Create_BIG_Complete"
        case 0x1C: "HCI_LE_Terminate_BIG_Complete"
        case 0x1D: "HCI_LE_BIG_Sync_Established"
        case 0x1E: "HCI_LE_BIG_Sync_Lost"
        case 0x1F: "HCI_LE_Request_Peer_SCA_Complete"
        case 0x20: "HCI_LE_Path_Loss_Threshold"
        case 0x21: "HCI_LE_Transmit_Power_Reporting"
        case 0x22: "HCI_LE_BIGInfo_Advertising_Report"
        case 0x23: "HCI_LE_Subrate_Change"
        case 0x24: "HCI_LE_Periodic_Advertising_Sync_Established [v2]"
        case 0x25: "HCI_LE_Periodic_Advertising_Report [v2]"
        case 0x26: "HCI_LE_Periodic_Advertising_Sync_Transfer_Received [v2]"
        case 0x27: "HCI_LE_Periodic_Advertising_Subevent_Data_Request"
        case 0x28: "HCI_LE_Periodic_Advertising_Response_Report"
        case 0x29: "HCI_LE_Enhanced_Connection_Complete [v2]"
        default: nil
        }
    }

    public var description: String { name ?? "LE subevent 0x\(Hex.pad(rawValue, 2))" }
}

/// Role of the local device on an LE connection (Role parameter of LE Connection Complete).
public struct LEConnectionRole: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Central (0x00).
    public static let central = LEConnectionRole(rawValue: 0x00)
    /// Peripheral (0x01).
    public static let peripheral = LEConnectionRole(rawValue: 0x01)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue { case 0: "Central"; case 1: "Peripheral"; default: nil }
    }
    public var description: String { name ?? "role 0x\(Hex.pad(rawValue, 2))" }
}

/// An LE PHY as reported in events (TX_PHY, RX_PHY, Primary_PHY, Secondary_PHY).
/// 0x00 in Secondary_PHY means "no packets on the secondary advertising channel".
public struct LEPHY: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// None (0x00).
    public static let none = LEPHY(rawValue: 0x00)
    /// LE 1M (0x01).
    public static let le1M = LEPHY(rawValue: 0x01)
    /// LE 2M (0x02).
    public static let le2M = LEPHY(rawValue: 0x02)
    /// LE Coded (0x03).
    public static let leCoded = LEPHY(rawValue: 0x03)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "None"
        case 1: "LE 1M"
        case 2: "LE 2M"
        case 3: "LE Coded"
        default: nil
        }
    }
    public var description: String { name ?? "PHY 0x\(Hex.pad(rawValue, 2))" }
}

/// Central_Clock_Accuracy of LE Connection Complete (Core Vol 4 Part E §7.7.65.1).
public struct LEClockAccuracy: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Worst-case accuracy in ppm, nil for reserved values.
    public var ppm: Int? {
        switch rawValue {
        case 0: 500
        case 1: 250
        case 2: 150
        case 3: 100
        case 4: 75
        case 5: 50
        case 6: 30
        case 7: 20
        default: nil
        }
    }
    /// The accuracy as text ("250 ppm"); nil for a value not assigned.
    public var name: String? { ppm.map { "\($0) ppm" } }
    public var description: String { name ?? "accuracy 0x\(Hex.pad(rawValue, 2))" }
}

/// Encryption_Enabled of HCI_Encryption_Change (Core Vol 4 Part E §7.7.8).
public struct HCIEncryptionEnabled: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Off (0x00).
    public static let off = HCIEncryptionEnabled(rawValue: 0x00)
    /// E0 on BR/EDR, AES-CCM on LE.
    public static let on = HCIEncryptionEnabled(rawValue: 0x01)
    /// AES-CCM on BR/EDR.
    public static let onAESCCMBREDR = HCIEncryptionEnabled(rawValue: 0x02)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "Off"
        case 1: "On (E0 for BR/EDR, AES-CCM for LE)"
        case 2: "On (AES-CCM for BR/EDR)"
        default: nil
        }
    }
    public var description: String { name ?? "0x\(Hex.pad(rawValue, 2))" }
}

/// Channel_Selection_Algorithm of LE Channel Selection Algorithm (§7.7.65.20).
public struct LEChannelSelectionAlgorithmValue: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Algorithm 1 (0x00).
    public static let algorithm1 = LEChannelSelectionAlgorithmValue(rawValue: 0x00)
    /// Algorithm 2 (0x01).
    public static let algorithm2 = LEChannelSelectionAlgorithmValue(rawValue: 0x01)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue { case 0: "LE Channel Selection Algorithm #1"; case 1: "LE Channel Selection Algorithm #2"; default: nil }
    }
    public var description: String { name ?? "0x\(Hex.pad(rawValue, 2))" }
}

/// Link_Type of HCI_Data_Buffer_Overflow (§7.7.26).
public struct HCIOverflowLinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Synchronous (0x00).
    public static let synchronous = HCIOverflowLinkType(rawValue: 0x00)
    /// ACL (0x01).
    public static let acl = HCIOverflowLinkType(rawValue: 0x01)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue { case 0: "Synchronous Buffer Overflow"; case 1: "ACL Buffer Overflow"; default: nil }
    }
    public var description: String { name ?? "0x\(Hex.pad(rawValue, 2))" }
}

// MARK: - Encoding support

/// The parameters of one HCI event, written as a complete event packet
/// (Event_Code, Parameter_Total_Length, parameters; no H4 indicator).
public protocol HCIEventParameters: WireEncodable, FieldDescribable {
    /// The event's code.
    var eventCode: HCIEventCode { get }
    /// Length of the parameters (the Parameter_Total_Length value).
    var parameterLength: Int { get }
    /// Appends the parameters (not the event header).
    func encodeParameters(into writer: inout ByteWriter) throws(WireError)
}

extension HCIEventParameters {
    public var encodedLength: Int { 2 &+ parameterLength }

    public func encode(into writer: inout ByteWriter) throws(WireError) {
        let length = parameterLength
        guard length <= 255 else {
            throw WireError(.valueOutOfRange, at: writer.count, "event parameters longer than 255 bytes")
        }
        try writer.u8(eventCode.rawValue)
        try writer.u8(UInt8(length))
        let start = writer.count
        try encodeParameters(into: &writer)
        guard writer.count &- start == length else {
            throw WireError(.invalidLength, at: start, "encoder wrote a different length than announced")
        }
    }
}

/// The parameters of one LE Meta subevent, written as a complete HCI_LE_Meta event.
public protocol LEMetaEventParameters: HCIEventParameters {
    /// The subevent's code.
    var subeventCode: LEMetaSubeventCode { get }
    /// Length of the parameters after Subevent_Code.
    var subeventParameterLength: Int { get }
    /// Appends the parameters after Subevent_Code.
    func encodeSubeventParameters(into writer: inout ByteWriter) throws(WireError)
}

extension LEMetaEventParameters {
    /// The HCI event code.
    public var eventCode: HCIEventCode { .leMeta }
    public var parameterLength: Int { 1 &+ subeventParameterLength }
    public func encodeParameters(into writer: inout ByteWriter) throws(WireError) {
        try writer.u8(subeventCode.rawValue)
        try encodeSubeventParameters(into: &writer)
    }
}

// MARK: - Field helpers (display only)

extension FieldValue {
    static func status(_ s: HCIErrorCode) -> FieldValue { .named(UInt64(s.rawValue), s.name ?? "Reserved") }
    static func opcode(_ o: HCIOpcode) -> FieldValue {
        .named(UInt64(o.rawValue), o.name ?? "OGF 0x\(Hex.pad(o.ogf, 2)) OCF 0x\(Hex.pad(o.ocf, 3))")
    }
    static func code<T: RawRepresentable>(_ v: T, _ name: String?) -> FieldValue where T.RawValue: BinaryInteger {
        .named(UInt64(truncatingIfNeeded: v.rawValue), name ?? "Reserved")
    }
    static func addressType(_ t: LEAddressType) -> FieldValue { .named(UInt64(t.rawValue), t.description) }
    static func address(_ a: BluetoothAddress) -> FieldValue { .text(a.description) }
    static func u(_ v: some BinaryInteger) -> FieldValue { .uint(UInt64(truncatingIfNeeded: v)) }
    static func i(_ v: some BinaryInteger) -> FieldValue { .int(Int64(truncatingIfNeeded: v)) }
    /// An RSSI / TX power where 127 means "not available".
    static func dbm(_ v: Int8) -> FieldValue { v == 127 ? .named(127, "not available") : .int(Int64(v)) }
}
