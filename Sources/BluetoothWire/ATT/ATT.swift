/// An Attribute Protocol opcode. Core Vol 3 Part F §3.3.1 and §3.4.8.
///
/// Bit 7 is the Authentication Signature flag, bit 6 the Command flag and bits 0-5
/// the method. Open set: unknown opcodes are representable.
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// ATT Error Response PDU (0x01).
    public static let errorResponse = ATTOpcode(rawValue: 0x01)
    /// ATT Exchange MTU Request PDU (0x02).
    public static let exchangeMTURequest = ATTOpcode(rawValue: 0x02)
    /// ATT Exchange MTU Response PDU (0x03).
    public static let exchangeMTUResponse = ATTOpcode(rawValue: 0x03)
    /// ATT Find Information Request PDU (0x04).
    public static let findInformationRequest = ATTOpcode(rawValue: 0x04)
    /// ATT Find Information Response PDU (0x05).
    public static let findInformationResponse = ATTOpcode(rawValue: 0x05)
    /// ATT Find By Type Value Request PDU (0x06).
    public static let findByTypeValueRequest = ATTOpcode(rawValue: 0x06)
    /// ATT Find By Type Value Response PDU (0x07).
    public static let findByTypeValueResponse = ATTOpcode(rawValue: 0x07)
    /// ATT Read By Type Request PDU (0x08).
    public static let readByTypeRequest = ATTOpcode(rawValue: 0x08)
    /// ATT Read By Type Response PDU (0x09).
    public static let readByTypeResponse = ATTOpcode(rawValue: 0x09)
    /// ATT Read Request PDU (0x0A).
    public static let readRequest = ATTOpcode(rawValue: 0x0A)
    /// ATT Read Response PDU (0x0B).
    public static let readResponse = ATTOpcode(rawValue: 0x0B)
    /// ATT Read Blob Request PDU (0x0C).
    public static let readBlobRequest = ATTOpcode(rawValue: 0x0C)
    /// ATT Read Blob Response PDU (0x0D).
    public static let readBlobResponse = ATTOpcode(rawValue: 0x0D)
    /// ATT Read Multiple Request PDU (0x0E).
    public static let readMultipleRequest = ATTOpcode(rawValue: 0x0E)
    /// ATT Read Multiple Response PDU (0x0F).
    public static let readMultipleResponse = ATTOpcode(rawValue: 0x0F)
    /// ATT Read By Group Type Request PDU (0x10).
    public static let readByGroupTypeRequest = ATTOpcode(rawValue: 0x10)
    /// ATT Read By Group Type Response PDU (0x11).
    public static let readByGroupTypeResponse = ATTOpcode(rawValue: 0x11)
    /// ATT Write Request PDU (0x12).
    public static let writeRequest = ATTOpcode(rawValue: 0x12)
    /// ATT Write Response PDU (0x13).
    public static let writeResponse = ATTOpcode(rawValue: 0x13)
    /// ATT Prepare Write Request PDU (0x16).
    public static let prepareWriteRequest = ATTOpcode(rawValue: 0x16)
    /// ATT Prepare Write Response PDU (0x17).
    public static let prepareWriteResponse = ATTOpcode(rawValue: 0x17)
    /// ATT Execute Write Request PDU (0x18).
    public static let executeWriteRequest = ATTOpcode(rawValue: 0x18)
    /// ATT Execute Write Response PDU (0x19).
    public static let executeWriteResponse = ATTOpcode(rawValue: 0x19)
    /// ATT Handle Value Notification PDU (0x1B).
    public static let handleValueNotification = ATTOpcode(rawValue: 0x1B)
    /// ATT Handle Value Indication PDU (0x1D).
    public static let handleValueIndication = ATTOpcode(rawValue: 0x1D)
    /// ATT Handle Value Confirmation PDU (0x1E).
    public static let handleValueConfirmation = ATTOpcode(rawValue: 0x1E)
    /// ATT Read Multiple Variable Request PDU (0x20).
    public static let readMultipleVariableRequest = ATTOpcode(rawValue: 0x20)
    /// ATT Read Multiple Variable Response PDU (0x21).
    public static let readMultipleVariableResponse = ATTOpcode(rawValue: 0x21)
    /// ATT Multiple Handle Value Notification PDU (0x23).
    public static let multipleHandleValueNotification = ATTOpcode(rawValue: 0x23)
    /// ATT Write Command PDU (0x52).
    public static let writeCommand = ATTOpcode(rawValue: 0x52)
    /// ATT Signed Write Command PDU (0xD2).
    public static let signedWriteCommand = ATTOpcode(rawValue: 0xD2)

    /// Bit 6: the PDU is a command (no response).
    public static let commandFlag: UInt8 = 0x40
    /// Bit 7: a 12-byte authentication signature ends the PDU.
    public static let authenticationSignatureFlag: UInt8 = 0x80

    /// A command (no response is sent).
    @inlinable public var isCommand: Bool { rawValue & ATTOpcode.commandFlag != 0 }
    /// The PDU carries an authentication signature.
    @inlinable public var hasAuthenticationSignature: Bool { rawValue & ATTOpcode.authenticationSignatureFlag != 0 }
    /// Bits 0-5.
    @inlinable public var method: UInt8 { rawValue & 0x3F }

    /// True for PDUs a client sends to a server: requests, commands, Handle Value
    /// Confirmation, and unknown opcodes (a server answers those); false for responses,
    /// notifications and indications, which a server sends (Core Vol 3 Part F §3.3).
    /// On a bearer where both sides run, this says which side a received PDU is for.
    @inlinable public var isClientToServer: Bool {
        switch rawValue {
        case 0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x1B, 0x1D, 0x21, 0x23: false
        default: true
        }
    }

    /// The Core Specification name, e.g. "ATT_READ_BY_TYPE_REQ"; nil for unassigned opcodes.
    public var name: String? {
        switch rawValue {
        case 0x01: "ATT_ERROR_RSP"
        case 0x02: "ATT_EXCHANGE_MTU_REQ"
        case 0x03: "ATT_EXCHANGE_MTU_RSP"
        case 0x04: "ATT_FIND_INFORMATION_REQ"
        case 0x05: "ATT_FIND_INFORMATION_RSP"
        case 0x06: "ATT_FIND_BY_TYPE_VALUE_REQ"
        case 0x07: "ATT_FIND_BY_TYPE_VALUE_RSP"
        case 0x08: "ATT_READ_BY_TYPE_REQ"
        case 0x09: "ATT_READ_BY_TYPE_RSP"
        case 0x0A: "ATT_READ_REQ"
        case 0x0B: "ATT_READ_RSP"
        case 0x0C: "ATT_READ_BLOB_REQ"
        case 0x0D: "ATT_READ_BLOB_RSP"
        case 0x0E: "ATT_READ_MULTIPLE_REQ"
        case 0x0F: "ATT_READ_MULTIPLE_RSP"
        case 0x10: "ATT_READ_BY_GROUP_TYPE_REQ"
        case 0x11: "ATT_READ_BY_GROUP_TYPE_RSP"
        case 0x12: "ATT_WRITE_REQ"
        case 0x13: "ATT_WRITE_RSP"
        case 0x16: "ATT_PREPARE_WRITE_REQ"
        case 0x17: "ATT_PREPARE_WRITE_RSP"
        case 0x18: "ATT_EXECUTE_WRITE_REQ"
        case 0x19: "ATT_EXECUTE_WRITE_RSP"
        case 0x1B: "ATT_HANDLE_VALUE_NTF"
        case 0x1D: "ATT_HANDLE_VALUE_IND"
        case 0x1E: "ATT_HANDLE_VALUE_CFM"
        case 0x20: "ATT_READ_MULTIPLE_VARIABLE_REQ"
        case 0x21: "ATT_READ_MULTIPLE_VARIABLE_RSP"
        case 0x23: "ATT_MULTIPLE_HANDLE_VALUE_NTF"
        case 0x52: "ATT_WRITE_CMD"
        case 0xD2: "ATT_SIGNED_WRITE_CMD"
        default: nil
        }
    }

    public var description: String { name ?? "ATT opcode 0x\(Hex.pad(rawValue, 2))" }

    var field: FieldValue { .named(UInt64(rawValue), description) }
}

/// The Error Code of an ATT_ERROR_RSP. Core Vol 3 Part F §3.4.1.1 Table 3.4, plus the
/// application range and the common profile and service error codes (Core Specification
/// Supplement Part B §1.2). Open set.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Error {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Invalid Handle (0x01).
    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    /// Read Not Permitted (0x02).
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    /// Write Not Permitted (0x03).
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    /// Invalid PDU (0x04).
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    /// Insufficient Authentication (0x05).
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    /// Request Not Supported (0x06).
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    /// Invalid Offset (0x07).
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    /// Insufficient Authorization (0x08).
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    /// Prepare Queue Full (0x09).
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    /// Attribute Not Found (0x0A).
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    /// Attribute Not Long (0x0B).
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    /// Encryption Key Size Too Short (0x0C).
    public static let encryptionKeySizeTooShort = ATTErrorCode(rawValue: 0x0C)
    /// Invalid Attribute Value Length (0x0D).
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    /// Unlikely Error (0x0E).
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    /// Insufficient Encryption (0x0F).
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    /// Unsupported Group Type (0x10).
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    /// Insufficient Resources (0x11).
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    /// Database Out Of Sync (0x12).
    public static let databaseOutOfSync = ATTErrorCode(rawValue: 0x12)
    /// Value Not Allowed (0x13).
    public static let valueNotAllowed = ATTErrorCode(rawValue: 0x13)
    /// 0xFC (Core Specification Supplement Part B §1.2).
    public static let writeRequestRejected = ATTErrorCode(rawValue: 0xFC)
    /// 0xFD.
    public static let cccdImproperlyConfigured = ATTErrorCode(rawValue: 0xFD)
    /// 0xFE.
    public static let procedureAlreadyInProgress = ATTErrorCode(rawValue: 0xFE)
    /// 0xFF.
    public static let outOfRange = ATTErrorCode(rawValue: 0xFF)

    /// 0x80...0x9F: defined by a higher layer specification.
    public static let applicationErrorRange: ClosedRange<UInt8> = 0x80 ... 0x9F
    /// 0xE0...0xFF: common profile and service error codes.
    public static let commonProfileErrorRange: ClosedRange<UInt8> = 0xE0 ... 0xFF

    /// An application error 0x80 + `offset` (offset 0...31).
    @inlinable public static func application(_ offset: UInt8) -> ATTErrorCode {
        ATTErrorCode(rawValue: 0x80 | (offset & 0x1F))
    }

    /// An application error (0x80-0x9F).
    @inlinable public var isApplicationError: Bool { ATTErrorCode.applicationErrorRange.contains(rawValue) }

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x01: "Invalid Handle"
        case 0x02: "Read Not Permitted"
        case 0x03: "Write Not Permitted"
        case 0x04: "Invalid PDU"
        case 0x05: "Insufficient Authentication"
        case 0x06: "Request Not Supported"
        case 0x07: "Invalid Offset"
        case 0x08: "Insufficient Authorization"
        case 0x09: "Prepare Queue Full"
        case 0x0A: "Attribute Not Found"
        case 0x0B: "Attribute Not Long"
        case 0x0C: "Encryption Key Size Too Short"
        case 0x0D: "Invalid Attribute Value Length"
        case 0x0E: "Unlikely Error"
        case 0x0F: "Insufficient Encryption"
        case 0x10: "Unsupported Group Type"
        case 0x11: "Insufficient Resources"
        case 0x12: "Database Out Of Sync"
        case 0x13: "Value Not Allowed"
        case 0x80 ... 0x9F: "Application Error"
        case 0xE0 ... 0xFB: "Common Profile and Service Error"
        case 0xFC: "Write Request Rejected"
        case 0xFD: "Client Characteristic Configuration Descriptor Improperly Configured"
        case 0xFE: "Procedure Already in Progress"
        case 0xFF: "Out of Range"
        default: nil
        }
    }

    public var description: String { name ?? "ATT error 0x\(Hex.pad(rawValue, 2))" }
}

/// The Flags of an ATT_EXECUTE_WRITE_REQ. Core Vol 3 Part F §3.4.6.3. Open set
/// (a server answers other values with Invalid PDU; the parser keeps them).
public struct ATTExecuteWriteFlags: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0x00: cancel all prepared writes.
    public static let cancel = ATTExecuteWriteFlags(rawValue: 0x00)
    /// 0x01: immediately write all pending prepared values.
    public static let write = ATTExecuteWriteFlags(rawValue: 0x01)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "Cancel all prepared writes"
        case 1: "Immediately write all pending prepared values"
        default: nil
        }
    }
}

/// The Format of an ATT_FIND_INFORMATION_RSP. Core Vol 3 Part F §3.4.3.2.
public struct ATTFindInformationFormat: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0x01: handles with 16-bit UUIDs.
    public static let uuid16 = ATTFindInformationFormat(rawValue: 0x01)
    /// 0x02: handles with 128-bit UUIDs.
    public static let uuid128 = ATTFindInformationFormat(rawValue: 0x02)
    /// Bytes per UUID: 2, 16, or 0 for an undefined format.
    @inlinable public var uuidWidth: Int {
        switch rawValue {
        case 1: 2
        case 2: 16
        default: 0
        }
    }
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 1: "Handle(s) and 16-bit Bluetooth UUID(s)"
        case 2: "Handle(s) and 128-bit UUID(s)"
        default: nil
        }
    }
}

/// Well-known ATT sizes. Core Vol 3 Part F §3.2.8-3.2.9 and Part G §5.2.1.
public enum ATT {
    /// The LE default (and minimum) ATT_MTU.
    public static let defaultMTU = 23
    /// The largest attribute value (512 bytes).
    public static let maximumAttributeValueLength = 512
    /// Length of the authentication signature of ATT_SIGNED_WRITE_CMD.
    public static let signatureLength = 12
}
