// Named values used by HCI command parameters (Core Vol 4 Part E §7).
// All are open RawRepresentable structs: unknown values are kept, never rejected.

/// LE_Scan_Type / Scan_Type (Core Vol 4 Part E §7.8.10, §7.8.64).
public struct LEScanType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// No scan requests are sent.
    public static let passive = LEScanType(rawValue: 0x00)
    /// Scan requests may be sent.
    public static let active = LEScanType(rawValue: 0x01)
    public var description: String {
        switch rawValue {
        case 0: "passive"
        case 1: "active"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Own_Address_Type (Core Vol 4 Part E §7.8.5, §7.8.10, §7.8.12).
public struct LEOwnAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Public (0x00).
    public static let `public` = LEOwnAddressType(rawValue: 0x00)
    /// Random (0x01).
    public static let random = LEOwnAddressType(rawValue: 0x01)
    /// A resolvable private address from the resolving list, else the public address.
    public static let resolvableOrPublic = LEOwnAddressType(rawValue: 0x02)
    /// A resolvable private address from the resolving list, else the random address.
    public static let resolvableOrRandom = LEOwnAddressType(rawValue: 0x03)
    public var description: String {
        switch rawValue {
        case 0: "public"
        case 1: "random"
        case 2: "resolvable-or-public"
        case 3: "resolvable-or-random"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Scanning_Filter_Policy (Core Vol 4 Part E §7.8.10).
public struct LEScanningFilterPolicy: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Accept all advertisements (except directed ones not addressed to us).
    public static let basicUnfiltered = LEScanningFilterPolicy(rawValue: 0x00)
    /// Only from devices in the Filter Accept List.
    public static let basicFiltered = LEScanningFilterPolicy(rawValue: 0x01)
    /// As unfiltered, plus directed advertisements with a resolvable target address.
    public static let extendedUnfiltered = LEScanningFilterPolicy(rawValue: 0x02)
    /// As filtered, plus directed advertisements with a resolvable target address.
    public static let extendedFiltered = LEScanningFilterPolicy(rawValue: 0x03)
    public var description: String {
        switch rawValue {
        case 0: "basic unfiltered"
        case 1: "basic filtered"
        case 2: "extended unfiltered"
        case 3: "extended filtered"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Initiator_Filter_Policy (Core Vol 4 Part E §7.8.12).
public struct LEInitiatorFilterPolicy: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Connect to the device given by Peer_Address_Type / Peer_Address.
    public static let peerAddress = LEInitiatorFilterPolicy(rawValue: 0x00)
    /// Connect to any device in the Filter Accept List (peer address ignored).
    public static let filterAcceptList = LEInitiatorFilterPolicy(rawValue: 0x01)
    public var description: String {
        switch rawValue {
        case 0: "peer address"
        case 1: "filter accept list"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Advertising_Filter_Policy (Core Vol 4 Part E §7.8.5).
public struct LEAdvertisingFilterPolicy: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Scan and connection requests from any device.
    public static let acceptAll = LEAdvertisingFilterPolicy(rawValue: 0x00)
    /// Scan requests only from the Filter Accept List; connection requests from any.
    public static let filterScanRequests = LEAdvertisingFilterPolicy(rawValue: 0x01)
    /// Scan requests from any; connection requests only from the Filter Accept List.
    public static let filterConnectionRequests = LEAdvertisingFilterPolicy(rawValue: 0x02)
    /// Both only from the Filter Accept List.
    public static let filterBoth = LEAdvertisingFilterPolicy(rawValue: 0x03)
    public var description: String {
        switch rawValue {
        case 0: "accept all"
        case 1: "filter scan requests"
        case 2: "filter connection requests"
        case 3: "filter scan and connection requests"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Advertising_Type of legacy advertising (Core Vol 4 Part E §7.8.5).
public struct LEAdvertisingType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// ADV_IND: connectable and scannable undirected.
    public static let connectableUndirected = LEAdvertisingType(rawValue: 0x00)
    /// ADV_DIRECT_IND, high duty cycle.
    public static let connectableDirectedHighDutyCycle = LEAdvertisingType(rawValue: 0x01)
    /// ADV_SCAN_IND: scannable undirected.
    public static let scannableUndirected = LEAdvertisingType(rawValue: 0x02)
    /// ADV_NONCONN_IND: non-connectable undirected.
    public static let nonConnectableUndirected = LEAdvertisingType(rawValue: 0x03)
    /// ADV_DIRECT_IND, low duty cycle.
    public static let connectableDirectedLowDutyCycle = LEAdvertisingType(rawValue: 0x04)
    public var description: String {
        switch rawValue {
        case 0: "ADV_IND"
        case 1: "ADV_DIRECT_IND (high duty cycle)"
        case 2: "ADV_SCAN_IND"
        case 3: "ADV_NONCONN_IND"
        case 4: "ADV_DIRECT_IND (low duty cycle)"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Advertising_Channel_Map / Primary_Advertising_Channel_Map bits
/// (Core Vol 4 Part E §7.8.5, §7.8.53).
public struct LEAdvertisingChannelMap: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Channel 37 (0x01).
    public static let channel37 = LEAdvertisingChannelMap(rawValue: 0x01)
    /// Channel 38 (0x02).
    public static let channel38 = LEAdvertisingChannelMap(rawValue: 0x02)
    /// Channel 39 (0x04).
    public static let channel39 = LEAdvertisingChannelMap(rawValue: 0x04)
    /// All three primary advertising channels.
    public static let all: LEAdvertisingChannelMap = [.channel37, .channel38, .channel39]
    public var description: String {
        HCIParam.bitNames(UInt64(rawValue), ["37", "38", "39"])
    }
}

/// Advertising_Event_Properties bits (Core Vol 4 Part E §7.8.53).
public struct LEAdvertisingEventProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Connectable (1 << 0).
    public static let connectable = LEAdvertisingEventProperties(rawValue: 1 << 0)
    /// Scannable (1 << 1).
    public static let scannable = LEAdvertisingEventProperties(rawValue: 1 << 1)
    /// Directed (1 << 2).
    public static let directed = LEAdvertisingEventProperties(rawValue: 1 << 2)
    /// High duty cycle directed connectable advertising (≤ 3.75 ms interval).
    public static let highDutyCycleDirected = LEAdvertisingEventProperties(rawValue: 1 << 3)
    /// Use legacy advertising PDUs.
    public static let legacy = LEAdvertisingEventProperties(rawValue: 1 << 4)
    /// Omit the advertiser's address from all PDUs ("anonymous advertising").
    public static let anonymous = LEAdvertisingEventProperties(rawValue: 1 << 5)
    /// Include TxPower in the extended header of at least one PDU.
    public static let includeTxPower = LEAdvertisingEventProperties(rawValue: 1 << 6)

    /// Legacy ADV_IND as event properties.
    public static let legacyConnectableScannable: LEAdvertisingEventProperties = [.legacy, .connectable, .scannable]
    public var description: String {
        HCIParam.bitNames(UInt64(rawValue), ["connectable", "scannable", "directed", "high-duty-cycle", "legacy", "anonymous", "include-tx-power"])
    }
}

/// A set of LE PHYs as a bitmask: Scanning_PHYs, Initiating_PHYs, TX_PHYs, RX_PHYs
/// (Core Vol 4 Part E §7.8.49, §7.8.64, §7.8.66). Bit 1 (2M) is reserved in Scanning_PHYs.
public struct LEPHYSet: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE 1M (1 << 0).
    public static let le1M = LEPHYSet(rawValue: 1 << 0)
    /// LE 2M (1 << 1).
    public static let le2M = LEPHYSet(rawValue: 1 << 1)
    /// LE Coded (1 << 2).
    public static let leCoded = LEPHYSet(rawValue: 1 << 2)
    public var description: String { HCIParam.bitNames(UInt64(rawValue), ["1M", "2M", "Coded"]) }
}

/// All_PHYs of HCI_LE_Set_PHY (Core Vol 4 Part E §7.8.49).
public struct LEAllPHYsPreference: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The host has no preference among the transmitter PHYs (TX_PHYs is ignored).
    public static let noTransmitPreference = LEAllPHYsPreference(rawValue: 1 << 0)
    /// The host has no preference among the receiver PHYs (RX_PHYs is ignored).
    public static let noReceivePreference = LEAllPHYsPreference(rawValue: 1 << 1)
    public var description: String { HCIParam.bitNames(UInt64(rawValue), ["no-tx-preference", "no-rx-preference"]) }
}

/// PHY_Options of HCI_LE_Set_PHY: preferred coding on LE Coded (Core Vol 4 Part E §7.8.49).
public struct LECodedPHYOptions: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// No Preference (0).
    public static let noPreference = LECodedPHYOptions(rawValue: 0)
    /// S=2 coding (1).
    public static let s2 = LECodedPHYOptions(rawValue: 1)
    /// S=8 coding (2).
    public static let s8 = LECodedPHYOptions(rawValue: 2)
    public var description: String {
        switch rawValue {
        case 0: "no preference"
        case 1: "S=2"
        case 2: "S=8"
        default: "reserved 0x\(Hex.pad(rawValue, 4))"
        }
    }
}

/// A single PHY as a value: Primary_Advertising_PHY / Secondary_Advertising_PHY
/// (Core Vol 4 Part E §7.8.53). The primary PHY is 1M or Coded.
public struct LEAdvertisingPHY: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE 1M (0x01).
    public static let le1M = LEAdvertisingPHY(rawValue: 0x01)
    /// LE 2M (0x02).
    public static let le2M = LEAdvertisingPHY(rawValue: 0x02)
    /// LE Coded (0x03).
    public static let leCoded = LEAdvertisingPHY(rawValue: 0x03)
    public var description: String {
        switch rawValue {
        case 1: "LE 1M"
        case 2: "LE 2M"
        case 3: "LE Coded"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Filter_Duplicates (Core Vol 4 Part E §7.8.11, §7.8.65).
public struct LEFilterDuplicates: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Disabled (0x00).
    public static let disabled = LEFilterDuplicates(rawValue: 0x00)
    /// Enabled (0x01).
    public static let enabled = LEFilterDuplicates(rawValue: 0x01)
    /// Extended scanning only: enabled, reset for each scan period.
    public static let enabledResetEachPeriod = LEFilterDuplicates(rawValue: 0x02)
    public var description: String {
        switch rawValue {
        case 0: "disabled"
        case 1: "enabled"
        case 2: "enabled, reset each scan period"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Operation of HCI_LE_Set_Extended_Advertising_Data / Scan_Response_Data
/// (Core Vol 4 Part E §7.8.54).
public struct LEAdvertisingDataOperation: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Intermediate Fragment (0x00).
    public static let intermediateFragment = LEAdvertisingDataOperation(rawValue: 0x00)
    /// First Fragment (0x01).
    public static let firstFragment = LEAdvertisingDataOperation(rawValue: 0x01)
    /// Last Fragment (0x02).
    public static let lastFragment = LEAdvertisingDataOperation(rawValue: 0x02)
    /// Complete (0x03).
    public static let complete = LEAdvertisingDataOperation(rawValue: 0x03)
    /// Keep the data, change only the Advertising DID.
    public static let unchangedData = LEAdvertisingDataOperation(rawValue: 0x04)
    public var description: String {
        switch rawValue {
        case 0: "intermediate fragment"
        case 1: "first fragment"
        case 2: "last fragment"
        case 3: "complete"
        case 4: "unchanged data"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Fragment_Preference (Core Vol 4 Part E §7.8.54).
public struct LEFragmentPreference: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// May Fragment (0x00).
    public static let mayFragment = LEFragmentPreference(rawValue: 0x00)
    /// Should Not Fragment (0x01).
    public static let shouldNotFragment = LEFragmentPreference(rawValue: 0x01)
    public var description: String {
        switch rawValue {
        case 0: "controller may fragment"
        case 1: "controller should not fragment"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Flow_Control_Enable of HCI_Set_Controller_To_Host_Flow_Control (Core Vol 4 Part E §7.3.38).
public struct HCIFlowControlEnable: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Off (0x00).
    public static let off = HCIFlowControlEnable(rawValue: 0x00)
    /// Flow control for ACL data only.
    public static let acl = HCIFlowControlEnable(rawValue: 0x01)
    /// Flow control for synchronous data only.
    public static let synchronous = HCIFlowControlEnable(rawValue: 0x02)
    /// ACL And Synchronous (0x03).
    public static let aclAndSynchronous = HCIFlowControlEnable(rawValue: 0x03)
    public var description: String {
        switch rawValue {
        case 0: "off"
        case 1: "ACL on, synchronous off"
        case 2: "ACL off, synchronous on"
        case 3: "ACL and synchronous on"
        default: "reserved 0x\(Hex.pad(rawValue, 2))"
        }
    }
}

/// Event_Mask of HCI_Set_Event_Mask: bit n enables one event (Core Vol 4 Part E §7.3.1).
public struct HCIEventMask: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Disconnection Complete event (1 << 4).
    public static let disconnectionComplete = HCIEventMask(rawValue: 1 << 4)
    /// Encryption Change event (1 << 7).
    public static let encryptionChange = HCIEventMask(rawValue: 1 << 7)
    /// Read Remote Version Information Complete event (1 << 11).
    public static let readRemoteVersionInformationComplete = HCIEventMask(rawValue: 1 << 11)
    /// Hardware Error event (1 << 15).
    public static let hardwareError = HCIEventMask(rawValue: 1 << 15)
    /// Data Buffer Overflow event (1 << 25).
    public static let dataBufferOverflow = HCIEventMask(rawValue: 1 << 25)
    /// Encryption Key Refresh Complete event (1 << 47).
    public static let encryptionKeyRefreshComplete = HCIEventMask(rawValue: 1 << 47)
    /// LE Meta event (1 << 61).
    public static let leMeta = HCIEventMask(rawValue: 1 << 61)
    /// The controller's default after reset: 0x00001FFFFFFFFFFF.
    public static let `default` = HCIEventMask(rawValue: 0x0000_1FFF_FFFF_FFFF)
    /// What an LE-only host needs.
    public static let leHost: HCIEventMask = [.disconnectionComplete, .encryptionChange,
        .readRemoteVersionInformationComplete, .hardwareError, .dataBufferOverflow,
        .encryptionKeyRefreshComplete, .leMeta]
}

/// LE_Event_Mask of HCI_LE_Set_Event_Mask: bit n enables one LE subevent
/// (Core Vol 4 Part E §7.8.1).
public struct LEEventMask: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// LE Connection Complete event (1 << 0).
    public static let connectionComplete = LEEventMask(rawValue: 1 << 0)
    /// LE Advertising Report event (1 << 1).
    public static let advertisingReport = LEEventMask(rawValue: 1 << 1)
    /// LE Connection Update Complete event (1 << 2).
    public static let connectionUpdateComplete = LEEventMask(rawValue: 1 << 2)
    /// LE Read Remote Features Complete event (1 << 3).
    public static let readRemoteFeaturesComplete = LEEventMask(rawValue: 1 << 3)
    /// LE Long Term Key Request event (1 << 4).
    public static let longTermKeyRequest = LEEventMask(rawValue: 1 << 4)
    /// LE Remote Connection Parameter Request event (1 << 5).
    public static let remoteConnectionParameterRequest = LEEventMask(rawValue: 1 << 5)
    /// LE Data Length Change event (1 << 6).
    public static let dataLengthChange = LEEventMask(rawValue: 1 << 6)
    /// LE Read Local P-256 Public Key Complete event (1 << 7).
    public static let readLocalP256PublicKeyComplete = LEEventMask(rawValue: 1 << 7)
    /// LE Generate DH Key Complete event (1 << 8).
    public static let generateDHKeyComplete = LEEventMask(rawValue: 1 << 8)
    /// LE Enhanced Connection Complete event (1 << 9).
    public static let enhancedConnectionComplete = LEEventMask(rawValue: 1 << 9)
    /// LE Directed Advertising Report event (1 << 10).
    public static let directedAdvertisingReport = LEEventMask(rawValue: 1 << 10)
    /// LE PHY Update Complete event (1 << 11).
    public static let phyUpdateComplete = LEEventMask(rawValue: 1 << 11)
    /// LE Extended Advertising Report event (1 << 12).
    public static let extendedAdvertisingReport = LEEventMask(rawValue: 1 << 12)
    /// LE Scan Timeout event (1 << 16).
    public static let scanTimeout = LEEventMask(rawValue: 1 << 16)
    /// LE Advertising Set Terminated event (1 << 17).
    public static let advertisingSetTerminated = LEEventMask(rawValue: 1 << 17)
    /// LE Scan Request Received event (1 << 18).
    public static let scanRequestReceived = LEEventMask(rawValue: 1 << 18)
    /// LE Channel Selection Algorithm event (1 << 19).
    public static let channelSelectionAlgorithm = LEEventMask(rawValue: 1 << 19)
    /// The controller's default after reset: 0x000000000000001F.
    public static let `default` = LEEventMask(rawValue: 0x1F)
}
