/// An HCI command opcode: OGF (6 bits) << 10 | OCF (10 bits). Core Vol 4 Part E §5.4.1.
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// The opcode of command `ocf` in group `ogf`.
    @inlinable public init(ogf: UInt8, ocf: UInt16) {
        self.rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x3FF)
    }

    /// The OpCode Group Field (top 6 bits).
    @inlinable public var ogf: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 10) }
    /// The OpCode Command Field (low 10 bits).
    @inlinable public var ocf: UInt16 { rawValue & 0x3FF }

    /// Opcode 0x0000 (NOP): used in Command Complete/Status to return credits only.
    public static let nop = HCIOpcode(rawValue: 0x0000)

    // Link Control (OGF 0x01), Core Vol 4 Part E §7.1
    /// HCI_Disconnect (0x0406).
    public static let disconnect = HCIOpcode(rawValue: 0x0406)
    /// HCI_Read_Remote_Version_Information (0x041D).
    public static let readRemoteVersionInformation = HCIOpcode(rawValue: 0x041D)

    // Controller & Baseband (OGF 0x03), §7.3
    /// HCI_Set_Event_Mask (0x0C01).
    public static let setEventMask = HCIOpcode(rawValue: 0x0C01)
    /// HCI_Reset (0x0C03).
    public static let reset = HCIOpcode(rawValue: 0x0C03)
    /// HCI_Set_Controller_To_Host_Flow_Control (0x0C31).
    public static let setControllerToHostFlowControl = HCIOpcode(rawValue: 0x0C31)
    /// HCI_Host_Buffer_Size (0x0C33).
    public static let hostBufferSize = HCIOpcode(rawValue: 0x0C33)
    /// HCI_Host_Number_Of_Completed_Packets (0x0C35).
    public static let hostNumberOfCompletedPackets = HCIOpcode(rawValue: 0x0C35)
    /// HCI_Set_Event_Mask_Page_2 (0x0C63).
    public static let setEventMaskPage2 = HCIOpcode(rawValue: 0x0C63)
    /// HCI_Write_LE_Host_Support (0x0C6D).
    public static let writeLEHostSupport = HCIOpcode(rawValue: 0x0C6D)

    // Informational (OGF 0x04), §7.4
    /// HCI_Read_Local_Version_Information (0x1001).
    public static let readLocalVersionInformation = HCIOpcode(rawValue: 0x1001)
    /// HCI_Read_Local_Supported_Commands (0x1002).
    public static let readLocalSupportedCommands = HCIOpcode(rawValue: 0x1002)
    /// HCI_Read_Local_Supported_Features (0x1003).
    public static let readLocalSupportedFeatures = HCIOpcode(rawValue: 0x1003)
    /// HCI_Read_Buffer_Size (0x1005).
    public static let readBufferSize = HCIOpcode(rawValue: 0x1005)
    /// HCI_Read_BDADDR (0x1009).
    public static let readBDADDR = HCIOpcode(rawValue: 0x1009)

    // Status (OGF 0x05), §7.5
    /// HCI_Read_RSSI (0x1405).
    public static let readRSSI = HCIOpcode(rawValue: 0x1405)

    // LE Controller (OGF 0x08), §7.8
    /// HCI_LE_Set_Event_Mask (0x2001).
    public static let leSetEventMask = HCIOpcode(rawValue: 0x2001)
    /// HCI_LE_Read_Buffer_Size [v1] (0x2002).
    public static let leReadBufferSizeV1 = HCIOpcode(rawValue: 0x2002)
    /// HCI_LE_Read_Local_Supported_Features (0x2003).
    public static let leReadLocalSupportedFeatures = HCIOpcode(rawValue: 0x2003)
    /// HCI_LE_Set_Random_Address (0x2005).
    public static let leSetRandomAddress = HCIOpcode(rawValue: 0x2005)
    /// HCI_LE_Set_Advertising_Parameters (0x2006).
    public static let leSetAdvertisingParameters = HCIOpcode(rawValue: 0x2006)
    /// HCI_LE_Read_Advertising_Physical_Channel_TX_Power (0x2007).
    public static let leReadAdvertisingPhysicalChannelTxPower = HCIOpcode(rawValue: 0x2007)
    /// HCI_LE_Set_Advertising_Data (0x2008).
    public static let leSetAdvertisingData = HCIOpcode(rawValue: 0x2008)
    /// HCI_LE_Set_Scan_Response_Data (0x2009).
    public static let leSetScanResponseData = HCIOpcode(rawValue: 0x2009)
    /// HCI_LE_Set_Advertising_Enable (0x200A).
    public static let leSetAdvertisingEnable = HCIOpcode(rawValue: 0x200A)
    /// HCI_LE_Set_Scan_Parameters (0x200B).
    public static let leSetScanParameters = HCIOpcode(rawValue: 0x200B)
    /// HCI_LE_Set_Scan_Enable (0x200C).
    public static let leSetScanEnable = HCIOpcode(rawValue: 0x200C)
    /// HCI_LE_Create_Connection (0x200D).
    public static let leCreateConnection = HCIOpcode(rawValue: 0x200D)
    /// HCI_LE_Create_Connection_Cancel (0x200E).
    public static let leCreateConnectionCancel = HCIOpcode(rawValue: 0x200E)
    /// HCI_LE_Read_Filter_Accept_List_Size (0x200F).
    public static let leReadFilterAcceptListSize = HCIOpcode(rawValue: 0x200F)
    /// HCI_LE_Clear_Filter_Accept_List (0x2010).
    public static let leClearFilterAcceptList = HCIOpcode(rawValue: 0x2010)
    /// HCI_LE_Add_Device_To_Filter_Accept_List (0x2011).
    public static let leAddDeviceToFilterAcceptList = HCIOpcode(rawValue: 0x2011)
    /// HCI_LE_Remove_Device_From_Filter_Accept_List (0x2012).
    public static let leRemoveDeviceFromFilterAcceptList = HCIOpcode(rawValue: 0x2012)
    /// HCI_LE_Connection_Update (0x2013).
    public static let leConnectionUpdate = HCIOpcode(rawValue: 0x2013)
    /// HCI_LE_Read_Remote_Features (0x2016).
    public static let leReadRemoteFeatures = HCIOpcode(rawValue: 0x2016)
    /// HCI_LE_Encrypt (0x2017).
    public static let leEncrypt = HCIOpcode(rawValue: 0x2017)
    /// HCI_LE_Rand (0x2018).
    public static let leRand = HCIOpcode(rawValue: 0x2018)
    /// HCI_LE_Enable_Encryption (0x2019).
    public static let leEnableEncryption = HCIOpcode(rawValue: 0x2019)
    /// HCI_LE_Long_Term_Key_Request_Reply (0x201A).
    public static let leLongTermKeyRequestReply = HCIOpcode(rawValue: 0x201A)
    /// HCI_LE_Long_Term_Key_Request_Negative_Reply (0x201B).
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(rawValue: 0x201B)
    /// HCI_LE_Read_Supported_States (0x201C).
    public static let leReadSupportedStates = HCIOpcode(rawValue: 0x201C)
    /// HCI_LE_Remote_Connection_Parameter_Request_Reply (0x2020).
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(rawValue: 0x2020)
    /// HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply (0x2021).
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(rawValue: 0x2021)
    /// HCI_LE_Set_Data_Length (0x2022).
    public static let leSetDataLength = HCIOpcode(rawValue: 0x2022)
    /// HCI_LE_Read_Suggested_Default_Data_Length (0x2023).
    public static let leReadSuggestedDefaultDataLength = HCIOpcode(rawValue: 0x2023)
    /// HCI_LE_Write_Suggested_Default_Data_Length (0x2024).
    public static let leWriteSuggestedDefaultDataLength = HCIOpcode(rawValue: 0x2024)
    /// HCI_LE_Read_Local_P-256_Public_Key (0x2025).
    public static let leReadLocalP256PublicKey = HCIOpcode(rawValue: 0x2025)
    /// HCI_LE_Generate_DHKey (0x2026).
    public static let leGenerateDHKey = HCIOpcode(rawValue: 0x2026)
    /// HCI_LE_Read_Maximum_Data_Length (0x202F).
    public static let leReadMaximumDataLength = HCIOpcode(rawValue: 0x202F)
    /// HCI_LE_Read_PHY (0x2030).
    public static let leReadPHY = HCIOpcode(rawValue: 0x2030)
    /// HCI_LE_Set_Default_PHY (0x2031).
    public static let leSetDefaultPHY = HCIOpcode(rawValue: 0x2031)
    /// HCI_LE_Set_PHY (0x2032).
    public static let leSetPHY = HCIOpcode(rawValue: 0x2032)
    /// HCI_LE_Set_Advertising_Set_Random_Address (0x2035).
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(rawValue: 0x2035)
    /// HCI_LE_Set_Extended_Advertising_Parameters (0x2036).
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(rawValue: 0x2036)
    /// HCI_LE_Set_Extended_Advertising_Data (0x2037).
    public static let leSetExtendedAdvertisingData = HCIOpcode(rawValue: 0x2037)
    /// HCI_LE_Set_Extended_Scan_Response_Data (0x2038).
    public static let leSetExtendedScanResponseData = HCIOpcode(rawValue: 0x2038)
    /// HCI_LE_Set_Extended_Advertising_Enable (0x2039).
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(rawValue: 0x2039)
    /// HCI_LE_Read_Maximum_Advertising_Data_Length (0x203A).
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(rawValue: 0x203A)
    /// HCI_LE_Read_Number_Of_Supported_Advertising_Sets (0x203B).
    public static let leReadNumberOfSupportedAdvertisingSets = HCIOpcode(rawValue: 0x203B)
    /// HCI_LE_Remove_Advertising_Set (0x203C).
    public static let leRemoveAdvertisingSet = HCIOpcode(rawValue: 0x203C)
    /// HCI_LE_Clear_Advertising_Sets (0x203D).
    public static let leClearAdvertisingSets = HCIOpcode(rawValue: 0x203D)
    /// HCI_LE_Set_Extended_Scan_Parameters (0x2041).
    public static let leSetExtendedScanParameters = HCIOpcode(rawValue: 0x2041)
    /// HCI_LE_Set_Extended_Scan_Enable (0x2042).
    public static let leSetExtendedScanEnable = HCIOpcode(rawValue: 0x2042)
    /// HCI_LE_Extended_Create_Connection (0x2043).
    public static let leExtendedCreateConnection = HCIOpcode(rawValue: 0x2043)
    /// HCI_LE_Read_Buffer_Size [v2] (0x2060).
    public static let leReadBufferSizeV2 = HCIOpcode(rawValue: 0x2060)

    /// The Core Specification name, e.g. "HCI_LE_Set_Scan_Enable"; nil when unknown.
    public var name: String? {
        switch self {
        case .nop: "NOP"
        case .disconnect: "HCI_Disconnect"
        case .readRemoteVersionInformation: "HCI_Read_Remote_Version_Information"
        case .setEventMask: "HCI_Set_Event_Mask"
        case .reset: "HCI_Reset"
        case .setControllerToHostFlowControl: "HCI_Set_Controller_To_Host_Flow_Control"
        case .hostBufferSize: "HCI_Host_Buffer_Size"
        case .hostNumberOfCompletedPackets: "HCI_Host_Number_Of_Completed_Packets"
        case .setEventMaskPage2: "HCI_Set_Event_Mask_Page_2"
        case .writeLEHostSupport: "HCI_Write_LE_Host_Support"
        case .readLocalVersionInformation: "HCI_Read_Local_Version_Information"
        case .readLocalSupportedCommands: "HCI_Read_Local_Supported_Commands"
        case .readLocalSupportedFeatures: "HCI_Read_Local_Supported_Features"
        case .readBufferSize: "HCI_Read_Buffer_Size"
        case .readBDADDR: "HCI_Read_BD_ADDR"
        case .readRSSI: "HCI_Read_RSSI"
        case .leSetEventMask: "HCI_LE_Set_Event_Mask"
        case .leReadBufferSizeV1: "HCI_LE_Read_Buffer_Size"
        case .leReadLocalSupportedFeatures: "HCI_LE_Read_Local_Supported_Features"
        case .leSetRandomAddress: "HCI_LE_Set_Random_Address"
        case .leSetAdvertisingParameters: "HCI_LE_Set_Advertising_Parameters"
        case .leReadAdvertisingPhysicalChannelTxPower: "HCI_LE_Read_Advertising_Physical_Channel_Tx_Power"
        case .leSetAdvertisingData: "HCI_LE_Set_Advertising_Data"
        case .leSetScanResponseData: "HCI_LE_Set_Scan_Response_Data"
        case .leSetAdvertisingEnable: "HCI_LE_Set_Advertising_Enable"
        case .leSetScanParameters: "HCI_LE_Set_Scan_Parameters"
        case .leSetScanEnable: "HCI_LE_Set_Scan_Enable"
        case .leCreateConnection: "HCI_LE_Create_Connection"
        case .leCreateConnectionCancel: "HCI_LE_Create_Connection_Cancel"
        case .leReadFilterAcceptListSize: "HCI_LE_Read_Filter_Accept_List_Size"
        case .leClearFilterAcceptList: "HCI_LE_Clear_Filter_Accept_List"
        case .leAddDeviceToFilterAcceptList: "HCI_LE_Add_Device_To_Filter_Accept_List"
        case .leRemoveDeviceFromFilterAcceptList: "HCI_LE_Remove_Device_From_Filter_Accept_List"
        case .leConnectionUpdate: "HCI_LE_Connection_Update"
        case .leReadRemoteFeatures: "HCI_LE_Read_Remote_Features"
        case .leEncrypt: "HCI_LE_Encrypt"
        case .leRand: "HCI_LE_Rand"
        case .leEnableEncryption: "HCI_LE_Enable_Encryption"
        case .leLongTermKeyRequestReply: "HCI_LE_Long_Term_Key_Request_Reply"
        case .leLongTermKeyRequestNegativeReply: "HCI_LE_Long_Term_Key_Request_Negative_Reply"
        case .leReadSupportedStates: "HCI_LE_Read_Supported_States"
        case .leRemoteConnectionParameterRequestReply: "HCI_LE_Remote_Connection_Parameter_Request_Reply"
        case .leRemoteConnectionParameterRequestNegativeReply: "HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply"
        case .leSetDataLength: "HCI_LE_Set_Data_Length"
        case .leReadSuggestedDefaultDataLength: "HCI_LE_Read_Suggested_Default_Data_Length"
        case .leWriteSuggestedDefaultDataLength: "HCI_LE_Write_Suggested_Default_Data_Length"
        case .leReadLocalP256PublicKey: "HCI_LE_Read_Local_P-256_Public_Key"
        case .leGenerateDHKey: "HCI_LE_Generate_DHKey"
        case .leReadMaximumDataLength: "HCI_LE_Read_Maximum_Data_Length"
        case .leReadPHY: "HCI_LE_Read_PHY"
        case .leSetDefaultPHY: "HCI_LE_Set_Default_PHY"
        case .leSetPHY: "HCI_LE_Set_PHY"
        case .leSetAdvertisingSetRandomAddress: "HCI_LE_Set_Advertising_Set_Random_Address"
        case .leSetExtendedAdvertisingParameters: "HCI_LE_Set_Extended_Advertising_Parameters"
        case .leSetExtendedAdvertisingData: "HCI_LE_Set_Extended_Advertising_Data"
        case .leSetExtendedScanResponseData: "HCI_LE_Set_Extended_Scan_Response_Data"
        case .leSetExtendedAdvertisingEnable: "HCI_LE_Set_Extended_Advertising_Enable"
        case .leReadMaximumAdvertisingDataLength: "HCI_LE_Read_Maximum_Advertising_Data_Length"
        case .leReadNumberOfSupportedAdvertisingSets: "HCI_LE_Read_Number_of_Supported_Advertising_Sets"
        case .leRemoveAdvertisingSet: "HCI_LE_Remove_Advertising_Set"
        case .leClearAdvertisingSets: "HCI_LE_Clear_Advertising_Sets"
        case .leSetExtendedScanParameters: "HCI_LE_Set_Extended_Scan_Parameters"
        case .leSetExtendedScanEnable: "HCI_LE_Set_Extended_Scan_Enable"
        case .leExtendedCreateConnection: "HCI_LE_Extended_Create_Connection"
        case .leReadBufferSizeV2: "HCI_LE_Read_Buffer_Size [v2]"
        default: nil
        }
    }

    public var description: String {
        name ?? "opcode 0x\(Hex.pad(rawValue, 4)) (OGF 0x\(Hex.pad(ogf, 2)), OCF 0x\(Hex.pad(ocf, 3)))"
    }
}
