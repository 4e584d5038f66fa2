import BluetoothHost
import BluetoothWire

/// What a scripted controller answers to each command (shared by the init tests and the
/// socketpair fake controller).
public struct FakeControllerModel: Sendable {
    public init() {}
    public var address = BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66)
    public var leFeatures: LEFeatures = [.leEncryption, .leExtendedAdvertising]
    /// Supported_Commands bits to set: (octet, bit).
    public var supportedCommandBits: [(Int, Int)] = [(37, 5), (37, 6), (41, 5)]
    /// The Supported_Commands bits of a controller with extended advertising sets.
    public static let extendedAdvertisingBits: [(Int, Int)] = [(36, 1), (36, 2), (36, 3), (36, 4), (36, 5), (36, 6), (36, 7), (37, 0)]
    /// LE Read Buffer Size [v2] answers Unknown HCI Command.
    public var v2Unknown = false
    public var leACLLength: UInt16 = 251
    public var leACLCount: UInt8 = 12
    /// HCI_Read_Buffer_Size's ACL packet length and count (the buffers shared with BR/EDR).
    public var sharedACLLength: UInt16 = 1021
    public var sharedACLCount: UInt16 = 8
    /// Opcodes never answered.
    public var silent: Set<HCIOpcode> = []
    /// Opcodes answered with this status instead of success.
    public var failing: [HCIOpcode: HCIErrorCode] = [:]
    /// Opcodes answered with HCI_Command_Status (their result comes in a later event).
    public var statusOpcodes: Set<HCIOpcode> = [.leCreateConnection, .leExtendedCreateConnection, .disconnect,
                                          .leConnectionUpdate, .leReadRemoteFeatures]

    public var supportedCommands: [UInt8] {
        var c = [UInt8](repeating: 0, count: 64)
        for (o, b) in supportedCommandBits { c[o] |= 1 << UInt8(b) }
        return c
    }

    /// Return parameters for `opcode`, or nil for "never answers".
    public func returnParameters(for opcode: HCIOpcode) -> [UInt8]? {
        if silent.contains(opcode) { return nil }
        if let status = failing[opcode] { return [status.rawValue] }
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        switch opcode {
        case .readLocalVersionInformation:
            return [0, 0x0C] + le16(0x1234) + [0x0C] + le16(0x05F1) + le16(0x0042)
        case .readBDADDR:
            return [0] + (0..<6).map { UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64($0))) }
        case .readLocalSupportedCommands:
            return [0] + supportedCommands
        case .readLocalSupportedFeatures:
            return [0] + le64(1 << 38)
        case .leReadLocalSupportedFeatures:
            return [0] + le64(leFeatures.rawValue)
        case .leReadBufferSizeV2:
            return v2Unknown ? [0x01] : [0] + le16(leACLLength) + [leACLCount] + le16(0) + [0]
        case .leReadBufferSizeV1:
            return [0] + le16(leACLLength) + [leACLCount]
        case .readBufferSize:
            return [0] + le16(sharedACLLength) + [64] + le16(sharedACLCount) + le16(0)
        case .leReadMaximumAdvertisingDataLength:
            return [0] + le16(0x0672)
        case .leReadNumberOfSupportedAdvertisingSets:
            return [0, 4]
        case .leSetExtendedAdvertisingParameters:
            return [0, 5]  // Selected_TX_Power: 5 dBm
        case .leReadMaximumDataLength:
            return [0] + le16(251) + le16(17040) + le16(251) + le16(17040)
        default:
            return [0]
        }
    }
}

