// The LE features bit mask (from CommandComplete.swift: one file per concern, under ~800 lines).

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
