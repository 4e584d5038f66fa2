// Link Control, Controller & Baseband, Informational and Status commands
// (Core Vol 4 Part E §7.1, §7.3, §7.4, §7.5), and the parameterless LE commands.

/// HCI_Disconnect (Core Vol 4 Part E §7.1.6).
public struct DisconnectCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.disconnect
    /// Connection_Handle (≤ 0x0EFF).
    public var connectionHandle: UInt16
    /// Reason: one of 0x05, 0x13–0x15, 0x1A, 0x29, 0x3B.
    public var reason: HCIErrorCode

    /// The command with these parameters.
    public init(connectionHandle: UInt16, reason: HCIErrorCode = .remoteUserTerminatedConnection) {
        self.connectionHandle = connectionHandle
        self.reason = reason
    }

    public var parameterLength: Int { 3 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try w.u8(reason.rawValue)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        reason = HCIErrorCode(rawValue: try r.u8("Reason"))
    }
    public var parameterFields: [Field] {
        [Field("connection_handle", HCIParam.uint(connectionHandle)), Field("reason", HCIParam.error(reason))]
    }
}

/// HCI_Set_Event_Mask (Core Vol 4 Part E §7.3.1).
public struct SetEventMaskCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.setEventMask
    /// Event_Mask.
    public var eventMask: HCIEventMask

    /// The command with these parameters.
    public init(eventMask: HCIEventMask) { self.eventMask = eventMask }

    public var parameterLength: Int { 8 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u64(eventMask.rawValue) }
    public init(parameters r: inout ByteReader) throws(WireError) {
        eventMask = HCIEventMask(rawValue: try r.u64("Event_Mask"))
    }
    public var parameterFields: [Field] {
        [Field("event_mask", .named(eventMask.rawValue, "0x" + Hex.pad(eventMask.rawValue, 16)))]
    }
}

/// HCI_Set_Controller_To_Host_Flow_Control (Core Vol 4 Part E §7.3.38).
public struct SetControllerToHostFlowControlCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.setControllerToHostFlowControl
    /// Flow_Control_Enable.
    public var flowControlEnable: HCIFlowControlEnable

    /// The command with these parameters.
    public init(flowControlEnable: HCIFlowControlEnable) { self.flowControlEnable = flowControlEnable }

    public var parameterLength: Int { 1 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u8(flowControlEnable.rawValue) }
    public init(parameters r: inout ByteReader) throws(WireError) {
        flowControlEnable = HCIFlowControlEnable(rawValue: try r.u8("Flow_Control_Enable"))
    }
    public var parameterFields: [Field] { [Field("flow_control_enable", HCIParam.named(flowControlEnable))] }
}

/// HCI_Host_Buffer_Size (Core Vol 4 Part E §7.3.39): the host's buffers for
/// controller-to-host data when flow control is on.
public struct HostBufferSizeCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.hostBufferSize
    /// Host_ACL_Data_Packet_Length: largest ACL data payload the host accepts, in bytes.
    public var aclDataPacketLength: UInt16
    /// Host_Synchronous_Data_Packet_Length, in bytes.
    public var synchronousDataPacketLength: UInt8
    /// Host_Total_Num_ACL_Data_Packets.
    public var totalNumACLDataPackets: UInt16
    /// Host_Total_Num_Synchronous_Data_Packets.
    public var totalNumSynchronousDataPackets: UInt16

    /// The command with these parameters.
    public init(aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8 = 0,
                totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16 = 0) {
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }

    public var parameterLength: Int { 7 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(aclDataPacketLength)
        try w.u8(synchronousDataPacketLength)
        try w.u16(totalNumACLDataPackets)
        try w.u16(totalNumSynchronousDataPackets)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        aclDataPacketLength = try r.u16("Host_ACL_Data_Packet_Length")
        synchronousDataPacketLength = try r.u8("Host_Synchronous_Data_Packet_Length")
        totalNumACLDataPackets = try r.u16("Host_Total_Num_ACL_Data_Packets")
        totalNumSynchronousDataPackets = try r.u16("Host_Total_Num_Synchronous_Data_Packets")
    }
    public var parameterFields: [Field] {
        [
            Field("host_acl_data_packet_length", HCIParam.uint(aclDataPacketLength)),
            Field("host_synchronous_data_packet_length", HCIParam.uint(synchronousDataPacketLength)),
            Field("host_total_num_acl_data_packets", HCIParam.uint(totalNumACLDataPackets)),
            Field("host_total_num_synchronous_data_packets", HCIParam.uint(totalNumSynchronousDataPackets)),
        ]
    }
}

/// HCI_Read_RSSI (Core Vol 4 Part E §7.5.4).
public struct ReadRSSICommand: HCIConnectionHandleCommand {
    public static let opcode = HCIOpcode.readRSSI
    /// The spec names this one Handle.
    public static var handleFieldName: String { "handle" }
    /// Handle (≤ 0x0EFF).
    public var connectionHandle: UInt16

    /// The command with these parameters.
    public init(connectionHandle: UInt16) { self.connectionHandle = connectionHandle }
}

/// HCI_LE_Set_Event_Mask (Core Vol 4 Part E §7.8.1).
public struct LESetEventMaskCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetEventMask
    /// LE_Event_Mask.
    public var leEventMask: LEEventMask

    /// The command with these parameters.
    public init(leEventMask: LEEventMask) { self.leEventMask = leEventMask }

    public var parameterLength: Int { 8 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u64(leEventMask.rawValue) }
    public init(parameters r: inout ByteReader) throws(WireError) {
        leEventMask = LEEventMask(rawValue: try r.u64("LE_Event_Mask"))
    }
    public var parameterFields: [Field] {
        [Field("le_event_mask", .named(leEventMask.rawValue, "0x" + Hex.pad(leEventMask.rawValue, 16)))]
    }
}

// MARK: - Commands without parameters

/// HCI_Reset (Core Vol 4 Part E §7.3.2).
public struct ResetCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.reset
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_Read_Local_Version_Information (Core Vol 4 Part E §7.4.1).
public struct ReadLocalVersionInformationCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.readLocalVersionInformation
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_Read_Local_Supported_Commands (Core Vol 4 Part E §7.4.2).
public struct ReadLocalSupportedCommandsCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.readLocalSupportedCommands
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_Read_Local_Supported_Features (Core Vol 4 Part E §7.4.3).
public struct ReadLocalSupportedFeaturesCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.readLocalSupportedFeatures
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_Read_BD_ADDR (Core Vol 4 Part E §7.4.6).
public struct ReadBDADDRCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.readBDADDR
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Read_Buffer_Size [v1] (Core Vol 4 Part E §7.8.2).
public struct LEReadBufferSizeV1Command: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadBufferSizeV1
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Read_Buffer_Size [v2] (Core Vol 4 Part E §7.8.2): also reports ISO buffers.
public struct LEReadBufferSizeV2Command: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadBufferSizeV2
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Read_Local_Supported_Features (Core Vol 4 Part E §7.8.3).
public struct LEReadLocalSupportedFeaturesCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadLocalSupportedFeatures
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Create_Connection_Cancel (Core Vol 4 Part E §7.8.13).
public struct LECreateConnectionCancelCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leCreateConnectionCancel
    /// The command (it has no parameters).
    public init() {}
}
