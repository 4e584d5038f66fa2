/// An HCI status / error code (Core Vol 1 Part F §1.3). Also used as the Reason
/// parameter of HCI_Disconnect and Disconnection Complete.
public struct HCIErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Success (0x00).
    public static let success = HCIErrorCode(rawValue: 0x00)
    /// Unknown HCI Command (0x01).
    public static let unknownHCICommand = HCIErrorCode(rawValue: 0x01)
    /// Unknown Connection Identifier (0x02).
    public static let unknownConnectionIdentifier = HCIErrorCode(rawValue: 0x02)
    /// Hardware Failure (0x03).
    public static let hardwareFailure = HCIErrorCode(rawValue: 0x03)
    /// Page Timeout (0x04).
    public static let pageTimeout = HCIErrorCode(rawValue: 0x04)
    /// Authentication Failure (0x05).
    public static let authenticationFailure = HCIErrorCode(rawValue: 0x05)
    /// PIN or Key Missing (0x06).
    public static let pINOrKeyMissing = HCIErrorCode(rawValue: 0x06)
    /// Memory Capacity Exceeded (0x07).
    public static let memoryCapacityExceeded = HCIErrorCode(rawValue: 0x07)
    /// Connection Timeout (0x08).
    public static let connectionTimeout = HCIErrorCode(rawValue: 0x08)
    /// Connection Limit Exceeded (0x09).
    public static let connectionLimitExceeded = HCIErrorCode(rawValue: 0x09)
    /// Synchronous Connection Limit To A Device Exceeded (0x0A).
    public static let synchronousConnectionLimitToADeviceExceeded = HCIErrorCode(rawValue: 0x0A)
    /// Connection Already Exists (0x0B).
    public static let connectionAlreadyExists = HCIErrorCode(rawValue: 0x0B)
    /// Command Disallowed (0x0C).
    public static let commandDisallowed = HCIErrorCode(rawValue: 0x0C)
    /// Connection Rejected Due To Limited Resources (0x0D).
    public static let connectionRejectedDueToLimitedResources = HCIErrorCode(rawValue: 0x0D)
    /// Connection Rejected Due To Security Reasons (0x0E).
    public static let connectionRejectedDueToSecurityReasons = HCIErrorCode(rawValue: 0x0E)
    /// Connection Rejected Due To Unacceptable BDADDR (0x0F).
    public static let connectionRejectedDueToUnacceptableBDADDR = HCIErrorCode(rawValue: 0x0F)
    /// Connection Accept Timeout Exceeded (0x10).
    public static let connectionAcceptTimeoutExceeded = HCIErrorCode(rawValue: 0x10)
    /// Unsupported Feature Or Parameter Value (0x11).
    public static let unsupportedFeatureOrParameterValue = HCIErrorCode(rawValue: 0x11)
    /// Invalid HCI Command Parameters (0x12).
    public static let invalidHCICommandParameters = HCIErrorCode(rawValue: 0x12)
    /// Remote User Terminated Connection (0x13).
    public static let remoteUserTerminatedConnection = HCIErrorCode(rawValue: 0x13)
    /// Remote Device Terminated Connection Due To Low Resources (0x14).
    public static let remoteDeviceTerminatedConnectionDueToLowResources = HCIErrorCode(rawValue: 0x14)
    /// Remote Device Terminated Connection Due To Power Off (0x15).
    public static let remoteDeviceTerminatedConnectionDueToPowerOff = HCIErrorCode(rawValue: 0x15)
    /// Connection Terminated By Local Host (0x16).
    public static let connectionTerminatedByLocalHost = HCIErrorCode(rawValue: 0x16)
    /// Repeated Attempts (0x17).
    public static let repeatedAttempts = HCIErrorCode(rawValue: 0x17)
    /// Pairing Not Allowed (0x18).
    public static let pairingNotAllowed = HCIErrorCode(rawValue: 0x18)
    /// Unknown LMP PDU (0x19).
    public static let unknownLMPPDU = HCIErrorCode(rawValue: 0x19)
    /// Unsupported Remote Feature (0x1A).
    public static let unsupportedRemoteFeature = HCIErrorCode(rawValue: 0x1A)
    /// SCO Offset Rejected (0x1B).
    public static let sCOOffsetRejected = HCIErrorCode(rawValue: 0x1B)
    /// SCO Interval Rejected (0x1C).
    public static let sCOIntervalRejected = HCIErrorCode(rawValue: 0x1C)
    /// SCO Air Mode Rejected (0x1D).
    public static let sCOAirModeRejected = HCIErrorCode(rawValue: 0x1D)
    /// Invalid LL Parameters (0x1E).
    public static let invalidLLParameters = HCIErrorCode(rawValue: 0x1E)
    /// Unspecified Error (0x1F).
    public static let unspecifiedError = HCIErrorCode(rawValue: 0x1F)
    /// Unsupported LL Parameter Value (0x20).
    public static let unsupportedLLParameterValue = HCIErrorCode(rawValue: 0x20)
    /// Role Change Not Allowed (0x21).
    public static let roleChangeNotAllowed = HCIErrorCode(rawValue: 0x21)
    /// LL Response Timeout (0x22).
    public static let lLResponseTimeout = HCIErrorCode(rawValue: 0x22)
    /// LL Procedure Collision (0x23).
    public static let lLProcedureCollision = HCIErrorCode(rawValue: 0x23)
    /// LMP PDU Not Allowed (0x24).
    public static let lMPPDUNotAllowed = HCIErrorCode(rawValue: 0x24)
    /// Encryption Mode Not Acceptable (0x25).
    public static let encryptionModeNotAcceptable = HCIErrorCode(rawValue: 0x25)
    /// Link Key Cannot Be Changed (0x26).
    public static let linkKeyCannotBeChanged = HCIErrorCode(rawValue: 0x26)
    /// Requested QoS Not Supported (0x27).
    public static let requestedQoSNotSupported = HCIErrorCode(rawValue: 0x27)
    /// Instant Passed (0x28).
    public static let instantPassed = HCIErrorCode(rawValue: 0x28)
    /// Pairing With Unit Key Not Supported (0x29).
    public static let pairingWithUnitKeyNotSupported = HCIErrorCode(rawValue: 0x29)
    /// Different Transaction Collision (0x2A).
    public static let differentTransactionCollision = HCIErrorCode(rawValue: 0x2A)
    /// QoS Unacceptable Parameter (0x2C).
    public static let qoSUnacceptableParameter = HCIErrorCode(rawValue: 0x2C)
    /// QoS Rejected (0x2D).
    public static let qoSRejected = HCIErrorCode(rawValue: 0x2D)
    /// Channel Classification Not Supported (0x2E).
    public static let channelClassificationNotSupported = HCIErrorCode(rawValue: 0x2E)
    /// Insufficient Security (0x2F).
    public static let insufficientSecurity = HCIErrorCode(rawValue: 0x2F)
    /// Parameter Out Of Mandatory Range (0x30).
    public static let parameterOutOfMandatoryRange = HCIErrorCode(rawValue: 0x30)
    /// Role Switch Pending (0x32).
    public static let roleSwitchPending = HCIErrorCode(rawValue: 0x32)
    /// Reserved Slot Violation (0x34).
    public static let reservedSlotViolation = HCIErrorCode(rawValue: 0x34)
    /// Role Switch Failed (0x35).
    public static let roleSwitchFailed = HCIErrorCode(rawValue: 0x35)
    /// Extended Inquiry Response Too Large (0x36).
    public static let extendedInquiryResponseTooLarge = HCIErrorCode(rawValue: 0x36)
    /// Secure Simple Pairing Not Supported By Host (0x37).
    public static let secureSimplePairingNotSupportedByHost = HCIErrorCode(rawValue: 0x37)
    /// Host Busy Pairing (0x38).
    public static let hostBusyPairing = HCIErrorCode(rawValue: 0x38)
    /// Connection Rejected Due To No Suitable Channel Found (0x39).
    public static let connectionRejectedDueToNoSuitableChannelFound = HCIErrorCode(rawValue: 0x39)
    /// Controller Busy (0x3A).
    public static let controllerBusy = HCIErrorCode(rawValue: 0x3A)
    /// Unacceptable Connection Parameters (0x3B).
    public static let unacceptableConnectionParameters = HCIErrorCode(rawValue: 0x3B)
    /// Advertising Timeout (0x3C).
    public static let advertisingTimeout = HCIErrorCode(rawValue: 0x3C)
    /// Connection Terminated Due To MIC Failure (0x3D).
    public static let connectionTerminatedDueToMICFailure = HCIErrorCode(rawValue: 0x3D)
    /// Synchronization Timeout (0x3E).
    public static let synchronizationTimeout = HCIErrorCode(rawValue: 0x3E)
    /// Coarse Clock Adjustment Rejected But Will Try To Adjust Using Clock Dragging (0x40).
    public static let coarseClockAdjustmentRejectedButWillTryToAdjustUsingClockDragging = HCIErrorCode(rawValue: 0x40)
    /// Type 0 Submap Not Defined (0x41).
    public static let type0SubmapNotDefined = HCIErrorCode(rawValue: 0x41)
    /// Unknown Advertising Identifier (0x42).
    public static let unknownAdvertisingIdentifier = HCIErrorCode(rawValue: 0x42)
    /// Limit Reached (0x43).
    public static let limitReached = HCIErrorCode(rawValue: 0x43)
    /// Operation Cancelled By Host (0x44).
    public static let operationCancelledByHost = HCIErrorCode(rawValue: 0x44)
    /// Packet Too Long (0x45).
    public static let packetTooLong = HCIErrorCode(rawValue: 0x45)
    /// Too Late (0x46).
    public static let tooLate = HCIErrorCode(rawValue: 0x46)
    /// Too Early (0x47).
    public static let tooEarly = HCIErrorCode(rawValue: 0x47)

    /// The code is Success (0x00).
    @inlinable public var isSuccess: Bool { rawValue == 0 }

    /// The Core Specification name; nil for reserved codes.
    public var name: String? {
        switch rawValue {
        case 0x00: "Success"
        case 0x01: "Unknown HCI Command"
        case 0x02: "Unknown Connection Identifier"
        case 0x03: "Hardware Failure"
        case 0x04: "Page Timeout"
        case 0x05: "Authentication Failure"
        case 0x06: "PIN or Key Missing"
        case 0x07: "Memory Capacity Exceeded"
        case 0x08: "Connection Timeout"
        case 0x09: "Connection Limit Exceeded"
        case 0x0A: "Synchronous Connection Limit To A Device Exceeded"
        case 0x0B: "Connection Already Exists"
        case 0x0C: "Command Disallowed"
        case 0x0D: "Connection Rejected due to Limited Resources"
        case 0x0E: "Connection Rejected Due To Security Reasons"
        case 0x0F: "Connection Rejected due to Unacceptable BD_ADDR"
        case 0x10: "Connection Accept Timeout Exceeded"
        case 0x11: "Unsupported Feature or Parameter Value"
        case 0x12: "Invalid HCI Command Parameters"
        case 0x13: "Remote User Terminated Connection"
        case 0x14: "Remote Device Terminated Connection due to Low Resources"
        case 0x15: "Remote Device Terminated Connection due to Power Off"
        case 0x16: "Connection Terminated By Local Host"
        case 0x17: "Repeated Attempts"
        case 0x18: "Pairing Not Allowed"
        case 0x19: "Unknown LMP PDU"
        case 0x1A: "Unsupported Remote Feature"
        case 0x1B: "SCO Offset Rejected"
        case 0x1C: "SCO Interval Rejected"
        case 0x1D: "SCO Air Mode Rejected"
        case 0x1E: "Invalid LMP Parameters / Invalid LL Parameters"
        case 0x1F: "Unspecified Error"
        case 0x20: "Unsupported LMP Parameter Value / Unsupported LL Parameter Value"
        case 0x21: "Role Change Not Allowed"
        case 0x22: "LMP Response Timeout / LL Response Timeout"
        case 0x23: "LMP Error Transaction Collision / LL Procedure Collision"
        case 0x24: "LMP PDU Not Allowed"
        case 0x25: "Encryption Mode Not Acceptable"
        case 0x26: "Link Key cannot be Changed"
        case 0x27: "Requested QoS Not Supported"
        case 0x28: "Instant Passed"
        case 0x29: "Pairing With Unit Key Not Supported"
        case 0x2A: "Different Transaction Collision"
        case 0x2C: "QoS Unacceptable Parameter"
        case 0x2D: "QoS Rejected"
        case 0x2E: "Channel Classification Not Supported"
        case 0x2F: "Insufficient Security"
        case 0x30: "Parameter Out Of Mandatory Range"
        case 0x32: "Role Switch Pending"
        case 0x34: "Reserved Slot Violation"
        case 0x35: "Role Switch Failed"
        case 0x36: "Extended Inquiry Response Too Large"
        case 0x37: "Secure Simple Pairing Not Supported By Host"
        case 0x38: "Host Busy - Pairing"
        case 0x39: "Connection Rejected due to No Suitable Channel Found"
        case 0x3A: "Controller Busy"
        case 0x3B: "Unacceptable Connection Parameters"
        case 0x3C: "Advertising Timeout"
        case 0x3D: "Connection Terminated due to MIC Failure"
        case 0x3E: "Connection Failed to be Established / Synchronization Timeout"
        case 0x40: "Coarse Clock Adjustment Rejected but Will Try to Adjust Using Clock Dragging"
        case 0x41: "Type0 Submap Not Defined"
        case 0x42: "Unknown Advertising Identifier"
        case 0x43: "Limit Reached"
        case 0x44: "Operation Cancelled by Host"
        case 0x45: "Packet Too Long"
        case 0x46: "Too Late"
        case 0x47: "Too Early"
        default: nil
        }
    }

    public var description: String {
        "\(name ?? "Reserved") (0x\(Hex.pad(rawValue, 2)))"
    }
}
