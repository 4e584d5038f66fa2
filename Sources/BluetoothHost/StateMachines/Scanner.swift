import BluetoothWire

/// Scanner counters.
public struct ScannerStatistics: Sendable, Equatable {
    /// Advertising reports handled (each report of a multi-report event counts).
    public var reports = 0
    /// Reports from LE Advertising Report events.
    public var legacyReports = 0
    /// Reports from LE Extended Advertising Report events.
    public var extendedReports = 0
    /// Extended advertising data dropped because the controller truncated it.
    public var droppedTruncated = 0
    /// Extended advertising data dropped because the fragments exceeded 1650 bytes.
    public var droppedOverflow = 0
    /// Unfinished reassemblies dropped because too many were pending at once.
    public var droppedInterrupted = 0
    /// Devices forgotten after `deviceTimeout`.
    public var expired = 0
    /// Devices forgotten because the table was full.
    public var evicted = 0
    /// Scan responses received while scanning passively (ignored).
    public var ignoredScanResponses = 0
    /// All zero.
    public init() {}
}

/// Scanning as a sans-I/O state machine: turns advertising reports into device events.
///
/// - Legacy (LE Advertising Report, 0x02) and extended (0x0D) reports are accepted in
///   either scanning mode (some controllers send extended reports after legacy commands).
/// - Extended data split over several reports (Data_Status "incomplete, more data to
///   come") is reassembled per (address, SID, scan response or not) up to 1650 bytes;
///   truncated or oversized data is dropped and counted.
/// - Scan responses are stored beside the advertising data of the same address. When
///   scanning actively, a new scannable device is reported once its scan response is in
///   (or after `scanResponseWait`), not once for the advertisement and again for the response.
/// - The host filters duplicates itself: a device is reported when first seen and when
///   its advertising or scan response data changes, not for RSSI changes alone (unless
///   `reportDuplicates`). Comparing with the stored data does not allocate.
/// - The device table is bounded: devices age out after `deviceTimeout` and the least
///   recently seen is evicted at `maximumDevices`.
public struct Scanner: Sendable {
    /// What this scan looks for.
    public let configuration: ScanConfiguration
    /// The configuration's durations in the nanoseconds `now` comes in.
    private let deviceTimeout: UInt64
    private let scanResponseWait: UInt64
    /// Whether the enable/disable commands use the extended scanning commands.
    public let extended: Bool
    /// Counters (reports, drops, expired and evicted devices).
    public private(set) var statistics = ScannerStatistics()

    struct Entry: Sendable {
        var advertisingData = AdvertisingBytes()
        var scanResponseData = AdvertisingBytes()
        var rssi: Int8?
        var txPower: Int8?
        var eventType = AdvertisingEventInfo()
        var firstSeen: UInt64
        var lastSeen: UInt64
        var reportCount = 0
        /// Reported as `.discovered` already.
        var reported = false
        /// The data passes the data filters (services, name); recomputed when data changes.
        var dataMatches = false
        /// A new scannable device is held back until its scan response arrives (or this
        /// time passes), so it is reported once with both data sets, as BlueZ does.
        var holdUntil: UInt64?
    }

    struct FragmentKey: Hashable, Sendable {
        var address: LEAddress
        var sid: UInt8
        var scanResponse: Bool
    }

    private var devices = AddressTable<Entry>()
    private var fragments: [FragmentKey: [UInt8]] = [:]
    /// No device can expire before this.
    private var sweepAt: UInt64?
    /// Devices held back waiting for their scan response (see `Entry.holdUntil`).
    private var held = HeldQueue()
    private let lowercasedName: [UInt8]?
    /// The filters and the scan-response wait, made once.
    private let policy: Policy

    /// A scanner for `configuration`; `extended` when the extended scanning commands are used.
    public init(configuration: ScanConfiguration, extended: Bool) {
        self.configuration = configuration
        self.deviceTimeout = configuration.deviceTimeout.nanoseconds
        self.scanResponseWait = configuration.scanResponseWait.nanoseconds
        self.extended = extended
        self.lowercasedName = configuration.nameSubstring.map { Array($0.lowercased().utf8) }
        self.policy = Policy(configuration: configuration, scanResponseWait: scanResponseWait, lowercasedName: lowercasedName)
    }

    /// Devices currently remembered.
    public var deviceCount: Int { devices.count }

    // MARK: Commands

    /// The commands that configure and start scanning, in order.
    public func enableCommands() -> [any HCICommandEncodable] {
        let type: LEScanType = configuration.active ? .active : .passive
        if extended {
            let block = LEExtendedScanPHYParameters(scanType: type, scanInterval: configuration.interval,
                                                    scanWindow: configuration.window)
            let phys = configuration.phys.isEmpty ? ScanPHYs.le1M : configuration.phys
            return [
                LESetExtendedScanParametersCommand(le1M: phys.contains(.le1M) ? block : nil,
                                                   leCoded: phys.contains(.leCoded) ? block : nil),
                LESetExtendedScanEnableCommand(enable: true,
                                               filterDuplicates: configuration.reportDuplicates ? .disabled : .enabled),
            ]
        }
        return [
            LESetScanParametersCommand(scanType: type, scanInterval: configuration.interval, scanWindow: configuration.window),
            LESetScanEnableCommand(enable: true, filterDuplicates: !configuration.reportDuplicates),
        ]
    }

    /// The command that stops scanning.
    public func disableCommands() -> [any HCICommandEncodable] {
        extended ? [LESetExtendedScanEnableCommand(enable: false)] : [LESetScanEnableCommand(enable: false)]
    }

    // MARK: Reports

    /// Feeds an LE Meta event; anything but advertising reports is ignored.
    public mutating func handle(_ event: LEMetaEvent, now: UInt64) -> [ScanEvent] {
        var out: [ScanEvent] = []
        handle(event, now: now, into: &out)
        return out
    }

    /// Feeds an LE Meta event; what it makes known is appended to `out` (a caller keeping
    /// one array for every event allocates nothing here).
    public mutating func handle(_ event: LEMetaEvent, now: UInt64, into out: inout [ScanEvent]) {
        switch event {
        case .advertisingReport(let e):
            handle(e, now: now, into: &out)
        case .extendedAdvertisingReport(let e):
            var it = e.reports
            while let r = try? it.next() { handleExtended(r, now: now, into: &out) }
        default:
            break
        }
    }

    /// The reports of an LE Advertising Report event.
    public mutating func handle(_ event: LEAdvertisingReportEvent, now: UInt64, into out: inout [ScanEvent]) {
        var it = event.reports
        while let r = try? it.next() { handleLegacy(r, now: now, into: &out) }
    }

    /// One report of an LE Advertising Report event; what it makes known goes to `out`.
    public mutating func handleLegacy(_ r: LEAdvertisingReport, now: UInt64, into out: inout [ScanEvent]) {
        statistics.reports &+= 1
        statistics.legacyReports &+= 1
        let t = r.eventType.rawValue
        let isScanResponse = t == 0x04
        let info = AdvertisingEventInfo(connectable: t == 0x00 || t == 0x01, scannable: t == 0x00 || t == 0x02,
                                        directed: t == 0x01, legacy: true, extendedReport: false)
        record(address: r.address, data: r.data, isScanResponse: isScanResponse, info: info,
               rssi: r.rssiIfAvailable, txPower: nil, now: now, into: &out)
    }

    /// One report of an LE Extended Advertising Report event (fragments are joined first).
    public mutating func handleExtended(_ r: LEExtendedAdvertisingReport, now: UInt64, into out: inout [ScanEvent]) {
        statistics.reports &+= 1
        statistics.extendedReports &+= 1
        let t = r.eventType
        let info = AdvertisingEventInfo(connectable: t.isConnectable, scannable: t.isScannable, directed: t.isDirected,
                                        legacy: t.isLegacy, extendedReport: true, primaryPHY: r.primaryPHY,
                                        secondaryPHY: r.secondaryPHY,
                                        sid: r.advertisingSID == 0xFF ? nil : r.advertisingSID)
        let key = FragmentKey(address: r.address, sid: r.advertisingSID, scanResponse: t.isScanResponse)
        switch t.dataStatus {
        case .complete:
            if var pending = fragments.removeValue(forKey: key) {
                guard pending.count + r.data.count <= AdvertisingData.extendedMaximumLength else {
                    statistics.droppedOverflow &+= 1
                    return
                }
                pending.append(contentsOf: r.data)
                pending.withUnsafeBytes { data in
                    record(address: r.address, data: data, isScanResponse: t.isScanResponse, info: info,
                           rssi: r.rssiIfAvailable, txPower: r.txPowerIfAvailable, now: now, into: &out)
                }
            } else {
                record(address: r.address, data: r.data, isScanResponse: t.isScanResponse, info: info,
                       rssi: r.rssiIfAvailable, txPower: r.txPowerIfAvailable, now: now, into: &out)
            }
        case .incompleteMoreData:
            var pending = fragments.removeValue(forKey: key) ?? []
            guard pending.count + r.data.count <= AdvertisingData.extendedMaximumLength else {
                statistics.droppedOverflow &+= 1
                return
            }
            pending.append(contentsOf: r.data)
            fragments[key] = pending
            // Bound the reassembly table like the device table.
            if fragments.count > configuration.maximumDevices, let victim = fragments.keys.first(where: { $0 != key }) {
                fragments[victim] = nil
                statistics.droppedInterrupted &+= 1
            }
        default:
            // Truncated (or reserved): the data will never be complete.
            fragments[key] = nil
            statistics.droppedTruncated &+= 1
        }
    }

    private mutating func record(address: LEAddress, data: UnsafeRawBufferPointer, isScanResponse: Bool,
                                 info: AdvertisingEventInfo, rssi: Int8?, txPower: Int8?, now: UInt64,
                                 into out: inout [ScanEvent]) {
        if let wanted = configuration.address, wanted != address.address { return }
        // A passive scanner sends no scan requests, so a scan response is not for us
        // (Bumble's controller sends them anyway): ignore and count it.
        if isScanResponse && !configuration.active {
            statistics.ignoredScanResponses &+= 1
            return
        }
        var index = devices.index(of: address)
        // (A clock that stepped back, now before the last report, ages nothing out.)
        if let i = index, now >= devices[index: i].lastSeen, now &- devices[index: i].lastSeen >= deviceTimeout {
            // Aged out but not swept yet: heard again, it is new.
            let wasHeld = devices.values[i].holdUntil != nil
            devices.remove(at: i)
            statistics.expired &+= 1
            index = nil
            if wasHeld { dropStaleHolds() }
        }
        if let i = index {
            // Updated in place (one access to the entry, no copy of it and its data); the
            // data is copied only when it differs.
            let wasHeld = devices.values[i].holdUntil != nil
            let changed = Self.update(&devices[index: i], data: data, isScanResponse: isScanResponse, info: info,
                                      rssi: rssi, txPower: txPower, now: now)
            policy.decide(address, &devices[index: i], changed: changed, isScanResponse: isScanResponse, info: info,
                          rssi: rssi, now: now, held: &held, into: &out)
            if wasHeld && devices.values[i].holdUntil == nil { dropStaleHolds() }
            devices.touch(i)
            return
        }
        // A new device: made whole here, then stored with one hash of its address (in the
        // place of the least recently heard one when the table is full).
        let full = devices.count >= max(configuration.maximumDevices, 1)
        let evictedHeld = full && showIfHeld(oldest: &out)
        var entry = Entry(firstSeen: now, lastSeen: now)
        _ = Self.update(&entry, data: data, isScanResponse: isScanResponse, info: info, rssi: rssi, txPower: txPower, now: now)
        if sweepAt == nil { sweepAt = now &+ deviceTimeout }
        policy.decide(address, &entry, changed: true, isScanResponse: isScanResponse, info: info, rssi: rssi, now: now,
                      held: &held, into: &out)
        if full {
            devices.replaceOldest(with: consume entry, for: address)
            statistics.evicted &+= 1
            if evictedHeld { dropStaleHolds() }
        } else {
            devices.insert(consume entry, for: address)
        }
    }

    /// What decides whether a report is shown: the configuration's filters and the
    /// scan-response wait (apart from the scanner, so an entry can be decided on in place).
    struct Policy {
        let configuration: ScanConfiguration
        let scanResponseWait: UInt64
        let lowercasedName: [UInt8]?

        /// After a report was recorded in `entry` (`changed`: its data changed): appends the
        /// event to show, if any, marks it reported, or holds a new scannable device for its
        /// scan response.
        @inline(never)  // one copy for the known-device and new-device paths
        func decide(_ address: LEAddress, _ entry: inout Entry, changed: Bool, isScanResponse: Bool,
                    info: AdvertisingEventInfo, rssi: Int8?, now: UInt64, held: inout HeldQueue,
                    into out: inout [ScanEvent]) {
            if changed { entry.dataMatches = dataMatches(entry) }
            guard entry.dataMatches else { return }
            if let minimum = configuration.minimumRSSI {
                guard let r = rssi, r >= minimum else { return }
            }
            if !entry.reported {
                if let until = entry.holdUntil {
                    // Held for its scan response: report now if it came or the wait is over.
                    guard isScanResponse || now >= until else { return }
                    entry.holdUntil = nil  // its place in `held` goes stale (no search)
                } else if configuration.active && !configuration.reportDuplicates && !isScanResponse
                            && Scanner.mayAnswerScanRequests(info) && entry.scanResponseData.isEmpty
                            && scanResponseWait > 0 {
                    entry.holdUntil = now &+ scanResponseWait
                    held.append(HeldQueue.Hold(address: address, until: now &+ scanResponseWait))
                    return
                }
                entry.reported = true
                out.append(.discovered(Scanner.snapshot(address, entry)))
            } else if changed || configuration.reportDuplicates {
                out.append(.updated(Scanner.snapshot(address, entry)))
            }
        }

        func dataMatches(_ e: Entry) -> Bool {
            if configuration.services.isEmpty && lowercasedName == nil { return true }
            let d = ADDecoded(e.advertisingData, e.scanResponseData)
            if !configuration.services.isEmpty {
                guard configuration.services.contains(where: { d.serviceUUIDs.contains($0) || d.serviceDataUUIDs.contains($0) })
                else { return false }
            }
            if let needle = lowercasedName {
                guard let name = d.name else { return false }
                if !needle.isEmpty && !Scanner.bytes(Array(name.lowercased().utf8), contain: needle) { return false }
            }
            return true
        }
    }

    /// Records one report in `e`; true when its data changed.
    private static func update(_ e: inout Entry, data: UnsafeRawBufferPointer, isScanResponse: Bool,
                               info: AdvertisingEventInfo, rssi: Int8?, txPower: Int8?, now: UInt64) -> Bool {
        e.lastSeen = now
        e.reportCount &+= 1
        if let rssi { e.rssi = rssi }
        if let txPower { e.txPower = txPower }
        if isScanResponse {
            guard !e.scanResponseData.equals(data) else { return false }
            e.scanResponseData.replace(with: data)
            return true
        }
        e.eventType = info
        guard !e.advertisingData.equals(data) else { return false }
        e.advertisingData.replace(with: data)
        return true
    }

    /// Whether a scan response may follow this advertisement. Scannable PDUs, and also
    /// undirected connectable ones: some controllers (Bumble's) report ADV_IND as a
    /// connectable non-scannable extended PDU and still deliver a scan response.
    static func mayAnswerScanRequests(_ info: AdvertisingEventInfo) -> Bool {
        info.scannable || (info.connectable && !info.directed)
    }

    /// Substring test on bytes (`Collection.contains(_: some Collection)` is in
    /// _StringProcessing, which would add over 1 MB to the static CLI).
    static func bytes(_ hay: [UInt8], contain needle: [UInt8]) -> Bool {
        if needle.count > hay.count { return false }
        for start in 0 ... hay.count - needle.count where hay[start ..< start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }

    static func snapshot(_ address: LEAddress, _ e: Entry) -> DiscoveredDevice {
        DiscoveredDevice(address: address, rssi: e.rssi, txPower: e.txPower, advertising: e.advertisingData,
                         scanResponse: e.scanResponseData, eventType: e.eventType, firstSeen: e.firstSeen,
                         lastSeen: e.lastSeen, reportCount: e.reportCount)
    }

    /// A full table forgets its least recently heard device (the front of the table's
    /// recency order: no pass over the table) for a new one. If that device is still held
    /// for its scan response it is reported as it goes (more new devices within the wait
    /// than the table holds: 30 000 a second fill 4096 in 150 ms), so no device passes
    /// unseen; true then.
    private mutating func showIfHeld(oldest out: inout [ScanEvent]) -> Bool {
        guard let i = devices.oldest, devices.values[i].holdUntil != nil else { return false }
        out.append(.discovered(Self.snapshot(devices.addresses[i], devices.values[i])))
        return true
    }

    // MARK: Time

    /// When ``timerFired(now:)`` should next run (a held device to report, or silent
    /// devices to forget), or nil.
    public var nextDeadline: UInt64? {
        // The front of `held` is the earliest hold (stale fronts are dropped as they go
        // stale, so this is exact; were one left, it would cost one early wake-up).
        guard let until = held.first?.until else { return sweepAt }
        return min(sweepAt ?? until, until)
    }

    /// Reports held devices whose scan response did not come in time, and forgets
    /// devices not heard for `deviceTimeout`.
    public mutating func timerFired(now: UInt64) -> [ScanEvent] {
        var out: [ScanEvent] = []
        releaseHeld(now: now, into: &out)
        sweep(now: now)
        return out
    }

    /// Reports every held device now (the scan or the replayed capture ended).
    public mutating func flush() -> [ScanEvent] {
        var out: [ScanEvent] = []
        releaseHeld(now: nil, into: &out)
        return out
    }

    /// Reports the held devices whose wait is over (all of them without `now`), from the
    /// front of the queue: one look per device released or stale, none at the others.
    private mutating func releaseHeld(now: UInt64?, into out: inout [ScanEvent]) {
        while let hold = held.first {
            guard let i = liveIndex(of: hold) else {
                held.removeFirst()
                continue
            }
            if let now, now < hold.until { break }
            held.removeFirst()
            devices[index: i].holdUntil = nil
            devices[index: i].reported = true
            out.append(.discovered(Self.snapshot(hold.address, devices.values[i])))
        }
    }

    /// Where the device of `hold` is, if it is still held by it (not answered, forgotten,
    /// or forgotten and held again since).
    private func liveIndex(of hold: HeldQueue.Hold) -> Int? {
        guard let i = devices.index(of: hold.address), devices.values[i].holdUntil == hold.until else { return nil }
        return i
    }

    /// Drops stale holds from the front, so the front is a live one (``nextDeadline``).
    private mutating func dropStaleHolds() {
        while let hold = held.first, liveIndex(of: hold) == nil { held.removeFirst() }
    }

    /// Forgets the devices not heard for `deviceTimeout`, from the front of the recency
    /// order (one look per device forgotten, none at the others).
    private mutating func sweep(now: UInt64) {
        guard let at = sweepAt, at <= now else { return }
        let timeout = deviceTimeout
        var heldGone = false
        while let i = devices.oldest, now >= devices.values[i].lastSeen, now &- devices.values[i].lastSeen >= timeout {
            if devices.values[i].holdUntil != nil { heldGone = true }
            devices.remove(at: i)
            statistics.expired &+= 1
        }
        if heldGone { dropStaleHolds() }
        // The next pass when the oldest ages out, but not sooner than an eighth of the
        // timeout from now: a stream of new devices would otherwise wake the timer once per
        // device. Forgetting is late by at most that eighth; a device heard after its
        // timeout is new either way (record). (A capture whose clock steps back can put a
        // later time at the front; a device behind it is forgotten when it reaches the front.)
        if let i = devices.oldest {
            sweepAt = max(devices.values[i].lastSeen &+ timeout, now &+ timeout / 8)
        } else {
            sweepAt = nil
        }
    }
}

/// Devices held back for their scan responses, in the order they were held. Every hold
/// lasts the same `scanResponseWait`, so that order is deadline order: releasing and the
/// next deadline look at the front only (a capture whose clock steps back delays a
/// release behind an earlier hold, and loses none). A hold whose device got its scan
/// response, was forgotten or was held anew is not searched for: it goes stale, and is
/// dropped when it reaches the front.
struct HeldQueue: Sendable {
    struct Hold: Sendable {
        var address: LEAddress
        var until: UInt64
    }

    private var storage: [Hold] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count &- head }
    var first: Hold? { head < storage.count ? storage[head] : nil }

    mutating func append(_ hold: Hold) { storage.append(hold) }

    /// Drops the front; the storage is compacted when half of it is behind the front
    /// (amortised O(1), and the array keeps its capacity).
    mutating func removeFirst() {
        guard head < storage.count else { return }
        head &+= 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head &* 2 >= storage.count {
            storage.removeSubrange(0 ..< head)
            head = 0
        }
    }
}
