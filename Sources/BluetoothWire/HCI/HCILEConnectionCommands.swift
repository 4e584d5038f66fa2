// LE scanning, connection and security commands (Core Vol 4 Part E §7.8).

/// The connection parameters requested by LE Create Connection, LE Connection Update,
/// LE Remote Connection Parameter Request Reply and each PHY of LE Extended Create
/// Connection: 12 bytes on the wire, in this order.
public struct LEConnectionParameterRange: Hashable, Sendable {
    /// Connection_Interval_Min, units of 1.25 ms (0x0006–0x0C80: 7.5 ms – 4 s).
    public var intervalMin: UInt16
    /// Connection_Interval_Max, units of 1.25 ms.
    public var intervalMax: UInt16
    /// Max_Latency: peripheral latency in connection events (0x0000–0x01F3).
    public var maxLatency: UInt16
    /// Supervision_Timeout, units of 10 ms (0x000A–0x0C80: 100 ms – 32 s).
    public var supervisionTimeout: UInt16
    /// Min_CE_Length, units of 0.625 ms (informative).
    public var minCELength: UInt16
    /// Max_CE_Length, units of 0.625 ms (informative).
    public var maxCELength: UInt16

    /// The command with these parameters.
    public init(intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16 = 0, supervisionTimeout: UInt16,
                minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    static let length = 12

    init(from r: inout ByteReader) throws(WireError) {
        intervalMin = try r.u16("Connection_Interval_Min")
        intervalMax = try r.u16("Connection_Interval_Max")
        maxLatency = try r.u16("Max_Latency")
        supervisionTimeout = try r.u16("Supervision_Timeout")
        minCELength = try r.u16("Min_CE_Length")
        maxCELength = try r.u16("Max_CE_Length")
    }

    func write(_ w: inout ByteWriter) throws(WireError) {
        try w.u16(intervalMin)
        try w.u16(intervalMax)
        try w.u16(maxLatency)
        try w.u16(supervisionTimeout)
        try w.u16(minCELength)
        try w.u16(maxCELength)
    }

    var fields: [Field] {
        [
            Field("connection_interval_min", HCIParam.connectionInterval(intervalMin)),
            Field("connection_interval_max", HCIParam.connectionInterval(intervalMax)),
            Field("max_latency", HCIParam.uint(maxLatency)),
            Field("supervision_timeout", HCIParam.tenMilliseconds(supervisionTimeout)),
            Field("min_ce_length", HCIParam.slots(minCELength)),
            Field("max_ce_length", HCIParam.slots(maxCELength)),
        ]
    }
}

/// HCI_LE_Set_Random_Address (Core Vol 4 Part E §7.8.4).
public struct LESetRandomAddressCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetRandomAddress
    /// The random address.
    public var randomAddress: BluetoothAddress

    /// The command with these parameters.
    public init(randomAddress: BluetoothAddress) { self.randomAddress = randomAddress }

    public var parameterLength: Int { 6 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try randomAddress.write(&w) }
    public init(parameters r: inout ByteReader) throws(WireError) { randomAddress = try BluetoothAddress.read(&r) }
    public var parameterFields: [Field] { [Field("random_address", HCIParam.address(randomAddress))] }
}

/// HCI_LE_Set_Scan_Parameters (Core Vol 4 Part E §7.8.10).
public struct LESetScanParametersCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetScanParameters
    /// Passive or active scanning.
    public var scanType: LEScanType
    /// LE_Scan_Interval, units of 0.625 ms (0x0004–0x4000: 2.5 ms – 10.24 s).
    public var scanInterval: UInt16
    /// LE_Scan_Window, units of 0.625 ms, ≤ the interval.
    public var scanWindow: UInt16
    /// Own_Address_Type: the address the controller uses (public, random, or resolvable).
    public var ownAddressType: LEOwnAddressType
    /// Which advertisers are reported (all, or the Filter Accept List).
    public var scanningFilterPolicy: LEScanningFilterPolicy

    /// The command with these parameters.
    public init(scanType: LEScanType, scanInterval: UInt16, scanWindow: UInt16,
                ownAddressType: LEOwnAddressType = .public, scanningFilterPolicy: LEScanningFilterPolicy = .basicUnfiltered) {
        self.scanType = scanType
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.ownAddressType = ownAddressType
        self.scanningFilterPolicy = scanningFilterPolicy
    }

    public var parameterLength: Int { 7 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(scanType.rawValue)
        try w.u16(scanInterval)
        try w.u16(scanWindow)
        try w.u8(ownAddressType.rawValue)
        try w.u8(scanningFilterPolicy.rawValue)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        scanType = LEScanType(rawValue: try r.u8("LE_Scan_Type"))
        scanInterval = try r.u16("LE_Scan_Interval")
        scanWindow = try r.u16("LE_Scan_Window")
        ownAddressType = LEOwnAddressType(rawValue: try r.u8("Own_Address_Type"))
        scanningFilterPolicy = LEScanningFilterPolicy(rawValue: try r.u8("Scanning_Filter_Policy"))
    }
    public var parameterFields: [Field] {
        [
            Field("le_scan_type", HCIParam.named(scanType)),
            Field("le_scan_interval", HCIParam.slots(scanInterval)),
            Field("le_scan_window", HCIParam.slots(scanWindow)),
            Field("own_address_type", HCIParam.named(ownAddressType)),
            Field("scanning_filter_policy", HCIParam.named(scanningFilterPolicy)),
        ]
    }
}

/// HCI_LE_Set_Scan_Enable (Core Vol 4 Part E §7.8.11).
public struct LESetScanEnableCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetScanEnable
    /// Enable (true) or disable (false).
    public var enable: Bool
    /// Filter_Duplicates.
    public var filterDuplicates: Bool

    /// The command with these parameters.
    public init(enable: Bool, filterDuplicates: Bool = false) {
        self.enable = enable
        self.filterDuplicates = filterDuplicates
    }

    public var parameterLength: Int { 2 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(enable ? 1 : 0)
        try w.u8(filterDuplicates ? 1 : 0)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        enable = try HCIParam.readBool(&r, "LE_Scan_Enable")
        filterDuplicates = try HCIParam.readBool(&r, "Filter_Duplicates")
    }
    public var parameterFields: [Field] {
        [Field("le_scan_enable", .bool(enable)), Field("filter_duplicates", .bool(filterDuplicates))]
    }
}

/// HCI_LE_Create_Connection (Core Vol 4 Part E §7.8.12).
public struct LECreateConnectionCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leCreateConnection
    /// LE_Scan_Interval, units of 0.625 ms.
    public var scanInterval: UInt16
    /// LE_Scan_Window, units of 0.625 ms.
    public var scanWindow: UInt16
    /// Connect to the peer given or to any on the Filter Accept List.
    public var initiatorFilterPolicy: LEInitiatorFilterPolicy
    /// The peer's address type.
    public var peerAddressType: LEAddressType
    /// The peer's address.
    public var peerAddress: BluetoothAddress
    /// Own_Address_Type: the address the controller uses (public, random, or resolvable).
    public var ownAddressType: LEOwnAddressType
    /// The connection parameters: Connection_Interval_Min/Max, Max_Latency, Supervision_Timeout, CE lengths.
    public var connection: LEConnectionParameterRange

    /// The command with these parameters.
    public init(scanInterval: UInt16, scanWindow: UInt16, initiatorFilterPolicy: LEInitiatorFilterPolicy = .peerAddress,
                peerAddressType: LEAddressType, peerAddress: BluetoothAddress, ownAddressType: LEOwnAddressType = .public,
                connection: LEConnectionParameterRange) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.ownAddressType = ownAddressType
        self.connection = connection
    }

    public var parameterLength: Int { 25 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(scanInterval)
        try w.u16(scanWindow)
        try w.u8(initiatorFilterPolicy.rawValue)
        try w.u8(peerAddressType.rawValue)
        try peerAddress.write(&w)
        try w.u8(ownAddressType.rawValue)
        try connection.write(&w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        scanInterval = try r.u16("LE_Scan_Interval")
        scanWindow = try r.u16("LE_Scan_Window")
        initiatorFilterPolicy = LEInitiatorFilterPolicy(rawValue: try r.u8("Initiator_Filter_Policy"))
        peerAddressType = LEAddressType(rawValue: try r.u8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress.read(&r)
        ownAddressType = LEOwnAddressType(rawValue: try r.u8("Own_Address_Type"))
        connection = try LEConnectionParameterRange(from: &r)
    }
    public var parameterFields: [Field] {
        [
            Field("le_scan_interval", HCIParam.slots(scanInterval)),
            Field("le_scan_window", HCIParam.slots(scanWindow)),
            Field("initiator_filter_policy", HCIParam.named(initiatorFilterPolicy)),
            Field("peer_address_type", HCIParam.addressType(peerAddressType)),
            Field("peer_address", HCIParam.address(peerAddress)),
            Field("own_address_type", HCIParam.named(ownAddressType)),
        ] + connection.fields
    }
}

/// HCI_LE_Connection_Update (Core Vol 4 Part E §7.8.18).
public struct LEConnectionUpdateCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leConnectionUpdate
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The connection parameters: Connection_Interval_Min/Max, Max_Latency, Supervision_Timeout, CE lengths.
    public var connection: LEConnectionParameterRange

    /// The command with these parameters.
    public init(connectionHandle: UInt16, connection: LEConnectionParameterRange) {
        self.connectionHandle = connectionHandle
        self.connection = connection
    }

    public var parameterLength: Int { 14 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try connection.write(&w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        connection = try LEConnectionParameterRange(from: &r)
    }
    public var parameterFields: [Field] {
        [Field("connection_handle", HCIParam.uint(connectionHandle))] + connection.fields
    }
}

/// HCI_LE_Read_Remote_Features (Core Vol 4 Part E §7.8.21).
public struct LEReadRemoteFeaturesCommand: HCIConnectionHandleCommand {
    public static let opcode = HCIOpcode.leReadRemoteFeatures
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16

    /// The command with these parameters.
    public init(connectionHandle: UInt16) { self.connectionHandle = connectionHandle }
}

/// HCI_LE_Enable_Encryption (Core Vol 4 Part E §7.8.24): start or refresh encryption
/// as central with a known LTK.
public struct LEEnableEncryptionCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leEnableEncryption
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Random_Number (Rand), 64 bits; 0 for LE Secure Connections keys.
    public var randomNumber: UInt64
    /// Encrypted_Diversifier (EDIV); 0 for LE Secure Connections keys.
    public var encryptedDiversifier: UInt16
    /// Long_Term_Key: 16 bytes in wire order (least significant byte first).
    public var longTermKey: [UInt8]

    /// The command with these parameters.
    public init(connectionHandle: UInt16, randomNumber: UInt64 = 0, encryptedDiversifier: UInt16 = 0, longTermKey: [UInt8]) {
        self.connectionHandle = connectionHandle
        self.randomNumber = randomNumber
        self.encryptedDiversifier = encryptedDiversifier
        self.longTermKey = longTermKey
    }

    public var parameterLength: Int { 28 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try w.u64(randomNumber)
        try w.u16(encryptedDiversifier)
        try HCIParam.write16Bytes(longTermKey, &w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        randomNumber = try r.u64("Random_Number")
        encryptedDiversifier = try r.u16("Encrypted_Diversifier")
        longTermKey = try HCIParam.read16Bytes(&r, "Long_Term_Key")
    }
    public var parameterFields: [Field] {
        [
            Field("connection_handle", HCIParam.uint(connectionHandle)),
            Field("random_number", .named(randomNumber, "0x" + Hex.pad(randomNumber, 16))),
            Field("encrypted_diversifier", HCIParam.uint(encryptedDiversifier)),
            Field("long_term_key", .bytes(longTermKey)),
        ]
    }
}

/// HCI_LE_Long_Term_Key_Request_Reply (Core Vol 4 Part E §7.8.25).
public struct LELongTermKeyRequestReplyCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leLongTermKeyRequestReply
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Long_Term_Key: 16 bytes in wire order.
    public var longTermKey: [UInt8]

    /// The command with these parameters.
    public init(connectionHandle: UInt16, longTermKey: [UInt8]) {
        self.connectionHandle = connectionHandle
        self.longTermKey = longTermKey
    }

    public var parameterLength: Int { 18 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try HCIParam.write16Bytes(longTermKey, &w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        longTermKey = try HCIParam.read16Bytes(&r, "Long_Term_Key")
    }
    public var parameterFields: [Field] {
        [Field("connection_handle", HCIParam.uint(connectionHandle)), Field("long_term_key", .bytes(longTermKey))]
    }
}

/// HCI_LE_Long_Term_Key_Request_Negative_Reply (Core Vol 4 Part E §7.8.26).
public struct LELongTermKeyRequestNegativeReplyCommand: HCIConnectionHandleCommand {
    public static let opcode = HCIOpcode.leLongTermKeyRequestNegativeReply
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16

    /// The command with these parameters.
    public init(connectionHandle: UInt16) { self.connectionHandle = connectionHandle }
}

/// HCI_LE_Remote_Connection_Parameter_Request_Reply (Core Vol 4 Part E §7.8.31).
/// On the wire the fields are named Interval_Min/Max, Max_Latency, Timeout, Min/Max_CE_Length.
public struct LERemoteConnectionParameterRequestReplyCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leRemoteConnectionParameterRequestReply
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The connection parameters: Connection_Interval_Min/Max, Max_Latency, Supervision_Timeout, CE lengths.
    public var connection: LEConnectionParameterRange

    /// The command with these parameters.
    public init(connectionHandle: UInt16, connection: LEConnectionParameterRange) {
        self.connectionHandle = connectionHandle
        self.connection = connection
    }

    public var parameterLength: Int { 14 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try connection.write(&w)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        connection = try LEConnectionParameterRange(from: &r)
    }
    public var parameterFields: [Field] {
        [Field("connection_handle", HCIParam.uint(connectionHandle))] + connection.fields
    }
}

/// HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply (Core Vol 4 Part E §7.8.32).
public struct LERemoteConnectionParameterRequestNegativeReplyCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leRemoteConnectionParameterRequestNegativeReply
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Reason, usually Unacceptable Connection Parameters (0x3B).
    public var reason: HCIErrorCode

    /// The command with these parameters.
    public init(connectionHandle: UInt16, reason: HCIErrorCode = .unacceptableConnectionParameters) {
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

/// HCI_LE_Set_Data_Length (Core Vol 4 Part E §7.8.33).
public struct LESetDataLengthCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetDataLength
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// TX_Octets: preferred maximum LL payload, bytes (0x001B–0x00FB).
    public var txOctets: UInt16
    /// TX_Time: preferred maximum transmit time, microseconds (0x0148–0x4290).
    public var txTime: UInt16

    /// The command with these parameters.
    public init(connectionHandle: UInt16, txOctets: UInt16, txTime: UInt16) {
        self.connectionHandle = connectionHandle
        self.txOctets = txOctets
        self.txTime = txTime
    }

    public var parameterLength: Int { 6 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try w.u16(txOctets)
        try w.u16(txTime)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        txOctets = try r.u16("TX_Octets")
        txTime = try r.u16("TX_Time")
    }
    public var parameterFields: [Field] {
        [
            Field("connection_handle", HCIParam.uint(connectionHandle)),
            Field("tx_octets", HCIParam.uint(txOctets)),
            Field("tx_time", .named(UInt64(txTime), "\(txTime) µs")),
        ]
    }
}

/// HCI_LE_Set_PHY (Core Vol 4 Part E §7.8.49).
public struct LESetPHYCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetPHY
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// All_PHYs.
    public var allPHYs: LEAllPHYsPreference
    /// TX_PHYs.
    public var txPHYs: LEPHYSet
    /// RX_PHYs.
    public var rxPHYs: LEPHYSet
    /// PHY_Options.
    public var phyOptions: LECodedPHYOptions

    /// The command with these parameters.
    public init(connectionHandle: UInt16, allPHYs: LEAllPHYsPreference = [], txPHYs: LEPHYSet, rxPHYs: LEPHYSet,
                phyOptions: LECodedPHYOptions = .noPreference) {
        self.connectionHandle = connectionHandle
        self.allPHYs = allPHYs
        self.txPHYs = txPHYs
        self.rxPHYs = rxPHYs
        self.phyOptions = phyOptions
    }

    public var parameterLength: Int { 7 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try HCIParam.writeHandle(connectionHandle, &w)
        try w.u8(allPHYs.rawValue)
        try w.u8(txPHYs.rawValue)
        try w.u8(rxPHYs.rawValue)
        try w.u16(phyOptions.rawValue)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        connectionHandle = try HCIParam.readHandle(&r)
        allPHYs = LEAllPHYsPreference(rawValue: try r.u8("All_PHYs"))
        txPHYs = LEPHYSet(rawValue: try r.u8("TX_PHYs"))
        rxPHYs = LEPHYSet(rawValue: try r.u8("RX_PHYs"))
        phyOptions = LECodedPHYOptions(rawValue: try r.u16("PHY_Options"))
    }
    public var parameterFields: [Field] {
        [
            Field("connection_handle", HCIParam.uint(connectionHandle)),
            Field("all_phys", HCIParam.named(allPHYs)),
            Field("tx_phys", HCIParam.named(txPHYs)),
            Field("rx_phys", HCIParam.named(rxPHYs)),
            Field("phy_options", HCIParam.named(phyOptions)),
        ]
    }
}

/// One PHY's block of HCI_LE_Set_Extended_Scan_Parameters.
public struct LEExtendedScanPHYParameters: Hashable, Sendable {
    /// Passive or active scanning.
    public var scanType: LEScanType
    /// Scan_Interval, units of 0.625 ms (0x0004–0xFFFF).
    public var scanInterval: UInt16
    /// Scan_Window, units of 0.625 ms.
    public var scanWindow: UInt16

    /// The command with these parameters.
    public init(scanType: LEScanType, scanInterval: UInt16, scanWindow: UInt16) {
        self.scanType = scanType
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
    }

    var fields: [Field] {
        [
            Field("scan_type", HCIParam.named(scanType)),
            Field("scan_interval", HCIParam.slots(scanInterval)),
            Field("scan_window", HCIParam.slots(scanWindow)),
        ]
    }
}

/// HCI_LE_Set_Extended_Scan_Parameters (Core Vol 4 Part E §7.8.64). One parameter block
/// follows per bit set in Scanning_PHYs (1M, then Coded); the bitmask is derived from
/// which blocks are present. Reserved PHY bits are rejected (their block size is unknown).
public struct LESetExtendedScanParametersCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetExtendedScanParameters
    /// Own_Address_Type: the address the controller uses (public, random, or resolvable).
    public var ownAddressType: LEOwnAddressType
    /// Which advertisers are reported (all, or the Filter Accept List).
    public var scanningFilterPolicy: LEScanningFilterPolicy
    /// Scanning on the LE 1M PHY, if set.
    public var le1M: LEExtendedScanPHYParameters?
    /// Scanning on the LE Coded PHY, if set.
    public var leCoded: LEExtendedScanPHYParameters?

    /// The command with these parameters.
    public init(ownAddressType: LEOwnAddressType = .public, scanningFilterPolicy: LEScanningFilterPolicy = .basicUnfiltered,
                le1M: LEExtendedScanPHYParameters?, leCoded: LEExtendedScanPHYParameters? = nil) {
        self.ownAddressType = ownAddressType
        self.scanningFilterPolicy = scanningFilterPolicy
        self.le1M = le1M
        self.leCoded = leCoded
    }

    /// Scanning_PHYs.
    public var scanningPHYs: LEPHYSet {
        var s: LEPHYSet = []
        if le1M != nil { s.insert(.le1M) }
        if leCoded != nil { s.insert(.leCoded) }
        return s
    }

    public var parameterLength: Int { 3 + 5 * ((le1M == nil ? 0 : 1) + (leCoded == nil ? 0 : 1)) }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(ownAddressType.rawValue)
        try w.u8(scanningFilterPolicy.rawValue)
        try w.u8(scanningPHYs.rawValue)
        for block in [le1M, leCoded] {
            guard let b = block else { continue }
            try w.u8(b.scanType.rawValue)
            try w.u16(b.scanInterval)
            try w.u16(b.scanWindow)
        }
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        ownAddressType = LEOwnAddressType(rawValue: try r.u8("Own_Address_Type"))
        scanningFilterPolicy = LEScanningFilterPolicy(rawValue: try r.u8("Scanning_Filter_Policy"))
        let at = r.offset
        let phys = LEPHYSet(rawValue: try r.u8("Scanning_PHYs"))
        guard phys.subtracting([.le1M, .leCoded]).isEmpty else {
            throw WireError(.invalidValue, at: at, "reserved bit set in Scanning_PHYs")
        }
        func block(_ r: inout ByteReader) throws(WireError) -> LEExtendedScanPHYParameters {
            LEExtendedScanPHYParameters(scanType: LEScanType(rawValue: try r.u8("Scan_Type")),
                                        scanInterval: try r.u16("Scan_Interval"), scanWindow: try r.u16("Scan_Window"))
        }
        le1M = phys.contains(.le1M) ? try block(&r) : nil
        leCoded = phys.contains(.leCoded) ? try block(&r) : nil
    }
    public var parameterFields: [Field] {
        var out = [
            Field("own_address_type", HCIParam.named(ownAddressType)),
            Field("scanning_filter_policy", HCIParam.named(scanningFilterPolicy)),
            Field("scanning_phys", HCIParam.named(scanningPHYs)),
        ]
        if let b = le1M { out.append(Field("le_1m", .object(b.fields))) }
        if let b = leCoded { out.append(Field("le_coded", .object(b.fields))) }
        return out
    }
}

/// HCI_LE_Set_Extended_Scan_Enable (Core Vol 4 Part E §7.8.65).
public struct LESetExtendedScanEnableCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetExtendedScanEnable
    /// Enable (true) or disable (false).
    public var enable: Bool
    /// Filter_Duplicates.
    public var filterDuplicates: LEFilterDuplicates
    /// Duration, units of 10 ms; 0 = scan until disabled.
    public var duration: UInt16
    /// Period, units of 1.28 s; 0 = scan continuously.
    public var period: UInt16

    /// The command with these parameters.
    public init(enable: Bool, filterDuplicates: LEFilterDuplicates = .disabled, duration: UInt16 = 0, period: UInt16 = 0) {
        self.enable = enable
        self.filterDuplicates = filterDuplicates
        self.duration = duration
        self.period = period
    }

    public var parameterLength: Int { 6 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(enable ? 1 : 0)
        try w.u8(filterDuplicates.rawValue)
        try w.u16(duration)
        try w.u16(period)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        enable = try HCIParam.readBool(&r, "Enable")
        filterDuplicates = LEFilterDuplicates(rawValue: try r.u8("Filter_Duplicates"))
        duration = try r.u16("Duration")
        period = try r.u16("Period")
    }
    public var parameterFields: [Field] {
        [
            Field("enable", .bool(enable)),
            Field("filter_duplicates", HCIParam.named(filterDuplicates)),
            Field("duration", HCIParam.tenMilliseconds(duration)),
            Field("period", HCIParam.time(period, unitMicroseconds: 1_280_000)),
        ]
    }
}

/// One PHY's block of HCI_LE_Extended_Create_Connection: scan timing plus the
/// requested connection parameters (16 bytes).
public struct LEExtendedCreateConnectionPHYParameters: Hashable, Sendable {
    /// Scan_Interval, units of 0.625 ms.
    public var scanInterval: UInt16
    /// Scan_Window, units of 0.625 ms.
    public var scanWindow: UInt16
    /// The connection parameters: Connection_Interval_Min/Max, Max_Latency, Supervision_Timeout, CE lengths.
    public var connection: LEConnectionParameterRange

    /// The command with these parameters.
    public init(scanInterval: UInt16, scanWindow: UInt16, connection: LEConnectionParameterRange) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.connection = connection
    }

    var fields: [Field] {
        [Field("scan_interval", HCIParam.slots(scanInterval)), Field("scan_window", HCIParam.slots(scanWindow))]
            + connection.fields
    }
}

/// HCI_LE_Extended_Create_Connection [v1] (Core Vol 4 Part E §7.8.66). One parameter block
/// follows per bit set in Initiating_PHYs (1M, 2M, Coded in that order); the bitmask is
/// derived from which blocks are present. Reserved PHY bits are rejected.
public struct LEExtendedCreateConnectionCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leExtendedCreateConnection
    /// Connect to the peer given or to any on the Filter Accept List.
    public var initiatorFilterPolicy: LEInitiatorFilterPolicy
    /// Own_Address_Type: the address the controller uses (public, random, or resolvable).
    public var ownAddressType: LEOwnAddressType
    /// The peer's address type.
    public var peerAddressType: LEAddressType
    /// The peer's address.
    public var peerAddress: BluetoothAddress
    /// Initiating parameters on LE 1M (nil: not on it).
    public var le1M: LEExtendedCreateConnectionPHYParameters?
    /// Connection parameters for 2M (no scanning happens on 2M; its scan fields are ignored).
    public var le2M: LEExtendedCreateConnectionPHYParameters?
    /// Initiating parameters on LE Coded (nil: not on it).
    public var leCoded: LEExtendedCreateConnectionPHYParameters?

    /// The command with these parameters.
    public init(initiatorFilterPolicy: LEInitiatorFilterPolicy = .peerAddress, ownAddressType: LEOwnAddressType = .public,
                peerAddressType: LEAddressType, peerAddress: BluetoothAddress,
                le1M: LEExtendedCreateConnectionPHYParameters?, le2M: LEExtendedCreateConnectionPHYParameters? = nil,
                leCoded: LEExtendedCreateConnectionPHYParameters? = nil) {
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.le1M = le1M
        self.le2M = le2M
        self.leCoded = leCoded
    }

    /// Initiating_PHYs.
    public var initiatingPHYs: LEPHYSet {
        var s: LEPHYSet = []
        if le1M != nil { s.insert(.le1M) }
        if le2M != nil { s.insert(.le2M) }
        if leCoded != nil { s.insert(.leCoded) }
        return s
    }

    public var parameterLength: Int {
        10 + 16 * ((le1M == nil ? 0 : 1) + (le2M == nil ? 0 : 1) + (leCoded == nil ? 0 : 1))
    }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(initiatorFilterPolicy.rawValue)
        try w.u8(ownAddressType.rawValue)
        try w.u8(peerAddressType.rawValue)
        try peerAddress.write(&w)
        try w.u8(initiatingPHYs.rawValue)
        for block in [le1M, le2M, leCoded] {
            guard let b = block else { continue }
            try w.u16(b.scanInterval)
            try w.u16(b.scanWindow)
            try b.connection.write(&w)
        }
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        initiatorFilterPolicy = LEInitiatorFilterPolicy(rawValue: try r.u8("Initiator_Filter_Policy"))
        ownAddressType = LEOwnAddressType(rawValue: try r.u8("Own_Address_Type"))
        peerAddressType = LEAddressType(rawValue: try r.u8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress.read(&r)
        let at = r.offset
        let phys = LEPHYSet(rawValue: try r.u8("Initiating_PHYs"))
        guard phys.subtracting([.le1M, .le2M, .leCoded]).isEmpty else {
            throw WireError(.invalidValue, at: at, "reserved bit set in Initiating_PHYs")
        }
        func block(_ r: inout ByteReader) throws(WireError) -> LEExtendedCreateConnectionPHYParameters {
            LEExtendedCreateConnectionPHYParameters(scanInterval: try r.u16("Scan_Interval"), scanWindow: try r.u16("Scan_Window"),
                                                    connection: try LEConnectionParameterRange(from: &r))
        }
        le1M = phys.contains(.le1M) ? try block(&r) : nil
        le2M = phys.contains(.le2M) ? try block(&r) : nil
        leCoded = phys.contains(.leCoded) ? try block(&r) : nil
    }
    public var parameterFields: [Field] {
        var out = [
            Field("initiator_filter_policy", HCIParam.named(initiatorFilterPolicy)),
            Field("own_address_type", HCIParam.named(ownAddressType)),
            Field("peer_address_type", HCIParam.addressType(peerAddressType)),
            Field("peer_address", HCIParam.address(peerAddress)),
            Field("initiating_phys", HCIParam.named(initiatingPHYs)),
        ]
        if let b = le1M { out.append(Field("le_1m", .object(b.fields))) }
        if let b = le2M { out.append(Field("le_2m", .object(b.fields))) }
        if let b = leCoded { out.append(Field("le_coded", .object(b.fields))) }
        return out
    }
}

/// HCI_LE_Read_Suggested_Default_Data_Length (Core Vol 4 Part E §7.8.34).
public struct LEReadSuggestedDefaultDataLengthCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadSuggestedDefaultDataLength
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Write_Suggested_Default_Data_Length (Core Vol 4 Part E §7.8.35): what the
/// controller asks for on each new link (it starts the Data Length Update itself).
public struct LEWriteSuggestedDefaultDataLengthCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leWriteSuggestedDefaultDataLength
    /// Suggested_Max_TX_Octets: LL payload, bytes (0x001B–0x00FB).
    public var suggestedMaxTxOctets: UInt16
    /// Suggested_Max_TX_Time: microseconds (0x0148–0x4290).
    public var suggestedMaxTxTime: UInt16

    /// The command with these parameters.
    public init(suggestedMaxTxOctets: UInt16, suggestedMaxTxTime: UInt16) {
        self.suggestedMaxTxOctets = suggestedMaxTxOctets
        self.suggestedMaxTxTime = suggestedMaxTxTime
    }

    public var parameterLength: Int { 4 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(suggestedMaxTxOctets)
        try w.u16(suggestedMaxTxTime)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        suggestedMaxTxOctets = try r.u16("Suggested_Max_TX_Octets")
        suggestedMaxTxTime = try r.u16("Suggested_Max_TX_Time")
    }
    public var parameterFields: [Field] {
        [Field("suggested_max_tx_octets", HCIParam.uint(suggestedMaxTxOctets)),
         Field("suggested_max_tx_time", .named(UInt64(suggestedMaxTxTime), "\(suggestedMaxTxTime) µs"))]
    }
}

/// HCI_LE_Read_Maximum_Data_Length (Core Vol 4 Part E §7.8.46).
public struct LEReadMaximumDataLengthCommand: HCIParameterlessCommand {
    public static let opcode = HCIOpcode.leReadMaximumDataLength
    /// The command (it has no parameters).
    public init() {}
}

/// HCI_LE_Read_PHY (Core Vol 4 Part E §7.8.47).
public struct LEReadPHYCommand: HCIConnectionHandleCommand {
    public static let opcode = HCIOpcode.leReadPHY
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16

    /// The command with these parameters.
    public init(connectionHandle: UInt16) { self.connectionHandle = connectionHandle }
}

/// HCI_LE_Set_Default_PHY (Core Vol 4 Part E §7.8.48): the PHYs the controller takes
/// for new links and when a peer asks.
public struct LESetDefaultPHYCommand: HCICommandEncodable {
    public static let opcode = HCIOpcode.leSetDefaultPHY
    /// All_PHYs.
    public var allPHYs: LEAllPHYsPreference
    /// TX_PHYs.
    public var txPHYs: LEPHYSet
    /// RX_PHYs.
    public var rxPHYs: LEPHYSet

    /// The command with these parameters.
    public init(allPHYs: LEAllPHYsPreference = [], txPHYs: LEPHYSet, rxPHYs: LEPHYSet) {
        self.allPHYs = allPHYs
        self.txPHYs = txPHYs
        self.rxPHYs = rxPHYs
    }

    public var parameterLength: Int { 3 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(allPHYs.rawValue)
        try w.u8(txPHYs.rawValue)
        try w.u8(rxPHYs.rawValue)
    }
    public init(parameters r: inout ByteReader) throws(WireError) {
        allPHYs = LEAllPHYsPreference(rawValue: try r.u8("All_PHYs"))
        txPHYs = LEPHYSet(rawValue: try r.u8("TX_PHYs"))
        rxPHYs = LEPHYSet(rawValue: try r.u8("RX_PHYs"))
    }
    public var parameterFields: [Field] {
        [Field("all_phys", HCIParam.named(allPHYs)), Field("tx_phys", HCIParam.named(txPHYs)), Field("rx_phys", HCIParam.named(rxPHYs))]
    }
}
