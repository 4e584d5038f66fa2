// LE legacy and extended advertising commands (Core Vol 4 Part E §7.8).

/// HCI_LE_Set_Advertising_Parameters (Core Vol 4 Part E §7.8.5).
public struct LESetAdvertisingParametersCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetAdvertisingParameters
    /// Advertising_Interval_Min, units of 0.625 ms (0x0020–0x4000: 20 ms – 10.24 s).
    public var advertisingIntervalMin: UInt16
    /// Advertising_Interval_Max, units of 0.625 ms.
    public var advertisingIntervalMax: UInt16
    /// Advertising_Type.
    public var advertisingType: LEAdvertisingType
    /// Own_Address_Type: the address the controller uses (public, random, or resolvable).
    public var ownAddressType: LEOwnAddressType
    /// Peer address for directed advertising (and resolving-list lookups).
    public var peerAddressType: LEAddressType
    /// The peer's address.
    public var peerAddress: BluetoothAddress
    /// Advertising_Channel_Map.
    public var advertisingChannelMap: LEAdvertisingChannelMap
    /// Advertising_Filter_Policy.
    public var advertisingFilterPolicy: LEAdvertisingFilterPolicy

    /// The command with these parameters.
    public init(advertisingIntervalMin: UInt16, advertisingIntervalMax: UInt16,
                advertisingType: LEAdvertisingType = .connectableUndirected, ownAddressType: LEOwnAddressType = .public,
                peerAddressType: LEAddressType = .public, peerAddress: BluetoothAddress = .zero,
                advertisingChannelMap: LEAdvertisingChannelMap = .all,
                advertisingFilterPolicy: LEAdvertisingFilterPolicy = .acceptAll) {
        self.advertisingIntervalMin = advertisingIntervalMin
        self.advertisingIntervalMax = advertisingIntervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.advertisingChannelMap = advertisingChannelMap
        self.advertisingFilterPolicy = advertisingFilterPolicy
    }

    public var parameterLength: Int { 15 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(advertisingIntervalMin)
        try w.u16(advertisingIntervalMax)
        try w.u8(advertisingType.rawValue)
        try w.u8(ownAddressType.rawValue)
        try w.u8(peerAddressType.rawValue)
        try peerAddress.write(&w)
        try w.u8(advertisingChannelMap.rawValue)
        try w.u8(advertisingFilterPolicy.rawValue)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        advertisingIntervalMin = try r.u16("Advertising_Interval_Min")
        advertisingIntervalMax = try r.u16("Advertising_Interval_Max")
        advertisingType = LEAdvertisingType(rawValue: try r.u8("Advertising_Type"))
        ownAddressType = LEOwnAddressType(rawValue: try r.u8("Own_Address_Type"))
        peerAddressType = LEAddressType(rawValue: try r.u8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress.read(&r)
        advertisingChannelMap = LEAdvertisingChannelMap(rawValue: try r.u8("Advertising_Channel_Map"))
        advertisingFilterPolicy = LEAdvertisingFilterPolicy(rawValue: try r.u8("Advertising_Filter_Policy"))
    }
    public var parameterFields: [Field] {
        [
            Field("advertising_interval_min", HCIParam.slots(advertisingIntervalMin)),
            Field("advertising_interval_max", HCIParam.slots(advertisingIntervalMax)),
            Field("advertising_type", HCIParam.named(advertisingType)),
            Field("own_address_type", HCIParam.named(ownAddressType)),
            Field("peer_address_type", HCIParam.addressType(peerAddressType)),
            Field("peer_address", HCIParam.address(peerAddress)),
            Field("advertising_channel_map", HCIParam.named(advertisingChannelMap)),
            Field("advertising_filter_policy", HCIParam.named(advertisingFilterPolicy)),
        ]
    }
}

/// Legacy advertising / scan response data: a length byte and a 31-byte field,
/// zero-padded on encode. Parsing ignores the padding bytes' content.
enum LegacyAdvertisingDataField {
    static let capacity = 31

    static func write(_ data: [UInt8], _ w: inout ByteWriter) throws(WireError) {
        guard data.count <= capacity else {
            throw WireError(.valueOutOfRange, at: w.count, "legacy advertising data longer than 31 bytes")
        }
        try w.u8(UInt8(truncatingIfNeeded: data.count))
        try w.bytes(data)
        for _ in data.count ..< capacity { try w.u8(0) }
    }

    static func read(_ r: inout ByteReader, _ field: StaticString) throws(WireError) -> [UInt8] {
        let at = r.offset
        let length = Int(try r.u8(field))
        guard length <= capacity else {
            throw WireError(.invalidLength, at: at, "legacy advertising data length above 31")
        }
        let field = try r.bytes(capacity, field)
        return Array(field[0 ..< length])
    }
}

/// HCI_LE_Set_Advertising_Data (Core Vol 4 Part E §7.8.7).
public struct LESetAdvertisingDataCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetAdvertisingData
    /// Advertising_Data: the significant part, at most 31 bytes (AD structures).
    public var advertisingData: [UInt8]

    /// The command with these parameters.
    public init(advertisingData: [UInt8]) { self.advertisingData = advertisingData }

    public var parameterLength: Int { 32 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try LegacyAdvertisingDataField.write(advertisingData, &w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        advertisingData = try LegacyAdvertisingDataField.read(&r, "Advertising_Data")
    }
    public var parameterFields: [Field] {
        [
            Field("advertising_data_length", HCIParam.uint(advertisingData.count)),
            Field("advertising_data", .bytes(advertisingData)),
        ]
    }
}

/// HCI_LE_Set_Scan_Response_Data (Core Vol 4 Part E §7.8.8).
public struct LESetScanResponseDataCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetScanResponseData
    /// Scan_Response_Data: the significant part, at most 31 bytes (AD structures).
    public var scanResponseData: [UInt8]

    /// The command with these parameters.
    public init(scanResponseData: [UInt8]) { self.scanResponseData = scanResponseData }

    public var parameterLength: Int { 32 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try LegacyAdvertisingDataField.write(scanResponseData, &w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        scanResponseData = try LegacyAdvertisingDataField.read(&r, "Scan_Response_Data")
    }
    public var parameterFields: [Field] {
        [
            Field("scan_response_data_length", HCIParam.uint(scanResponseData.count)),
            Field("scan_response_data", .bytes(scanResponseData)),
        ]
    }
}

/// HCI_LE_Set_Advertising_Enable (Core Vol 4 Part E §7.8.9).
public struct LESetAdvertisingEnableCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetAdvertisingEnable
    /// Advertising_Enable.
    public var advertisingEnable: Bool

    /// The command with these parameters.
    public init(advertisingEnable: Bool) { self.advertisingEnable = advertisingEnable }

    public var parameterLength: Int { 1 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u8(advertisingEnable ? 1 : 0) }
    public init(parameters r: inout ByteReader) throws(WireError) {
        advertisingEnable = try HCIParam.readBool(&r, "Advertising_Enable")
    }
    public var parameterFields: [Field] { [Field("advertising_enable", .bool(advertisingEnable))] }
}

/// HCI_LE_Set_Extended_Advertising_Parameters [v1] (Core Vol 4 Part E §7.8.53).
public struct LESetExtendedAdvertisingParametersCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingParameters
    /// Advertising_Handle: the advertising set (0x00–0xEF).
    public var advertisingHandle: UInt8
    /// Advertising_Event_Properties.
    public var advertisingEventProperties: LEAdvertisingEventProperties
    /// Primary_Advertising_Interval_Min, 24 bits, units of 0.625 ms.
    public var primaryAdvertisingIntervalMin: UInt32
    /// Primary_Advertising_Interval_Max, 24 bits, units of 0.625 ms.
    public var primaryAdvertisingIntervalMax: UInt32
    /// Primary_Advertising_Channel_Map.
    public var primaryAdvertisingChannelMap: LEAdvertisingChannelMap
    /// Own_Address_Type: the address the controller uses (public, random, or resolvable).
    public var ownAddressType: LEOwnAddressType
    /// The peer's address type.
    public var peerAddressType: LEAddressType
    /// The peer's address.
    public var peerAddress: BluetoothAddress
    /// Advertising_Filter_Policy.
    public var advertisingFilterPolicy: LEAdvertisingFilterPolicy
    /// Advertising_TX_Power in dBm (-127...+20); 0x7F (127) = host has no preference.
    public var advertisingTxPower: Int8
    /// Primary_Advertising_PHY: LE 1M or LE Coded.
    public var primaryAdvertisingPHY: LEAdvertisingPHY
    /// Secondary_Advertising_Max_Skip: advertising events the AUX_ADV_IND may skip.
    public var secondaryAdvertisingMaxSkip: UInt8
    /// Secondary_Advertising_PHY.
    public var secondaryAdvertisingPHY: LEAdvertisingPHY
    /// Advertising_SID (0x00–0x0F).
    public var advertisingSID: UInt8
    /// Scan_Request_Notification_Enable.
    public var scanRequestNotificationEnable: Bool

    /// Advertising_TX_Power value meaning "no preference".
    public static let noTxPowerPreference: Int8 = 0x7F

    /// The command with these parameters.
    public init(advertisingHandle: UInt8, advertisingEventProperties: LEAdvertisingEventProperties,
                primaryAdvertisingIntervalMin: UInt32, primaryAdvertisingIntervalMax: UInt32,
                primaryAdvertisingChannelMap: LEAdvertisingChannelMap = .all, ownAddressType: LEOwnAddressType = .public,
                peerAddressType: LEAddressType = .public, peerAddress: BluetoothAddress = .zero,
                advertisingFilterPolicy: LEAdvertisingFilterPolicy = .acceptAll,
                advertisingTxPower: Int8 = LESetExtendedAdvertisingParametersCommand.noTxPowerPreference,
                primaryAdvertisingPHY: LEAdvertisingPHY = .le1M, secondaryAdvertisingMaxSkip: UInt8 = 0,
                secondaryAdvertisingPHY: LEAdvertisingPHY = .le1M, advertisingSID: UInt8 = 0,
                scanRequestNotificationEnable: Bool = false) {
        self.advertisingHandle = advertisingHandle
        self.advertisingEventProperties = advertisingEventProperties
        self.primaryAdvertisingIntervalMin = primaryAdvertisingIntervalMin
        self.primaryAdvertisingIntervalMax = primaryAdvertisingIntervalMax
        self.primaryAdvertisingChannelMap = primaryAdvertisingChannelMap
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.advertisingFilterPolicy = advertisingFilterPolicy
        self.advertisingTxPower = advertisingTxPower
        self.primaryAdvertisingPHY = primaryAdvertisingPHY
        self.secondaryAdvertisingMaxSkip = secondaryAdvertisingMaxSkip
        self.secondaryAdvertisingPHY = secondaryAdvertisingPHY
        self.advertisingSID = advertisingSID
        self.scanRequestNotificationEnable = scanRequestNotificationEnable
    }

    public var parameterLength: Int { 25 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(advertisingHandle)
        try w.u16(advertisingEventProperties.rawValue)
        try w.u24(primaryAdvertisingIntervalMin)
        try w.u24(primaryAdvertisingIntervalMax)
        try w.u8(primaryAdvertisingChannelMap.rawValue)
        try w.u8(ownAddressType.rawValue)
        try w.u8(peerAddressType.rawValue)
        try peerAddress.write(&w)
        try w.u8(advertisingFilterPolicy.rawValue)
        try w.i8(advertisingTxPower)
        try w.u8(primaryAdvertisingPHY.rawValue)
        try w.u8(secondaryAdvertisingMaxSkip)
        try w.u8(secondaryAdvertisingPHY.rawValue)
        try w.u8(advertisingSID)
        try w.u8(scanRequestNotificationEnable ? 1 : 0)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        advertisingHandle = try r.u8("Advertising_Handle")
        advertisingEventProperties = LEAdvertisingEventProperties(rawValue: try r.u16("Advertising_Event_Properties"))
        primaryAdvertisingIntervalMin = try r.u24("Primary_Advertising_Interval_Min")
        primaryAdvertisingIntervalMax = try r.u24("Primary_Advertising_Interval_Max")
        primaryAdvertisingChannelMap = LEAdvertisingChannelMap(rawValue: try r.u8("Primary_Advertising_Channel_Map"))
        ownAddressType = LEOwnAddressType(rawValue: try r.u8("Own_Address_Type"))
        peerAddressType = LEAddressType(rawValue: try r.u8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress.read(&r)
        advertisingFilterPolicy = LEAdvertisingFilterPolicy(rawValue: try r.u8("Advertising_Filter_Policy"))
        advertisingTxPower = try r.i8("Advertising_TX_Power")
        primaryAdvertisingPHY = LEAdvertisingPHY(rawValue: try r.u8("Primary_Advertising_PHY"))
        secondaryAdvertisingMaxSkip = try r.u8("Secondary_Advertising_Max_Skip")
        secondaryAdvertisingPHY = LEAdvertisingPHY(rawValue: try r.u8("Secondary_Advertising_PHY"))
        advertisingSID = try r.u8("Advertising_SID")
        scanRequestNotificationEnable = try HCIParam.readBool(&r, "Scan_Request_Notification_Enable")
    }
    public var parameterFields: [Field] {
        [
            Field("advertising_handle", HCIParam.uint(advertisingHandle)),
            Field("advertising_event_properties", HCIParam.named(advertisingEventProperties)),
            Field("primary_advertising_interval_min", HCIParam.slots(primaryAdvertisingIntervalMin)),
            Field("primary_advertising_interval_max", HCIParam.slots(primaryAdvertisingIntervalMax)),
            Field("primary_advertising_channel_map", HCIParam.named(primaryAdvertisingChannelMap)),
            Field("own_address_type", HCIParam.named(ownAddressType)),
            Field("peer_address_type", HCIParam.addressType(peerAddressType)),
            Field("peer_address", HCIParam.address(peerAddress)),
            Field("advertising_filter_policy", HCIParam.named(advertisingFilterPolicy)),
            Field("advertising_tx_power", advertisingTxPower == Self.noTxPowerPreference
                ? .named(0x7F, "no preference") : .int(Int64(advertisingTxPower))),
            Field("primary_advertising_phy", HCIParam.named(primaryAdvertisingPHY)),
            Field("secondary_advertising_max_skip", HCIParam.uint(secondaryAdvertisingMaxSkip)),
            Field("secondary_advertising_phy", HCIParam.named(secondaryAdvertisingPHY)),
            Field("advertising_sid", HCIParam.uint(advertisingSID)),
            Field("scan_request_notification_enable", .bool(scanRequestNotificationEnable)),
        ]
    }
}

/// The shared layout of HCI_LE_Set_Extended_Advertising_Data and
/// HCI_LE_Set_Extended_Scan_Response_Data (Core Vol 4 Part E §7.8.54, §7.8.55):
/// Advertising_Handle, Operation, Fragment_Preference, length, data (≤ 251 bytes).
enum ExtendedAdvertisingDataFields {
    static let maximumLength = 251

    static func write(handle: UInt8, operation: LEAdvertisingDataOperation, fragmentPreference: LEFragmentPreference,
                      data: [UInt8], _ w: inout ByteWriter) throws(WireError) {
        guard data.count <= maximumLength else {
            throw WireError(.valueOutOfRange, at: w.count, "extended advertising data fragment longer than 251 bytes")
        }
        try w.u8(handle)
        try w.u8(operation.rawValue)
        try w.u8(fragmentPreference.rawValue)
        try w.u8(UInt8(truncatingIfNeeded: data.count))
        try w.bytes(data)
    }

    static func read(_ r: inout ByteReader)
        throws(WireError) -> (UInt8, LEAdvertisingDataOperation, LEFragmentPreference, [UInt8]) {
        let handle = try r.u8("Advertising_Handle")
        let operation = LEAdvertisingDataOperation(rawValue: try r.u8("Operation"))
        let preference = LEFragmentPreference(rawValue: try r.u8("Fragment_Preference"))
        let length = Int(try r.u8("Advertising_Data_Length"))
        // At most 255 - 4 = 251 bytes fit in the command, so no separate cap is needed.
        let data = Array(try r.bytes(length, "Advertising_Data"))
        return (handle, operation, preference, data)
    }
}

/// HCI_LE_Set_Extended_Advertising_Data (Core Vol 4 Part E §7.8.54).
public struct LESetExtendedAdvertisingDataCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingData
    /// Advertising_Handle: the advertising set.
    public var advertisingHandle: UInt8
    /// Which fragment of the data this is (complete, first, intermediate, last).
    public var operation: LEAdvertisingDataOperation
    /// Whether the controller may fragment the data.
    public var fragmentPreference: LEFragmentPreference
    /// Advertising_Data fragment, at most 251 bytes.
    public var advertisingData: [UInt8]

    /// The command with these parameters.
    public init(advertisingHandle: UInt8, operation: LEAdvertisingDataOperation = .complete,
                fragmentPreference: LEFragmentPreference = .shouldNotFragment, advertisingData: [UInt8]) {
        self.advertisingHandle = advertisingHandle
        self.operation = operation
        self.fragmentPreference = fragmentPreference
        self.advertisingData = advertisingData
    }

    public var parameterLength: Int { 4 + advertisingData.count }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try ExtendedAdvertisingDataFields.write(handle: advertisingHandle, operation: operation,
                                                fragmentPreference: fragmentPreference, data: advertisingData, &w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        (advertisingHandle, operation, fragmentPreference, advertisingData) = try ExtendedAdvertisingDataFields.read(&r)
    }
    public var parameterFields: [Field] {
        [
            Field("advertising_handle", HCIParam.uint(advertisingHandle)),
            Field("operation", HCIParam.named(operation)),
            Field("fragment_preference", HCIParam.named(fragmentPreference)),
            Field("advertising_data_length", HCIParam.uint(advertisingData.count)),
            Field("advertising_data", .bytes(advertisingData)),
        ]
    }
}

/// HCI_LE_Set_Extended_Scan_Response_Data (Core Vol 4 Part E §7.8.55).
public struct LESetExtendedScanResponseDataCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetExtendedScanResponseData
    /// Advertising_Handle: the advertising set.
    public var advertisingHandle: UInt8
    /// Which fragment of the data this is (complete, first, intermediate, last).
    public var operation: LEAdvertisingDataOperation
    /// Whether the controller may fragment the data.
    public var fragmentPreference: LEFragmentPreference
    /// Scan_Response_Data fragment, at most 251 bytes.
    public var scanResponseData: [UInt8]

    /// The command with these parameters.
    public init(advertisingHandle: UInt8, operation: LEAdvertisingDataOperation = .complete,
                fragmentPreference: LEFragmentPreference = .shouldNotFragment, scanResponseData: [UInt8]) {
        self.advertisingHandle = advertisingHandle
        self.operation = operation
        self.fragmentPreference = fragmentPreference
        self.scanResponseData = scanResponseData
    }

    public var parameterLength: Int { 4 + scanResponseData.count }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try ExtendedAdvertisingDataFields.write(handle: advertisingHandle, operation: operation,
                                                fragmentPreference: fragmentPreference, data: scanResponseData, &w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        (advertisingHandle, operation, fragmentPreference, scanResponseData) = try ExtendedAdvertisingDataFields.read(&r)
    }
    public var parameterFields: [Field] {
        [
            Field("advertising_handle", HCIParam.uint(advertisingHandle)),
            Field("operation", HCIParam.named(operation)),
            Field("fragment_preference", HCIParam.named(fragmentPreference)),
            Field("scan_response_data_length", HCIParam.uint(scanResponseData.count)),
            Field("scan_response_data", .bytes(scanResponseData)),
        ]
    }
}

/// One advertising set in HCI_LE_Set_Extended_Advertising_Enable.
public struct LEExtendedAdvertisingSet: Hashable, Sendable {
    /// Advertising_Handle: the advertising set.
    public var advertisingHandle: UInt8
    /// Duration, units of 10 ms; 0 = advertise until disabled.
    public var duration: UInt16
    /// Max_Extended_Advertising_Events; 0 = no maximum.
    public var maxExtendedAdvertisingEvents: UInt8

    /// The command with these parameters.
    public init(advertisingHandle: UInt8, duration: UInt16 = 0, maxExtendedAdvertisingEvents: UInt8 = 0) {
        self.advertisingHandle = advertisingHandle
        self.duration = duration
        self.maxExtendedAdvertisingEvents = maxExtendedAdvertisingEvents
    }
}

/// HCI_LE_Set_Extended_Advertising_Enable (Core Vol 4 Part E §7.8.56). Sets are laid out
/// one after another (handle, duration, max events). Disabling with no sets disables all.
public struct LESetExtendedAdvertisingEnableCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingEnable
    /// At most 63 sets (0x3F) fit in a command.
    public static let maximumSets = 63
    /// Enable (true) or disable (false).
    public var enable: Bool
    /// The advertising sets (handle, duration, max events each).
    public var sets: [LEExtendedAdvertisingSet]

    /// The command with these parameters.
    public init(enable: Bool, sets: [LEExtendedAdvertisingSet]) {
        self.enable = enable
        self.sets = sets
    }

    public var parameterLength: Int { 2 + 4 * sets.count }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        guard sets.count <= Self.maximumSets else {
            throw WireError(.valueOutOfRange, at: w.count, "more than 63 advertising sets")
        }
        try w.u8(enable ? 1 : 0)
        try w.u8(UInt8(truncatingIfNeeded: sets.count))
        for s in sets {
            try w.u8(s.advertisingHandle)
            try w.u16(s.duration)
            try w.u8(s.maxExtendedAdvertisingEvents)
        }
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        enable = try HCIParam.readBool(&r, "Enable")
        let at = r.offset
        let count = Int(try r.u8("Num_Sets"))
        guard count * 4 <= r.remaining else {
            throw WireError(.invalidLength, at: at, "Num_Sets larger than the parameters present")
        }
        var sets: [LEExtendedAdvertisingSet] = []
        sets.reserveCapacity(count)
        for _ in 0 ..< count {
            sets.append(LEExtendedAdvertisingSet(advertisingHandle: try r.u8("Advertising_Handle"),
                                                 duration: try r.u16("Duration"),
                                                 maxExtendedAdvertisingEvents: try r.u8("Max_Extended_Advertising_Events")))
        }
        self.sets = sets
    }
    public var parameterFields: [Field] {
        [
            Field("enable", .bool(enable)),
            Field("num_sets", HCIParam.uint(sets.count)),
            Field("sets", .list(sets.map { s in
                .object([
                    Field("advertising_handle", HCIParam.uint(s.advertisingHandle)),
                    Field("duration", HCIParam.tenMilliseconds(s.duration)),
                    Field("max_extended_advertising_events", HCIParam.uint(s.maxExtendedAdvertisingEvents)),
                ])
            })),
        ]
    }
}

/// HCI_LE_Set_Advertising_Set_Random_Address (Core Vol 4 Part E §7.8.52): the random
/// address one extended advertising set uses (sent after the set's parameters).
public struct LESetAdvertisingSetRandomAddressCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetAdvertisingSetRandomAddress
    /// Advertising_Handle: the advertising set.
    public var advertisingHandle: UInt8
    /// The random address.
    public var randomAddress: BluetoothAddress

    /// The command with these parameters.
    public init(advertisingHandle: UInt8, randomAddress: BluetoothAddress) {
        self.advertisingHandle = advertisingHandle
        self.randomAddress = randomAddress
    }

    public var parameterLength: Int { 7 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(advertisingHandle)
        try randomAddress.write(&w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        advertisingHandle = try r.u8("Advertising_Handle")
        randomAddress = try BluetoothAddress.read(&r)
    }
    public var parameterFields: [Field] {
        [Field("advertising_handle", HCIParam.uint(advertisingHandle)), Field("random_address", HCIParam.address(randomAddress))]
    }
}

/// HCI_LE_Remove_Advertising_Set (Core Vol 4 Part E §7.8.59).
public struct LERemoveAdvertisingSetCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leRemoveAdvertisingSet
    /// Advertising_Handle: the advertising set.
    public var advertisingHandle: UInt8

    /// The command with these parameters.
    public init(advertisingHandle: UInt8) { self.advertisingHandle = advertisingHandle }

    public var parameterLength: Int { 1 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u8(advertisingHandle) }
    public init(parameters r: inout ByteReader) throws(WireError) { advertisingHandle = try r.u8("Advertising_Handle") }
    public var parameterFields: [Field] { [Field("advertising_handle", HCIParam.uint(advertisingHandle))] }
}

/// HCI_LE_Read_Maximum_Advertising_Data_Length (Core Vol 4 Part E §7.8.57).
public struct LEReadMaximumAdvertisingDataLengthCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadMaximumAdvertisingDataLength
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Read_Number_of_Supported_Advertising_Sets (Core Vol 4 Part E §7.8.58).
public struct LEReadNumberOfSupportedAdvertisingSetsCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadNumberOfSupportedAdvertisingSets
    /// The command (it has no parameters).
    public init() {}
}
