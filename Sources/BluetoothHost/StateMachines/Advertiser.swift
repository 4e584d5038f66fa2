import BluetoothWire

/// What to advertise and how. Core Vol 6 Part B §4.4.2 (advertising state), Vol 4 Part E
/// §7.8.5–7.8.9 (legacy commands).
public struct AdvertisingConfiguration: Sendable, Equatable {
    /// The own address advertised (and connected with).
    public enum OwnAddress: Sendable, Equatable {
        case `public`
        /// A random static address (Core Vol 6 Part B §1.3.2.1: the two top bits set).
        case randomStatic(BluetoothAddress)
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
    public var ownAddress: OwnAddress
    /// Advertising is restarted after each connection until this many centrals are connected.
    public var maximumConnections: Int

    public init(advertisingData: [UInt8], scanResponseData: [UInt8] = [], connectable: Bool = true,
                interval: ClosedRange<Duration> = .milliseconds(100) ... .milliseconds(150),
                ownAddress: OwnAddress = .public, maximumConnections: Int = 4) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
        self.connectable = connectable
        self.interval = interval
        self.ownAddress = ownAddress
        self.maximumConnections = maximumConnections
    }

    /// The legacy PDU type this configuration uses.
    public var advertisingType: LEAdvertisingType {
        if connectable { return .connectableUndirected }
        return scanResponseData.isEmpty ? .nonConnectableUndirected : .scannableUndirected
    }

    /// Checks lengths and ranges; the error says what to change.
    public func validate() throws(HostError) {
        guard advertisingData.count <= AdvertisingData.legacyMaximumLength else {
            throw HostError(.invalidParameters, "advertising data is \(advertisingData.count) bytes; legacy advertising carries at most 31 (shorten the name or drop service UUIDs)")
        }
        guard scanResponseData.count <= AdvertisingData.legacyMaximumLength else {
            throw HostError(.invalidParameters, "scan response data is \(scanResponseData.count) bytes; at most 31 fit")
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
    }

    /// Units of 0.625 ms, rounded to nearest.
    static func units(_ d: Duration) -> Int {
        let (s, a) = d.components
        let us = Double(s) * 1e6 + Double(a) / 1e12
        return Int((us / 625).rounded())
    }

    /// The commands that set the controller up and enable advertising, in order.
    func setupCommands() -> [any HCICommandEncodable] {
        var c: [any HCICommandEncodable] = []
        var own = LEOwnAddressType.public
        if case .randomStatic(let a) = ownAddress {
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
    /// Step `index` of `count` of a start; the last one completes it.
    case setup(generation: UInt64, index: Int, count: Int)
    /// Re-enabling after a connection or disconnection.
    case restart(generation: UInt64)
    case disable(generation: UInt64)
}

/// What the advertiser asks the driver to do.
public enum AdvertisingAction: Sendable {
    case send(any HCICommandEncodable, AdvertisingCommandPurpose)
    /// ``Advertiser/start(_:)`` finished (advertising runs) or failed.
    case started(Result<Void, HostError>)
    /// ``Advertiser/stop()`` finished.
    case stopped
}

/// Legacy advertising as a peripheral, sans-I/O: starts it, and restarts it after the
/// controller stops it for a connection (Core Vol 6 Part B §4.4.2.3: entering the
/// connection state ends advertising) until ``AdvertisingConfiguration/maximumConnections``
/// centrals are connected; a disconnection below that resumes it.
public struct Advertiser: Sendable {
    enum State: Sendable, Equatable {
        case idle
        case starting
        /// `enabled`: the controller advertises (as far as we know).
        case running(enabled: Bool)
        case stopping
    }

    private(set) var state: State = .idle
    public private(set) var configuration: AdvertisingConfiguration?
    /// Links in the peripheral role that advertising led to.
    public private(set) var peripheralLinks = 0
    private var generation: UInt64 = 0
    /// Restarts sent after connections (for tests and statistics).
    public private(set) var restarts = 0

    public init() {}

    public var isAdvertising: Bool {
        if case .running(true) = state { return true }
        return false
    }

    public var isActive: Bool {
        switch state {
        case .starting, .running: true
        case .idle, .stopping: false
        }
    }

    /// Starts (or reconfigures) advertising.
    public mutating func start(_ c: AdvertisingConfiguration) throws(HostError) -> [AdvertisingAction] {
        try c.validate()
        switch state {
        case .starting, .stopping:
            throw HostError(.busy, "advertising is being started or stopped; wait for it to finish")
        case .idle, .running: break
        }
        var actions: [AdvertisingAction] = []
        if case .running(true) = state {
            generation &+= 1
            actions.append(.send(LESetAdvertisingEnableCommand(advertisingEnable: false), .disable(generation: generation)))
        }
        generation &+= 1
        configuration = c
        state = .starting
        let commands = c.setupCommands()
        for (i, command) in commands.enumerated() {
            actions.append(.send(command, .setup(generation: generation, index: i, count: commands.count)))
        }
        return actions
    }

    /// Stops advertising (links stay up).
    public mutating func stop() -> [AdvertisingAction] {
        switch state {
        case .idle: return [.stopped]
        case .stopping: return []
        case .starting, .running:
            let wasStarting = state == .starting
            generation &+= 1
            state = .stopping
            let disable = AdvertisingAction.send(LESetAdvertisingEnableCommand(advertisingEnable: false), .disable(generation: generation))
            // A start still in progress ends now, cancelled.
            return wasStarting ? [.started(.failure(HostError(.cancelled, "advertising was stopped before it started"))), disable] : [disable]
        }
    }

    /// The answer to a command this advertiser sent.
    public mutating func commandAnswered(_ purpose: AdvertisingCommandPurpose, _ result: Result<CommandReturn, HostError>) -> [AdvertisingAction] {
        switch purpose {
        case .setup(let g, let index, let count):
            guard g == generation, state == .starting else { return [] }
            switch result {
            case .failure(var e):
                generation &+= 1
                state = .idle
                configuration = nil
                e.message = "cannot start advertising: " + e.message
                // The steps were queued together: make sure the later ones did not leave
                // the controller advertising (its answer is ignored: we are idle).
                return [.started(.failure(e)),
                        .send(LESetAdvertisingEnableCommand(advertisingEnable: false), .disable(generation: generation))]
            case .success:
                guard index == count - 1 else { return [] }
                state = .running(enabled: true)
                return [.started(.success(()))] + resumeIfRoom()
            }
        case .restart(let g):
            guard g == generation, case .running = state else { return [] }
            if case .failure = result { state = .running(enabled: false) }
            // A refusal (e.g. Command Disallowed: the controller has no room for another
            // peripheral link) leaves it off; the next disconnection tries again.
            return []
        case .disable(let g):
            guard g == generation, state == .stopping else { return [] }
            state = .idle
            configuration = nil
            return [.stopped]
        }
    }

    /// A link in the peripheral role came up: the controller stopped advertising (legacy).
    public mutating func peripheralLinkOpened() -> [AdvertisingAction] {
        peripheralLinks += 1
        if case .running = state { state = .running(enabled: false) }
        return resumeIfRoom()
    }

    /// A link in the peripheral role went down.
    public mutating func peripheralLinkClosed() -> [AdvertisingAction] {
        peripheralLinks = max(0, peripheralLinks - 1)
        return resumeIfRoom()
    }

    private mutating func resumeIfRoom() -> [AdvertisingAction] {
        guard case .running(false) = state, let c = configuration, peripheralLinks < c.maximumConnections else { return [] }
        state = .running(enabled: true)  // optimistic: a refusal sets it back
        restarts += 1
        return [.send(LESetAdvertisingEnableCommand(advertisingEnable: true), .restart(generation: generation))]
    }

    /// The host closed: fail a start in progress.
    public mutating func closeAll(_ error: HostError) -> [AdvertisingAction] {
        defer {
            state = .idle
            configuration = nil
        }
        switch state {
        case .starting: return [.started(.failure(error))]
        case .stopping: return [.stopped]
        case .idle, .running: return []
        }
    }
}
