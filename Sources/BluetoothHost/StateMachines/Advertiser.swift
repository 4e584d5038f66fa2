import BluetoothWire

/// What to advertise and how, for one advertising set. Core Vol 6 Part B §4.4.2 (advertising
/// state), Vol 4 Part E §7.8.5–7.8.9 (legacy commands), §7.8.52–7.8.60 (extended advertising).
public struct AdvertisingConfiguration: Sendable, Equatable {
    /// Which advertising PDUs the set uses.
    public enum PDUs: Sendable, Equatable {
        /// Legacy PDUs when the data fit them (every scanner sees those), extended ones when not.
        case automatic
        /// ADV_IND / ADV_SCAN_IND / ADV_NONCONN_IND: at most 31 bytes each of data and scan response.
        case legacy
        /// ADV_EXT_IND + AUX_ADV_IND chains (Bluetooth 5): data up to the controller's maximum,
        /// but connectable or scannable, not both, and unseen by scanners older than 5.0.
        case extended
    }

    /// The own address advertised (and connected with).
    public enum OwnAddress: Sendable, Equatable {
        case `public`
        /// A random static address (Core Vol 6 Part B §1.3.2.1: the two top bits set).
        case randomStatic(BluetoothAddress)
        /// A resolvable private address (§1.3.2.2: top bits 0b01), made from this host's IRK
        /// with ``ResolvablePrivateAddress/make(irk:random:)``: only bonded peers know who
        /// advertises. Replace it every few minutes (restart advertising with a new one).
        case resolvablePrivate(BluetoothAddress)

        /// The random address to set, nil for the public one.
        public var randomAddress: BluetoothAddress? {
            switch self {
            case .public: nil
            case .randomStatic(let a), .resolvablePrivate(let a): a
            }
        }
    }

    /// AD structures, built with ``AdvertisingDataBuilder`` (at most 31 bytes for legacy advertising).
    public var advertisingData: [UInt8]
    /// Scan response AD structures (at most 31 bytes for legacy advertising).
    public var scanResponseData: [UInt8]
    /// Centrals may connect (ADV_IND); otherwise ADV_SCAN_IND when there is scan
    /// response data, ADV_NONCONN_IND when not.
    public var connectable: Bool
    /// Advertising interval range (20 ms ... 10.24 s).
    public var interval: ClosedRange<Duration>
    /// The address the set advertises from.
    public var ownAddress: OwnAddress
    /// Advertising is restarted after each connection until this many centrals are
    /// connected through this set.
    public var maximumConnections: Int
    /// Legacy or extended PDUs (or whichever the data needs).
    public var pdus: PDUs
    /// Advertising set (Advertising_Handle 0x00–0xEF): controllers with extended advertising
    /// run several sets at once; legacy advertising has set 0 only.
    public var advertisingSet: UInt8
    /// Requested transmit power in dBm (-127...+20; extended advertising commands only, the
    /// controller picks the closest it can and reports it); nil: no preference.
    public var txPower: Int8?

    /// A configuration; the defaults: connectable, 100-150 ms, the public address, up to four
    /// centrals, legacy PDUs when the data fit, set 0, no TX power preference.
    public init(advertisingData: [UInt8], scanResponseData: [UInt8] = [], connectable: Bool = true,
                interval: ClosedRange<Duration> = .milliseconds(100) ... .milliseconds(150),
                ownAddress: OwnAddress = .public, maximumConnections: Int = 4,
                pdus: PDUs = .automatic, advertisingSet: UInt8 = 0, txPower: Int8? = nil) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
        self.connectable = connectable
        self.interval = interval
        self.ownAddress = ownAddress
        self.maximumConnections = maximumConnections
        self.pdus = pdus
        self.advertisingSet = advertisingSet
        self.txPower = txPower
    }

    /// The legacy PDU type this configuration uses.
    public var advertisingType: LEAdvertisingType {
        if connectable { return .connectableUndirected }
        return scanResponseData.isEmpty ? .nonConnectableUndirected : .scannableUndirected
    }

    /// Whether this set goes out as legacy PDUs on a controller with `capabilities`.
    public func usesLegacyPDUs(_ capabilities: AdvertisingCapabilities) -> Bool {
        switch pdus {
        case .legacy: true
        case .extended: false
        case .automatic:
            !capabilities.extendedCommands
                || (advertisingData.count <= AdvertisingData.legacyMaximumLength
                    && scanResponseData.count <= AdvertisingData.legacyMaximumLength)
        }
    }

    /// Advertising_Event_Properties for the extended commands (Core Vol 4 Part E §7.8.53).
    func eventProperties(legacyPDUs: Bool) -> LEAdvertisingEventProperties {
        if legacyPDUs {
            if connectable { return [.legacy, .connectable, .scannable] }
            return scanResponseData.isEmpty ? [.legacy] : [.legacy, .scannable]
        }
        var p: LEAdvertisingEventProperties = connectable ? [.connectable] : (scanResponseData.isEmpty ? [] : [.scannable])
        if txPower != nil { p.insert(.includeTxPower) }
        return p
    }

    /// Checks lengths and ranges against what the controller can do; the error says what to change.
    public func validate(for capabilities: AdvertisingCapabilities = .legacy) throws(HostError) {
        let legacy = usesLegacyPDUs(capabilities)
        if !capabilities.extendedCommands {
            guard pdus != .extended else {
                throw HostError(.notSupported, "this controller has no extended advertising (a Bluetooth 5 feature): only legacy advertising, 31 bytes of data")
            }
            guard advertisingSet == 0 else {
                throw HostError(.notSupported, "this controller has no extended advertising: one advertising set (0) only, not \(advertisingSet)")
            }
        } else {
            guard Int(advertisingSet) < min(capabilities.sets, 0xF0) else {
                throw HostError(.invalidParameters, "advertising set \(advertisingSet) does not exist: the controller has \(capabilities.sets) (0...\(min(capabilities.sets, 0xF0) - 1))")
            }
        }
        if legacy {
            guard advertisingData.count <= AdvertisingData.legacyMaximumLength else {
                throw HostError(.invalidParameters, "advertising data is \(advertisingData.count) bytes; legacy advertising carries at most 31 (shorten the name or drop service UUIDs\(capabilities.extendedCommands ? ", or use extended advertising" : ""))")
            }
            guard scanResponseData.count <= AdvertisingData.legacyMaximumLength else {
                throw HostError(.invalidParameters, "scan response data is \(scanResponseData.count) bytes; at most 31 fit")
            }
        } else {
            let limit = capabilities.maximumDataLength
            guard advertisingData.count <= limit else {
                throw HostError(.invalidParameters, "advertising data is \(advertisingData.count) bytes; this controller takes at most \(limit)")
            }
            guard scanResponseData.count <= limit else {
                throw HostError(.invalidParameters, "scan response data is \(scanResponseData.count) bytes; this controller takes at most \(limit)")
            }
            guard !(connectable && !scanResponseData.isEmpty) else {
                throw HostError(.invalidParameters, "connectable extended advertising has no scan response (Core Vol 6 Part B §4.4.2.4): put it all in the advertising data, or use legacy advertising")
            }
            guard scanResponseData.isEmpty || advertisingData.isEmpty else {
                throw HostError(.invalidParameters, "scannable extended advertising carries its data in the scan response only: leave the advertising data empty")
            }
        }
        if let p = txPower, !(-127 ... 20).contains(p) {
            throw HostError(.invalidParameters, "TX power \(p) dBm is outside -127...+20")
        }
        let lo = Self.units(interval.lowerBound), hi = Self.units(interval.upperBound)
        guard lo >= 0x20, hi <= 0x4000, lo <= hi else {
            throw HostError(.invalidParameters, "advertising interval must lie within 20 ms ... 10.24 s")
        }
        guard maximumConnections >= 1 else { throw HostError(.invalidParameters, "maximum connections must be at least 1") }
        if case .randomStatic(let a) = ownAddress {
            let rest = a.rawValue & 0x3FFF_FFFF_FFFF
            guard a.rawValue >> 46 == 0b11, rest != 0, rest != 0x3FFF_FFFF_FFFF else {
                throw HostError(.invalidParameters, "\(a) is not a random static address (the two most significant bits must be 1, the rest neither all 0 nor all 1)")
            }
        }
        if case .resolvablePrivate(let a) = ownAddress, a.rawValue >> 46 != 0b01 {
            throw HostError(.invalidParameters, "\(a) is not a resolvable private address (the two most significant bits must be 01)")
        }
    }

    /// Units of 0.625 ms, rounded to nearest.
    static func units(_ d: Duration) -> Int {
        let (s, a) = d.components
        let us = Double(s) * 1e6 + Double(a) / 1e12
        return Int((us / 625).rounded())
    }

    /// The commands that set the controller up and enable advertising, in order.
    func setupCommands(_ capabilities: AdvertisingCapabilities) -> [any HCICommandEncodable] {
        capabilities.extendedCommands ? extendedSetupCommands(legacyPDUs: usesLegacyPDUs(capabilities)) : legacySetupCommands()
    }

    /// Extended advertising commands: parameters (which create the set), its random address,
    /// data and scan response in fragments of at most 251 bytes (Core Vol 4 Part E §7.8.54),
    /// then enable.
    func extendedSetupCommands(legacyPDUs: Bool) -> [any HCICommandEncodable] {
        let h = advertisingSet
        let own: LEOwnAddressType = ownAddress.randomAddress == nil ? .public : .random
        let lo = UInt32(Self.units(interval.lowerBound)), hi = UInt32(Self.units(interval.upperBound))
        var c: [any HCICommandEncodable] = [LESetExtendedAdvertisingParametersCommand(
            advertisingHandle: h, advertisingEventProperties: eventProperties(legacyPDUs: legacyPDUs),
            primaryAdvertisingIntervalMin: lo, primaryAdvertisingIntervalMax: hi, ownAddressType: own,
            advertisingTxPower: txPower ?? LESetExtendedAdvertisingParametersCommand.noTxPowerPreference,
            advertisingSID: h & 0x0F)]
        if let a = ownAddress.randomAddress {
            c.append(LESetAdvertisingSetRandomAddressCommand(advertisingHandle: h, randomAddress: a))
        }
        let scannable = eventProperties(legacyPDUs: legacyPDUs).contains(.scannable)
        // Scannable extended advertising carries no advertising data (§7.8.54).
        if legacyPDUs || !scannable {
            for (op, part) in Self.fragments(advertisingData) {
                c.append(LESetExtendedAdvertisingDataCommand(advertisingHandle: h, operation: op, fragmentPreference: .mayFragment, advertisingData: part))
            }
        }
        if scannable {
            for (op, part) in Self.fragments(scanResponseData) {
                c.append(LESetExtendedScanResponseDataCommand(advertisingHandle: h, operation: op, fragmentPreference: .mayFragment, scanResponseData: part))
            }
        }
        c.append(LESetExtendedAdvertisingEnableCommand(enable: true, sets: [LEExtendedAdvertisingSet(advertisingHandle: h)]))
        return c
    }

    /// Splits data into HCI fragments: one complete operation when it fits (empty data too).
    static func fragments(_ data: [UInt8]) -> [(LEAdvertisingDataOperation, [UInt8])] {
        let size = 251
        guard data.count > size else { return [(.complete, data)] }
        var out: [(LEAdvertisingDataOperation, [UInt8])] = []
        var i = 0
        while i < data.count {
            let end = min(i + size, data.count)
            let op: LEAdvertisingDataOperation = i == 0 ? .firstFragment : (end == data.count ? .lastFragment : .intermediateFragment)
            out.append((op, Array(data[i ..< end])))
            i = end
        }
        return out
    }

    func legacySetupCommands() -> [any HCICommandEncodable] {
        var c: [any HCICommandEncodable] = []
        var own = LEOwnAddressType.public
        if let a = ownAddress.randomAddress {
            c.append(LESetRandomAddressCommand(randomAddress: a))
            own = .random
        }
        c.append(LESetAdvertisingParametersCommand(
            advertisingIntervalMin: UInt16(Self.units(interval.lowerBound)), advertisingIntervalMax: UInt16(Self.units(interval.upperBound)),
            advertisingType: advertisingType, ownAddressType: own))
        c.append(LESetAdvertisingDataCommand(advertisingData: advertisingData))
        c.append(LESetScanResponseDataCommand(scanResponseData: scanResponseData))
        c.append(LESetAdvertisingEnableCommand(advertisingEnable: true))
        return c
    }
}

/// What the controller offers for advertising (from ``ControllerInfo``).
public struct AdvertisingCapabilities: Sendable, Equatable {
    /// The extended advertising commands are used (Core Vol 4 Part E §3.1.1: mixing them with
    /// the legacy ones is disallowed, and the host scans and connects with extended ones too).
    public var extendedCommands: Bool
    /// Advertising sets the controller runs at once.
    public var sets: Int
    /// The longest advertising or scan response data of one set.
    public var maximumDataLength: Int

    /// Capabilities as given (tests, or a controller known in advance).
    public init(extendedCommands: Bool, sets: Int, maximumDataLength: Int) {
        self.extendedCommands = extendedCommands
        self.sets = sets
        self.maximumDataLength = maximumDataLength
    }

    /// A controller before Bluetooth 5: one set, 31 bytes.
    public static let legacy = AdvertisingCapabilities(extendedCommands: false, sets: 1, maximumDataLength: AdvertisingData.legacyMaximumLength)

    /// What the init sequence found: extended advertising with its sets and data length, or
    /// ``legacy``.
    public init(_ info: ControllerInfo) {
        if info.supportsExtendedAdvertising, info.advertisingSets > 0 {
            self.init(extendedCommands: true, sets: info.advertisingSets, maximumDataLength: info.maximumAdvertisingDataLength)
        } else {
            self = .legacy
        }
    }
}

/// One advertising set once it runs.
public struct AdvertisingSetInfo: Sendable, Equatable {
    /// The set's Advertising_Handle.
    public var advertisingSet: UInt8
    /// Started with the extended advertising commands.
    public var extendedCommands: Bool
    /// Goes out as legacy PDUs (seen by every scanner).
    public var legacyPDUs: Bool
    /// The transmit power the controller chose, in dBm (extended commands only).
    public var selectedTxPower: Int8?

    /// The running set as the advertiser started it.
    public init(advertisingSet: UInt8, extendedCommands: Bool, legacyPDUs: Bool, selectedTxPower: Int8?) {
        self.advertisingSet = advertisingSet
        self.extendedCommands = extendedCommands
        self.legacyPDUs = legacyPDUs
        self.selectedTxPower = selectedTxPower
    }
}

extension BluetoothAddress {
    /// A fresh random static address (Core Vol 6 Part B §1.3.2.1).
    public static func randomStatic<G: RandomNumberGenerator>(using g: inout G) -> BluetoothAddress {
        while true {
            let rest = g.next() & 0x3FFF_FFFF_FFFF
            if rest != 0 && rest != 0x3FFF_FFFF_FFFF { return BluetoothAddress(rawValue: 0xC000_0000_0000 | rest) }
        }
    }
}

/// Why an advertising command was sent (the driver routes its answer back here).
public enum AdvertisingCommandPurpose: Sendable, Equatable {
    /// Step `index` of `count` of a start of set `set`; the last one completes it.
    case setup(set: UInt8, generation: UInt64, index: Int, count: Int)
    /// Re-enabling after a connection or disconnection.
    case restart(set: UInt8, generation: UInt64)
    /// Disabling (and, with extended commands, removing) sets; the last answer ends their stop.
    case disable(sets: [UInt8], generations: [UInt64], last: Bool)
}

/// What the advertiser asks the driver to do.
public enum AdvertisingAction: Sendable {
    case send(any HCICommandEncodable, AdvertisingCommandPurpose)
    /// ``Advertiser/start(_:)`` of a set finished (the set advertises) or failed.
    case started(set: UInt8, Result<AdvertisingSetInfo, HostError>)
    /// ``Advertiser/stop(_:)`` of a set finished.
    case stopped(set: UInt8)
}

/// Advertising as a peripheral, sans-I/O, with the legacy commands or with extended
/// advertising sets (several at once). It starts sets, and restarts one after the controller
/// stopped it for a connection (Core Vol 6 Part B §4.4.2.3; with extended commands the
/// controller says which set with LE Advertising Set Terminated, Vol 4 Part E §7.7.65.18)
/// until ``AdvertisingConfiguration/maximumConnections`` centrals are connected through it;
/// a disconnection below that resumes it.
public struct Advertiser: Sendable {
    enum State: Sendable, Equatable {
        case starting
        /// `enabled`: the controller advertises (as far as we know).
        case running(enabled: Bool)
        case stopping
    }

    struct AdvertisingSet: Sendable {
        var state: State
        var configuration: AdvertisingConfiguration
        var generation: UInt64
        var legacyPDUs: Bool
        var selectedTxPower: Int8?
        /// Links in the peripheral role this set led to.
        var links = 0
    }

    /// What the controller offers (decides the commands used).
    public let capabilities: AdvertisingCapabilities
    private var sets: [UInt8: AdvertisingSet] = [:]
    /// The set each peripheral-role link came through.
    private var linkSets: [UInt16: UInt8] = [:]
    private var generation: UInt64 = 0
    /// Links in the peripheral role that advertising led to.
    public private(set) var peripheralLinks = 0
    /// A connectable set is advertising (or starting to): a central may connect at any time.
    var hasConnectableSets: Bool {
        sets.values.contains { $0.configuration.connectable && ($0.state == .starting || $0.state == .running(enabled: true)) }
    }
    /// Restarts sent after connections (for tests and statistics).
    public private(set) var restarts = 0

    /// An idle advertiser for a controller with `capabilities`.
    public init(capabilities: AdvertisingCapabilities = .legacy) {
        self.capabilities = capabilities
    }

    /// Set `set` advertises (any set with nil).
    public func isAdvertising(_ set: UInt8?) -> Bool {
        sets.contains { (h, s) in (set == nil || set == h) && s.state == .running(enabled: true) }
    }

    /// Some set advertises now.
    public var isAdvertising: Bool { isAdvertising(nil) }

    /// Some set is starting or running.
    public var isActive: Bool {
        sets.values.contains { s in
            switch s.state {
            case .starting, .running: true
            case .stopping: false
            }
        }
    }

    /// Sets not yet idle (starting, running or stopping), in handle order; `set` nil: all.
    public func pendingSets(_ set: UInt8?) -> [UInt8] {
        sets.keys.filter { set == nil || $0 == set }.sorted()
    }

    /// The configuration set `set` runs with (nil: the set is idle).
    public func configuration(_ set: UInt8 = 0) -> AdvertisingConfiguration? { sets[set]?.configuration }
    /// The configuration of set 0.
    public var configuration: AdvertisingConfiguration? { sets[0]?.configuration }

    /// Starts (or reconfigures) the set `c.advertisingSet`.
    public mutating func start(_ c: AdvertisingConfiguration) throws(HostError) -> [AdvertisingAction] {
        try c.validate(for: capabilities)
        let h = c.advertisingSet
        var actions: [AdvertisingAction] = []
        if let old = sets[h] {
            switch old.state {
            case .starting, .stopping:
                throw HostError(.busy, "advertising set \(h) is being started or stopped; wait for it to finish")
            case .running:
                // Reconfigure from a clean slate: disable (and remove) the set first; the
                // answers are not awaited (commands run in order).
                generation &+= 1
                for command in disableCommands([h]) {
                    actions.append(.send(command, .disable(sets: [], generations: [], last: false)))
                }
            }
        }
        generation &+= 1
        var set = AdvertisingSet(state: .starting, configuration: c, generation: generation,
                                 legacyPDUs: c.usesLegacyPDUs(capabilities))
        set.links = sets[h]?.links ?? 0
        sets[h] = set
        let commands = c.setupCommands(capabilities)
        for (i, command) in commands.enumerated() {
            actions.append(.send(command, .setup(set: h, generation: generation, index: i, count: commands.count)))
        }
        return actions
    }

    /// The commands that disable `handles` (all with nil) and, with extended commands,
    /// remove them from the controller.
    private func disableCommands(_ handles: [UInt8]?) -> [any HCICommandEncodable] {
        guard capabilities.extendedCommands else { return [LESetAdvertisingEnableCommand(advertisingEnable: false)] }
        guard let handles else { return [LESetExtendedAdvertisingEnableCommand(enable: false, sets: [])] }
        return [LESetExtendedAdvertisingEnableCommand(enable: false, sets: handles.map { LEExtendedAdvertisingSet(advertisingHandle: $0) })]
            + handles.map { LERemoveAdvertisingSetCommand(advertisingHandle: $0) }
    }

    /// What leaves the controller quiet when the host closes.
    public func quietCommand() -> any HCICommandEncodable { disableCommands(nil)[0] }

    /// Stops set `set`, or every set with nil (links stay up).
    public mutating func stop(_ set: UInt8? = nil) -> [AdvertisingAction] {
        var actions: [AdvertisingAction] = []
        var handles: [UInt8] = []
        for h in pendingSets(set) {
            guard var s = sets[h] else { continue }
            switch s.state {
            case .stopping: continue
            case .starting:
                actions.append(.started(set: h, .failure(HostError(.cancelled, "advertising was stopped before it started"))))
            case .running: break
            }
            generation &+= 1
            s.generation = generation
            s.state = .stopping
            sets[h] = s
            handles.append(h)
        }
        guard !handles.isEmpty else { return actions }
        let generations = handles.map { sets[$0]?.generation ?? 0 }
        let commands = disableCommands(handles)
        for (i, command) in commands.enumerated() {
            actions.append(.send(command, .disable(sets: handles, generations: generations, last: i == commands.count - 1)))
        }
        return actions
    }

    /// The answer to a command this advertiser sent.
    public mutating func commandAnswered(_ purpose: AdvertisingCommandPurpose, _ result: Result<CommandReturn, HostError>) -> [AdvertisingAction] {
        switch purpose {
        case .setup(let h, let g, let index, let count):
            guard var s = sets[h], s.generation == g, s.state == .starting else { return [] }
            switch result {
            case .failure(var e):
                generation &+= 1
                sets[h] = nil
                e.message = "cannot start advertising\(h == 0 ? "" : " set \(h)"): " + e.message
                // The steps were queued together: make sure the later ones did not leave
                // the controller advertising (the answers are ignored: the set is gone).
                return [.started(set: h, .failure(e))]
                    + disableCommands([h]).map { .send($0, .disable(sets: [], generations: [], last: false)) }
            case .success(let r):
                if r.opcode == .leSetExtendedAdvertisingParameters,
                   let v = try? r.decode(as: LESetExtendedAdvertisingParametersReturn.self) {
                    s.selectedTxPower = v.selectedTxPower
                }
                guard index == count - 1 else {
                    sets[h] = s
                    return []
                }
                s.state = .running(enabled: true)
                sets[h] = s
                let info = AdvertisingSetInfo(advertisingSet: h, extendedCommands: capabilities.extendedCommands,
                                              legacyPDUs: s.legacyPDUs, selectedTxPower: s.selectedTxPower)
                return [.started(set: h, .success(info))] + resumeIfRoom(h)
            }
        case .restart(let h, let g):
            guard var s = sets[h], s.generation == g, case .running = s.state else { return [] }
            // A refusal (e.g. Command Disallowed: the controller has no room for another
            // peripheral link) leaves it off; the next disconnection tries again.
            if case .failure = result {
                s.state = .running(enabled: false)
                sets[h] = s
            }
            return []
        case .disable(let handles, let generations, let last):
            guard last else { return [] }
            var out: [AdvertisingAction] = []
            for (h, g) in zip(handles, generations) {
                guard let s = sets[h], s.generation == g, s.state == .stopping else { continue }
                sets[h] = nil
                out.append(.stopped(set: h))
            }
            return out
        }
    }

    /// A link in the peripheral role came up. With the legacy commands the controller stopped
    /// advertising (set 0); with extended ones ``advertisingSetTerminated(_:)`` says which set.
    public mutating func peripheralLinkOpened(handle: UInt16) -> [AdvertisingAction] {
        peripheralLinks += 1
        guard !capabilities.extendedCommands else { return [] }
        return linkCameThrough(handle, set: 0)
    }

    /// LE Advertising Set Terminated: a set ended for a connection (success) or for its
    /// duration or event limit (an error status: it stays off).
    public mutating func advertisingSetTerminated(_ e: LEAdvertisingSetTerminated) -> [AdvertisingAction] {
        guard capabilities.extendedCommands else { return [] }
        if e.status == .success {
            return linkCameThrough(e.connectionHandle, set: e.advertisingHandle)
        }
        if var s = sets[e.advertisingHandle], case .running = s.state {
            s.state = .running(enabled: false)
            sets[e.advertisingHandle] = s
        }
        return []
    }

    private mutating func linkCameThrough(_ handle: UInt16, set h: UInt8) -> [AdvertisingAction] {
        guard linkSets[handle] == nil else { return [] }
        linkSets[handle] = h
        guard var s = sets[h] else { return [] }
        s.links += 1
        if case .running = s.state { s.state = .running(enabled: false) }
        sets[h] = s
        return resumeIfRoom(h)
    }

    /// A link in the peripheral role went down.
    public mutating func peripheralLinkClosed(handle: UInt16) -> [AdvertisingAction] {
        peripheralLinks = max(0, peripheralLinks - 1)
        guard let h = linkSets.removeValue(forKey: handle), var s = sets[h] else { return [] }
        s.links = max(0, s.links - 1)
        sets[h] = s
        return resumeIfRoom(h)
    }

    private mutating func resumeIfRoom(_ h: UInt8) -> [AdvertisingAction] {
        guard var s = sets[h], s.state == .running(enabled: false), s.links < s.configuration.maximumConnections else { return [] }
        s.state = .running(enabled: true)  // optimistic: a refusal sets it back
        sets[h] = s
        restarts += 1
        let command: any HCICommandEncodable = capabilities.extendedCommands
            ? LESetExtendedAdvertisingEnableCommand(enable: true, sets: [LEExtendedAdvertisingSet(advertisingHandle: h)])
            : LESetAdvertisingEnableCommand(advertisingEnable: true)
        return [.send(command, .restart(set: h, generation: s.generation))]
    }

    /// The host closed: fail starts in progress, end stops.
    public mutating func closeAll(_ error: HostError) -> [AdvertisingAction] {
        var out: [AdvertisingAction] = []
        for h in sets.keys.sorted() {
            switch sets[h]?.state {
            case .starting: out.append(.started(set: h, .failure(error)))
            case .stopping: out.append(.stopped(set: h))
            case .running, nil: break
            }
        }
        sets = [:]
        linkSets = [:]
        return out
    }
}
