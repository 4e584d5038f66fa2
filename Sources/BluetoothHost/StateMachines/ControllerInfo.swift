import BluetoothWire

/// What the init sequence learned about the controller.
public struct ControllerInfo: Sendable, Equatable {
    /// HCI_Version (Read Local Version Information).
    public var hciVersion: HCICoreVersion
    /// HCI_Subversion: the manufacturer's revision of the HCI implementation.
    public var hciRevision: UInt16
    /// LMP/LL version: the Core Specification the link layer implements.
    public var lmpVersion: HCICoreVersion
    /// Company identifier of the manufacturer (Assigned Numbers §7).
    public var manufacturer: UInt16
    /// LMP_Subversion: the manufacturer's link layer revision.
    public var lmpSubversion: UInt16
    /// The public device address (BD_ADDR); zero when the controller has none.
    public var address: BluetoothAddress
    /// The 64-octet Supported_Commands bit mask (Core Vol 4 Part E §6.27).
    public var supportedCommands: [UInt8]
    /// LMP features page 0 (BR/EDR and the "LE supported" bits).
    public var features: UInt64
    /// The LE features the controller supports (LE Read Local Supported Features).
    public var leFeatures: LEFeatures
    /// LE ACL buffers (or the shared BR/EDR buffers when the LE ones are 0).
    public var aclBufferLength: UInt16
    /// Number of LE ACL buffers: packets in flight at most.
    public var aclBufferCount: UInt16
    /// ISO buffers from LE Read Buffer Size [v2], when the controller has any.
    public var isoBuffer: ISOBuffer?
    /// Which LE Read Buffer Size the sizes came from (2 = v2, 1 = v1, 0 = Read Buffer Size).
    public var bufferSizeSource: Int
    /// Advertising sets the controller supports (LE Read Number of Supported Advertising
    /// Sets); 0 when it has no extended advertising (legacy commands, one set).
    public var advertisingSets: Int = 0
    /// The longest advertising or scan response data one set takes (LE Read Maximum
    /// Advertising Data Length); 31 with legacy advertising.
    public var maximumAdvertisingDataLength: Int = 31
    /// The longest link layer payloads and times the controller supports (LE Read Maximum
    /// Data Length); nil without LE Data Packet Length Extension (27 bytes, 328 µs).
    public var maximumDataLength: LEDataLength?
    /// The PHYs the controller can use on a link: LE 1M always, 2M and Coded by its features.
    public var supportedPHYs: LEPHYSet {
        var s: LEPHYSet = .le1M
        if leFeatures.contains(.le2MPHY) { s.insert(.le2M) }
        if leFeatures.contains(.leCodedPHY) { s.insert(.leCoded) }
        return s
    }

    /// Controller information as given (tests); the init sequence fills it in from the controller.
    public init(hciVersion: HCICoreVersion = HCICoreVersion(rawValue: 0), hciRevision: UInt16 = 0,
                lmpVersion: HCICoreVersion = HCICoreVersion(rawValue: 0), manufacturer: UInt16 = 0,
                lmpSubversion: UInt16 = 0, address: BluetoothAddress = .zero,
                supportedCommands: [UInt8] = [UInt8](repeating: 0, count: 64), features: UInt64 = 0,
                leFeatures: LEFeatures = [], aclBufferLength: UInt16 = 0, aclBufferCount: UInt16 = 0,
                bufferSizeSource: Int = 0) {
        self.hciVersion = hciVersion
        self.hciRevision = hciRevision
        self.lmpVersion = lmpVersion
        self.manufacturer = manufacturer
        self.lmpSubversion = lmpSubversion
        self.address = address
        self.supportedCommands = supportedCommands
        self.features = features
        self.leFeatures = leFeatures
        self.aclBufferLength = aclBufferLength
        self.aclBufferCount = aclBufferCount
        self.bufferSizeSource = bufferSizeSource
    }

    /// The manufacturer's name, where known.
    public var manufacturerName: String? { AssignedNumbers.companyName(manufacturer) }

    /// Whether bit `bit` of octet `octet` of Supported_Commands is set.
    public func supportsCommand(octet: Int, bit: Int) -> Bool {
        guard octet >= 0, octet < supportedCommands.count, bit >= 0, bit < 8 else { return false }
        return supportedCommands[octet] & (1 << UInt8(bit)) != 0
    }

    /// Supported_Commands bits this host looks at (Core Vol 4 Part E §6.27).
    public enum CommandBit {
        /// LE Set Extended Advertising Parameters.
        public static let leSetExtendedAdvertisingParameters = (octet: 36, bit: 2)
        /// LE Read Maximum Advertising Data Length.
        public static let leReadMaximumAdvertisingDataLength = (octet: 36, bit: 6)
        /// LE Read Number of Supported Advertising Sets.
        public static let leReadNumberOfSupportedAdvertisingSets = (octet: 36, bit: 7)
        /// LE Set Extended Scan Parameters.
        public static let leSetExtendedScanParameters = (octet: 37, bit: 5)
        /// LE Set Extended Scan Enable.
        public static let leSetExtendedScanEnable = (octet: 37, bit: 6)
        /// LE Read Buffer Size [v2].
        public static let leReadBufferSizeV2 = (octet: 41, bit: 5)
    }

    /// Whether the controller claims the command at `b` (one of CommandBit).
    public func supports(_ b: (octet: Int, bit: Int)) -> Bool { supportsCommand(octet: b.octet, bit: b.bit) }

    /// True when the controller has LE Extended Advertising AND claims the
    /// LE Set Extended Scan Parameters command: the host then scans with extended commands.
    public var supportsExtendedScanning: Bool {
        leFeatures.contains(.leExtendedAdvertising) && supports(CommandBit.leSetExtendedScanParameters)
    }

    /// True when the controller has LE Extended Advertising and claims the extended
    /// advertising commands: the host then advertises with them (Core Vol 4 Part E §3.1.1:
    /// a controller refuses legacy advertising commands once extended ones were used).
    public var supportsExtendedAdvertising: Bool {
        leFeatures.contains(.leExtendedAdvertising) && supports(CommandBit.leSetExtendedAdvertisingParameters)
    }
}

/// ISO data buffers (HCI_LE_Read_Buffer_Size [v2]).
public struct ISOBuffer: Sendable, Equatable {
    /// ISO_Data_Packet_Length: bytes per ISO buffer.
    public var length: UInt16
    /// Total_Num_ISO_Data_Packets: ISO buffers.
    public var count: UInt8
    /// ISO buffer sizes as read.
    public init(length: UInt16, count: UInt8) {
        self.length = length
        self.count = count
    }
}

/// Link layer payload sizes and times of one link or controller (Core Vol 6 Part B §4.5.10).
public struct LEDataLength: Sendable, Hashable, CustomStringConvertible {
    /// Octets we may send in one LL data PDU payload.
    public var txOctets: UInt16
    /// Microseconds we may take to send one.
    public var txTime: UInt16
    /// Octets the peer may send.
    public var rxOctets: UInt16
    /// Microseconds the peer may take.
    public var rxTime: UInt16

    /// Sizes and times as given.
    public init(txOctets: UInt16, txTime: UInt16, rxOctets: UInt16, rxTime: UInt16) {
        self.txOctets = txOctets
        self.txTime = txTime
        self.rxOctets = rxOctets
        self.rxTime = rxTime
    }

    /// What every link starts with: 27 bytes, 328 µs each way.
    public static let initial = LEDataLength(txOctets: 27, txTime: 328, rxOctets: 27, rxTime: 328)

    /// "251 bytes (2120 µs) out, 251 bytes (2120 µs) in", or one half when both agree.
    public var description: String {
        if txOctets == rxOctets && txTime == rxTime { return "\(txOctets) bytes (\(txTime) µs) each way" }
        return "\(txOctets) bytes (\(txTime) µs) out, \(rxOctets) bytes (\(rxTime) µs) in"
    }
}
