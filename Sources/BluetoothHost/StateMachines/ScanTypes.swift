import BluetoothWire

/// PHYs to scan on (extended scanning only; legacy scanning always uses LE 1M).
public struct ScanPHYs: OptionSet, Sendable, Hashable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE 1M.
    public static let le1M = ScanPHYs(rawValue: 1 << 0)
    /// LE Coded (long range).
    public static let leCoded = ScanPHYs(rawValue: 1 << 2)
}

/// How to scan and what to report.
public struct ScanConfiguration: Sendable, Equatable {
    /// Active scanning (scan requests, so scan responses arrive); passive when false.
    public var active: Bool
    /// Scan interval and window in units of 0.625 ms (0x0004...0x4000 for legacy scanning).
    public var interval: UInt16
    /// Scan window (how long of each interval the controller listens), units of 0.625 ms.
    public var window: UInt16
    /// PHYs for extended scanning; ignored for legacy scanning.
    public var phys: ScanPHYs
    /// Report every advertisement (RSSI updates included) instead of only new devices and
    /// data changes. Also turns the controller's duplicate filter off.
    public var reportDuplicates: Bool
    /// Only devices advertising one of these services (list or service data), if not empty.
    public var services: [BluetoothUUID]
    /// Only devices whose name contains this (case-insensitive).
    public var nameSubstring: String?
    /// Only this device.
    public var address: BluetoothAddress?
    /// Only reports at least this strong (dBm).
    public var minimumRSSI: Int8?
    /// A device not heard for this long is forgotten: heard again, it is new.
    public var deviceTimeout: Duration
    /// At most this many devices are remembered; the least recently seen goes first.
    public var maximumDevices: Int
    /// nil: extended scanning when the controller supports it; true/false forces a mode.
    public var useExtendedScanning: Bool?
    /// Active scanning: how long a new scannable device is held back waiting for its
    /// scan response, so it is reported once with both. Zero reports at once.
    public var scanResponseWait: Duration

    /// A configuration; the defaults: active, a 30 ms window every 60 ms on LE 1M, only new or
    /// changed devices, no filter, devices forgotten after 60 s (at most 4096).
    public init(active: Bool = true, interval: UInt16 = 0x0060, window: UInt16 = 0x0030, phys: ScanPHYs = .le1M,
                reportDuplicates: Bool = false, services: [BluetoothUUID] = [], nameSubstring: String? = nil,
                address: BluetoothAddress? = nil, minimumRSSI: Int8? = nil, deviceTimeout: Duration = .seconds(60),
                maximumDevices: Int = 4096, useExtendedScanning: Bool? = nil,
                scanResponseWait: Duration = .milliseconds(150)) {
        self.active = active
        self.interval = interval
        self.window = window
        self.phys = phys
        self.reportDuplicates = reportDuplicates
        self.services = services
        self.nameSubstring = nameSubstring
        self.address = address
        self.minimumRSSI = minimumRSSI
        self.deviceTimeout = deviceTimeout
        self.maximumDevices = maximumDevices
        self.useExtendedScanning = useExtendedScanning
        self.scanResponseWait = scanResponseWait
    }
}

/// What kind of advertising a device does, from its latest advertisement (not scan response).
public struct AdvertisingEventInfo: Sendable, Hashable {
    /// ADV_IND, ADV_DIRECT_IND or a connectable extended advertisement.
    public var connectable: Bool
    /// Scan requests are answered (a scan response may come).
    public var scannable: Bool
    /// Directed at one central.
    public var directed: Bool
    /// A legacy advertising PDU (ADV_IND & co.), as opposed to extended advertising.
    public var legacy: Bool
    /// Reported through an LE Extended Advertising Report (0x0D) rather than 0x02.
    public var extendedReport: Bool
    /// The PHY of the primary advertising channels.
    public var primaryPHY: LEPHY
    /// `.none` when there were no packets on the secondary channel.
    public var secondaryPHY: LEPHY
    /// Advertising_SID; nil when absent (legacy, or no ADI field).
    public var sid: UInt8?

    /// Event properties as given (reports build them).
    public init(connectable: Bool = false, scannable: Bool = false, directed: Bool = false, legacy: Bool = true,
                extendedReport: Bool = false, primaryPHY: LEPHY = .le1M, secondaryPHY: LEPHY = .none, sid: UInt8? = nil) {
        self.connectable = connectable
        self.scannable = scannable
        self.directed = directed
        self.legacy = legacy
        self.extendedReport = extendedReport
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.sid = sid
    }

    /// The legacy PDU name (ADV_IND, ...) or "extended".
    public var pduName: String { pduNameLiteral.description }

    /// ``pduName`` as static text (no allocation).
    public var pduNameLiteral: StaticString {
        guard legacy else { return "extended" }
        switch (connectable, scannable, directed) {
        case (true, true, false): return "ADV_IND"
        case (true, false, true), (false, false, true): return "ADV_DIRECT_IND"
        case (false, true, false): return "ADV_SCAN_IND"
        default: return "ADV_NONCONN_IND"
        }
    }
}

/// Manufacturer specific data, owned.
public struct ManufacturerData: Sendable, Hashable {
    /// Company identifier (Assigned Numbers).
    public var companyID: UInt16
    /// The bytes after the company identifier.
    public var data: [UInt8]
    /// Manufacturer data as given.
    public init(companyID: UInt16, data: [UInt8]) {
        self.companyID = companyID
        self.data = data
    }
    /// The company's name from the assigned numbers (nil: not assigned).
    public var companyName: String? { AssignedNumbers.companyName(companyID) }
}

/// A device heard while scanning: an owned snapshot, safe to keep and send anywhere.
public struct DiscoveredDevice: Sendable, Hashable {
    /// The address the report came from.
    public var address: LEAddress
    /// The identity of a bonded peer whose resolvable private address this is (resolved
    /// with the IRK it gave when pairing); nil otherwise.
    public var identity: LEAddress?
    /// dBm; nil when the controller did not measure it.
    public var rssi: Int8?
    /// Advertised TX power: the TX Power Level AD type, else the extended report's field.
    /// Read from the data when asked (most snapshots are printed with a summary that has
    /// it already, and never asked).
    public var txPower: Int8? {
        advertising.withUnsafeBytes { a in
            scanResponse.withUnsafeBytes { s in ADSummary.txPower(a, s) }
        } ?? reportedTxPower
    }
    /// The extended report's TX_Power field; nil when it has none (legacy reports, 0x7F).
    public var reportedTxPower: Int8?

    /// ``txPower`` from a summary of this device's data made already (no second walk).
    @inlinable
    public func txPower(_ summary: ADSummary) -> Int8? { summary.txPower ?? reportedTxPower }
    /// The latest advertising data (inline when legacy: a snapshot allocates nothing).
    public var advertising: AdvertisingBytes
    /// The latest scan response data.
    public var scanResponse: AdvertisingBytes
    /// ``advertising`` as an array (a copy).
    public var advertisingData: [UInt8] {
        get { advertising.array }
        set { advertising = AdvertisingBytes(newValue) }
    }
    /// ``scanResponse`` as an array (a copy).
    public var scanResponseData: [UInt8] {
        get { scanResponse.array }
        set { scanResponse = AdvertisingBytes(newValue) }
    }
    /// What kind of advertising it is.
    public var eventType: AdvertisingEventInfo
    /// Monotonic nanoseconds.
    public var firstSeen: UInt64
    /// When the latest report came (monotonic nanoseconds).
    public var lastSeen: UInt64
    /// Reports received for this device (advertisements and scan responses).
    public var reportCount: Int

    // Decoded from advertising data then scan response data when asked (first occurrence
    // wins, a complete name beats a shortened one): a snapshot costs no decoding, and the
    // formatters read the data through an allocation-free ``ADSummary`` instead.
    /// The complete local name, else the shortened one.
    public var name: String? { decoded.name }
    /// Service UUIDs (16/32/128-bit, complete and incomplete lists).
    public var serviceUUIDs: [BluetoothUUID] { decoded.serviceUUIDs }
    /// Service Data UUIDs (16/32/128-bit).
    public var serviceDataUUIDs: [BluetoothUUID] { decoded.serviceDataUUIDs }
    /// Manufacturer Specific Data (the first structure).
    public var manufacturerData: ManufacturerData? { decoded.manufacturerData }
    /// The Appearance AD type.
    public var appearance: Appearance? { decoded.appearance }
    /// The Flags AD type.
    public var flags: ADFlags? { decoded.flags }
    /// Malformed AD structures were found in the data (decoded what came before them).
    public var hasMalformedData: Bool { decoded.malformed }

    private var decoded: ADDecoded { ADDecoded(advertising, scanResponse) }

    /// Calls `body` with the summary of both data sets (no allocation); the views in it
    /// are valid only inside `body`. Inlinable: specialized where it is called (a generic
    /// call across modules looks up type metadata on every scan line).
    @inlinable
    public func withSummary<R>(_ body: (ADSummary) -> R) -> R {
        advertising.withUnsafeBytes { a in
            scanResponse.withUnsafeBytes { s in body(ADSummary(a, s)) }
        }
    }

    /// A device as first heard; `txPower` is the extended report's field (the TX Power
    /// Level AD type, when present, wins).
    public init(address: LEAddress, rssi: Int8?, txPower: Int8?, advertisingData: [UInt8], scanResponseData: [UInt8],
                eventType: AdvertisingEventInfo, firstSeen: UInt64, lastSeen: UInt64, reportCount: Int) {
        self.init(address: address, rssi: rssi, txPower: txPower, advertising: AdvertisingBytes(advertisingData),
                  scanResponse: AdvertisingBytes(scanResponseData), eventType: eventType, firstSeen: firstSeen,
                  lastSeen: lastSeen, reportCount: reportCount)
    }

    /// A device as first heard, its data given as stored.
    public init(address: LEAddress, rssi: Int8?, txPower: Int8?, advertising: AdvertisingBytes, scanResponse: AdvertisingBytes,
                eventType: AdvertisingEventInfo, firstSeen: UInt64, lastSeen: UInt64, reportCount: Int) {
        self.address = address
        self.rssi = rssi
        self.advertising = advertising
        self.scanResponse = scanResponse
        self.eventType = eventType
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.reportCount = reportCount
        reportedTxPower = txPower
    }

    /// True when a service list or service data names `uuid`.
    public func advertises(_ uuid: BluetoothUUID) -> Bool {
        serviceUUIDs.contains(uuid) || serviceDataUUIDs.contains(uuid)
    }
}

/// What the scanner reports.
public enum ScanEvent: Sendable, Hashable {
    /// A device seen (and matching the filters) for the first time, or again after it aged out.
    case discovered(DiscoveredDevice)
    /// A known device's advertising or scan response data changed (or any new report,
    /// with `reportDuplicates`).
    case updated(DiscoveredDevice)

    /// The device the event is about.
    public var device: DiscoveredDevice {
        switch self {
        case .discovered(let d), .updated(let d): d
        }
    }
}

/// The convenience fields of one or two AD data sets as owned values: the allocation-free
/// ``ADSummary`` (which decides what counts: first occurrence, complete name, malformed)
/// copied out.
struct ADDecoded {
    var name: String?
    var serviceUUIDs: [BluetoothUUID] = []
    var serviceDataUUIDs: [BluetoothUUID] = []
    var manufacturerData: ManufacturerData?
    var appearance: Appearance?
    var flags: ADFlags?
    var txPower: Int8?
    var malformed = false

    init(_ s: ADSummary) {
        name = s.name.map { String(decoding: $0, as: UTF8.self) }
        s.forEachServiceUUID { serviceUUIDs.append($0) }
        s.forEachServiceDataUUID { serviceDataUUIDs.append($0) }
        manufacturerData = s.manufacturerData.map { ManufacturerData(companyID: $0.companyID, data: Array($0.payload)) }
        appearance = s.appearance
        flags = s.flags
        txPower = s.txPower
        malformed = s.malformed
    }

    /// The fields of `advertisingData` then `scanResponseData`.
    init(_ advertisingData: AdvertisingBytes, _ scanResponseData: AdvertisingBytes) {
        self = advertisingData.withUnsafeBytes { a in scanResponseData.withUnsafeBytes { r in ADDecoded(ADSummary(a, r)) } }
    }
}
